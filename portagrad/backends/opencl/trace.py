"""Tracing the enqueues of a run of primitives, to enqueue them again without the Python.

A captured step (:mod:`portagrad.capture`) replays the backend calls it recorded. On a GPU the
kernels of a small step take less time than the Python of those calls (argument checks, launch
plans, the fusion's grouping): a GPT-like step spent about 20 ms of host time around 7 ms of
kernels. Here, the first replay of a run of calls is *traced*: every kernel launch, device copy
and fill that pyopencl receives from this thread is kept with its arguments (buffers, offsets,
sizes, scalars), and later replays enqueue that list directly.

That is right only when a second run of the same calls would enqueue the same things, so a trace
is refused (:meth:`TracingMixin.end_trace` returns ``None``, and the caller runs the calls
themselves every time) when the run reads device memory on the host (its choices could depend on
the data), maps memory or records events. Memory the calls allocate for themselves (packed GEMM
operands, partial sums, im2col columns) comes and goes while tracing as in any run (a later
call's scratch may reuse an earlier one's), and what the run used is then kept by the trace for
its lifetime, so that the caching allocator never hands it to a tensor a replay would overwrite.
Host data a launch uploads is copied into the trace when traced. The caller keeps calls whose
arguments change from run to run (random seeds and offsets) out of traces.

Pending fused work (see :mod:`.fusion`) is flushed when a trace starts, when it ends and before
it runs, so that no group straddles the edge of a trace: its kernel would be in the trace and
enqueued again by the fuser.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from .allocator import CachingAllocator
from .devices import Device

__all__ = ["Trace", "TracingMixin"]

_MISSING = object()


class Trace:
    """The enqueues of one traced run; :meth:`run` enqueues them again, in order."""

    __slots__ = ("backend", "calls", "keep", "valid")

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        # (lock or None, function, positional arguments, keyword arguments)
        self.calls: list[tuple[Any, Any, tuple, dict]] = []
        self.keep: list[Any] = []  # buffers allocated while tracing, held for the trace's life
        self.valid = True  # False: the run cannot be enqueued again as it was (see end_trace)

    def run(self) -> None:
        self.backend._flush_pending()
        for lock, fn, args, kwargs in self.calls:
            if lock is None:
                fn(*args, **kwargs)
            else:
                with lock:
                    fn(*args, **kwargs)


class _Tracer:
    """The process-wide shadowing of pyopencl's enqueue functions and of the allocators while
    one thread traces (other threads' calls pass through untouched)."""

    lock = threading.Lock()

    def __init__(self, trace: Trace, locks: dict[int, Any]) -> None:
        self.trace = trace
        self.thread = threading.get_ident()
        self.locks = locks
        self.saved: list[tuple[Any, str, Any]] = []
        # (allocator, memory, size class, the buffer) of every allocation made while tracing
        self.seen: list[tuple[Any, Any, int, Any]] = []

    def install(self) -> None:
        import pyopencl as cl

        tr, me, locks = self.trace, self.thread, self.locks
        kcall = cl.Kernel.__call__

        def kernel_call(kern: Any, queue: Any, *args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == me:
                tr.calls.append((locks.get(id(queue)), kcall, (kern, queue) + args, kwargs))
            return kcall(kern, queue, *args, **kwargs)

        copy = cl.enqueue_copy

        def enqueue_copy(queue: Any, dest: Any, src: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == me:
                if not isinstance(dest, cl.MemoryObjectHolder):  # a read on the host
                    tr.valid = False
                elif isinstance(src, cl.MemoryObjectHolder):
                    tr.calls.append((None, copy, (queue, dest, src), kwargs))
                else:  # an upload: the data as it is now
                    tr.calls.append((None, copy, (queue, dest, np.array(src, copy=True)),
                                     dict(kwargs, is_blocking=True)))
            return copy(queue, dest, src, **kwargs)

        fill = cl.enqueue_fill_buffer

        def enqueue_fill_buffer(queue: Any, *args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == me:
                tr.calls.append((None, fill, (queue,) + args, kwargs))
            return fill(queue, *args, **kwargs)

        def refusing(real: Any) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                if threading.get_ident() == me:
                    tr.valid = False
                return real(*args, **kwargs)
            return call

        allocate = CachingAllocator.allocate
        seen = self.seen

        def noting_allocate(alloc: Any, *args: Any, **kwargs: Any) -> Any:
            buf = allocate(alloc, *args, **kwargs)
            if threading.get_ident() == me:
                seen.append((alloc, buf.mem, buf.size, weakref.ref(buf)))
            return buf

        self._set(cl.Kernel, "__call__", kernel_call)
        self._set(cl, "enqueue_copy", enqueue_copy)
        self._set(cl, "enqueue_fill_buffer", enqueue_fill_buffer)
        for name in ("enqueue_map_buffer", "enqueue_marker", "enqueue_barrier",
                     "enqueue_read_buffer", "enqueue_write_buffer", "wait_for_events"):
            real = getattr(cl, name, None)
            if real is not None:
                self._set(cl, name, refusing(real))
        self._set(CachingAllocator, "allocate", noting_allocate)
        # a wait inside a call (the GEMM tuner timing its candidates) means work a replay need not
        # repeat, or a choice made from the clock: not traced
        self._set(Device, "finish", refusing(Device.finish))

    def _set(self, owner: Any, name: str, value: Any) -> None:
        # (a class's own attribute is saved from its __dict__: getattr would give a bound or
        # inherited form)
        saved = vars(owner).get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name)
        self.saved.append((owner, name, saved))
        setattr(owner, name, value)

    def keep_memory(self) -> None:
        """Make the memory the traced calls allocated the trace's own. While tracing, buffers
        came and went as usual (a call's scratch could reuse an earlier call's), so the trace
        needs what the run needed at once, no more. Each piece still held by a buffer is kept
        through that buffer; one back in the cache is taken out of it; one that is neither was
        handed to someone else meanwhile (another thread), and the trace is refused."""
        tr = self.trace
        held: dict[int, Any] = {}
        for _, mem, _, ref in self.seen:
            buf = ref()
            if buf is not None:
                held[id(mem)] = buf
        done: set[int] = set()
        for alloc, mem, size, _ in self.seen:
            if id(mem) in done:
                continue
            done.add(id(mem))
            buf = held.get(id(mem))
            if buf is None:
                buf = alloc.claim(mem, size)
            if buf is None:  # memory the run used went to another allocation
                tr.valid = False
                return
            tr.keep.append(buf)

    def remove(self) -> None:
        for owner, name, value in reversed(self.saved):
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        self.saved.clear()


class TracingMixin:
    """``begin_trace`` / ``end_trace``: the optional tracing methods of the backend contract."""

    _fz: Any
    _devices: list[Any]

    def _flush_pending(self) -> None:
        """Enqueue the pending fused group, if any: no group may straddle a trace's edge."""
        fz = self._fz
        if fz is not None and fz.pending:
            fz.flush()

    def begin_trace(self) -> Any:
        """Start tracing this thread's enqueues; returns the token :meth:`end_trace` takes.
        Pending fused work is flushed first (it belongs to what ran before)."""
        self._flush_pending()
        if not _Tracer.lock.acquire(blocking=False):
            return None  # another thread is tracing: this run is not traced
        locks = {id(d.queue): d.launch_lock for d in self._devices}
        tracer = _Tracer(Trace(self), locks)
        try:
            tracer.install()
        except BaseException:
            tracer.remove()
            _Tracer.lock.release()
            raise
        return tracer

    def end_trace(self, token: Any) -> Trace | None:
        """Stop tracing (after flushing pending fused work into the trace); the :class:`Trace`,
        or ``None`` when the run cannot be enqueued again as it was."""
        if token is None:
            return None
        tracer: _Tracer = token
        try:
            self._flush_pending()
        finally:
            tracer.remove()
            _Tracer.lock.release()
        tracer.keep_memory()
        trace = tracer.trace
        return trace if trace.valid else None
