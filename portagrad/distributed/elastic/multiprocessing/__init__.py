"""``torch.distributed.elastic.multiprocessing``: ``errors.record`` for the entry point."""
from __future__ import annotations

from . import errors

__all__ = ["errors"]
