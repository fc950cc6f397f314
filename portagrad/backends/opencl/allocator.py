"""A caching device allocator: freed buffers are kept per size class and handed out again.

Creating an OpenCL buffer costs a driver call (and on GPUs a device allocation); tensors come and
go at every op, so, as in PyTorch's CUDA allocator, freed buffers go to a cache keyed by their
rounded size and are reused.

Why reuse is safe without waiting: a buffer returns to the cache when its last Python reference
dies, possibly while kernels enqueued on it have not run yet. Every kernel of one device runs on
the device's single *in-order* queue, so whatever the next owner enqueues runs after them. That
holds across threads too: the last command on the buffer was enqueued before the buffer came back,
and the next owner takes it out of the cache after that.

Threads: buffers are allocated by whichever thread runs an op and come back from
``DeviceBuffer.__del__``, which runs in whichever thread drops the last reference, or inside a
garbage collection at any allocation of any thread. The cache and the statistics are therefore
guarded by the allocator's re-entrant ``lock`` (re-entrant for that collection running inside a
critical section of the same thread). Under it only dicts, lists and counters change: driver calls
(creating and releasing buffers) run outside it, and no other lock is taken inside it.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ...errors import OutOfMemoryError
from .errors import OOM_CODES, translate

__all__ = ["CachingAllocator", "DeviceBuffer", "size_class"]

_SMALL = 1 << 20  # below 1 MiB: 512-byte granularity
_MIN = 512


def size_class(nbytes: int) -> int:
    """Rounded size of a request: multiples of 512 B below 1 MiB, then 8 classes per power of two
    (at most 12.5 % waste)."""
    if nbytes <= _MIN:
        return _MIN
    if nbytes < _SMALL:
        return (nbytes + _MIN - 1) // _MIN * _MIN
    step = 1 << (nbytes.bit_length() - 4)  # 1/8 of the power of two below
    return (nbytes + step - 1) // step * step


class DeviceBuffer:
    """What :meth:`OpenCLBackend.allocate` returns: an OpenCL buffer plus its bookkeeping.

    ``mem`` is the ``pyopencl.Buffer`` kernels receive; ``nbytes`` the requested size. When the
    object dies the buffer goes back to its allocator's cache (see
    :meth:`CachingAllocator._release` for a buffer a pending fused node writes).
    """

    __slots__ = ("__weakref__", "_release", "device", "lazy", "mem", "nbytes", "size")

    def __init__(self, mem: Any, nbytes: int, size: int, device: int,
                 release: Callable[[DeviceBuffer], None]) -> None:
        self.mem = mem
        self.nbytes = nbytes
        self.size = size
        self.device = device
        self._release = release
        #: the pending fused node (see :mod:`.fusion`) that will write this buffer, if any
        self.lazy: Any = None

    def __len__(self) -> int:
        return self.nbytes

    def __repr__(self) -> str:
        return f"DeviceBuffer(opencl:{self.device}, nbytes={self.nbytes})"

    def __del__(self) -> None:
        try:
            self._release(self)
        except Exception:  # interpreter shutdown: modules may be gone
            pass


class CachingAllocator:
    """Per-device cache of free buffers by size class, with PyTorch-like statistics."""

    def __init__(self, context: Any, device_label: str, index: int, total_memory: int,
                 max_alloc: int) -> None:
        self._ctx = context
        self._label = device_label
        self._index = index
        self.total_memory = total_memory
        #: what the device reports; ``total_memory`` is the cap, lowered by
        #: :meth:`set_memory_fraction`
        self.device_memory = total_memory
        self.max_alloc = max_alloc
        #: guards the cache and the statistics (see the module doc); the fuser also holds it
        #: while it claims the outputs of a group it flushes (see :meth:`_release`)
        self.lock = threading.RLock()
        self._free: dict[int, list[Any]] = {}
        self.allocated = 0
        self.reserved = 0
        self.peak_allocated = 0
        self.cached = 0
        self.num_allocs = 0  # buffers created (cache misses)
        self.num_reuses = 0  # requests served from the cache

    # -------------------------------------------------------------- public
    def allocate(self, nbytes: int) -> DeviceBuffer:
        """A buffer of at least ``nbytes``; raises :class:`OutOfMemoryError` when impossible."""
        size = size_class(nbytes)
        mem = None
        lock = self.lock
        lock.acquire()  # (acquire/release in try/finally: cheaper than ``with`` on this hot path)
        try:
            bucket = self._free.get(size)
            if bucket:
                mem = bucket.pop()
                self.cached -= size
                self.num_reuses += 1
                self.allocated += size
                if self.allocated > self.peak_allocated:  # cheaper than max()
                    self.peak_allocated = self.allocated
        finally:
            lock.release()
        if mem is None:
            mem = self._create(nbytes, size)
        return DeviceBuffer(mem, nbytes, size, self._index, self._release)

    def empty_cache(self) -> None:
        """Release every cached buffer to the driver."""
        with self.lock:
            free, self._free = self._free, {}
            self.reserved -= self.cached
            self.cached = 0
        for bucket in free.values():  # out of the cache: no other thread can get these now
            for mem in bucket:
                try:
                    mem.release()
                except Exception:  # already released
                    pass

    def stats(self) -> dict[str, int]:
        with self.lock:  # one consistent snapshot
            return {"allocated": self.allocated, "reserved": self.reserved,
                    "peak_allocated": self.peak_allocated, "cached": self.cached,
                    "num_allocs": self.num_allocs, "num_reuses": self.num_reuses}

    def set_memory_fraction(self, fraction: float) -> None:
        """Cap the bytes reserved on the device at ``fraction`` of its memory: a request past it
        empties the cache and then raises :class:`OutOfMemoryError`."""
        with self.lock:
            self.total_memory = int(fraction * self.device_memory)

    def reset_peak(self) -> None:
        with self.lock:
            self.peak_allocated = self.allocated

    # ------------------------------------------------------------- private
    def _oom(self, nbytes: int, why: str) -> OutOfMemoryError:
        mib = 1 << 20
        return OutOfMemoryError(
            f"{self._label}: out of memory: tried to allocate {nbytes / mib:.2f} MiB ({nbytes} bytes); "
            f"{why}; {self.allocated / mib:.2f} MiB allocated, {self.reserved / mib:.2f} MiB reserved "
            f"by portagrad, device total {self.total_memory / mib:.2f} MiB, max single allocation "
            f"{self.max_alloc / mib:.2f} MiB")

    def _reserve(self, size: int) -> bool:
        """Count ``size`` more bytes reserved if that stays within the device's memory."""
        with self.lock:
            if self.reserved + size > self.total_memory:
                return False
            self.reserved += size
            return True

    def _create(self, nbytes: int, size: int) -> Any:
        import pyopencl as cl

        # OpenCL allocates lazily, so an over-large request may "succeed" and fail at first use:
        # check the limits the device reports to fail deterministically, here. The bytes are
        # reserved before the driver call (outside the lock), so that threads allocating at once
        # cannot together pass the check.
        if self.max_alloc and size > self.max_alloc:
            raise self._oom(nbytes, "larger than the device's max allocation size")
        if not self._reserve(size):
            self.empty_cache()
            if not self._reserve(size):
                raise self._oom(nbytes, "not enough free device memory")
        try:
            for attempt in (0, 1):
                try:
                    mem = cl.Buffer(self._ctx, cl.mem_flags.READ_WRITE, size)
                    break
                except cl.Error as exc:
                    code = getattr(exc, "code", None)
                    if code not in OOM_CODES and not isinstance(exc, cl.MemoryError):
                        raise translate(exc, self._label, f"allocating {nbytes} bytes") from exc
                    if attempt:
                        raise self._oom(nbytes, f"the driver refused ({exc})") from exc
                    self.empty_cache()
        except BaseException:
            with self.lock:
                self.reserved -= size
            raise
        with self.lock:
            self.num_allocs += 1
            self.allocated += size
            if self.allocated > self.peak_allocated:
                self.peak_allocated = self.allocated
        return mem

    def _release(self, buf: DeviceBuffer) -> None:
        """Return the memory of ``buf``, which is dying (its ``__del__``), to the cache.

        Unless a flush is writing it: CPython runs ``__del__`` *before* it clears the weak
        references to the object, so while this runs another thread's flush may still get ``buf``
        back from its node's weak reference (see :mod:`.fusion`) and enqueue a kernel writing it.
        Both sides decide under :attr:`lock`: a node that a flush has *claimed* gets the memory
        parked on it, and the flush returns it once its kernel is enqueued; otherwise the node
        is marked *dead*, so that no flush writes it, and the memory goes back now."""
        size = buf.size
        lock = self.lock
        lock.acquire()
        try:
            nd = buf.lazy
            if nd is not None:
                if nd.claimed:
                    nd.parked = (buf.mem, size)
                    return
                nd.dead = True
            bucket = self._free.get(size)
            if bucket is None:
                bucket = self._free[size] = []
            bucket.append(buf.mem)
            self.allocated -= size
            self.cached += size
        finally:
            lock.release()

    def claim(self, mem: Any, size: int) -> DeviceBuffer | None:
        """``mem`` (of size class ``size``) out of the cache again, as a new buffer, if it is
        there; ``None`` if not (someone else holds it). A trace keeps the memory its calls used
        for themselves this way (see :mod:`.trace`)."""
        with self.lock:
            bucket = self._free.get(size)
            if not bucket:
                return None
            for i, m in enumerate(bucket):
                if m is mem:
                    del bucket[i]
                    break
            else:
                return None
            self.cached -= size
            self.allocated += size
            if self.allocated > self.peak_allocated:
                self.peak_allocated = self.allocated
        return DeviceBuffer(mem, size, size, self._index, self._release)

    def put_back(self, mem: Any, size: int) -> None:
        """``mem`` (of size class ``size``), which nothing uses any more, into the cache."""
        with self.lock:
            bucket = self._free.get(size)
            if bucket is None:
                bucket = self._free[size] = []
            bucket.append(mem)
            self.allocated -= size
            self.cached += size
