"""``pg.cuda``: the answers ``torch.cuda`` gives on a build without CUDA.

portagrad has no CUDA backend of its own, so scripts that probe for CUDA
(``if pg.cuda.is_available()``) take their CPU path, seeding and cache calls are no-ops, memory
queries answer zero, and what needs a CUDA device raises
``AssertionError("Torch not compiled with CUDA enabled")`` as PyTorch does. For code that should
run on whatever accelerator exists, use :mod:`portagrad.accelerator`. If a plugin serves the
``cuda`` device type, the device queries here are answered by its backend.
"""
from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from ..accelerator._device_module import DeviceModule
from ..plugins.manager import get_state
from . import amp

__all__ = [
    "amp", "is_available", "device_count", "is_initialized", "init", "is_bf16_supported",
    "is_tf32_supported", "get_arch_list", "manual_seed", "manual_seed_all", "seed", "seed_all",
    "initial_seed", "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
    "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "memory_stats", "synchronize", "current_device", "set_device",
    "get_device_name", "get_device_properties", "get_device_capability", "mem_get_info",
    "ipc_collect", "current_stream", "device", "Event", "Stream", "NOT_COMPILED", "CUDAGraph",
    "graph", "graph_pool_handle", "make_graphed_callables", "StreamContext", "stream",
]

#: PyTorch's message for CUDA calls on a build without CUDA.
NOT_COMPILED = "Torch not compiled with CUDA enabled"


_F = TypeVar("_F", bound=Callable[..., Any])


def _plugin_first(fn: _F) -> _F:
    """If a plugin serves the ``cuda`` device type, its device module answers instead (the
    answers below are for when nothing does)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "cuda" in get_state().specs:
            return getattr(DeviceModule("cuda"), fn.__name__)(*args, **kwargs)
        return fn(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


def _no_cuda(what: str) -> NoReturn:
    raise AssertionError(f"{NOT_COMPILED} (portagrad has no CUDA backend; {what} needs a CUDA "
                         f"device: use pg.accelerator for device-agnostic code)")


@_plugin_first
def is_available() -> bool:
    """``False``: there is no CUDA backend."""
    return False


@_plugin_first
def device_count() -> int:
    """``0``: there is no CUDA backend."""
    return 0


def is_initialized() -> bool:
    """``False``: CUDA is never initialised."""
    return False


def init() -> None:
    """Raises: there is no CUDA to initialise."""
    _no_cuda("init()")


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """``False``, as PyTorch without CUDA."""
    return False


def is_tf32_supported() -> bool:
    """``False``, as PyTorch without CUDA."""
    return False


def get_arch_list() -> list[str]:
    """``[]``: no CUDA architectures are compiled in."""
    return []


@_plugin_first
def manual_seed(seed: int) -> None:
    """No-op without CUDA (PyTorch queues the seed for a CUDA that never comes)."""


def manual_seed_all(seed: int) -> None:
    """No-op without CUDA."""


def seed() -> None:
    """No-op without CUDA."""


def seed_all() -> None:
    """No-op without CUDA."""


def initial_seed() -> int:
    """Raises: there is no CUDA generator."""
    _no_cuda("initial_seed()")


def get_rng_state(device: Any = "cuda") -> Any:
    """Raises: there is no CUDA generator."""
    _no_cuda("get_rng_state()")


def get_rng_state_all() -> list:
    """``[]``: one state per CUDA device, and there are none."""
    return []


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """No-op without CUDA (PyTorch defers it until CUDA initialises, which never happens)."""


def set_rng_state_all(new_states: Any) -> None:
    """No-op without CUDA."""


@_plugin_first
def empty_cache() -> None:
    """No-op: there is no CUDA cache."""


@_plugin_first
def memory_allocated(device: Any = None) -> int:
    """``0``: nothing is allocated on CUDA."""
    return 0


@_plugin_first
def max_memory_allocated(device: Any = None) -> int:
    """``0``."""
    return 0


@_plugin_first
def memory_reserved(device: Any = None) -> int:
    """``0``."""
    return 0


def max_memory_reserved(device: Any = None) -> int:
    """``0``."""
    return 0


@_plugin_first
def memory_stats(device: Any = None) -> OrderedDict[str, Any]:
    """Empty, as PyTorch before CUDA is initialised."""
    return OrderedDict()


@_plugin_first
def synchronize(device: Any = None) -> None:
    """Raises: there is no CUDA device to wait for."""
    _no_cuda("synchronize()")


@_plugin_first
def current_device() -> int:
    """Raises: there is no CUDA device."""
    _no_cuda("current_device()")


@_plugin_first
def set_device(device: Any) -> None:
    """Raises: there is no CUDA device to select."""
    _no_cuda("set_device()")


@_plugin_first
def get_device_name(device: Any = None) -> str:
    """Raises: there is no CUDA device."""
    _no_cuda("get_device_name()")


@_plugin_first
def get_device_properties(device: Any = None) -> Any:
    """Raises: there is no CUDA device."""
    _no_cuda("get_device_properties()")


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """Raises: there is no CUDA device."""
    _no_cuda("get_device_capability()")


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """Raises: there is no CUDA device."""
    _no_cuda("mem_get_info()")


def ipc_collect() -> None:
    """Raises: there is no CUDA IPC."""
    _no_cuda("ipc_collect()")


def current_stream(device: Any = None) -> Any:
    """Raises: there are no CUDA streams."""
    _no_cuda("current_stream()")


class device:
    """``with pg.cuda.device(i):`` raises on entry, as PyTorch without CUDA support."""

    def __init__(self, device: Any) -> None:
        self.idx = device

    def __enter__(self) -> None:
        raise RuntimeError("PyTorch was compiled without CUDA support (portagrad has no CUDA "
                           "backend)")

    def __exit__(self, *exc: object) -> None:
        return None


class Event:
    """Raises on creation: CUDA events need CUDA."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("pg.cuda.Event requires CUDA support (portagrad has no CUDA backend)")


class Stream:
    """Raises on creation: CUDA streams need CUDA."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("pg.cuda.Stream requires CUDA support (portagrad has no CUDA backend)")


class CUDAGraph:
    """Raises on creation: CUDA graphs need CUDA (``pg.compile(mode="reduce-overhead")`` captures
    steps on portagrad's own devices)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("pg.cuda.CUDAGraph requires CUDA support (portagrad has no CUDA "
                           "backend)")


class graph:
    """``with pg.cuda.graph(g):`` raises on creation, as PyTorch without CUDA support."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("pg.cuda.graph requires CUDA support (portagrad has no CUDA backend)")


def graph_pool_handle() -> Any:
    """Raises: CUDA graph memory pools need CUDA."""
    raise RuntimeError("pg.cuda.graph_pool_handle requires CUDA support (portagrad has no CUDA "
                       "backend)")


def make_graphed_callables(callables: Any, sample_args: Any, *args: Any, **kwargs: Any) -> Any:
    """Raises: CUDA graph capture needs CUDA."""
    raise RuntimeError("pg.cuda.make_graphed_callables requires CUDA support (portagrad has no "
                       "CUDA backend)")


class StreamContext:
    """``with pg.cuda.StreamContext(s):`` — with ``None`` (no stream) a context that changes
    nothing, as in PyTorch; a stream cannot exist without CUDA."""

    def __init__(self, stream: Any) -> None:
        if stream is not None:
            _no_cuda("StreamContext")
        self.stream = stream

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def stream(stream: Any) -> StreamContext:
    """The :class:`StreamContext` of ``stream`` (``None``: changes nothing)."""
    return StreamContext(stream)
