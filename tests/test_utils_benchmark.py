"""portagrad.utils.benchmark (torch.utils.benchmark): Timer with a scripted clock, Measurement's
statistics and text, Compare's tables. Expected texts are torch 2.13's output for the same inputs."""
from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

import portagrad as pg
from portagrad.utils import benchmark as bm

pytestmark = pytest.mark.backend_independent


def ticking(step: float) -> Callable[[], float]:
    """A clock that advances ``step`` seconds per reading."""
    count = itertools.count()
    return lambda: next(count) * step


def M(times: list[float], n: int = 1, **kw: object) -> bm.Measurement:
    spec = {"stmt": "x", "setup": "pass"} | kw
    return bm.Measurement(n, times, bm.TaskSpec(**spec))  # type: ignore[arg-type]


def body(m: bm.Measurement) -> str:
    return repr(m).split("\n", 1)[1]


def test_timeit_warms_up_then_measures_once() -> None:
    log = {"runs": 0, "setups": 0}
    t = bm.Timer("log['runs'] += 1", setup="log['setups'] += 1", timer=ticking(0.001),
                 globals={"log": log})
    m = t.timeit(1000)
    assert (log["runs"], log["setups"]) == (1010, 2)  # warm-up of number // 100, then number
    assert m.number_per_run == 1000 and m.raw_times == [0.001]
    assert m.times == [1e-06] and m.median == 1e-06
    assert body(m) == ("log['runs'] += 1\nsetup: log['setups'] += 1\n  1.00 us\n"
                       "  1 measurement, 1000 runs , 1 thread")


def test_timer_globals_are_copied_and_torch_is_bound() -> None:
    g: dict[str, object] = {}
    bm.Timer("y = 5", timer=ticking(1.0), globals=g).timeit(1)
    assert g == {}
    out: dict[str, object] = {}
    bm.Timer("out['t'] = torch", timer=ticking(1.0), globals={"out": out}).timeit(1)
    assert out["t"] is pg


def test_timer_sets_threads_and_restores_them() -> None:
    before = pg.get_num_threads()
    seen: list[int] = []
    t = bm.Timer("seen.append(torch.get_num_threads())", timer=ticking(1.0),
                 globals={"seen": seen}, num_threads=3)
    m = t.timeit(3)
    assert set(seen) == {3} and pg.get_num_threads() == before
    assert m.task_spec.num_threads == 3
    assert repr(m).endswith("1 measurement, 3 runs , 3 threads")


def test_timer_errors() -> None:
    with pytest.raises(ValueError, match="only a `str` stmt"):
        bm.Timer(lambda: 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Invalid language `rust`"):
        bm.Timer("x", language="rust")
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        bm.Timer("x", language="c++")
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        bm.Timer("x", global_setup="y = 1")
    with pytest.raises(SyntaxError):
        bm.Timer("(")
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        bm.Timer("x = 1").repeat()
    with pytest.raises(OSError, match="callgrind"):
        bm.Timer("x = 1").collect_callgrind()
    with pytest.raises(ValueError, match="boom"):
        bm.Timer("raise ValueError('boom')", timer=ticking(1.0)).timeit(1)
    assert [lang.value for lang in bm.Language] == [0, 1]


def _clocked(seconds_per_run: float) -> bm.Timer:
    """A timer whose clock advances only when the statement runs: exact, load-independent."""
    clock = [0.0]
    return bm.Timer(f"clock[0] += {seconds_per_run}", timer=lambda: clock[0],
                    globals={"clock": clock})


def test_blocked_autorange_spends_min_run_time_in_blocks() -> None:
    calls: list[tuple[int, float]] = []
    m = _clocked(0.01).blocked_autorange(callback=lambda n, s: calls.append((n, s)),
                                         min_run_time=0.05)
    assert m.number_per_run == 1 and len(m.raw_times) == 5
    assert [n for n, _ in calls] == [1] * 5
    assert m.median == pytest.approx(0.01)
    assert body(m).startswith("clock[0] += 0.01\n  Median: 10.00 ms\n")


def test_adaptive_autorange_and_no_autorange() -> None:
    m = _clocked(0.01).adaptive_autorange(min_run_time=0.01)
    assert len(m.raw_times) == 4 and m.median == pytest.approx(0.01)
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        _clocked(0.001).autorange()


def test_measurement_statistics_and_warnings() -> None:
    m = M([1e-6, 2e-6, 3e-6, 4e-6, 5e-6])
    assert (m.median, m.iqr) == (3e-6, 2e-6) and m.mean == pytest.approx(3e-6)
    assert m.has_warnings and not m.meets_confidence() and m.meets_confidence(0.9)
    assert body(m) == (
        "x\n  Median: 3.00 us\n  IQR:    2.00 us (2.00 to 4.00)\n"
        "  5 measurements, 1 runs per measurement, 1 thread\n"
        "  WARNING: Interquartile range is 66.7% of the median measurement.\n"
        "           This suggests significant environmental influence.")
    m = M([123e-6, 125e-6, 124e-6, 180e-6])
    assert body(m).endswith("  WARNING: Interquartile range is 12.0% of the median measurement.\n"
                            "           This could indicate system fluctuation.")
    assert "  IQR:    15.00 us (123.75 to 138.75)" in body(m)
    # fewer than 4 measurements: no IQR line
    assert body(M([1e-6, 1.1e-6, 1.2e-6])) == (
        "x\n  Median: 1.10 us\n  3 measurements, 1 runs per measurement, 1 thread")
    m = M([3e-6, 6e-6], n=3)
    assert m.times == [1e-6, 2e-6] and not m.meets_confidence()
    assert M([1.0] * 4).significant_figures == 4
    assert M([1e-6] * 4).significant_figures == 1
    assert M([]).median == -1.0


def test_measurement_text_sections() -> None:
    m = M([1e-6] * 4, stmt="a=1\nb=2", setup="x=1\ny=2", label="L", sub_label="S",
          description="D", num_threads=2, env="E")
    assert body(m) == ("L: S\nD\nsetup:\n  x=1\n  y=2\n\n  Median: 1.00 us\n"
                       "  IQR:    0.00 us (1.00 to 1.00)\n"
                       "  4 measurements, 1 runs per measurement, 2 threads")
    assert (m.title, m.env, m.as_row_name) == ("L: S", "E", "S")
    spec = bm.TaskSpec("a=1\nb=2", "x=1", sub_label="S")
    assert spec.title == "stmt: (S)\n  a=1\n  b=2"
    assert spec.summarize() == "stmt: (S)\n  a=1\n  b=2\n\nsetup: x=1"
    assert bm.TaskSpec("a", "pass").setup_str() == ""
    assert M([1.0]).env is None and M([1.0]).as_row_name == "x"


def test_merge_groups_by_task_per_run() -> None:
    a, c = M([1.0, 2.0], n=2), M([3.0], n=2)
    other = M([5.0], n=2, label="other")
    merged = bm.Measurement.merge([a, other, c])
    assert [(x.number_per_run, x.raw_times, x.task_spec.label) for x in merged] == [
        (1, [0.5, 1.0, 1.5], None), (1, [2.5], "other")]
    assert bm.Measurement.merge([]) == []


def test_helpers() -> None:
    assert [bm.select_unit(v) for v in (1e-9, 9.99e-7, 1e-6, 0.5, 10, 1e-12)] == [
        ("ns", 1e-9), ("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1), ("s", 1)]
    with pytest.raises(ValueError):
        bm.select_unit(-1.0)
    assert [bm.trim_sigfig(x, n) for x, n in [(123.456, 2), (2.5, 1), (3.5, 1), (135, 2),
                                               (-12.34, 1), (123.456, 0)]] == [
        120.0, 2.0, 4.0, 140.0, -10.0, 0.0]
    assert bm.trim_sigfig(0.00123456, 3) == 0.0012299999361857772  # float32 arithmetic
    assert bm.trim_sigfig(0.15, 1) == 0.20000000298023224
    with pytest.raises(OverflowError):
        bm.trim_sigfig(0.0, 2)
    assert bm.ordered_unique([3, 1, 3, 2, 1]) == [3, 1, 2]
    assert bm.unit_to_english("us") == "microsecond"
    before = pg.get_num_threads()
    with bm.set_torch_threads(3):
        assert pg.get_num_threads() == 3
    assert pg.get_num_threads() == before


def _grid() -> list[bm.Measurement]:
    out = []
    for label in ["add", "mul"]:
        for sub in ["small", "large"]:
            for desc, f in [("pg", 1.0), ("torch", 2.0)]:
                for nt in [1, 4]:
                    base = (1e-6 if label == "add" else 3e-5) * f * (10 if sub == "large" else 1) / nt
                    out.append(M([base, base * 1.01, base * 1.02, base * 0.99], label=label,
                                 sub_label=sub, description=desc, num_threads=nt))
    return out


ADD_TABLE = "\n".join([
    "[-------------- add --------------]",
    "             |     pg    |   torch ",  # the last header cell keeps its centring space
    "1 threads: ------------------------",
    "      small  |   1005.0  |   2010.0",
    "      large  |  10050.0  |  20100.0",
    "4 threads: ------------------------",
    "      small  |    251.2  |    502.5",
    "      large  |   2512.5  |   5025.0",
    "",
    "Times are in nanoseconds (ns).",
    ""])


def test_compare_layout() -> None:
    c = bm.Compare(_grid())
    text = str(c)
    assert text.startswith(ADD_TABLE + "\n[------------ mul ------------]\n")
    assert text.endswith("      large  |   75.4  |  150.8\n\nTimes are in microseconds (us).\n")
    c.trim_significant_figures()
    assert str(c).startswith("""\
[------------ add ------------]
             |    pg   |  torch
1 threads: --------------------
      small  |   1000  |   2000
      large  |  10000  |  20000
4 threads: --------------------
      small  |    300  |    500
      large  |   2500  |   5000
""")


def test_compare_colors_and_warnings() -> None:
    ratios = [1.0, 1.05, 1.5, 2.0, 5.0]
    c = bm.Compare([M([1e-3 * r] * 4, label="L", sub_label="s", description=f"c{i}")
                    for i, r in enumerate(ratios)])
    c.colorize(rowwise=True)
    row = [line for line in str(c).splitlines() if line.startswith("      s")][0]
    assert row.split("|")[1:] == ["  \x1b[92m\x1b[1m1.0\x1b[0m\x1b[0m  ",
                                  "  \x1b[34m\x1b[1m1.1\x1b[0m\x1b[0m  ", "  1.5  ",
                                  "  \x1b[2m\x1b[91m2.0\x1b[0m\x1b[0m  ",
                                  "  \x1b[31m\x1b[1m5.0\x1b[0m\x1b[0m"]
    rs = [M([1e-6] * 4, sub_label="s", description="d"),
          M([2e-6] * 4, sub_label="s", description="d2"),
          M([3e-6, 3.1e-6, 3.3e-6, 3.9e-6], sub_label="t", description="d")]
    c = bm.Compare(rs)
    assert str(c) == ("[----------  ---------]\n         |   d   |   d2\n1 threads: ------------\n"
                      "      s  |  1.0  |  2.0\n      t  |  3.2  |     \n\n"
                      "Times are in microseconds (us).\n")
    c.highlight_warnings()
    text = str(c)
    assert "3.2 (! 12%)" in text
    assert text.endswith("(! XX%) Measurement has high variance, where XX is the IQR / median "
                         "* 100.\n")
    with pytest.raises(ValueError, match="Measurement"):
        bm.Compare([1.0])  # type: ignore[list-item]


def test_the_default_clock_waits_for_loaded_asynchronous_devices(monkeypatch) -> None:
    """The default timer reads the clock after every device of each loaded non-cpu backend has
    finished (queued kernels would otherwise be timed as their launches); the cpu backend and
    backends that were never loaded are left alone."""
    import types

    from portagrad.utils.benchmark import _timer as timer_module

    waited: list[int] = []

    class Async:
        def device_count(self) -> int:
            return 2

        def synchronize(self, index: int) -> None:
            waited.append(index)

    class Cpu:
        def synchronize(self, index: int) -> None:  # pragma: no cover - must not be called
            raise AssertionError("the cpu backend was synchronised")

    state = types.SimpleNamespace(backends={"cpu": Cpu(), "fake": Async()})
    monkeypatch.setattr(timer_module, "get_state", lambda: state)
    t0 = bm.timer()
    assert waited == [0, 1] and isinstance(t0, float)
    m = bm.Timer("x = 1").timeit(10)
    assert m.number_per_run == 10 and len(waited) > 2
