"""Distributed training algorithms (``torch.distributed.algorithms``): :class:`Join` for uneven
inputs, and DDP communication hooks (``ddp_comm_hooks``)."""
from __future__ import annotations

from .join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook"]
