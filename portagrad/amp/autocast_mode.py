"""``autocast``: PyTorch's mixed-precision region.

portagrad does not run ops in lower precision inside a region: a region asked to be enabled on
a device that portagrad has (``cpu``, ``opencl``) raises ``NotImplementedError`` instead of
silently computing in float32, ``enabled=False`` runs its body unchanged, and a CUDA region warns
and disables itself as PyTorch does on a build without CUDA.
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from .._dtype import bfloat16, dtype, float16
from ..plugins.manager import device_types

__all__ = ["autocast", "is_autocast_available"]

# the device types PyTorch knows; those portagrad does not have behave as on a build without them
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                       "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                       "privateuseone")


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast`` can be enabled on ``device_type``: never in portagrad (regions run
    at the tensors' own precision)."""
    return False


class autocast:
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``, a context
    manager and decorator. Only disabled regions are supported (see the module docstring)."""

    def __init__(self, device_type: str, dtype: dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        base = device_type.split(":")[0]
        if base not in _TORCH_DEVICE_TYPES and base not in device_types():
            raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at "
                               f"start of device string: {device_type}")
        self.device = device_type
        self.fast_dtype = bfloat16 if dtype is None and base == "cpu" else (dtype or float16)
        self._enabled = bool(enabled)
        if self._enabled and base == "cpu" and self.fast_dtype not in (bfloat16, float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                          "autocast.\nCPU Autocast only supports dtypes of portagrad.bfloat16, "
                          "portagrad.float16 currently.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled and base not in device_types():
            warnings.warn(f"User provided device_type of '{device_type}', but {base} is not "
                          "available. Disabling", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            raise NotImplementedError(
                f"autocast on '{device_type}': portagrad does not run ops in {self.fast_dtype} "
                "inside autocast regions; use enabled=False, or cast the model and inputs "
                "with .to(dtype)")

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
