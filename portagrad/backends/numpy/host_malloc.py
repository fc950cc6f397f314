"""glibc's malloc thresholds for a process that computes with numpy: reuse freed heap memory.

glibc serves an allocation above ``M_MMAP_THRESHOLD`` (128 KiB at start) with a fresh ``mmap``
and returns it with ``munmap`` when freed; the kernel then maps and zeroes every page again on the
next step's first write, which costs about as much as computing into the page. glibc raises the
threshold by itself only after the program frees such a block, up to 32 MiB, so a process that
imported a library which did (PyTorch does) runs the same numpy code faster than one that did
not. :func:`tune` sets that end state from the start: blocks up to 32 MiB come from the heap, and
the heap's top is trimmed only past 64 MiB of free memory (glibc's own pairing, twice the
threshold). Freed memory stays with the process for reuse, as in every caching allocator.

Only on glibc; ``PORTAGRAD_HOST_MALLOC=default`` leaves the process's malloc as it is.
"""
from __future__ import annotations

import ctypes
import os
import platform

__all__ = ["ENV_VAR", "MMAP_THRESHOLD", "TRIM_THRESHOLD", "tune"]

ENV_VAR = "PORTAGRAD_HOST_MALLOC"
MMAP_THRESHOLD = 32 << 20  # glibc's own upper bound for the threshold on 64-bit machines
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # <malloc.h>

_done: bool | None = None


def tune() -> bool:
    """Set the thresholds once per process; whether they are set (False: not glibc, opted out,
    or glibc refused)."""
    global _done
    if _done is None:
        _done = _set()
    return _done


def _set() -> bool:
    if os.environ.get(ENV_VAR, "").strip().lower() == "default":
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success (and changes nothing when it refuses a value)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
