"""``Timer``: time a Python statement (``torch.utils.benchmark.utils.timer``)."""
from __future__ import annotations

import enum
import sys
import timeit
from collections.abc import Callable
from typing import Any, NoReturn

from ...plugins.manager import get_state
from .common import Measurement, TaskSpec, set_torch_threads

__all__ = ["Timer", "Language", "timer"]


def _synchronized_clock() -> float:
    """timeit's clock, read once every device of each loaded non-cpu backend has finished its
    queued work: an OpenCL statement enqueues kernels and returns, so timing it alone would
    measure the launches (PyTorch's Timer waits for CUDA the same way). A backend not loaded
    yet is not loaded for it."""
    for device_type, backend in list(get_state().backends.items()):
        if device_type != "cpu":
            for index in range(backend.device_count()):
                backend.synchronize(index)
    return timeit.default_timer()


timer: Callable[[], float] = _synchronized_clock

# blocked_autorange's blocks: the timer's own cost at most this fraction of a block, measured
# as the median of this many empty timings; at most this many runs per block
_MAX_OVERHEAD = 1e-4
_OVERHEAD_SAMPLES = 5
_MAX_BLOCK_RUNS = 10 ** 9
# adaptive_autorange stops early only once it has this many blocks
_MIN_ADAPTIVE_BLOCKS = 4


class Language(enum.Enum):
    """The language of a :class:`Timer`'s statement (only Python runs in portagrad)."""

    PYTHON = 0
    CPP = 1


def _language(language: Language | str) -> Language:
    if language in (Language.PYTHON, "py", "python"):
        return Language.PYTHON
    if language in (Language.CPP, "cpp", "c++"):
        return Language.CPP
    raise ValueError(f"Invalid language `{language}`.")


class Timer:
    """Times ``stmt`` after ``setup`` with ``timer``, under ``num_threads`` intra-op threads.

    Like ``timeit.Timer``, plus the labels that :class:`Compare` lays out, and measurements
    (:class:`Measurement`) instead of bare floats. ``globals`` is copied, and ``torch`` is bound
    to portagrad unless given.
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._language = _language(language)
        if self._language is Language.CPP:
            raise NotImplementedError(
                "Timer(language='c++'): timing C++ statements needs torch's C++ toolchain, which "
                "portagrad does not provide; time a Python statement instead")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this "
                             "code can simply be moved to `setup`.")
        self._globals = dict(globals or {})
        # statements written for torch name it without passing it; the package is loaded by now
        self._globals.setdefault("torch", sys.modules["portagrad"])
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env,
                                   num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        """Seconds for ``number`` runs (at least one), under the task's thread count."""
        with set_torch_threads(self._task_spec.num_threads):
            return self._timer.timeit(max(int(number), 1))

    def timeit(self, number: int = 1000000) -> Measurement:
        """One measurement of ``number`` runs, after a warm-up of ``number // 100`` (at least 2)."""
        self._timeit(max(number // 100, 2))
        return Measurement(number_per_run=number, raw_times=[self._timeit(number)],
                           task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> NoReturn:
        """Not provided, as in torch: use :meth:`blocked_autorange`."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], Any] | None = None) -> NoReturn:
        """Not provided, as in torch: use :meth:`blocked_autorange`."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Runs per block: powers of ten until a block lasts 10^4 times the timer's own cost
        (the median of a few empty timings) and ``min_run_time / 1000``, or longer than
        ``min_run_time`` (the block sizes PyTorch's Timer settles on: about 3 ms here)."""
        with set_torch_threads(self._task_spec.num_threads):
            empty = sorted(self._timer.timeit(0) for _ in range(_OVERHEAD_SAMPLES))
            overhead = empty[len(empty) // 2]
            number = 1
            while number < _MAX_BLOCK_RUNS:
                taken = self._timer.timeit(number)
                if (overhead <= _MAX_OVERHEAD * taken and taken >= min_run_time / 1000) \
                        or taken > min_run_time:
                    break
                number *= 10
        return number

    def _measure_blocks(self, number: int, stop: Callable[[list[float], float], bool],
                        callback: Callable[[int, float], Any] | None) -> Measurement:
        times: list[float] = []
        total = 0.0
        while True:
            time_taken = self._timeit(number)
            total += time_taken
            if callback is not None:
                callback(number, time_taken)
            times.append(time_taken)
            if stop(times, total):
                break
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of a fixed number of runs until ``min_run_time`` seconds were spent timing."""
        number = self._estimate_block_size(min_run_time)
        return self._measure_blocks(number, lambda times, total: total >= min_run_time, callback)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None) -> Measurement:
        """Blocks until IQR / median is at most ``threshold`` (after ``min_run_time`` seconds
        and a few blocks), or ``max_run_time`` seconds were spent."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times: list[float], total: float) -> bool:
            if total >= max_run_time:
                return True
            if total < min_run_time or len(times) < _MIN_ADAPTIVE_BLOCKS:
                return False
            return Measurement(number, times, self._task_spec).meets_confidence(threshold)

        return self._measure_blocks(number, stop, callback)

    def collect_callgrind(self, number: int = 100, *, repeats: int | None = None,
                          collect_baseline: bool = True, retain_out_file: bool = False) -> Any:
        """Instruction counts under Valgrind: not available in portagrad."""
        raise OSError("Failed to collect callgrind profile: Timer.collect_callgrind is not "
                      "implemented in portagrad (it needs torch's Valgrind bindings)")
