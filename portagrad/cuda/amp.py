"""``pg.cuda.amp``: mixed precision as PyTorch provides it when CUDA is not available.

Without CUDA, PyTorch's ``torch.cuda.amp.autocast`` warns and disables itself, and
``GradScaler`` warns and runs disabled: ``scale`` returns its input, ``step`` calls the
optimizer's ``step``. These do the same (they are not a mixed-precision implementation).
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast:
    """A disabled autocast region (CUDA is not available): warns once on creation when asked to
    be enabled, then runs its body unchanged. Usable as a context manager and as a decorator."""

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True
                 ) -> None:
        if enabled:
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          UserWarning, stacklevel=2)
        self._enabled = False
        self.fast_dtype = dtype

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return wrapper


class GradScaler:
    """A disabled gradient scaler (CUDA is not available), as PyTorch's in that case."""

    def __init__(self, init_scale: float = 65536.0, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        if enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", UserWarning, stacklevel=2)
        self._enabled = False
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval

    def is_enabled(self) -> bool:
        """``False``: scaling is disabled without CUDA."""
        return self._enabled

    def scale(self, outputs: Any) -> Any:
        """``outputs`` unchanged (scale 1)."""
        return outputs

    def unscale_(self, optimizer: Any) -> None:
        """Nothing to unscale."""

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step(*args, **kwargs)``."""
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: Any = None) -> None:
        """Nothing to update."""

    def get_scale(self) -> float:
        """``1.0`` while disabled."""
        return 1.0

    def get_growth_factor(self) -> float:
        """The scale's growth factor (kept, unused while disabled)."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The scale's backoff factor (kept, unused while disabled)."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """Steps between growths (kept, unused while disabled)."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval."""
        self._growth_interval = new_interval

    def state_dict(self) -> dict[str, Any]:
        """``{}`` while disabled, as PyTorch."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Nothing to load while disabled."""


def custom_fwd(fwd: Callable | None = None, *, cast_inputs: Any = None) -> Any:
    """Decorator for a custom Function's ``forward``: with autocast never enabled it runs
    ``forward`` as written."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd: Callable) -> Callable:
    """Decorator for a custom Function's ``backward``: runs it as written."""
    return bwd
