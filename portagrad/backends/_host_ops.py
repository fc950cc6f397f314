"""Host (numpy) computations behind the default methods of :class:`~portagrad.backends.interface.Backend`.

A backend that implements only the small required core inherits ``where``, ``arg_reduce``,
``cumsum``, ``gather``, ``scatter``, ``sort`` and ``random`` from the base class, which reads the
operands back with ``to_host``, computes here on numpy arrays, and writes the result with
``from_host``. These functions hold the contract's fine print (NaN rules, stability, bfloat16
computed in float32, PyTorch's checked scalar stores), so a minimal backend gets the same answers
as the numpy backend. They take and return plain numpy arrays and know nothing of views.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype
from . import philox
from .ufuncs import fit_scalar

__all__ = ["where", "arg_reduce", "cumsum", "gather", "scatter", "sort", "random"]

_BF16 = _dtype.bfloat16.numpy


def _computable(a: np.ndarray) -> np.ndarray:
    """``a`` in a dtype numpy sorts and compares natively: bfloat16 (ml_dtypes) as float32, which
    holds every bfloat16 exactly."""
    return a.astype(np.float32) if a.dtype == _BF16 else a


def where(cond: np.ndarray, a: Any, b: Any, np_dtype: np.dtype, dtype_name: str) -> np.ndarray:
    """``cond ? a : b`` into a new array of ``np_dtype``; ``a``/``b`` are arrays or Python
    scalars (an ``int`` stored into a narrow integer dtype is checked as PyTorch does)."""
    if a.__class__ is int or a.__class__ is float:
        a = fit_scalar(a, dtype_name)
    if b.__class__ is int or b.__class__ is float:
        b = fit_scalar(b, dtype_name)
    out = np.empty(cond.shape, np_dtype)
    # two masked copies, as in the numpy backend: a Python scalar never changes the result dtype
    np.copyto(out, b, casting="unsafe")
    np.copyto(out, a, casting="unsafe", where=cond)
    return out


def arg_reduce(op: str, x: np.ndarray, axis: int) -> np.ndarray:
    """int64 index of the first maximum (``argmax``) or minimum (``argmin``) along ``axis``, keepdim
    layout; numpy's argmax/argmin already treat the first NaN as the extreme, as PyTorch does."""
    x = _computable(x)
    if x.ndim == 0:
        return np.zeros((), np.int64)
    f = np.argmax if op == "argmax" else np.argmin
    return f(x, axis=axis, keepdims=True).astype(np.int64, copy=False)


def cumsum(x: np.ndarray, axis: int, np_dtype: np.dtype) -> np.ndarray:
    """Inclusive prefix sum along ``axis`` in ``np_dtype`` (bfloat16/float16 accumulate in float32 and
    rounds once, as PyTorch and the numpy backend do)."""
    if x.ndim == 0:
        return x.astype(np_dtype)
    if np_dtype == _BF16 or np_dtype == np.float16:  # (float16 too: as PyTorch)
        return np.cumsum(x.astype(np.float32), axis=axis).astype(np_dtype)
    return np.cumsum(x, axis=axis, dtype=np_dtype)


def _head(a: np.ndarray, shape: tuple[int, ...], axis: int | None) -> np.ndarray:
    """``a`` cut to ``shape`` along every axis but ``axis`` (PyTorch lets ``x``/``src`` be larger
    than the index there)."""
    return a[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(shape))]


def gather(x: np.ndarray, axis: int, index: np.ndarray) -> np.ndarray:
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis`` (indices checked)."""
    if x.ndim == 0:
        return x.copy()
    return np.take_along_axis(_head(x, index.shape, axis), index, axis=axis)


def scatter(out: np.ndarray, axis: int, index: np.ndarray, src: np.ndarray,
            reduce: str | None) -> np.ndarray:
    """``out`` with ``src`` written (``reduce=None``) or added (``"add"``, duplicates accumulate)
    at ``index`` along ``axis``; ``out`` is modified in place and returned."""
    if out.ndim == 0:
        work, idx, s = out.reshape(1), index.reshape(1), src.reshape(1)
        axis = 0
    else:
        work, idx, s = out, index, _head(src, index.shape, None)
    grids: list[Any] = list(np.indices(idx.shape, sparse=True))
    grids[axis] = idx
    if reduce == "add":
        np.add.at(work, tuple(grids), s)
    else:
        work[tuple(grids)] = s
    return out


def sort(x: np.ndarray, axis: int, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    """Stable sort along ``axis``: ``(values, int64 indices)``; NaN is larger than every number
    (last ascending, first descending), and ties keep their order either way."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    keys = _computable(x)
    if descending:
        # ascending stable sort of the reversed axis, reversed back: ties keep their original
        # order and NaN comes first, as in PyTorch
        n = keys.shape[axis]
        rev = np.flip(np.argsort(np.flip(keys, axis), axis=axis, kind="stable"), axis)
        idx = (n - 1) - rev
    else:
        idx = np.argsort(keys, axis=axis, kind="stable")
    idx = idx.astype(np.int64, copy=False)
    return np.take_along_axis(x, idx, axis=axis), idx


def random(kind: str, n: int, np_dtype: np.dtype, seed: int, offset: int, a: float,
           b: float) -> np.ndarray:
    """``n`` numbers of the contract's Philox stream (``uniform`` in ``[a, b)``, ``normal`` with
    mean ``a`` and standard deviation ``b``); bfloat16 is the float32 stream rounded."""
    gen = philox.uniform if kind == "uniform" else philox.normal
    if np_dtype == _BF16:
        return gen(n, seed, offset, a, b, np.float32).astype(_BF16)
    return gen(n, seed, offset, a, b, np_dtype)
