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

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype",
           "set_autocast_dtype", "set_autocast_enabled", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "get_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "is_autocast_cpu_enabled"]

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


# --- the global autocast state functions (torch.is_autocast_enabled ...): autocast is never
# enabled in portagrad, so only the per-device-type target dtypes and the cache flag are state
_dtypes: dict[str, dtype] = {}
_cache = {"enabled": True}


def _check_device_type(device_type: str) -> str:
    if not isinstance(device_type, str) or (device_type not in _TORCH_DEVICE_TYPES
                                            and device_type not in device_types()):
        raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at "
                           f"start of device string: {device_type}")
    return device_type


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """``False``: no autocast region is ever enabled in portagrad."""
    if device_type is not None:
        _check_device_type(device_type)
    return False


def is_autocast_cpu_enabled() -> bool:
    """``False`` (deprecated form of ``is_autocast_enabled("cpu")``)."""
    return False


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Disabling is accepted; enabling raises, as autocast regions are not supported."""
    _check_device_type(device_type)
    if enabled:
        raise NotImplementedError("set_autocast_enabled: portagrad does not run ops in lower "
                                  "precision under autocast")


def get_autocast_dtype(device_type: str) -> dtype:
    """The dtype autocast would use on ``device_type`` (bfloat16 on cpu, float16 elsewhere,
    unless :func:`set_autocast_dtype` changed it)."""
    _check_device_type(device_type)
    return _dtypes.get(device_type, bfloat16 if device_type == "cpu" else float16)


def set_autocast_dtype(device_type: str, dtype: dtype) -> None:
    """Set the dtype :func:`get_autocast_dtype` reports for ``device_type``."""
    _dtypes[_check_device_type(device_type)] = dtype


def get_autocast_cpu_dtype() -> dtype:
    """Deprecated form of ``get_autocast_dtype("cpu")``."""
    warnings.warn("get_autocast_cpu_dtype() is deprecated. Please use get_autocast_dtype('cpu') "
                  "instead.", DeprecationWarning, stacklevel=2)
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype() -> dtype:
    """Deprecated form of ``get_autocast_dtype("cuda")``."""
    warnings.warn("get_autocast_gpu_dtype() is deprecated. Please use "
                  "get_autocast_dtype('cuda') instead.", DeprecationWarning, stacklevel=2)
    return get_autocast_dtype("cuda")


def is_autocast_cache_enabled() -> bool:
    """Whether autocast would cache casted weights (a flag; nothing is cached)."""
    return _cache["enabled"]


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Set the flag :func:`is_autocast_cache_enabled` reports."""
    _cache["enabled"] = bool(enabled)


def clear_autocast_cache() -> None:
    """Nothing to clear: no casts are cached."""
