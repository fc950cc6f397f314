"""``torch.fx.passes``: analyses and rewrites over FX graphs."""
from __future__ import annotations

from . import shape_prop

__all__ = ["shape_prop"]
