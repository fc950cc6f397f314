"""Benchmarking utilities (``torch.utils.benchmark``): ``Timer`` measures Python statements,
``Measurement`` holds and summarises the times, ``Compare`` lays them out as tables.

Not provided: the ``Fuzzer`` family (random benchmark inputs) and Valgrind instruction counts
(``CallgrindStats``, ``FunctionCounts``); ``Timer.collect_callgrind`` raises ``OSError``.
"""
from .common import (Measurement, TaskSpec, ordered_unique, select_unit, set_torch_threads,
                     trim_sigfig, unit_to_english)
from .compare import Colorize, Compare
from ._timer import Language, Timer, timer

__all__ = ["Timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize", "select_unit",
           "unit_to_english", "trim_sigfig", "ordered_unique", "set_torch_threads", "timer"]
