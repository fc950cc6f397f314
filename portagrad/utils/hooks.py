"""``torch.utils.hooks``: :class:`RemovableHandle`, what every ``register_*_hook`` returns."""
from __future__ import annotations

from ..autograd.function import RemovableHandle

__all__ = ["RemovableHandle"]
