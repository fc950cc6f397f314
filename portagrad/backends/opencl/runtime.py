"""The OpenCL backend's device runtime: devices, synchronisation, events, memory, host copies.

:class:`RuntimeMixin` is the part of
:class:`~portagrad.backends.opencl.backend.OpenCLBackend` that moves no data through kernels:
device lookup (the per-device context, queue, kernel cache and caching allocator live in
:mod:`.devices` and :mod:`.allocator`), synchronisation and profiling events, allocator
statistics, host<->device copies (large device->host reads on GPUs go through pinned staging
buffers, :mod:`.pinned`) and copies between devices. Everything is enqueued on the device's one
in-order queue; only :meth:`RuntimeMixin.to_host`, :meth:`RuntimeMixin.synchronize` and the event
waits block.

Threads: the queue is shared and needs no lock (see :class:`.devices.Device`). The host arrays of
non-blocking copies (``_pending``) are guarded by ``_pending_lock``; the pinned staging buffers of
a device by its ``stage_lock``, held for a whole staged read (two reads at once would fill the
same two buffers).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..interface import Backend, DeviceProperties, View
from .allocator import DeviceBuffer
from .devices import Device
from .errors import cl_errors
from .fusion import flushes
from .launch import contig
from .pinned import is_pinned as _is_pinned
from .pinned import pin_memory as _pin_memory

if TYPE_CHECKING:
    from .fusion import Fuser

__all__ = ["RuntimeMixin"]

_STAGE_BYTES = 8 << 20  # each of the two pinned staging buffers of a device
_STAGE_MIN = 8 << 20  # smaller reads go straight: one driver copy costs less than the pipeline
#: host->device writes up to this size are enqueued without waiting, from a private copy
_ASYNC_WRITE_MAX = 1 << 20


class RuntimeMixin:
    """Devices, events, memory and host<->device copies of the OpenCL backend.

    Mixed into :class:`~portagrad.backends.opencl.backend.OpenCLBackend`, which creates the state
    below; the methods marked :func:`~.fusion.flushes` flush pending fused work first."""

    # set by OpenCLBackend.__init__
    _devices: list[Device]
    #: host arrays that non-blocking copies still read, per device: (event, array)
    _pending: list[list[tuple[Any, Any]]]
    _pending_lock: Any  # guards every list of _pending
    #: pinned staging buffers for large device->host reads, per device (see _staged_read)
    _stages: dict[int, list[np.ndarray]]
    #: staged reads: None = on GPUs only, True/False forces (tests run them on PoCL)
    _staged_reads: bool | None
    _fz: Fuser | None
    # provided by PrimitivesMixin
    copy: Any

    # ------------------------------------------------------- devices and events
    def device_count(self) -> int:
        return len(self._devices)

    def device(self, index: int) -> Device:
        """The :class:`Device` object of logical index ``index`` (context, queue, allocator)."""
        try:
            return self._devices[index]
        except IndexError:
            raise RuntimeError(f"opencl:{index} does not exist: {len(self._devices)} OpenCL "
                               "device(s) visible") from None

    def get_device_properties(self, index: int) -> DeviceProperties:
        return self.device(index).properties

    @flushes
    def synchronize(self, index: int) -> None:
        dev = self.device(index)
        dev.finish()
        dev.run_checks()
        # not clear(): another thread may have enqueued a copy since the finish, whose host
        # array must stay alive
        self._forget_done(index)

    def discard(self, buffer: Any) -> None:
        """What ``buffer`` holds now will not be read again (see the contract's ``discard``):
        a pending fused node writing it computes its value in a register only."""
        fz = getattr(self, "_fz", None)
        if fz is not None and fz.pending:
            fz.discard(buffer)

    def _forget_done(self, index: int) -> None:
        """Drop the entries of ``_pending[index]`` whose copy has completed."""
        import pyopencl as cl

        done = cl.command_execution_status.COMPLETE
        with self._pending_lock:
            pend = self._pending[index]
            pend[:] = [p for p in pend if p[0].command_execution_status != done]

    @flushes
    def record_event(self, index: int) -> Any:
        """Enqueue a marker on device ``index``'s queue and return its ``pyopencl.Event``."""
        import pyopencl as cl

        dev = self.device(index)
        with cl_errors(dev.label, "recording an event"):
            return cl.enqueue_marker(dev.queue)

    @flushes
    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two events of one device (waits for both)."""
        start.wait()
        end.wait()
        return (end.profile.end - start.profile.end) * 1e-6

    event_elapsed_ms = elapsed_ms

    @flushes
    def event_wait(self, event: Any) -> None:
        """Block until the marker ``event`` has completed."""
        event.wait()

    @flushes
    def event_query(self, event: Any) -> bool:
        """Whether the marker ``event`` has completed (never blocks)."""
        import pyopencl as cl

        return event.command_execution_status == cl.command_execution_status.COMPLETE

    # ----------------------------------------------------------------- memory
    def allocate(self, index: int, nbytes: int) -> DeviceBuffer:
        return self.device(index).allocator.allocate(nbytes)

    def memory_stats(self, index: int) -> dict[str, int]:
        return self.device(index).allocator.stats()

    def set_memory_fraction(self, index: int, fraction: float) -> None:
        """Cap this process's allocations on device ``index`` (see ``CachingAllocator``)."""
        self.device(index).allocator.set_memory_fraction(fraction)

    @flushes
    def reset_peak_memory_stats(self, index: int) -> None:
        self.device(index).allocator.reset_peak()

    @flushes
    def empty_cache(self, index: int) -> None:
        self.device(index).allocator.empty_cache()

    # ------------------------------------------------------------ host copies
    def _dev(self, v: View) -> Device:
        return self._devices[v.buffer.device]

    def _check_dtype(self, dev: Device, *views: Any) -> None:
        for v in views:
            if isinstance(v, View) and v.dtype.name in ("float64", "complex128"):
                dev.require_dtypes([v.dtype.name])

    @flushes
    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        import pyopencl as cl

        dev = self._dev(dst)
        self._check_dtype(dev, dst)
        if src.nbytes == 0:
            return
        if not src.flags.c_contiguous:
            src = np.ascontiguousarray(src)
        off = dst.offset * dst.dtype.itemsize
        with cl_errors(dev.label, f"copying {src.nbytes} bytes host->device"):
            pinned = non_blocking and _is_pinned(src)
            if pinned or src.nbytes <= _ASYNC_WRITE_MAX:
                # A blocking write waits for every kernel queued before it (one in-order
                # queue): a small one (positions from arange, a new scalar tensor) made each
                # step wait for the device mid-forward. Small sources are copied, and the copy
                # is kept alive until the write completes, so the caller may reuse its array.
                if not pinned:
                    src = src.copy()
                ev = cl.enqueue_copy(dev.queue, dst.buffer.mem, src, dst_offset=off, is_blocking=False)
                if len(self._pending[dev.index]) > 64:
                    self._forget_done(dev.index)
                with self._pending_lock:
                    self._pending[dev.index].append((ev, src))
            else:
                cl.enqueue_copy(dev.queue, dst.buffer.mem, src, dst_offset=off, is_blocking=True)

    @flushes
    def to_host(self, src: View) -> np.ndarray:
        import pyopencl as cl

        dev = self._dev(src)
        self._check_dtype(dev, src)
        out = np.empty(src.shape, src.dtype.numpy)
        if out.size == 0:
            return out
        src = self._readable(dev, src)
        with cl_errors(dev.label, f"copying {out.nbytes} bytes device->host"):
            off = src.offset * src.dtype.itemsize
            staged = dev.is_gpu if self._staged_reads is None else self._staged_reads
            if staged and out.nbytes >= _STAGE_MIN:
                self._staged_read(dev, src.buffer.mem, off, out.reshape(-1).view(np.uint8))
            else:
                cl.enqueue_copy(dev.queue, out, src.buffer.mem, src_offset=off, is_blocking=True)
        dev.run_checks()
        return out

    @flushes
    def defer_check(self, src: View, check: Callable[[np.ndarray], None]) -> None:
        """Read the (few) elements of ``src`` without waiting for the queue; ``check`` gets them
        as a numpy array at the device's next host read (:meth:`to_host`) or synchronisation,
        in that caller's thread, and may raise there, as a CUDA device-side assert surfaces at
        the next synchronisation. Index checks use it (see ``portagrad._raw.min_max_later``):
        waiting for their two numbers would stall the host on everything queued before them
        (the forward pass, for a training step's cross-entropy)."""
        import pyopencl as cl

        dev = self._dev(src)
        out = np.empty(src.shape, src.dtype.numpy)
        src = self._readable(dev, src)
        with cl_errors(dev.label, f"copying {out.nbytes} bytes device->host"):
            ev = cl.enqueue_copy(dev.queue, out, src.buffer.mem,
                                 src_offset=src.offset * src.dtype.itemsize, is_blocking=False)
        with dev.checks_lock:
            dev.checks.append((ev, out, check))
        # a program that never reads: the checks (and the targets they hold) must not pile up;
        # those whose read is done run from 64 on, and all (waiting) from 256
        if len(dev.checks) > 64:
            dev.run_checks(done_only=len(dev.checks) <= 256)

    def _readable(self, dev: Device, src: View) -> View:
        """``src``, or a contiguous copy of it: what one device->host copy can read."""
        if contig(src):
            return src
        tmp = self._empty_like(dev, src.shape, src.dtype)
        self.copy(src, tmp)
        return tmp

    def _staged_read(self, dev: Device, mem: Any, offset: int, out: np.ndarray) -> None:
        """Device->host copy of ``out.nbytes`` bytes at ``offset`` of ``mem`` through two pinned
        staging buffers: the DMA of chunk ``i + 1`` runs while chunk ``i`` is copied into ``out``.

        Why: GPU drivers read into pageable memory through their own small bounce buffer, so a
        large read is faster when the DMA into pinned memory overlaps the host-side copy. A small
        read is faster as one direct copy (the pipeline's extra steps cost more than they save),
        hence :data:`_STAGE_MIN`."""
        with dev.stage_lock:  # one staged read of a device at a time: they share the stages
            self._staged_read_locked(dev, mem, offset, out)

    def _staged_read_locked(self, dev: Device, mem: Any, offset: int, out: np.ndarray) -> None:
        import pyopencl as cl

        stages = self._stages.get(dev.index)
        if stages is None:
            stages = self._stages[dev.index] = [
                _pin_memory(dev.context, dev.queue, _STAGE_BYTES) for _ in range(2)]
        n = out.nbytes
        chunks = [(o, min(_STAGE_BYTES, n - o)) for o in range(0, n, _STAGE_BYTES)]

        def enqueue(i: int) -> Any:
            o, m = chunks[i]
            return cl.enqueue_copy(dev.queue, stages[i % 2][:m], mem, src_offset=offset + o,
                                   is_blocking=False)

        ev = enqueue(0)
        for i, (o, m) in enumerate(chunks):
            # the other stage was emptied into ``out`` in the previous iteration: refill it
            nxt = enqueue(i + 1) if i + 1 < len(chunks) else None
            ev.wait()
            out[o:o + m] = stages[i % 2][:m]
            ev = nxt

    @flushes
    def copy_between(self, dst: View, src: View) -> None:
        if dst.buffer.device == src.buffer.device:
            self.copy(src, dst)
            return
        # one context per device: buffers cannot cross, so stage through the host
        self.from_host(dst, self.to_host(src))

    # the contract's defaults (device memory is never shared with the host), flushing like every
    # method that is handed a view or a host array
    host_array = flushes(Backend.host_array)
    wrap_host = flushes(Backend.wrap_host)

    def pin_memory(self, nbytes: int) -> np.ndarray | None:
        if not self._devices:
            return None
        dev = self._devices[0]
        with cl_errors(dev.label, f"allocating {nbytes} bytes of pinned host memory"):
            return _pin_memory(dev.context, dev.queue, nbytes)

    def is_pinned(self, array: np.ndarray) -> bool:
        return _is_pinned(array)

    def _empty_like(self, dev: Device, shape: Sequence[int], dtype: Any) -> View:
        n = 1
        for s in shape:
            n *= s
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        return View(dev.allocator.allocate(n * dtype.itemsize), 0, tuple(shape),
                    tuple(reversed(strides)), dtype)
