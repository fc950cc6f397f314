"""``Compare``: measurements laid out as tables (``torch.utils.benchmark.utils.compare``)."""
from __future__ import annotations

import enum
import math
from collections.abc import Iterable

from .common import Measurement, select_unit, trim_sigfig, unit_to_english

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m\033[1m"
GOOD = "\033[34m\033[1m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m\033[1m"
TERMINATE = "\033[0m\033[0m"
# (upper bound of value / best, color): within 1% of the best is the best, up to 10% good, twice
# and more bad, five times and more very bad
_BANDS = ((1.01, BEST), (1.1, GOOD))
_BAD_RATIO, _VERY_BAD_RATIO = 2.0, 5.0
_ROW_INDENT = " " * 6
_SEPARATOR = "  |  "


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _color(ratio: float) -> str:
    for bound, color in _BANDS:
        if ratio <= bound:
            return color
    if ratio >= _VERY_BAD_RATIO:
        return VERY_BAD
    return BAD if ratio >= _BAD_RATIO else ""


class _Table:
    """One label's table: rows per (threads, row name), columns per description."""

    def __init__(self, label: str | None, results: list[Measurement], colorize: Colorize,
                 trim: bool, highlight: bool) -> None:
        self.label = label
        self.results = results
        self.colorize, self.trim, self.highlight = colorize, trim, highlight
        self.unit, self.scale = select_unit(min(r.median for r in results))
        self.columns = list(dict.fromkeys(r.task_spec.description for r in results))
        self.threads = sorted(dict.fromkeys(r.task_spec.num_threads for r in results))
        self.cells: dict[tuple[int, str, str | None], Measurement] = {}
        self.row_names: dict[int, list[str]] = {t: [] for t in self.threads}
        for r in results:
            t, name = r.task_spec.num_threads, r.as_row_name
            if name not in self.row_names[t]:
                self.row_names[t].append(name)
            self.cells[(t, name, r.task_spec.description)] = r

    def _number(self, m: Measurement) -> str:
        value = m.median / self.scale
        if not self.trim:
            return f"{value:.1f}"
        sig = m.significant_figures
        value = trim_sigfig(value, sig)
        magnitude = math.floor(math.log10(abs(value))) if value else 0
        return f"{value:.{max(0, sig - 1 - magnitude)}f}"

    def _best(self, t: int, name: str, col: str | None) -> float:
        if self.colorize is Colorize.ROWWISE:
            group = [self.cells[(t, name, c)] for c in self.columns if (t, name, c) in self.cells]
        else:
            group = [self.cells[(t, n, col)] for n in self.row_names[t] if (t, n, col) in self.cells]
        return min(m.median for m in group)

    def render(self) -> str:
        numbers = {k: self._number(m) for k, m in self.cells.items()}
        notes = {k: f" (! {m.iqr / m.median * 100:.0f}%)" if self.highlight and m.has_warnings
                 else "" for k, m in self.cells.items()}
        num_width = {c: max((len(v) for k, v in numbers.items() if k[2] == c), default=0)
                     for c in self.columns}
        texts = {k: v.rjust(num_width[k[2]]) + notes[k] for k, v in numbers.items()}
        headers = ["" if c is None else c for c in self.columns]
        widths = [max([len(h)] + [len(v) for k, v in texts.items() if k[2] == c])
                  for h, c in zip(headers, self.columns)]
        name_width = max(len(_ROW_INDENT + n) for names in self.row_names.values() for n in names)
        total = name_width + sum(len(_SEPARATOR) + w for w in widths)
        lines = ["[" + f" {self.label or ''} ".center(total - 2, "-") + "]",
                 " " * name_width + "".join(_SEPARATOR + h.center(w)
                                            for h, w in zip(headers, widths))]
        for t in self.threads:
            lines.append(f"{t} threads: ".ljust(total, "-"))
            for name in self.row_names[t]:
                row = (_ROW_INDENT + name).ljust(name_width)
                for c, w in zip(self.columns, widths):
                    row += _SEPARATOR + self._cell((t, name, c), texts, w)
                lines.append(row)
        lines += ["", f"Times are in {unit_to_english(self.unit)}s ({self.unit})."]
        if self.highlight and any(m.has_warnings for m in self.results):
            lines.append("(! XX%) Measurement has high variance, where XX is the IQR / median "
                         "* 100.")
        return "\n".join(lines) + "\n"

    def _cell(self, key: tuple[int, str, str | None], texts: dict[tuple[int, str, str | None],
              str], width: int) -> str:
        if key not in texts:
            return " " * width
        text = texts[key].center(width) if not self.highlight else texts[key].ljust(width)
        color = ""
        if self.colorize is not Colorize.NONE:
            color = _color(self.cells[key].median / self._best(*key))
        if not color:
            return text
        return _wrap(text, color)


def _wrap(text: str, color: str) -> str:
    """``text``, padding included, between ``color`` and the reset code."""
    return color + text + TERMINATE


class Compare:
    """Tables of measurements, one per label: rows per sub label (grouped by thread count),
    columns per description, the median of each task in one unit per table."""

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def extend_results(self, results: Iterable[Measurement]) -> None:
        """Add measurements (each must be a :class:`Measurement`)."""
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
            self._results.append(r)

    def trim_significant_figures(self) -> None:
        """Print each median to the significant figures its spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Color each cell by its ratio to the best of its column (or of its row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark the measurements with a high IQR / median."""
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def __str__(self) -> str:
        return "\n".join(self._render())

    def _render(self) -> list[str]:
        merged = Measurement.merge(self._results)
        groups: dict[str | None, list[Measurement]] = {}
        for m in merged:
            groups.setdefault(m.task_spec.label, []).append(m)
        return [_Table(label, group, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings).render() for label, group in groups.items()]
