"""Pinned (page-locked) host memory, provided by an accelerator backend that can allocate it."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._device import accelerator_types, as_device
from .plugins.manager import get_backend

__all__ = ["pinned_buffer", "pinning_available", "pinning_backend"]


def _pinning_backends() -> list:
    """The non-cpu backends with a device, in accelerator order (``pg.accelerator``'s choice
    first: the highest plugin priority, then the first registered)."""
    out = []
    for device_type in accelerator_types():
        try:
            backend = get_backend(device_type)
        except Exception:  # an unavailable backend simply cannot pin
            continue
        if backend.device_count() > 0:
            out.append(backend)
    return out


def pinning_available() -> bool:
    """Whether some backend can provide page-locked host memory."""
    return bool(_pinning_backends())


def pinning_backend(device: Any) -> Any:
    """The backend that pins host memory for ``device`` (a device, or a string such as
    ``"opencl"``): that device type's own backend."""
    dev = as_device(device)
    if dev.type == "cpu":
        raise RuntimeError("cannot pin memory for the cpu device: pinned memory is for "
                           "copies to an accelerator")
    return get_backend(dev.type)


def pinned_buffer(nbytes: int, device: Any = None) -> np.ndarray:
    """A page-locked host buffer of ``nbytes`` bytes (1-D ``uint8``) from the backend of
    ``device`` (``Tensor.pin_memory(device)``), or by default from the first backend in
    accelerator order that offers one; ``RuntimeError`` when none does (as PyTorch without an
    accelerator)."""
    if device is not None:
        backend = pinning_backend(device)
        arr = backend.pin_memory(nbytes)
        if arr is None:
            raise RuntimeError(f"Cannot pin memory for device type {backend.device_type!r}: its "
                               f"backend provides no page-locked host memory")
        return arr
    for backend in _pinning_backends():
        arr = backend.pin_memory(nbytes)
        if arr is not None:
            return arr
    raise RuntimeError("Cannot pin memory: no accelerator backend that provides page-locked host "
                       "memory is available (install portagrad[opencl] for the OpenCL backend)")
