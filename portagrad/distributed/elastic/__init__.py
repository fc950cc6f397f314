"""``torch.distributed.elastic``: the parts a training script imports (``multiprocessing.errors``)."""
from __future__ import annotations

from . import multiprocessing

__all__ = ["multiprocessing"]
