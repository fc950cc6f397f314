"""Per-device choice of the GEMM kernel by measurement (a small autotuner).

No one tiling is best at every size on every device (see :mod:`.gemm_packed` and the "gpu3"
sweep in ``docs/performance.md``), so the first GEMM of a *size class* on a device times a
handful of candidates on the call's own operands and keeps the fastest:

* a size class is the dtype, the operand layout (which strides are 1, broadcast batches) and
  the power-of-two bucket of each of ``batch, M, N, K``;
* candidates are ``(kind, tile)`` pairs: on CPU devices the plain "cpu" kernel and the "packed"
  tiles, on GPUs the "gpu3" tiles that fit the device's local memory; they are timed in
  turn (interleaved, so that a change of load on a shared machine does not favour one), up to
  :data:`ROUNDS` runs each or until :data:`BUDGET_S` of timed runs is spent after a round, each
  keeping its fastest run; a warm-up run of each builds its kernels, so compilation does not
  count;
* products under :data:`TUNE_MIN_FLOPS` are not timed (their launch costs dominate): they take
  the first candidate of the heuristic order (:func:`default_choice`).

Choices are kept in memory and in a JSON file per machine (``PORTAGRAD_OPENCL_GEMM_CACHE``, by
default ``$XDG_CACHE_HOME/portagrad`` or ``~/.cache/portagrad``; ``0`` keeps them in memory
only), keyed by device name, platform and driver version, so later processes skip the timing.
``PORTAGRAD_OPENCL_GEMM_TUNE=0`` turns timing and the remembered choices off (every class takes
:func:`default_choice`), which makes the kernel, and so the rounding, depend on the sizes alone:
the test suite runs so (``tests/conftest.py``), apart from the tests of the tuner itself.
Whatever is chosen computes the same product up to rounding (every candidate is checked by
``tests/test_opencl_gemm.py`` and ``tests/test_opencl_gemm_tune.py``).
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "BUDGET_S",
    "ROUNDS",
    "TUNE_MIN_FLOPS",
    "Choice",
    "Tuner",
    "cache_path",
    "default_choice",
    "size_class",
    "tuning_enabled",
]

#: products smaller than this many flops are not timed (launch costs dominate them)
TUNE_MIN_FLOPS = 1 << 25
#: seconds of timed runs after which a size class stops timing (after a whole round)
BUDGET_S = 0.03
#: at most this many timed runs of each candidate (fewer once BUDGET_S is spent)
ROUNDS = 3
#: a choice: the GEMM family and its tile (``None`` for the plain "cpu" kernel)
Choice = tuple[str, Any]
_OFF = ("0", "false", "no", "off")


def tuning_enabled() -> bool:
    """Whether ``PORTAGRAD_OPENCL_GEMM_TUNE`` leaves timing on (the default)."""
    return os.environ.get("PORTAGRAD_OPENCL_GEMM_TUNE", "1").strip().lower() not in _OFF


def cache_path() -> str | None:
    """The JSON file of the on-disk cache, or ``None`` when ``PORTAGRAD_OPENCL_GEMM_CACHE`` is
    ``0`` (an empty value means the default directory)."""
    env = os.environ.get("PORTAGRAD_OPENCL_GEMM_CACHE", "").strip()
    if env.lower() in _OFF:
        return None
    base = env or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                               "portagrad")
    return os.path.join(base, "opencl_gemm_tiles.json")


def _bucket(x: int) -> int:
    return max(0, x - 1).bit_length()  # 1 -> 0, 2 -> 1, 3..4 -> 2, 5..8 -> 3, ...


def size_class(a: Any, b: Any, out: Any) -> str:
    """Key of the size class of ``out = a @ b`` (see the module doc), as a string."""
    bsz, m, n = out.shape
    k = a.shape[2]
    sab, sam, sak = a.strides
    sbb, sbk, sbn = b.strides
    lay = "".join("1" if f else "0" for f in (sak == 1, sam == 1, sbn == 1, sbk == 1,
                                               out.strides[2] == 1, sab == 0, sbb == 0))
    return f"{out.dtype.name}/{lay}/" + ",".join(str(_bucket(x)) for x in (bsz, m, n, k))


def default_choice(cands: Sequence[Choice], flops: int, m: int, n: int) -> Choice:
    """The heuristic choice, without timing: on CPU devices "dot" where it is a candidate
    (operands contiguous along ``k``), else the plain kernel for small products or thin matrices
    (packing would cost more than it saves), else the first candidate."""
    if cands[0][0] in ("cpu", "dot") or len(cands) == 1:
        return cands[0]
    packed = [c for c in cands if c[0] == "packed"]
    if packed and (flops < TUNE_MIN_FLOPS or m < packed[0][1].rm or n < packed[0][1].nb):
        return next(c for c in cands if c[0] == "cpu")
    return cands[0]


def _label(choice: Choice) -> str:
    kind, tile = choice
    return kind if tile is None else f"{kind}:{tile.name}"


class Tuner:
    """The choices of one device (in memory, mirrored to the cache file)."""

    def __init__(self, device_key: str) -> None:
        self.device_key = device_key
        self._mem: dict[str, str] = {}
        self._lock = threading.Lock()
        self._disk_loaded = False
        self.timed = 0  # size classes timed by this process (for tests and benchmarks)
        self.last: str | None = None  # label of the latest choice (for benchmarks)

    def _load(self) -> None:
        self._disk_loaded = True
        path = cache_path()
        if path is None:
            return
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            entry = data.get(self.device_key, {}) if isinstance(data, dict) else {}
            if isinstance(entry, dict):
                self._mem.update({k: v for k, v in entry.items()
                                  if isinstance(k, str) and isinstance(v, str)})
        except (OSError, ValueError):  # no cache yet, or an unreadable one: time again
            pass

    def _save(self, cls: str, label: str) -> None:
        path = cache_path()
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                with open(path, encoding="utf-8") as f:
                    data = json.load(f)
                if not isinstance(data, dict):
                    data = {}
            except (OSError, ValueError):
                data = {}
            data.setdefault(self.device_key, {})[cls] = label
            # per process and thread: two writers of one name would interleave their bytes
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)  # atomic: a concurrent reader sees the old or the new file
        except OSError:  # a read-only home, say: the choice stays in memory
            pass

    def choose(self, cls: str, cands: Sequence[Choice], flops: int, m: int, n: int,
               run: Callable[[Choice], None], finish: Callable[[], None],
               can_time: bool = True) -> Choice:
        """The choice for size class ``cls``: remembered, else timed (``run(choice)`` enqueues
        the product, ``finish()`` waits for the queue), else :func:`default_choice`.
        ``can_time=False`` (e.g. ``out`` overlaps an operand) never times."""
        if not tuning_enabled():  # the sizes alone decide: no timing, no remembered choice
            choice = default_choice(cands, flops, m, n)
            self.last = _label(choice)
            return choice
        with self._lock:
            if not self._disk_loaded:
                self._load()
            label = self._mem.get(cls)
        if label is not None:
            for c in cands:
                if _label(c) == label:
                    self.last = label
                    return c
        if not can_time or flops < TUNE_MIN_FLOPS or len(cands) == 1:
            choice = default_choice(cands, flops, m, n)
            self.last = _label(choice)
            return choice
        finish()
        active = list(cands)
        for c in active:  # warm-up: builds the kernels, touches the temporaries
            run(c)
            finish()
        # rounds over the candidates in turn, each keeping its fastest run: on a shared machine
        # the load changes between one candidate's runs and the next one's, and interleaving
        # spreads that over all of them
        times = [float("inf")] * len(active)
        spent = 0.0
        for _ in range(ROUNDS):
            for i, c in enumerate(active):
                t0 = time.perf_counter()
                run(c)
                finish()
                dt = time.perf_counter() - t0
                spent += dt
                times[i] = min(times[i], dt)
            if spent > BUDGET_S:
                break
        best = active[times.index(min(times))]
        label = self.last = _label(best)
        with self._lock:
            self._mem[cls] = label
            self.timed += 1
        self._save(cls, label)
        return best
