"""Pinned (page-locked) host memory, provided by whichever accelerator backend can allocate it."""
from __future__ import annotations

import numpy as np

from .plugins.manager import get_backend, get_state

__all__ = ["pinned_buffer", "pinning_available"]


def _pinning_backends() -> list:
    out = []
    for device_type in get_state().specs:
        if device_type == "cpu":
            continue
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


def pinned_buffer(nbytes: int) -> np.ndarray:
    """A page-locked host buffer of ``nbytes`` bytes (1-D ``uint8``), from the first backend that
    offers one; ``RuntimeError`` when none does (as PyTorch without an accelerator)."""
    for backend in _pinning_backends():
        arr = backend.pin_memory(nbytes)
        if arr is not None:
            return arr
    raise RuntimeError("Cannot pin memory: no accelerator backend that provides page-locked host "
                       "memory is available (install portagrad[opencl] for the OpenCL backend)")
