"""``pg.amp``: PyTorch's automatic mixed precision entry points (``torch.amp``).

``GradScaler`` scales losses and unscales gradients for real on portagrad's devices (it skips
steps whose gradients overflow and adapts the scale); ``autocast`` supports disabled regions
only (see :mod:`portagrad.amp.autocast_mode`).
"""
from __future__ import annotations

from ..cuda.amp import custom_bwd, custom_fwd
from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
