"""What a script asks about how it was started: its launcher, its local rank, its backend."""
from __future__ import annotations

import os
from typing import Any

from .. import _device

__all__ = ["get_default_backend_for_device", "is_torchelastic_launched", "get_node_local_rank"]


def get_default_backend_for_device(device: Any) -> str:
    """The backend for tensors of ``device`` (``torch.distributed.get_default_backend_for_device``):
    ``"mpi"`` for every device, since the MPI engine stages any backend's tensors through the host.
    (PyTorch answers ``"gloo"`` for cpu and ``"nccl"`` for cuda; portagrad accepts those names
    too, and runs them on the same engine.)"""
    if not isinstance(device, (str, _device.device)):
        raise TypeError(f"device must be a string or a device, got {type(device).__name__}")
    if isinstance(device, str):
        _device.device(device)  # a malformed string raises here, as in PyTorch
    return "mpi"


def is_torchelastic_launched() -> bool:
    """Whether a torchrun-style launcher started this process (``TORCHELASTIC_RUN_ID`` is set, as
    ``python -m portagrad.distributed.run`` sets it)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank among the ranks of its host (``LOCAL_RANK``), else ``fallback_rank``;
    ``RuntimeError`` when neither is there."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to "
                       "allow `get_node_local_rank` to work, assuming you are not running in a "
                       "multi-device context and want the code to run locally instead.")
