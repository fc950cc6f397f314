"""Recording the backend launches of one step, and replaying them.

While a :class:`Recorder` is active, every public method of every loaded backend object is
shadowed by an instance attribute that notes the call (the method name, its arguments: Views,
scalars, tuples) before running it, so any primitive the core calls is recorded, optional ones and
ones added later included. Only calls made by the core are recorded: a backend method that calls
another one of its own runs it unrecorded (a depth counter).

Calls fall in four kinds: ``allocate`` (the buffer is noted: it belongs to the step), host reads
(``to_host``, ``host_array``, ``wrap_host``, pinning, events: they make a step impossible to
replay, except the index checks :func:`portagrad._raw.min_max` declares through
``_raw.CHECK_HOOK``), queries that change nothing (device properties, memory statistics,
``synchronize``: run, not recorded) and launches (everything else, replayed as called).

Random numbers: the ``random`` launch receives ``(seed, offset)`` from a :class:`Generator`. The
recorder notes every ``Generator._take`` of the step, so each offset is stored relative to its
generator's offset when the step started, and a replay draws from the generator's current state
and advances it by what the step consumed, exactly as the eager step would.
"""
from __future__ import annotations

import functools
import gc
import struct
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _raw
from .._random import Generator
from ..backends.interface import View
from ..plugins import manager

__all__ = ["Recorder", "Recording", "HostRead", "Launch"]

# calls that read device memory on the host (or hand it out): a step doing one cannot be replayed
_HOST_READS = frozenset({"to_host", "host_array", "wrap_host", "pin_memory", "record_event",
                         "event_wait", "event_query", "event_elapsed_ms"})
# calls that change no device memory: run, never recorded
# (fused_attention answers from the device and the sizes, which a captured step keeps fixed)
_QUERIES = frozenset({"device_count", "get_device_properties", "memory_stats",
                      "reset_peak_memory_stats", "empty_cache", "is_pinned", "synchronize",
                      "fused_attention"})


_NOT_OWN = object()  # (a patched name that was not the backend instance's own attribute)


class HostRead(Exception):
    """Why a recorded step cannot be replayed (the reason is the message)."""


class Launch:
    """One recorded backend call: the bound method of the real backend and its arguments.
    ``rng``: for a ``random`` launch, ``(generator, offset relative to the step start)``;
    ``check``: for an index check's host read, the closed range its two values must lie in;
    ``late``: the backend, where that check may report at the device's next read (see
    :func:`_calls`), else None."""

    __slots__ = ("fn", "name", "args", "kwargs", "rng", "check", "late", "dead")

    def __init__(self, fn: Callable[..., Any], name: str, args: tuple, kwargs: dict) -> None:
        self.fn = fn
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.rng: tuple[Generator, int] | None = None
        self.check: tuple[Any, Any] | None = None
        self.late: Any = None
        # (discard, buffer) of each temporary this launch is the last to touch (see replay)
        self.dead: tuple[tuple[Callable[[Any], None], Any], ...] = ()


class Recording:
    """The launches of one step, the buffers it allocated and the random numbers it drew."""

    def __init__(self) -> None:
        self.launches: list[Launch] = []
        self.allocs: dict[int, int] = {}  # id(buffer) -> allocation number within the step
        # the step's allocations, held weakly while recording (the step frees its temporaries as
        # it would eagerly); after plan_memory, the buffers a replay uses, held strongly
        self.refs: list[Callable[[], Any]] = []
        self.buffers: list[Any] = []
        self.sizes: list[tuple[Callable[..., Any], int, int]] = []  # (allocate, index, nbytes)
        self.takes: list[tuple[Generator, int, int]] = []  # (generator, start, count)
        self.advance: list[tuple[Generator, int]] = []  # offset consumed, per generator
        self.violation: str | None = None
        self.runs: list[_Run] | None = None  # made by the first replay (see replay)

    def signature(self) -> list[Any]:
        """The launch sequence with each buffer named by where it comes from (allocation number
        in the step, or the identity of a buffer that existed before) and every scalar exactly
        (floats by their bits): equal signatures mean the same step."""
        sig: list[Any] = []
        for la in self.launches:
            args = la.args
            if la.rng is not None:  # seed and offset come from the generator at replay
                args = args[:2] + (id(la.rng[0]), la.rng[1]) + args[4:]
            sig.append((la.name, self._canon(args), self._canon(la.kwargs), la.check))
        sig.append(tuple((id(g), n) for g, n in self.advance))
        return sig

    def _canon(self, x: Any) -> Any:
        if isinstance(x, View):
            b = x.buffer
            k = self.allocs.get(id(b))
            where = ("alloc", k) if k is not None else ("extern", id(b))
            return ("view", where, x.offset, x.shape, x.strides, str(x.dtype))
        if isinstance(x, _Slot):
            return ("view", ("alloc", x.k), x.offset, x.shape, x.strides, str(x.dtype))
        if isinstance(x, float):
            return ("f", struct.pack("<d", x))
        if isinstance(x, complex):
            return ("f", struct.pack("<dd", x.real, x.imag))
        if isinstance(x, (tuple, list)):
            return (type(x).__name__, tuple(self._canon(e) for e in x))
        if isinstance(x, dict):
            return ("dict", tuple((k, self._canon(v)) for k, v in sorted(x.items())))
        if isinstance(x, np.ndarray):
            return ("ndarray", str(x.dtype), x.shape, x.tobytes())
        if x is None or isinstance(x, (bool, int, str, np.generic)):
            return (type(x).__name__, x)
        return ("obj", id(x))  # an object the launch received (a dtype ...): the same one

    def plan_memory(self) -> None:
        """Let temporaries with disjoint lifetimes share memory, as the eager step's allocator
        does: a buffer of the step that nothing outside the recording holds any more (not a
        ``.grad``, an output, a module's state ...) is needed only from the first to the last
        launch that touches it, so after its last use its memory serves the next temporary of
        the same size. Without this a replay would keep every temporary of the step at once."""
        gc.collect()
        alive = {k: b for k, b in enumerate(r() for r in self.refs) if b is not None}
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for i, la in enumerate(self.launches):
            for k in _slots(la.args) + _slots(la.kwargs):
                first.setdefault(k, i)
                last[k] = i
        starts: dict[int, list[int]] = {}
        ends: dict[int, list[int]] = {}
        for k, i in first.items():
            starts.setdefault(i, []).append(k)
            if k not in alive:
                ends.setdefault(last[k], []).append(k)
        phys: dict[int, Any] = dict(alive)
        free: dict[tuple[int, int, int], list[Any]] = {}
        for i in range(len(self.launches)):
            for k in starts.get(i, ()):
                if k in phys:
                    continue
                allocate, index, nbytes = self.sizes[k]
                pool = free.get((id(allocate.__self__), index, nbytes))  # type: ignore[attr-defined]
                phys[k] = pool.pop() if pool else allocate(index, nbytes)
            for k in ends.get(i, ()):
                allocate, index, nbytes = self.sizes[k]
                free.setdefault((id(allocate.__self__), index, nbytes),  # type: ignore[attr-defined]
                                []).append(phys[k])

        def to_view(s: _Slot) -> View:
            return View(phys[s.k], s.offset, s.shape, s.strides, s.dtype)

        for i, la in enumerate(self.launches):
            la.args = _map_views(la.args, to_view, _Slot)
            la.kwargs = _map_views(la.kwargs, to_view, _Slot)
            # the replay holds every temporary, so a backend that skips writes nobody reads (the
            # OpenCL fusion) is told when a temporary's contents are dead: after its last launch
            dead = []
            for k in ends.get(i, ()):
                discard = getattr(self.sizes[k][0].__self__, "discard", None)  # type: ignore[attr-defined]
                if discard is not None:
                    dead.append((discard, phys[k]))
            la.dead = tuple(dead)
        self.buffers = list({id(b): b for b in phys.values()}.values())
        self.refs = []

    def _to_slot(self, v: View) -> Any:
        k = self.allocs.get(id(v.buffer))
        return v if k is None else _Slot(k, v.offset, v.shape, v.strides, v.dtype)

    def externals(self) -> list[Any]:
        """The pre-existing buffers the launches touch (kept alive while signatures compare)."""
        out = []
        for la in self.launches:
            for a in la.args:
                if isinstance(a, View) and id(a.buffer) not in self.allocs:
                    out.append(a.buffer)
        return out


def _same(x: Any) -> Any:
    return x


class _Slot:
    """A View of the step's k-th allocation, while buffers are being reassigned."""

    __slots__ = ("k", "offset", "shape", "strides", "dtype")

    def __init__(self, k: int, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
                 dtype: Any) -> None:
        self.k, self.offset, self.shape, self.strides, self.dtype = k, offset, shape, strides, dtype


def _map_views(x: Any, fn: Callable[[Any], Any], kind: type = View) -> Any:
    """``x`` with every ``kind`` inside (tuples, lists, dict values) replaced by ``fn`` of it."""
    if isinstance(x, kind):
        return fn(x)
    if isinstance(x, tuple):
        return tuple(_map_views(e, fn, kind) for e in x)
    if isinstance(x, list):
        return [_map_views(e, fn, kind) for e in x]
    if isinstance(x, dict):
        return {k: _map_views(v, fn, kind) for k, v in x.items()}
    return x


def _slots(x: Any) -> list[int]:
    if isinstance(x, _Slot):
        return [x.k]
    if isinstance(x, (tuple, list)):
        return [k for e in x for k in _slots(e)]
    if isinstance(x, dict):
        return [k for e in x.values() for k in _slots(e)]
    return []


class Recorder:
    """Context manager: records the backend calls of the code it wraps into ``recording``."""

    _lock = threading.Lock()  # one recorder at a time: the shadowing is process-wide

    def __init__(self) -> None:
        self.recording = Recording()
        self._depth = 0
        self._patched: list[tuple[Any, str, Any]] = []
        self._checks: dict[int, tuple[Any, Any]] = {}
        self._take: Any = None
        self._thread = threading.get_ident()
        self._active = False  # a wrapper someone kept past the recording only calls through

    # ---------------------------------------------------------------- install / remove
    def __enter__(self) -> Recorder:
        if not Recorder._lock.acquire(blocking=False):
            raise RuntimeError("capture: another step is being recorded (recording is "
                               "process-wide; record one step at a time)")
        try:
            for be in manager.get_state().backends.values():
                self._patch(be)
            _raw.forget_allocators()  # the shadowed allocate sees every allocation from now on
            rec = self.recording
            take = self._take = Generator._take

            def _take(gen: Generator, n: int) -> tuple[int, int]:
                seed, start = take(gen, n)
                if threading.get_ident() == self._thread:  # (not another thread's draws)
                    rec.takes.append((gen, start, n))
                return seed, start

            Generator._take = _take  # type: ignore[method-assign,assignment]
            _raw.CHECK_HOOK = self._check
            self._active = True
        except BaseException:
            self._unpatch()
            Recorder._lock.release()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._unpatch()
        finally:
            Recorder._lock.release()
        self._finish()

    def _unpatch(self) -> None:
        self._active = False
        _raw.CHECK_HOOK = None
        if self._take is not None:
            Generator._take = self._take  # type: ignore[method-assign]
            self._take = None
        for be, name, own in reversed(self._patched):
            try:
                if own is _NOT_OWN:
                    delattr(be, name)
                else:
                    setattr(be, name, own)
            except AttributeError:
                pass
        self._patched.clear()
        _raw.forget_allocators()

    def _patch(self, be: Any) -> None:
        cls = type(be)
        for name in dir(cls):
            if name.startswith("_"):
                continue
            attr = getattr(cls, name, None)
            if not callable(attr) or isinstance(attr, type):
                continue
            # a method the backend replaced on the instance (the OpenCL backend's unfused
            # unary/binary with fusion off) is recorded too, and put back afterwards: skipping it
            # would leave those calls out of the replays
            own = vars(be).get(name, _NOT_OWN)
            setattr(be, name, self._wrap(name, getattr(be, name)))
            self._patched.append((be, name, own))

    # ------------------------------------------------------------------- the calls
    def _wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        rec = self.recording
        if name in _QUERIES:
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._depth or not self._active or threading.get_ident() != self._thread:
                return real(*args, **kwargs)  # the backend calling itself; another thread
            self._depth += 1
            try:
                out = real(*args, **kwargs)
            finally:
                self._depth -= 1
            if name == "allocate":
                rec.allocs[id(out)] = len(rec.refs)  # (an id reused after a buffer died: remapped)
                try:
                    rec.refs.append(weakref.ref(out))
                except TypeError:  # no weak references: held, so never shared
                    rec.buffers.append(out)
                    rec.refs.append(functools.partial(_same, out))
                rec.sizes.append((real, *args[:2]))
            elif name in _HOST_READS:
                if name == "host_array" and out is None:
                    return out  # no zero-copy access here: the caller reads with to_host
                self._host_read(name, real, args, kwargs)
            else:
                if name == "from_host":  # the host data is part of the launch: copy it
                    args = (args[0], np.array(args[1], copy=True)) + args[2:]
                if out is not None and rec.violation is None:
                    # a result the core goes on with (not a write into a View): a replay would
                    # not recompute the Python that used it
                    rec.violation = f"the backend's {name}() returned a value the step used"
                # the step's own buffers by number (_Slot): the recording must not keep them alive
                rec.launches.append(Launch(real, name, _map_views(args, rec._to_slot),
                                           _map_views(kwargs, rec._to_slot)))
            return out

        return call

    def _check(self, view: View, valid: tuple[Any, Any], late: bool = False) -> None:
        self._checks[id(view.buffer)] = (valid, late)

    def _host_read(self, name: str, real: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        rec = self.recording
        src = args[0] if args else None
        check = self._checks.pop(id(src.buffer), None) if isinstance(src, View) else None
        if check is not None and isinstance(src, View) and name in ("to_host", "host_array"):
            # an index check: replayed as a read of its two values, checked against the range
            la = Launch(real.__self__.to_host, "to_host",  # type: ignore[attr-defined]
                        (rec._to_slot(src),), {})
            la.check, late = check
            la.late = real.__self__ if late else None  # type: ignore[attr-defined]
            rec.launches.append(la)
            return
        if rec.violation is None:
            what = {"to_host": "a host read of a tensor (.item(), .tolist(), .numpy(), bool(), "
                               "printing ...)",
                    "host_array": "a host read of a tensor (.item(), .tolist(), .numpy(), "
                                  "bool(), printing ...)"}.get(name, f"a call of {name}()")
            rec.violation = f"{what} inside the step"

    def _finish(self) -> None:
        """Express each ``random`` launch's offset relative to its generator's offset at the
        start of the step."""
        rec = self.recording
        start: dict[int, tuple[Generator, int, int]] = {}
        for gen, s, n in rec.takes:
            first = start.get(id(gen))
            start[id(gen)] = (gen, s if first is None else first[1], s + n)
        rec.advance = [(g, end - s) for g, s, end in start.values()]
        for la in rec.launches:
            if la.name != "random":
                continue
            seed, offset = la.args[2], la.args[3]
            for gen, s, n in rec.takes:
                if gen._seed == seed and s <= offset < s + max(n, 1):
                    la.rng = (gen, offset - start[id(gen)][1])
                    break
            else:
                rec.violation = rec.violation or (
                    "random numbers drawn without a portagrad Generator inside the step")


#: launches that are never traced (see :class:`_Run`): an upload's host data may be another
#: array's contents at each call
_UNTRACED = frozenset({"from_host"})


class _Run:
    """Consecutive launches replayed together. A run of one backend that can trace
    (``begin_trace``/``end_trace``, optional in the contract) is traced by its first replay and
    then enqueued from the trace; random draws (their seed and offset change), index checks
    (host reads) and uploads run as calls every time, each in a run of its own."""

    __slots__ = ("launches", "backend", "trace")

    def __init__(self, launches: list[Launch], backend: Any) -> None:
        self.launches = launches
        self.backend = backend  # None: run the calls every time
        self.trace: Any = None


def _runs(launches: list[Launch]) -> list[_Run]:
    runs: list[_Run] = []
    for la in launches:
        be = getattr(la.fn, "__self__", None)
        if (la.rng is not None or la.check is not None or la.name in _UNTRACED
                or getattr(be, "begin_trace", None) is None):
            be = None
        if runs and runs[-1].backend is be:  # (untraced launches, be None, gather too)
            runs[-1].launches.append(la)
        else:
            runs.append(_Run([la], be))
    return runs


def replay(rec: Recording) -> None:
    """Run the recorded launches again on their buffers, drawing random numbers from the
    generators' current state (which then advance as the eager step would advance them)."""
    bases = {}
    for gen, n in rec.advance:
        with gen._lock:
            bases[id(gen)] = gen._offset
            gen._offset += n
    if rec.runs is None:
        rec.runs = _runs(rec.launches)
        first = True
    else:
        first = False
    for run in rec.runs:
        if run.trace is not None:
            run.trace.run()
        elif first and run.backend is not None:
            token = run.backend.begin_trace()
            done = False
            try:
                _calls(run.launches, bases)
                done = True
            finally:
                trace = run.backend.end_trace(token)
                run.trace = trace if done else None  # (a run cut short is not repeated)
        else:
            _calls(run.launches, bases)


def _replay_check(valid: tuple[Any, Any], lo: Any, hi: Any, where: str) -> None:
    vlo, vhi = valid
    if not (vlo <= lo and hi <= vhi):
        bad = lo if lo < vlo else hi
        raise IndexError(f"captured step: index {bad} is out of bounds (valid range "
                         f"[{vlo}, {vhi}]); {where}")


def _late_replay_check(valid: tuple[Any, Any], values: Any) -> None:
    lo, hi = values.tolist()
    _replay_check(valid, lo, hi, "reported at the device's first read after the step, as the "
                                 "eager step reports it")


def _calls(launches: list[Launch], bases: dict[int, int]) -> None:
    for la in launches:
        if la.rng is not None:
            gen, rel = la.rng
            a = la.args
            la.fn(a[0], a[1], gen._seed, bases[id(gen)] + rel, *a[4:], **la.kwargs)
        elif la.check is not None:
            defer = getattr(la.late, "defer_check", None)
            if defer is not None:
                # a check the eager step defers too (class targets, embedding rows: their
                # kernels stay in bounds): enqueued, reported at the device's next read, so
                # that a replay does not wait for the work queued before it
                defer(la.args[0], functools.partial(_late_replay_check, la.check))
            else:
                lo, hi = la.fn(*la.args).tolist()
                _replay_check(la.check, lo, hi, "the step stopped where the eager step would "
                                                "have raised")
        else:
            la.fn(*la.args, **la.kwargs)
        for discard, buf in la.dead:
            discard(buf)
