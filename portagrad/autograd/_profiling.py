"""The op recorder behind ``pg.autograd.profiler`` and ``pg.profiler``.

The op dispatch points (``_ops._common.call``, ``Function.apply``, the operators' fast path in
``_raw.binary_views`` and the backward engine) test ``STATE.on``, one attribute of a module
global, and only when it is true call :func:`record`. Nothing else runs while no profiler is
active. The recorder keeps, per op: its name, wall-clock start and end (``perf_counter_ns``), the
input shapes, the bytes of the tensors it returned, and, when device timing is on and the op runs
on an accelerator whose backend has events, a pair of device markers timed when the profiler
stops (``event_elapsed_ms``). Recording a marker flushes the device's pending work, so under a
device-timing profiler the OpenCL backend does not fuse elementwise ops across op boundaries.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["STATE", "OpRecord", "Collector", "record", "record_backward", "record_inplace",
           "begin", "end", "op_name"]

_now = time.perf_counter_ns


class _State:
    """``on`` is the single flag tested on the hot paths; ``collector`` receives the records."""

    __slots__ = ("on", "collector")

    def __init__(self) -> None:
        self.on = False
        self.collector: Collector | None = None


STATE = _State()


class OpRecord:
    """One recorded call: an op, a backward node or a user ``record_function`` range."""

    __slots__ = ("name", "start_ns", "end_ns", "thread", "depth", "child_ns", "shapes",
                 "cpu_bytes", "device_bytes", "child_cpu_bytes", "child_device_bytes",
                 "device_type", "dev_events", "dev_index", "device_ms", "child_device_ms", "kind", "seq",
                 "parent")

    def __init__(self, name: str, kind: str, thread: int, depth: int, seq: int,
                 parent: OpRecord | None) -> None:
        self.name = name
        self.kind = kind  # "op", "backward" or "user"
        self.thread = thread
        self.depth = depth
        self.seq = seq
        self.parent = parent
        self.start_ns = 0
        self.end_ns = 0
        self.child_ns = 0
        self.shapes: list[list[int]] = []
        self.cpu_bytes = 0
        self.device_bytes = 0
        self.child_cpu_bytes = 0
        self.child_device_bytes = 0
        self.device_type: str | None = None
        self.dev_events: tuple[Any, Any, Any] | None = None  # (backend, start, end)
        self.dev_index = 0
        self.device_ms = 0.0
        self.child_device_ms = 0.0


class Collector:
    """The records of one profiling session (all threads)."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False,
                 device_timing: bool = False) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.device_timing = device_timing
        self.records: list[OpRecord] = []
        self._local = threading.local()
        self._seq = 0
        self._lock = threading.Lock()
        self.start_ns = _now()

    def _stack(self) -> list[OpRecord]:
        st = getattr(self._local, "stack", None)
        if st is None:
            st = self._local.stack = []
        return st

    def finish(self) -> None:
        """Time the device markers (waits for the device) and roll device time up to parents."""
        for r in self.records:
            if r.dev_events is not None:
                backend, a, b = r.dev_events
                r.device_ms = float(backend.event_elapsed_ms(a, b))
                r.dev_events = None
        for r in self.records:  # children end before their parents: records are in end order
            if r.parent is not None and r.device_ms:
                r.parent.child_device_ms += r.device_ms


def _storage_of(x: Any) -> Any:
    return getattr(x, "_storage", None)


def begin(name: str, kind: str = "op", inputs: tuple = (), storage: Any = None) -> OpRecord | None:
    """Open a record (``None`` when no profiler is active)."""
    col = STATE.collector
    if col is None:
        return None
    stack = col._stack()
    with col._lock:
        col._seq += 1
        seq = col._seq
    rec = OpRecord(name, kind, threading.get_ident(), len(stack), seq,
                   stack[-1] if stack else None)
    if col.record_shapes:
        rec.shapes = [list(getattr(x, "shape", ())) if hasattr(x, "shape") else []
                      for x in inputs]
    if storage is None:
        for x in inputs:
            storage = _storage_of(x)
            if storage is not None:
                break
    if storage is not None:
        dev_type = getattr(storage.device, "type", "cpu")
        if dev_type != "cpu":
            rec.device_type = dev_type
            backend = storage.backend
            if col.device_timing and hasattr(backend, "record_event"):
                rec.dev_index = storage.index  # the end marker goes on the same queue
                rec.dev_events = (backend, backend.record_event(storage.index), None)
    stack.append(rec)
    rec.start_ns = _now()
    return rec


def _output_bytes(out: Any, rec: OpRecord) -> None:
    items = out if isinstance(out, (tuple, list)) else (out,)
    for o in items:
        st = _storage_of(o)
        if st is None:
            continue
        v = getattr(o, "_v", None)
        n = v.numel * v.dtype.itemsize if v is not None else 0
        if getattr(st.device, "type", "cpu") == "cpu":
            rec.cpu_bytes += n
        else:
            rec.device_bytes += n


def end(rec: OpRecord | None, out: Any = None) -> None:
    """Close ``rec`` (the innermost open record of this thread)."""
    if rec is None:
        return
    rec.end_ns = _now()
    col = STATE.collector
    if col is None:
        return
    if rec.dev_events is not None:
        backend, a, _ = rec.dev_events
        rec.dev_events = (backend, a, backend.record_event(rec.dev_index))
    if col.profile_memory and out is not None:
        _output_bytes(out, rec)
    stack = col._stack()
    if stack and stack[-1] is rec:
        stack.pop()
    parent = rec.parent
    if parent is not None:
        parent.child_ns += rec.end_ns - rec.start_ns
        parent.child_cpu_bytes += rec.cpu_bytes + rec.child_cpu_bytes
        parent.child_device_bytes += rec.device_bytes + rec.child_device_bytes
    col.records.append(rec)


def record(name: str, inputs: tuple, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
           ) -> Any:
    """``fn(*args, **kwargs)`` inside a record named ``name`` (``inputs`` give the shapes)."""
    rec = begin(name, "op", inputs)
    try:
        out = fn(*args, **kwargs)
    except BaseException:
        end(rec)
        raise
    end(rec, out)
    return out


def record_backward(node: Any, grads: tuple) -> Any:
    """A backward node's ``_apply(grads)`` inside a record named as PyTorch names it."""
    rec = begin(f"autograd::engine::evaluate_function: {node.name()}", "backward", grads)
    try:
        out = node._apply(grads)
    except BaseException:
        end(rec)
        raise
    end(rec, out)
    return out


def record_inplace(raw_into: Callable[[Any], None], x: Any, others: tuple) -> None:
    """An in-place op's write (``raw_into(x)``), named after the Tensor method that asked for it
    (``add_``, ``fill_``, ``__setitem__`` ...), found on the call stack: this runs only while a
    profiler is active."""
    rec = begin(_inplace_name(sys._getframe(2)), "op", (x, *others))
    try:
        raw_into(x)
    except BaseException:
        end(rec)
        raise
    end(rec, x)


def _inplace_name(frame: Any) -> str:
    for _ in range(6):
        if frame is None:
            break
        name = frame.f_code.co_name
        if (name.endswith("_") and not name.startswith("_")) or name in _INPLACE_DUNDERS:
            return name
        frame = frame.f_back
    return "inplace"


_INPLACE_DUNDERS = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                    "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__"}


def op_name(fn_cls: type) -> str:
    """``_SumAll`` -> ``sum_all``: the name an op's ``Function`` class records under."""
    cached = _NAMES.get(fn_cls)
    if cached is None:
        raw = fn_cls.__name__.lstrip("_")
        chars = []
        for i, c in enumerate(raw):
            if c.isupper() and i and (raw[i - 1].islower() or raw[i - 1].isdigit()):
                chars.append("_")
            chars.append(c.lower())
        cached = _NAMES[fn_cls] = "".join(chars)
    return cached


_NAMES: dict[type, str] = {}
