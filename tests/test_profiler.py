"""pg.autograd.profiler and pg.profiler: every op, backward node and user range is recorded, with
CPU time, shapes, memory and (on an accelerator with events) device time; tables and traces."""
from __future__ import annotations

import json

import pytest

import portagrad as pg
from portagrad.autograd import profiler as AP
from portagrad import profiler as P
from portagrad.autograd import _profiling
from portagrad.backends.interface import EVENT_METHODS
from portagrad.plugins.manager import get_backend


def _step(device):
    x = pg.randn(8, 4, device=device, requires_grad=True)
    w = pg.randn(4, 3, device=device, requires_grad=True)
    with AP.record_function("forward_pass"):
        y = (x @ w).relu().sum()
    y.backward()
    return pg.ones(3, device=device) + pg.ones(3, device=device)  # the operators' fast path


def test_records_forward_backward_and_user_ranges(device):
    with AP.profile(record_shapes=True, profile_memory=True) as prof:
        _step(device)
    names = [e.name for e in prof.events()]
    for expected in ("mm", "relu", "sum_all", "add", "forward_pass",
                     "autograd::engine::evaluate_function: MmBackward0",
                     "autograd::engine::evaluate_function: ReluBackward0"):
        assert expected in names, (expected, names)
    mm = next(e for e in prof.events() if e.name == "mm")
    assert mm.input_shapes == [[8, 4], [4, 3]]
    assert mm.cpu_time_total > 0
    assert mm.self_cpu_memory_usage + mm.self_device_memory_usage == 8 * 3 * 4
    user = next(e for e in prof.events() if e.name == "forward_pass")
    assert user.cpu_time_total >= user.self_cpu_time_total
    # the user range contains the forward ops: its self time excludes theirs
    inner = sum(e.cpu_time_total for e in prof.events()
                if e.name in ("mm", "relu", "sum_all") and e.time_range_start >= user.time_range_start
                and e.time_range_end <= user.time_range_end)
    assert user.self_cpu_time_total == pytest.approx(user.cpu_time_total - inner, abs=1e-3)
    assert not _profiling.STATE.on and _profiling.STATE.collector is None


def test_key_averages_table_sorted(device):
    with AP.profile() as prof:
        for _ in range(3):
            _step(device)
    avg = prof.key_averages()
    by_key = {e.key: e for e in avg}
    assert by_key["mm"].count == 9  # one forward and two backward matmuls per step
    assert by_key["forward_pass"].count == 3
    table = avg.table(sort_by="self_cpu_time_total", row_limit=4)
    lines = table.splitlines()
    assert "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    assert lines[-1].startswith("Self CPU time total: ")
    rows = lines[3:3 + 4]
    assert len(rows) == 4 and lines[3 + 4].startswith("---")
    top = sorted(avg, key=lambda e: e.self_cpu_time_total, reverse=True)[:4]
    assert [r.split()[0] for r in rows] == [str(e.key).split()[0] for e in top]
    with pytest.raises(AttributeError, match="not a profiler column"):
        avg.table(sort_by="bogus")
    shapes = prof.key_averages  # needs record_shapes for grouping by shape
    with pytest.raises(RuntimeError, match="record_shapes=True"):
        shapes(group_by_input_shape=True)


def test_torch_profiler_api_and_chrome_trace(device, tmp_path):
    with P.profile(activities=[P.ProfilerActivity.CPU], record_shapes=True) as prof:
        with P.record_function("label"):
            pg.ones(2, 2, device=device).exp().sum()
    grouped = prof.key_averages(group_by_input_shape=True)
    assert {e.key for e in grouped} >= {"exp", "sum_all", "label"}
    assert "Input Shapes" in grouped.table(sort_by="cpu_time_total", row_limit=10)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    ops = [ev for ev in trace if ev["cat"] in ("cpu_op", "user_annotation")]
    assert {ev["name"] for ev in ops} >= {"exp", "sum_all", "label"}
    for ev in ops:
        assert ev["ph"] == "X" and ev["dur"] >= 0 and ev["ts"] >= 0
    exp = next(ev for ev in ops if ev["name"] == "exp")
    assert exp["args"]["Input Dims"] == [[2, 2]]


def test_device_time_from_events(device):
    with AP.profile(use_device="opencl") as prof:
        pg.ones(64, 64, device=device).exp().sum()
    exp = next(e for e in prof.events() if e.name == "exp")
    if device.startswith("opencl"):
        assert exp.device_type == "opencl"
        assert exp.device_time_total > 0
        assert "Self OPENCL" in prof.key_averages().table()
    elif device == "cpu":
        assert exp.device_time_total == 0 and exp.device_type == "cpu"
    else:  # a plugin's device: timed by its backend's events when it has them
        dev_type = pg.device(device).type
        assert exp.device_type == dev_type
        has_events = all(hasattr(get_backend(dev_type), m) for m in EVENT_METHODS)
        assert (exp.device_time_total > 0) == has_events
    with AP.profile(use_cuda=True):  # accepted, as in PyTorch scripts
        pg.ones(2, device=device).exp()


def test_schedule_and_steps(tmp_path):
    sched = P.schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [sched(i) for i in range(6)] == [
        P.ProfilerAction.NONE, P.ProfilerAction.WARMUP, P.ProfilerAction.RECORD,
        P.ProfilerAction.RECORD_AND_SAVE, P.ProfilerAction.NONE, P.ProfilerAction.NONE]
    saved = []
    with P.profile(schedule=sched, on_trace_ready=lambda p: saved.append(
            sorted({e.key for e in p.key_averages()}))) as prof:
        for i in range(6):
            pg.full((2,), float(i)).exp() if i in (2, 3) else pg.ones(2).neg()
            prof.step()
    assert saved == [["exp"]]  # only the two active steps were recorded
    handler = P.tensorboard_trace_handler(str(tmp_path), worker_name="w")
    with P.profile(on_trace_ready=handler):
        pg.ones(2).exp()
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.startswith("w.") and files[0].suffix == ".json"
    with pytest.raises(ValueError):
        P.schedule(wait=0, warmup=0, active=0)


def test_errors_and_inactive_state():
    with AP.profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with AP.profile():
                pass
    prof = AP.profile()
    with pytest.raises(RuntimeError, match="didn't finish"):
        prof.key_averages()
    with AP.profile(enabled=False) as off:
        pg.ones(2).exp()
    assert off.function_events is None
    # record_function outside a profiler is a no-op; as a decorator it keeps the result
    with AP.record_function("idle"):
        pass

    @AP.record_function("deco")
    def f(v):
        return v.exp()

    with AP.profile() as prof:
        f(pg.ones(2))
    assert [e.name for e in prof.events()][:2] == ["deco", "exp"]


def test_inplace_ops_are_recorded(device):
    z = pg.ones(3, device=device)
    with AP.profile(record_shapes=True) as prof:
        z.add_(1.0)
        z.mul_(z)
        z.fill_(2.0)
        z += 1
    names = [e.name for e in prof.events()]
    assert names == ["add_", "mul_", "fill_", "add_"]
    assert prof.events()[1].input_shapes == [[3], [3]]
    assert z.tolist() == [3.0, 3.0, 3.0]


def test_op_names():
    class _SumAll:
        pass

    class MyOp2Thing:
        pass

    assert _profiling.op_name(_SumAll) == "sum_all"
    assert _profiling.op_name(MyOp2Thing) == "my_op2_thing"
