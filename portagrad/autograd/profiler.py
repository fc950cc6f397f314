"""The op profiler (``torch.autograd.profiler``): ``profile`` records every op, backward node and
``record_function`` range run while it is active, with CPU time, input shapes, the memory of the
results and, for ops on an accelerator with events (OpenCL), device time.

    with pg.autograd.profiler.profile(record_shapes=True) as prof:
        model(x).sum().backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from . import _profiling
from ._profiling import STATE, Collector, OpRecord

__all__ = ["profile", "record_function", "FunctionEvent", "FunctionEventAvg", "EventList",
           "emit_nvtx", "emit_itt"]

# the sort keys of ``EventList.table`` (PyTorch's, with its ``cuda``/``device`` spellings)
_SORT_KEYS = ("cpu_time", "cuda_time", "device_time", "cpu_time_total", "cuda_time_total",
              "device_time_total", "self_cpu_time_total", "self_cuda_time_total",
              "self_device_time_total", "cpu_memory_usage", "cuda_memory_usage",
              "device_memory_usage", "self_cpu_memory_usage", "self_cuda_memory_usage",
              "self_device_memory_usage", "count")


class FunctionEvent:
    """One recorded call. Times are in microseconds."""

    def __init__(self, rec: OpRecord, origin_ns: int) -> None:
        self.id = rec.seq
        self.name = rec.name
        self.key = rec.name
        self.thread = rec.thread
        self.kind = rec.kind
        self.input_shapes = rec.shapes
        self.time_range_start = (rec.start_ns - origin_ns) / 1000.0
        self.time_range_end = (rec.end_ns - origin_ns) / 1000.0
        self.cpu_time_total = (rec.end_ns - rec.start_ns) / 1000.0
        self.self_cpu_time_total = max(self.cpu_time_total - rec.child_ns / 1000.0, 0.0)
        self.device_type = rec.device_type or "cpu"
        # the device markers bracket the op and everything it called
        self.device_time_total = rec.device_ms * 1000.0
        self.self_device_time_total = max((rec.device_ms - rec.child_device_ms) * 1000.0, 0.0)
        self.self_cpu_memory_usage = rec.cpu_bytes
        self.cpu_memory_usage = rec.cpu_bytes + rec.child_cpu_bytes
        self.self_device_memory_usage = rec.device_bytes
        self.device_memory_usage = rec.device_bytes + rec.child_device_bytes
        self.is_user_annotation = rec.kind == "user"
        self.count = 1

    # PyTorch's older ``cuda`` spellings of the device figures
    @property
    def cuda_time_total(self) -> float:
        return self.device_time_total

    @property
    def self_cuda_time_total(self) -> float:
        return self.self_device_time_total

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def device_time(self) -> float:
        return self.device_time_total

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} "
                f"cpu_time={_format_time(self.cpu_time_total)} "
                f"self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one key (op name, or name and input shapes) added up."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.input_shapes: Any = None
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.is_user_annotation = False

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.is_user_annotation = other.is_user_annotation
        self.count += other.count
        for f in ("cpu_time_total", "self_cpu_time_total", "device_time_total",
                  "self_device_time_total", "cpu_memory_usage", "self_cpu_memory_usage",
                  "device_memory_usage", "self_device_memory_usage"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        return self

    @property
    def cpu_time(self) -> float:
        """Average CPU time per call (us)."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return self.device_time_total / self.count if self.count else 0.0

    cuda_time = device_time

    @property
    def cuda_time_total(self) -> float:
        return self.device_time_total

    @property
    def self_cuda_time_total(self) -> float:
        return self.self_device_time_total

    @property
    def cuda_memory_usage(self) -> int:
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self) -> int:
        return self.self_device_memory_usage

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_format_time(self.self_cpu_time_total)} cpu_time="
                f"{_format_time(self.cpu_time_total)} count={self.count}>")


class EventList(list):
    """A list of :class:`FunctionEvent` (or, from :meth:`key_averages`, of averages)."""

    def __init__(self, events: Iterable[Any] = (), use_device: str | None = None,
                 profile_memory: bool = False, with_shapes: bool = False) -> None:
        super().__init__(events)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_shapes = with_shapes

    @property
    def self_cpu_time_total(self) -> float:
        """Total self CPU time of the events (us)."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """One :class:`FunctionEventAvg` per op name (and input shapes, when asked)."""
        if group_by_stack_n:
            raise NotImplementedError("group_by_stack_n: portagrad's profiler records no stacks")
        stats: dict[Any, FunctionEventAvg] = {}
        for e in self:
            key = (e.key, str(e.input_shapes)) if group_by_input_shapes else e.key
            stats.setdefault(key, FunctionEventAvg()).add(e)
        return EventList(stats.values(), use_device=self._use_device,
                         profile_memory=self._profile_memory,
                         with_shapes=group_by_input_shapes)

    def total_average(self) -> FunctionEventAvg:
        """Every event added into one."""
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header: str | None = None, top_level_events_only: bool = False) -> str:
        """The events as a text table, sorted by ``sort_by`` (descending), ``row_limit`` rows."""
        return _build_table(self, sort_by, row_limit, max_name_column_width,
                            max_shapes_column_width, header, top_level_events_only)

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto) JSON file."""
        pid = os.getpid()
        trace = []
        for e in self:
            if not isinstance(e, FunctionEvent):
                raise TypeError("export_chrome_trace needs the events, not their key_averages()")
            cat = {"op": "cpu_op", "backward": "cpu_op", "user": "user_annotation"}[e.kind]
            args: dict[str, Any] = {"External id": e.id}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            trace.append({"ph": "X", "cat": cat, "name": e.name, "pid": pid, "tid": e.thread,
                          "ts": e.time_range_start, "dur": e.cpu_time_total, "args": args})
            if e.self_device_time_total > 0:
                # the device figure has no device clock start: drawn from the op's CPU start
                trace.append({"ph": "X", "cat": "kernel", "name": e.name, "pid": pid,
                              "tid": f"{e.device_type} stream", "ts": e.time_range_start,
                              "dur": e.self_device_time_total,
                              "args": {"External id": e.id, "device": e.device_type}})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


def _format_time(time_us: float) -> str:
    """PyTorch's rendering of a time in microseconds."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: float) -> str:
    """PyTorch's rendering of a byte count."""
    kb, mb, gb = 1024, 1024 * 1024, 1024 * 1024 * 1024
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} Gb"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} Mb"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} Kb"
    return f"{int(nbytes)} b"


def _build_table(events: EventList, sort_by: str | None, row_limit: int, name_width: int,
                 shapes_width: int, header: str | None, top_level_only: bool) -> str:
    if not events:
        return ""
    rows = list(events)
    if sort_by is not None:
        if sort_by not in _SORT_KEYS:
            raise AttributeError(f"sort_by={sort_by!r} is not a profiler column; use one of "
                                 f"{', '.join(_SORT_KEYS)}")
        rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
    if row_limit is not None and row_limit > 0:
        rows = rows[:row_limit]
    dev = events._use_device
    with_mem = events._profile_memory
    name_w = min(max([len(str(e.key)) for e in rows] + [4]) + 4, name_width)
    cols: list[tuple[str, Callable[[Any], str]]] = []
    total_self_cpu = sum(e.self_cpu_time_total for e in events)
    total_self_dev = sum(e.self_device_time_total for e in events)
    cols += [("Self CPU %", lambda e: _format_time_share(e.self_cpu_time_total, total_self_cpu)),
             ("Self CPU", lambda e: _format_time(e.self_cpu_time_total)),
             ("CPU total %", lambda e: _format_time_share(e.cpu_time_total, total_self_cpu)),
             ("CPU total", lambda e: _format_time(e.cpu_time_total)),
             ("CPU time avg", lambda e: _format_time(e.cpu_time_total / max(e.count, 1)))]
    if dev:
        d = dev.upper()
        cols += [(f"Self {d}", lambda e: _format_time(e.self_device_time_total)),
                 (f"Self {d} %", lambda e: _format_time_share(e.self_device_time_total,
                                                              total_self_dev)),
                 (f"{d} total", lambda e: _format_time(e.device_time_total)),
                 (f"{d} time avg", lambda e: _format_time(e.device_time_total
                                                          / max(e.count, 1)))]
    if with_mem:
        cols += [("CPU Mem", lambda e: _format_memory(e.cpu_memory_usage)),
                 ("Self CPU Mem", lambda e: _format_memory(e.self_cpu_memory_usage))]
        if dev:
            d = dev.upper()
            cols += [(f"{d} Mem", lambda e: _format_memory(e.device_memory_usage)),
                     (f"Self {d} Mem", lambda e: _format_memory(e.self_device_memory_usage))]
    cols.append(("# of Calls", lambda e: str(e.count)))
    with_shapes = events._with_shapes
    if with_shapes:
        cols.append(("Input Shapes", lambda e: str(e.input_shapes)[:shapes_width]))
    widths = [name_w] + [max(12, len(h) + 2) for h, _ in cols]
    if with_shapes:
        widths[-1] = shapes_width

    def line(cells: list[str]) -> str:
        first = cells[0][:name_w - 2] + ".." if len(cells[0]) > name_w - 2 else cells[0]
        return "  ".join([first.rjust(widths[0])] + [c.rjust(w) for c, w in
                                                      zip(cells[1:], widths[1:])]) + "  "

    sep = "  ".join("-" * w for w in widths) + "  "
    out = []
    if header:
        out.append("=" * len(sep))
        out.append(header)
    out += [sep, line(["Name"] + [h for h, _ in cols]), sep]
    for e in rows:
        out.append(line([str(e.key)] + [fmt(e) for _, fmt in cols]))
    out.append(sep)
    out.append(f"Self CPU time total: {_format_time(total_self_cpu)}")
    if dev:
        out.append(f"Self {dev.upper()} time total: {_format_time(total_self_dev)}")
    return "\n".join(out) + "\n"


_session_lock = threading.Lock()


class profile:
    """Context manager that records every op run inside it (``torch.autograd.profiler.profile``).

    ``use_device`` (``"opencl"``, or any accelerator device type) or ``use_cuda=True`` also
    times ops on the accelerator with the backend's events (read when the profiler exits, which
    waits for the device). ``record_shapes`` keeps input shapes, ``profile_memory`` the bytes of
    the tensors each op returns. ``with_stack``, ``with_flops`` and ``with_modules`` are accepted
    for compatibility and record nothing more.
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 use_device: str | None = None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None) -> None:
        self.enabled = enabled
        if use_cuda and use_device is None:
            use_device = "cuda"
        self.use_device = use_device
        self.use_cuda = use_cuda
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_flops = with_flops
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.entered = False
        self.function_events: EventList | None = None
        self._collector: Collector | None = None
        self._device_label: str | None = None

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._start()
        self.entered = True
        return self

    def _start(self) -> None:
        with _session_lock:
            if STATE.collector is not None:
                raise RuntimeError("Profiler is already enabled on this thread")
            self._collector = Collector(self.record_shapes, self.profile_memory,
                                        device_timing=self.use_device is not None)
            STATE.collector = self._collector
            STATE.on = True

    def _stop(self) -> None:
        with _session_lock:
            STATE.on = False
            STATE.collector = None
        col = self._collector
        if col is None:
            return
        col.finish()
        records = sorted(col.records, key=lambda r: (r.start_ns, r.depth))
        dev_types = {r.device_type for r in records if r.device_type}
        label = self.use_device
        if label == "cuda" and "cuda" not in dev_types and dev_types:
            label = sorted(dev_types)[0]  # use_cuda=True on a machine whose accelerator is not CUDA
        self._device_label = label
        self.function_events = EventList([FunctionEvent(r, col.start_ns) for r in records],
                                         use_device=label, profile_memory=self.profile_memory,
                                         with_shapes=False)

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        self._stop()
        self.entered = False

    def _check_finish(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def events(self) -> EventList:
        """Every recorded call, in start order."""
        return self._check_finish()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Calls grouped by op name (and input shapes, with ``group_by_input_shape=True``)."""
        if group_by_input_shape and not self.record_shapes:
            raise RuntimeError("group_by_input_shape needs the profiler to be created with "
                               "record_shapes=True")
        return self._check_finish().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        return self._check_finish().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the recorded calls as a Chrome trace JSON file."""
        self._check_finish().export_chrome_trace(path)

    def total_average(self) -> FunctionEventAvg:
        return self._check_finish().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Total self CPU time (us)."""
        return self._check_finish().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()

    __repr__ = object.__repr__


class record_function:
    """Label a range of code; it appears in the profiler's results as one event (a context
    manager or a decorator, like ``torch.autograd.profiler.record_function``)."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._rec: OpRecord | None = None

    def __enter__(self) -> record_function:
        if STATE.on:
            self._rec = _profiling.begin(self.name, "user")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._rec is not None:
            _profiling.end(self._rec)
            self._rec = None

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        name = self.name

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(name):
                return fn(*args, **kwargs)

        wrapped.__name__ = getattr(fn, "__name__", "wrapped")
        wrapped.__doc__ = fn.__doc__
        return wrapped


class emit_nvtx:
    """Mark each operator with an NVTX range for NVIDIA's profilers: needs CUDA, so entering
    the block with ``enabled=True`` raises (``enabled=False`` changes nothing)."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes

    def __enter__(self) -> emit_nvtx:
        if self.enabled:
            raise RuntimeError("emit_nvtx: NVTX ranges need CUDA (portagrad has no CUDA "
                               "backend); use portagrad.profiler.profile")
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class emit_itt(emit_nvtx):
    """Mark each operator with an Intel ITT range: not available, so entering the block with
    ``enabled=True`` raises."""

    def __enter__(self) -> emit_itt:
        if self.enabled:
            raise RuntimeError("emit_itt: portagrad emits no ITT ranges; use "
                               "portagrad.profiler.profile")
        return self
