"""``torch.signal``: signal-processing helpers (:mod:`.windows`)."""
from __future__ import annotations

from . import windows

__all__ = ["windows"]
