"""``ExampleBackend``: two virtual devices in host memory, with per-device memory accounting.

It reuses the numpy backend's primitives (a real backend would launch its own kernels there) and
shows the parts every backend writes itself: devices and their properties (honouring
``PORTAGRAD_VISIBLE_DEVICES`` through :func:`portagrad.backends.helpers.visible_indices`),
allocation with statistics and out-of-memory errors, and copies. The public helpers of
:mod:`portagrad.backends.helpers` (visible devices, the Philox reference, dtype tables) are what
such a backend builds on.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from portagrad.backends.helpers import visible_indices
from portagrad.backends.interface import DeviceProperties, View
from portagrad.backends.numpy import NumpyBackend
from portagrad.errors import OutOfMemoryError

__all__ = ["ExampleBackend"]

_CAPACITY = 1 << 30  # each virtual device pretends to have 1 GiB
_PHYSICAL = 2  # virtual devices this backend has before PORTAGRAD_VISIBLE_DEVICES


class ExampleBackend(NumpyBackend):
    """Device type ``example``: ``example:0`` and ``example:1`` (fewer, or reordered, under
    ``PORTAGRAD_VISIBLE_DEVICES``; memory accounting is per logical index)."""

    device_type = "example"

    def __init__(self) -> None:
        super().__init__()
        # logical index i is physical device self._physical[i]
        self._physical = visible_indices(self.device_type, _PHYSICAL)
        self._lock = threading.Lock()
        self._allocated = [0, 0]
        self._peak = [0, 0]

    def device_count(self) -> int:
        return len(self._physical)

    def get_device_properties(self, index: int) -> DeviceProperties:
        return DeviceProperties(name=f"Example virtual device {self._physical[index]}",
                                type="accelerator",
                                total_memory=_CAPACITY, fp64=True, fp16=False, compute_units=1)

    def allocate(self, index: int, nbytes: int) -> np.ndarray:
        with self._lock:
            if self._allocated[index] + nbytes > _CAPACITY:
                raise OutOfMemoryError(
                    f"example:{index}: tried to allocate {nbytes} bytes with "
                    f"{self._allocated[index]} of {_CAPACITY} bytes in use")
            self._allocated[index] += nbytes
            self._peak[index] = max(self._peak[index], self._allocated[index])
        buf = np.empty(nbytes, np.uint8)
        weakref.finalize(buf, self._release, index, nbytes)
        return buf

    def _release(self, index: int, nbytes: int) -> None:
        with self._lock:
            self._allocated[index] -= nbytes

    def memory_stats(self, index: int) -> dict[str, int]:
        return {"allocated": self._allocated[index], "reserved": self._allocated[index],
                "peak_allocated": self._peak[index]}

    def reset_peak_memory_stats(self, index: int) -> None:
        self._peak[index] = self._allocated[index]

    def host_array(self, src: View) -> None:
        return None  # device memory is not host memory: Tensor.numpy() must copy

    def wrap_host(self, array: np.ndarray) -> None:
        return None
