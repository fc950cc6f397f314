"""``autocast``: PyTorch's mixed-precision region, and ``custom_fwd``/``custom_bwd``.

Inside an enabled region the ops of PyTorch's autocast lists (:mod:`portagrad._autocast_policy`)
cast their floating inputs: matmuls, convolutions and ``linear`` to the region's dtype, the ops
that need range or precision (losses, reductions, ``exp``/``log`` on GPU device types) to float32,
a few to the widest input type; every other op runs in its inputs' types. Regions are available
on ``cpu`` (PyTorch's CPU lists, bfloat16 by default), ``opencl`` and plugin device types
(PyTorch's GPU lists, float16 by default); a ``cuda`` region warns and disables itself as PyTorch
does without CUDA. The state is thread-local. A device that cannot compute in the region's dtype
(a backend that declines the 16-bit dtype) raises :class:`~portagrad.errors.DTypeError` at the first cast.
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from .. import _autocast
from .._dtype import bfloat16, dtype, float16, float64
from .._tensor import Tensor
from ..plugins.manager import device_types

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype",
           "set_autocast_dtype", "set_autocast_enabled", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "get_autocast_cpu_dtype",
           "set_autocast_cpu_dtype", "set_autocast_gpu_dtype", "set_autocast_cpu_enabled",
           "get_autocast_gpu_dtype", "is_autocast_cpu_enabled", "autocast_increment_nesting",
           "autocast_decrement_nesting", "custom_fwd", "custom_bwd"]

# the device types PyTorch knows; those portagrad does not have behave as on a build without them
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                       "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                       "privateuseone")
# those PyTorch has an autocast dispatch key for (is_autocast_available is true for them)
_TORCH_AUTOCAST_TYPES = ("cpu", "cuda", "xpu", "ipu", "hpu", "xla", "mps", "mtia", "maia",
                         "privateuseone")


def _check_device_type(device_type: str) -> str:
    if not isinstance(device_type, str) or (device_type not in _TORCH_DEVICE_TYPES
                                            and device_type not in device_types()):
        raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at "
                           f"start of device string: {device_type}")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast`` supports ``device_type``: ``cpu``, ``opencl``, plugin device types
    and the types PyTorch has autocast for (``cuda`` ... which disable themselves here)."""
    _check_device_type(device_type)
    return device_type in device_types() or device_type in _TORCH_AUTOCAST_TYPES


class autocast:
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a region where
    the ops of PyTorch's autocast lists run in ``dtype`` (or float32, or the widest input type);
    a context manager and a decorator. ``dtype`` defaults to :func:`get_autocast_dtype`
    (bfloat16 on cpu, float16 elsewhere); ``cache_enabled`` (default: the current flag) keeps the
    casts of parameters for reuse until the outermost region exits."""

    def __init__(self, device_type: str, dtype: dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self._cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                               else bool(cache_enabled))
        enabled = bool(enabled)
        if enabled:
            if device_type == "cuda" and "cuda" not in device_types():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", UserWarning, stacklevel=2)
                enabled = False
            elif self.fast_dtype not in (bfloat16, float16):
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              "portagrad.bfloat16, portagrad.float16 currently.", UserWarning,
                              stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, *exc: object) -> None:
        # the cached casts live until the outermost region (enabled or not) is left
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got "
                            f"{type(func).__name__}. Did you mean to use autocast as a context "
                            "manager? For example:\n    with portagrad.autocast(device_type=...):"
                            "\n        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is enabled for ``device_type`` (``"cuda"`` when omitted) in this
    thread."""
    return _autocast.is_enabled("cuda" if device_type is None
                                else _check_device_type(device_type))


def is_autocast_cpu_enabled() -> bool:
    """Deprecated form of ``is_autocast_enabled("cpu")``."""
    return _autocast.is_enabled("cpu")


def set_autocast_enabled(device_type: str | bool, enabled: bool | None = None) -> None:
    """Enable or disable autocast for ``device_type`` in this thread (the one-argument form
    ``set_autocast_enabled(enabled)`` is PyTorch's deprecated CUDA form)."""
    if enabled is None:
        device_type, enabled = "cuda", bool(device_type)
    _autocast.set_enabled(_check_device_type(str(device_type)), bool(enabled))


def get_autocast_dtype(device_type: str) -> dtype:
    """This thread's autocast dtype for ``device_type`` (bfloat16 on cpu, float16 elsewhere,
    unless :func:`set_autocast_dtype` or a region changed it)."""
    return _autocast.get_dtype(_check_device_type(device_type))


def set_autocast_dtype(device_type: str, dtype: dtype) -> None:
    """Set this thread's autocast dtype for ``device_type``."""
    _autocast.set_dtype(_check_device_type(device_type), dtype)


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


def set_autocast_cpu_dtype(dtype: dtype) -> None:
    """Deprecated form of ``set_autocast_dtype("cpu", dtype)``."""
    warnings.warn("torch.set_autocast_cpu_dtype(dtype) is deprecated. Please use "
                  "torch.set_autocast_dtype('cpu', dtype) instead.", DeprecationWarning,
                  stacklevel=2)
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype: dtype) -> None:
    """Deprecated form of ``set_autocast_dtype("cuda", dtype)``."""
    warnings.warn("torch.set_autocast_gpu_dtype(dtype) is deprecated. Please use "
                  "torch.set_autocast_dtype('cuda', dtype) instead.", DeprecationWarning,
                  stacklevel=2)
    set_autocast_dtype("cuda", dtype)


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated form of ``set_autocast_enabled("cpu", enabled)``."""
    warnings.warn("torch.set_autocast_cpu_enabled(enabled) is deprecated. Please use "
                  "torch.set_autocast_enabled('cpu', enabled) instead.", DeprecationWarning,
                  stacklevel=2)
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    set_autocast_enabled("cpu", enabled)


def is_autocast_cache_enabled() -> bool:
    """Whether regions cache the casts of parameters (this thread)."""
    return _autocast.is_cache_enabled()


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Set this thread's cache flag."""
    _autocast.set_cache_enabled(enabled)


def clear_autocast_cache() -> None:
    """Drop this thread's cached casts."""
    _autocast.clear_cache()


def autocast_increment_nesting() -> int:
    """Count one more region entered in this thread; the new depth."""
    return _autocast.increment_nesting()


def autocast_decrement_nesting() -> int:
    """Count one region left in this thread; the new depth."""
    return _autocast.decrement_nesting()


def _cast(value: Any, device_type: str, to: dtype) -> Any:
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not float64)
        return value.to(to) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Mapping):
        return {_cast(k, device_type, to): _cast(v, device_type, to) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, to) for v in value)
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str,
               cast_inputs: dtype | None = None) -> Any:
    """Decorator for the ``forward`` of a custom ``autograd.Function``. In an enabled region,
    with ``cast_inputs`` set, floating tensor arguments are cast to it and ``forward`` runs with
    autocast disabled; without it, ``forward`` runs under the current state. Either way the
    state is recorded on ``ctx`` for :func:`custom_bwd`."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Any:
    """Decorator for the ``backward`` of a custom ``autograd.Function``: runs it under the
    autocast state (enabled, dtype) its ``forward`` ran under."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
