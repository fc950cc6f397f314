"""Task descriptions, measurements and number formatting (``torch.utils.benchmark.utils.common``)."""
from __future__ import annotations

import contextlib
import dataclasses
import math
import struct
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

from ..._settings import get_num_threads, set_num_threads

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

# The IQR / median ratios above which a measurement is flagged, and flagged as severe.
_IQR_WARN_THRESHOLD = 0.1
_IQR_SEVERE_THRESHOLD = 0.25
# Below this per-run time a timer's resolution dominates: it caps the significant figures.
_TIMER_FLOOR_S = 2.5e-8
_MAX_SIGNIFICANT_FIGURES = 4


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and the labels a :class:`Compare` table uses."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the statement) with the sub label."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" in self.stmt:
            head = "stmt:" + (f" ({self.sub_label})" if self.sub_label else "")
            return head + "\n" + textwrap.indent(self.stmt, "  ")
        return self.stmt + (f": {self.sub_label}" if self.sub_label else "")

    def setup_str(self) -> str:
        """``setup: ...`` (indented when several lines); empty for a setup of ``pass``."""
        if self.setup in ("", "pass"):
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, one section a line (several-line sections end blank)."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(s + "\n" if "\n" in s else s for s in sections if s)


def _quantile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile with linear interpolation between order statistics (numpy's default)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


@dataclasses.dataclass(init=True, repr=False, eq=True)
class Measurement:
    """The times of ``number_per_run`` runs of a task, repeated ``len(raw_times)`` times."""

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __post_init__(self) -> None:
        self._stats: tuple[float, float, float, float, float] | None = None

    def _lazy_init(self) -> tuple[float, float, float, float, float]:
        """(median, mean, p25, p75, iqr) of :attr:`times`, computed once (-1 for no times)."""
        if self._stats is None:
            times = sorted(self.times)
            if not times:
                self._stats = (-1.0, -1.0, -1.0, -1.0, -1.0)
            else:
                p25, p75 = _quantile(times, 0.25), _quantile(times, 0.75)
                self._stats = (_quantile(times, 0.5), sum(times) / len(times), p25, p75, p75 - p25)
        return self._stats

    @property
    def times(self) -> list[float]:
        """Seconds per run of each measurement."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        return self._lazy_init()[0]

    @property
    def mean(self) -> float:
        return self._lazy_init()[1]

    @property
    def iqr(self) -> float:
        return self._lazy_init()[4]

    @property
    def significant_figures(self) -> int:
        """How many digits of the median the spread of the measurements supports (1 to 4).

        The standard error of the median is estimated robustly from the IQR (one outlier does not
        change it) and never taken below a timer-resolution floor."""
        n = len(self.times)
        if n == 0:
            return 1
        stderr = max(0.6745 * self.iqr / math.sqrt(n), _TIMER_FLOOR_S)
        if self.median <= 0:
            return 1
        digits = math.floor(math.log10(self.median / stderr))
        return max(1, min(_MAX_SIGNIFICANT_FIGURES, digits))

    @property
    def has_warnings(self) -> bool:
        return not self.meets_confidence(_IQR_WARN_THRESHOLD)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether IQR / median is at most ``threshold``."""
        return self.iqr / self.median <= threshold if self.median else True

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.task_spec.sub_label or self.task_spec.stmt or "[Unknown]"

    def __repr__(self) -> str:
        median, _, p25, p75, iqr = self._lazy_init()
        n = len(self.times)
        unit, scale = select_unit(median)
        threads = self.task_spec.num_threads
        threads_str = f"{threads} thread{'s' if threads > 1 else ''}"
        lines = [object.__repr__(self), self.task_spec.summarize()]
        if n == 1:
            lines += [f"  {median / scale:.2f} {unit}",
                      f"  1 measurement, {self.number_per_run} runs , {threads_str}"]
        else:
            lines.append(f"  Median: {median / scale:.2f} {unit}")
            if n >= 4:
                lines.append(f"  IQR:    {iqr / scale:.2f} {unit} "
                             f"({p25 / scale:.2f} to {p75 / scale:.2f})")
            lines.append(f"  {n} measurements, {self.number_per_run} runs per measurement, "
                         f"{threads_str}")
        lines += self._warnings()
        return "\n".join(lines)

    def _warnings(self) -> list[str]:
        if not self.has_warnings:
            return []
        rel = self.iqr / self.median
        why = ("This suggests significant environmental influence." if rel >= _IQR_SEVERE_THRESHOLD
               else "This could indicate system fluctuation.")
        return [f"  WARNING: Interquartile range is {rel * 100:.1f}% of the median measurement.",
                f"           {why}"]

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """One measurement per task: the times of those of the same task, per single run."""
        grouped: dict[TaskSpec, list[Measurement]] = {}
        for m in measurements:
            grouped.setdefault(m.task_spec, []).append(m)
        out = []
        for spec, group in grouped.items():
            times = [t for m in group for t in m.times]
            out.append(Measurement(1, times, spec, group[0].metadata))
        return out


def _log10(t: float) -> float:
    """log10 as a float op: -inf for 0 and nan for negatives, so the caller's int() fails as
    torch's does (ValueError for nan, OverflowError for infinities)."""
    if t == 0:
        return -math.inf
    if t < 0 or math.isnan(t):
        return math.nan
    return math.log10(t)


def select_unit(t: float) -> tuple[str, float]:
    """The unit to print seconds ``t`` in and its size in seconds: ``('us', 1e-06)``."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_f32(_log10(_f32(t))) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    """``'us'`` -> ``'microsecond'`` (KeyError for other units)."""
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def _f32(x: float) -> float:
    """``x`` rounded to float32: torch computes these helpers on float32 tensors."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded (half to even) to ``n`` significant figures, in float32 arithmetic."""
    x = _f32(x)
    magnitude = int(math.floor(_log10(abs(x)))) if x != 0 else int(-math.inf)
    scale = _f32(10.0 ** (magnitude - n + 1))
    return _f32(round(_f32(x / scale)) * scale)


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements in order of first appearance."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` intra-op threads, then restore the previous count."""
    prior = get_num_threads()
    try:
        set_num_threads(n)
        yield
    finally:
        set_num_threads(prior)
