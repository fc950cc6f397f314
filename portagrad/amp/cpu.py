"""``pg.cpu.amp``: PyTorch's deprecated ``torch.cpu.amp`` forms of ``autocast`` and
``GradScaler``, bound to the ``cpu`` device type."""
from __future__ import annotations

import warnings
from .._dtype import bfloat16, dtype
from . import autocast_mode, grad_scaler

__all__ = ["autocast", "GradScaler"]


class autocast(autocast_mode.autocast):
    """``torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True)``: deprecated
    for ``pg.amp.autocast("cpu", ...)``."""

    def __init__(self, enabled: bool = True, dtype: dtype = bfloat16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """``torch.cpu.amp.GradScaler(...)``: deprecated for ``pg.amp.GradScaler("cpu", ...)``."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
