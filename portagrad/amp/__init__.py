"""``pg.amp``: PyTorch's automatic mixed precision entry points (``torch.amp``).

``autocast`` runs the ops of PyTorch's autocast lists in lower precision (or float32) inside a
region (see :mod:`portagrad.amp.autocast_mode`); ``GradScaler`` scales losses and unscales
gradients, skipping the steps whose gradients overflow, with one host read per step.
"""
from __future__ import annotations

from . import cpu
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler", "cpu"]
