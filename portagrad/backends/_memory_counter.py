"""Per-device byte counts that a backend's default memory statistics report."""
from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["MemoryCounter"]


class MemoryCounter:
    """Bytes in live buffers per device index, and their peak since the last reset.

    A backend calls :meth:`track` from ``allocate`` for each buffer it hands out; the count goes
    down when the buffer is garbage collected (``weakref.finalize``), so the buffer must support
    weak references (numpy arrays, most native handle objects; not ``bytes``/``bytearray``).
    :class:`~portagrad.backends.interface.Backend` keeps one per backend object
    (``Backend.memory_counter``) and its default ``memory_stats`` reports it.
    """

    def __init__(self) -> None:
        # re-entrant: a finalizer may run (garbage collection) while this thread holds the lock
        self._lock = threading.RLock()
        self._allocated: dict[int, int] = {}
        self._peak: dict[int, int] = {}

    def track(self, index: int, buffer: Any, nbytes: int) -> None:
        """Count ``nbytes`` on device ``index`` until ``buffer`` is released."""
        with self._lock:
            now = self._allocated.get(index, 0) + nbytes
            self._allocated[index] = now
            if now > self._peak.get(index, 0):
                self._peak[index] = now
        weakref.finalize(buffer, self._release, index, nbytes)

    def _release(self, index: int, nbytes: int) -> None:
        with self._lock:
            self._allocated[index] -= nbytes

    def allocated(self, index: int) -> int:
        """Bytes in live buffers on device ``index``."""
        return self._allocated.get(index, 0)

    def stats(self, index: int) -> dict[str, int]:
        """``{"allocated", "reserved", "peak_allocated"}`` for device ``index``: with no cache,
        ``reserved`` equals ``allocated``."""
        with self._lock:
            now = self._allocated.get(index, 0)
            return {"allocated": now, "reserved": now, "peak_allocated": self._peak.get(index, 0)}

    def reset_peak(self, index: int) -> None:
        """Set the peak of device ``index`` to its current count."""
        with self._lock:
            self._peak[index] = self._allocated.get(index, 0)
