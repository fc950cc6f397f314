"""Distributed optimizers (``torch.distributed.optim``): :class:`ZeroRedundancyOptimizer`."""
from __future__ import annotations

from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
