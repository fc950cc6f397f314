"""Fully sharded data parallelism (``torch.distributed.fsdp``): :func:`fully_shard` (PyTorch's
FSDP2 API) and the :class:`FullyShardedDataParallel` wrapper name. See ``_fully_shard`` for how
it works and what differs from PyTorch."""
from __future__ import annotations

from ._fully_shard import FSDPModule, fully_shard
from ._param import ShardedParameter
from ._wrapper import FullyShardedDataParallel, ModuleWrapPolicy, ShardingStrategy

__all__ = ["fully_shard", "FSDPModule", "FullyShardedDataParallel", "ShardedParameter",
           "ShardingStrategy", "ModuleWrapPolicy"]
