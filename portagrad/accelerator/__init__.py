"""The device-agnostic accelerator API (``torch.accelerator``).

"The accelerator" is the non-cpu device type with at least one device whose backend has the
highest plugin priority (``opencl`` with the built-in backends, or a plugin's device type), so a
script written for "any accelerator" runs unmodified on whatever is installed. With only ``cpu``,
as on a PyTorch build without accelerators, :func:`is_available` is ``False``,
:func:`current_accelerator` is ``None`` and the functions that need a device raise
``RuntimeError``.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any

from .. import _device, _dtype
from . import memory
from ._select import accelerator_type, device_index_of, module, require
from ._streams import Stream
from .memory import (empty_cache, empty_host_cache, get_memory_info, max_memory_allocated,
                     max_memory_reserved, memory_allocated, memory_reserved, memory_stats,
                     reset_accumulated_memory_stats, reset_peak_memory_stats)

__all__ = [
    "Graph", "current_accelerator", "current_device_idx", "current_device_index",
    "get_device_capability", "current_stream", "device_count", "device_index", "empty_cache",
    "empty_host_cache", "get_memory_info", "is_available", "max_memory_allocated",
    "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
    "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
    "set_device_index", "set_stream", "synchronize", "memory",
]


def current_accelerator(check_available: bool = False) -> _device.device | None:
    """The accelerator as a device without an index (``device(type='opencl')``), or ``None``.

    The accelerator is chosen among device types that have a device, so ``check_available`` only
    matters in that PyTorch accepts it."""
    dtype = accelerator_type()
    if dtype is None or (check_available and not is_available()):
        return None
    return _device.device(dtype)


def is_available() -> bool:
    """Whether an accelerator with at least one visible device exists."""
    return accelerator_type() is not None


def device_count() -> int:
    """Number of devices of the accelerator (0 without one)."""
    mod = module()
    return 0 if mod is None else mod.device_count()


def current_device_index() -> int:
    """Index of the accelerator's current device."""
    return require().current_device()


def set_device_index(device: Any, /) -> None:
    """Make ``device`` (an index, or a device of the accelerator's type with an index) the current
    device; a negative index is a no-op, as in PyTorch."""
    mod = require()
    index = device_index_of(device, optional=False)
    if index >= 0:
        mod.set_device(index)


def synchronize(device: Any = None, /) -> None:
    """Wait until all work queued on the device (default: the current one) has finished."""
    mod = require()
    mod.synchronize(device_index_of(device, optional=True))


def get_device_capability(device: Any = None, /) -> dict[str, Any]:
    """``{"supported_dtypes": set of dtypes}`` that tensors on the device can have."""
    mod = require()
    props = mod.get_device_properties(device_index_of(device, optional=True))
    dtypes = set(_dtype.ALL_DTYPES)
    if not props.fp64:
        dtypes.discard(_dtype.float64)
    if not props.fp16:
        dtypes.discard(_dtype.float16)
    return {"supported_dtypes": dtypes}


class device_index:
    """``with pg.accelerator.device_index(1):`` makes device 1 current inside the block and
    restores the previous one after; ``None`` changes nothing."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            mod = require()
            self.prev_idx = mod.current_device()
            mod.set_device(self.idx)

    def __exit__(self, *exc_info: object) -> None:
        if self.idx is not None and self.prev_idx >= 0:
            require().set_device(self.prev_idx)


def _deprecated(fn: Any, new: str) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"Use `{new}` instead.", FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    return wrapper


current_device_idx = _deprecated(current_device_index, "current_device_index")
set_device_idx = _deprecated(set_device_index, "set_device_index")


def current_stream(device: Any = None, /) -> Stream:
    """The current stream of ``device`` (an index, or a device of the accelerator's type; default:
    the current device), a :class:`~portagrad.Stream`. Each device has one in-order queue, so
    this is always that queue (``stream_id`` 0)."""
    index = device_index_of(device, optional=True)
    return Stream(_device.device(require().device_type, index))


def set_stream(stream: Stream) -> None:
    """Make ``stream`` current on its device and, as PyTorch's, its device the current device.
    ``stream`` must be on the accelerator's device type. (A device has one queue: only the device
    changes.)"""
    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream(): argument 'stream' must be torch.Stream, not "
                        f"{type(stream).__name__}")
    mod = require()
    if stream.device.type != mod.device_type:
        raise ValueError(f"{stream.device.type} doesn't match the current accelerator "
                         f"{_device.device(mod.device_type)}.")
    mod.set_device(stream.device_index)


class Graph:
    """Not available: capturing and replaying device work (CUDA graphs) is not implemented."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("pg.accelerator.Graph: graph capture and replay are not "
                                  "implemented")
