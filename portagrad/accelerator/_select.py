"""Which device type is "the accelerator", and device arguments resolved against it."""
from __future__ import annotations

import warnings
from typing import Any

from .. import _device
from ._device_module import DeviceModule

__all__ = ["accelerator_type", "module", "require", "device_index_of"]

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def accelerator_type() -> str | None:
    """The non-cpu device type with at least one device whose backend has the highest plugin
    priority (on a tie, the one registered first); ``None`` when only ``cpu`` exists."""
    for dtype in _device.accelerator_types():
        with warnings.catch_warnings():  # a probe: a backend's loading noise is not the caller's
            warnings.simplefilter("ignore")
            if DeviceModule(dtype).is_available():
                return dtype
    return None


def module() -> DeviceModule | None:
    """The :class:`~portagrad.accelerator._device_module.DeviceModule` of the accelerator, or ``None``."""
    dtype = accelerator_type()
    return None if dtype is None else DeviceModule(dtype)


def require() -> DeviceModule:
    """The accelerator's module; ``RuntimeError`` (PyTorch's text) when there is none."""
    mod = module()
    if mod is None:
        raise RuntimeError(_NONE_AVAILABLE)
    return mod


def device_index_of(device: Any, optional: bool) -> int:
    """PyTorch's ``_get_device_index``: an int is an index; a device (or string) must be of the
    accelerator's type; without an index, ``optional`` means the current device."""
    mod = require()
    if isinstance(device, bool):
        raise TypeError(f"expected a device, a device string or an int, got {device!r}")
    if isinstance(device, int):
        return device
    index: int | None = None
    if device is not None:
        if isinstance(device, str):
            device = _device.device(device)
        if not isinstance(device, _device.device):
            raise TypeError(f"expected a device, a device string or an int, got "
                            f"{type(device).__name__}")
        if device.type != mod.device_type:
            raise ValueError(f"{device.type} doesn't match the current accelerator "
                             f"{_device.device(mod.device_type)}.")
        index = device.index
    if index is None:
        if not optional:
            raise ValueError(f"Expected a device with a specified index or an integer, but got: "
                             f"{device}")
        return mod.current_device()
    return index
