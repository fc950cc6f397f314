"""Devices: ``pg.device``, the default device, and resolving a device to its backend.

A device string is ``"<type>"`` or ``"<type>:<index>"`` (``"cpu"``, ``"opencl"``, ``"opencl:1"``).
Each device type is served by one backend found through the plugin manager. Resolution is cached, so
dispatching an op costs a dict lookup, never a plugin call.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from .plugins.manager import BackendUnavailableError, get_backend, get_state, on_reset

__all__ = ["device", "DeviceLike", "set_default_device", "get_default_device", "as_device",
           "resolve", "current_index", "set_current_index", "NotCompiledError",
           "host_only_process", "accelerator_types"]


class device:
    """A device, ``pg.device("opencl:1")`` or ``pg.device("opencl", 1)``, as ``torch.device``.

    Also a context manager: inside ``with pg.device("opencl:1"):`` factories create tensors there.
    """

    __slots__ = ("type", "index", "_prev")
    type: str
    index: int | None

    def __init__(self, type: str | device, index: int | None = None) -> None:
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(): index must not be given with a device object")
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string or a device, got "
                            f"{type.__class__.__name__}")
        spec = type.strip()
        if ":" in spec:
            if index is not None:
                raise ValueError(f"type (string) must not include an index because index was "
                                 f"passed explicitly: {spec}")
            spec, _, idx = spec.partition(":")
            try:
                index = int(idx)
            except ValueError:
                raise RuntimeError(f"Invalid device string: '{type}'") from None
        if not spec or not spec.replace("_", "").isalnum():
            raise RuntimeError(f"Invalid device string: '{type}'")
        if index is not None:
            index = int(index)
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = spec
        self.index = index

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None
                                              else ")")

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, ValueError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self) -> Any:
        return (device, (self.type, self.index))

    def __enter__(self) -> device:
        stack = _default_stack()
        stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _default_stack().pop()


DeviceLike = str | device | int | None

_tls = threading.local()
_global_default: device | None = None
_current: dict[str, int] = {}  # device type -> current (logical) index, as torch.cuda.current_device
_resolved: dict[tuple[str, int | None], tuple[device, Any, int]] = {}
_host_only: str | None = None  # why only the cpu may be used here (see host_only_process)


def _default_stack() -> list[device]:
    stack = getattr(_tls, "stack", None)
    if stack is None:
        stack = _tls.stack = []
    return stack


def _clear_caches() -> None:
    _resolved.clear()


on_reset(_clear_caches)  # a reset of the plugin manager may change every device's backend


def host_only_process(reason: str | None) -> None:
    """Make this process use the cpu: the default device becomes ``cpu`` (a DataLoader worker
    collates on the host, as PyTorch's default device does not apply in workers). With a
    ``reason`` (a forked child: device contexts do not survive ``fork``, and using one can hang),
    resolving any other device raises ``RuntimeError`` naming it and the reason."""
    global _global_default, _host_only
    _global_default = _CPU
    _tls.stack = []
    _host_only = reason
    _resolved.clear()


def set_default_device(dev: DeviceLike) -> None:
    """Set the device factories use when no ``device=`` is given (``None`` restores ``cpu``)."""
    global _global_default
    _global_default = None if dev is None else as_device(dev)


def get_default_device() -> device:
    """The device new tensors are created on: innermost ``with pg.device(...)``, then
    :func:`set_default_device`, then ``PORTAGRAD_DEVICE``, then ``cpu``."""
    stack = getattr(_tls, "stack", None)
    if stack:
        return stack[-1]
    if _global_default is not None:
        return _global_default
    env = os.environ.get("PORTAGRAD_DEVICE")
    if env:
        return device(env)
    return _CPU


def as_device(dev: DeviceLike) -> device:
    """Normalise a device argument. ``None`` means the default device; an int means the current
    accelerator type's device of that index (as torch treats ``device=0``)."""
    if isinstance(dev, device):
        return dev
    if dev is None:
        return get_default_device()
    if isinstance(dev, str):
        return device(dev)
    if isinstance(dev, int) and not isinstance(dev, bool):
        accel = accelerator_types()
        if not accel:
            raise RuntimeError(f"device index {dev} given but no accelerator backend is available")
        return device(accel[0], dev)
    raise TypeError(f"expected a device (str, pg.device or int), got {type(dev).__name__}")


def accelerator_types() -> list[str]:
    """The non-cpu device types with a backend spec, best first: the highest plugin priority,
    then the one registered first (``pg.accelerator`` picks the first that has a device; an int
    device means the first one's device of that index, as ``device=0`` means ``cuda:0``)."""
    specs = get_state().specs
    order = {t: i for i, t in enumerate(specs)}
    return sorted((t for t in specs if t != "cpu"), key=lambda t: (-specs[t].priority, order[t]))


def current_index(device_type: str) -> int:
    """The current device index of ``device_type`` (0 unless changed with ``set_current_index``)."""
    return _current.get(device_type, 0)


def set_current_index(device_type: str, index: int) -> None:
    """Select the current device of ``device_type`` (``pg.opencl.set_device``)."""
    _current[device_type] = index
    # list(): another thread may resolve (insert) meanwhile, and iterating the dict itself would
    # raise; pop(): or clear it (a plugin reset)
    for key in [k for k in list(_resolved) if k[0] == device_type and k[1] is None]:
        _resolved.pop(key, None)


def resolve(dev: device) -> tuple[device, Any, int]:
    """``(concrete device, backend, index)`` for ``dev``; fills in the current index if missing."""
    key = (dev.type, dev.index)
    hit = _resolved.get(key)
    if hit is not None:
        return hit
    if _host_only is not None and dev.type != "cpu":
        raise RuntimeError(f"Cannot use device '{dev}' {_host_only}")
    try:
        backend = get_backend(dev.type)
    except BackendUnavailableError as exc:
        if dev.type in _NOT_BUILT:
            raise NotCompiledError(
                f"{_NOT_BUILT[dev.type]}: portagrad has no {dev.type!r} backend, so nothing can be "
                f"placed on device '{dev}' ({exc}); for code that runs on any accelerator use "
                f"pg.accelerator.current_accelerator()") from None
        raise
    count = backend.device_count()
    if dev.type == "cpu":
        if dev.index not in (None, 0):
            raise RuntimeError(f"Invalid device {dev}: the cpu device has only index 0")
        concrete, index = _CPU, 0
    else:
        index = current_index(dev.type) if dev.index is None else dev.index
        if not 0 <= index < count:
            raise RuntimeError(
                f"Invalid device {dev.type}:{index}: {count} {dev.type} device(s) available"
                + (" (restricted by PORTAGRAD_VISIBLE_DEVICES)"
                   if os.environ.get("PORTAGRAD_VISIBLE_DEVICES") else ""))
        concrete = device(dev.type, index)
    result = (concrete, backend, index)
    _resolved[key] = result
    if concrete is not dev:
        _resolved[(concrete.type, concrete.index)] = result
    return result


_CPU = device("cpu")


class NotCompiledError(BackendUnavailableError, AssertionError):
    """A device of a type PyTorch knows but portagrad has no backend for (``cuda``, ``mps``): an
    ``AssertionError`` as PyTorch's "Torch not compiled with CUDA enabled", and a
    ``RuntimeError`` as every other unavailable backend here."""


# PyTorch's device types without a backend here -> PyTorch's message for them
_NOT_BUILT = {"cuda": "Torch not compiled with CUDA enabled",
              "mps": "The MPS backend is not available (Torch not compiled with MPS enabled)"}
