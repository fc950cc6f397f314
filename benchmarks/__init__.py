"""Benchmarks of the OpenCL backend against numpy, run as ``python -m benchmarks.<name>``.

They drive the backend's primitives through :class:`~portagrad.backends.interface.View` objects
(the Tensor API can replace this once it exists). Every figure is printed next to numpy's,
measured in the same run, with the ratio.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import numpy as np  # noqa: E402

__all__ = ["backend", "to_device", "empty", "best_time", "report"]

_BACKEND: Any = None


def backend() -> Any:
    """The process-wide :class:`OpenCLBackend`."""
    global _BACKEND
    if _BACKEND is None:
        from portagrad.backends.opencl.backend import OpenCLBackend

        _BACKEND = OpenCLBackend()
    return _BACKEND


def _view(buf: Any, shape: tuple, dtype: Any) -> Any:
    from portagrad.backends.interface import View

    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return View(buf, 0, tuple(shape), tuple(reversed(strides)), dtype)


def empty(shape: tuple, np_dtype: Any = np.float32, device: int = 0) -> Any:
    """An uninitialised contiguous device view."""
    from portagrad._dtype import from_numpy_dtype

    dt = from_numpy_dtype(np_dtype)
    n = int(np.prod(shape))
    return _view(backend().allocate(device, n * dt.itemsize), tuple(shape), dt)


def to_device(arr: np.ndarray, device: int = 0) -> Any:
    """A contiguous device view holding a copy of ``arr``."""
    v = empty(arr.shape, arr.dtype, device)
    backend().from_host(v, np.ascontiguousarray(arr))
    return v


def best_time(fn: Callable[[], Any], sync: Callable[[], Any] = lambda: None, repeat: int = 5,
              number: int = 1) -> float:
    """Best wall time of ``number`` calls of ``fn`` followed by ``sync``, over ``repeat`` tries."""
    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / number)
    return best


def report(what: str, ours: float, theirs: float, unit: str, higher_is_better: bool = True) -> None:
    """One line: our figure, numpy's, and the ratio ours/numpy (or numpy/ours for times)."""
    ratio = ours / theirs if higher_is_better else theirs / ours
    print(f"{what:<44} ours {ours:10.3f} {unit:<8} numpy {theirs:10.3f} {unit:<8} ratio {ratio:6.2f}x",
          flush=True)
