"""Per-device byte counts that a backend's default memory statistics report."""
from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["MemoryCounter"]


class MemoryCounter:
    """Bytes in live buffers per device index, and their peak since the last reset.

    A backend calls :meth:`track` from ``allocate`` for each buffer it hands out; the count goes
    down when the buffer is garbage collected (a weak reference's callback, cheaper per
    allocation than ``weakref.finalize``), so the buffer must support weak references (numpy
    arrays, most native handle objects; not ``bytes``/``bytearray``).
    :class:`~portagrad.backends.interface.Backend` keeps one per backend object
    (``Backend.memory_counter``) and its default ``memory_stats`` reports it.
    """

    def __init__(self) -> None:
        # re-entrant: a finalizer may run (garbage collection) while this thread holds the lock
        self._lock = threading.RLock()
        self._allocated: dict[int, int] = {}
        self._peak: dict[int, int] = {}
        # id(weak reference) -> (the reference, device index, bytes): keeps each reference alive
        # until its buffer dies (buffers such as ndarrays are unhashable, so not keyed by them)
        self._live: dict[int, tuple[weakref.ref[Any], int, int]] = {}

    def track(self, index: int, buffer: Any, nbytes: int) -> None:
        """Count ``nbytes`` on device ``index`` until ``buffer`` is released."""
        ref = weakref.ref(buffer, self._release)
        with self._lock:
            self._live[id(ref)] = (ref, index, nbytes)
            now = self._allocated.get(index, 0) + nbytes
            self._allocated[index] = now
            if now > self._peak.get(index, 0):
                self._peak[index] = now

    def _release(self, ref: weakref.ref[Any]) -> None:
        with self._lock:
            entry = self._live.pop(id(ref), None)
            if entry is not None:
                self._allocated[entry[1]] -= entry[2]

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
