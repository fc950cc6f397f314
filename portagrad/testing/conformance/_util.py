"""Shared machinery of the conformance tests: twin buffers on the backend under test and on the
numpy reference, strided views of them, and comparisons.

A :class:`Twin` holds the same bytes in a buffer of the backend under test and in a numpy buffer;
:meth:`Twin.view` gives a :class:`Pair` of views with the same offset, shape and strides on both, so
one primitive call runs on both sides (:func:`run_both`) and the results are compared, gaps of a
strided output included (:func:`check`).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...backends.helpers import DTYPES, contiguous_strides
from ...backends.interface import View
from ...backends.numpy import NumpyBackend
from ...errors import DTypeError

__all__ = ["REF", "Twin", "Pair", "contiguous", "reversed_axes", "broadcast", "empty",
           "strided_out", "gapped", "run_both", "check", "assert_same", "supported_dtypes",
           "declined_dtypes", "sample", "specials", "close_tol", "to_ref_host"]

REF = NumpyBackend()
"""The reference backend every result is compared with."""

SENTINEL = {"bool": True, "uint8": 77, "int8": -77, "int16": -777, "int32": -7777,
            "int64": -77777, "float16": -7.5, "bfloat16": -7.5, "float32": -7.5, "float64": -7.5,
            "complex64": -7.5 + 3.25j, "complex128": -7.5 + 3.25j}


class Pair:
    """The same view on the backend under test (``dev``) and on the reference (``ref``)."""

    __slots__ = ("dev", "ref", "twin")

    def __init__(self, dev: View, ref: View, twin: Twin) -> None:
        self.dev, self.ref, self.twin = dev, ref, twin

    @property
    def shape(self) -> tuple[int, ...]:
        return self.dev.shape

    @property
    def dtype(self) -> Any:
        return self.dev.dtype


class Twin:
    """``flat`` (a 1-D array) stored in a buffer of ``be`` on ``device`` and in a numpy buffer."""

    def __init__(self, be: Any, flat: np.ndarray, dtype: Any, device: int = 0) -> None:
        flat = np.ascontiguousarray(np.asarray(flat).astype(dtype.numpy).reshape(-1))
        self.be, self.dtype, self.size, self.device = be, dtype, flat.size, device
        self.buf = be.allocate(device, flat.nbytes)
        if flat.size:
            be.from_host(View(self.buf, 0, (flat.size,), (1,), dtype), flat)
        self.np = flat.view(np.uint8).copy()

    def view(self, offset: int, shape: Sequence[int], strides: Sequence[int]) -> Pair:
        shape, strides = tuple(shape), tuple(strides)
        return Pair(View(self.buf, offset, shape, strides, self.dtype),
                    View(self.np, offset, shape, strides, self.dtype), self)

    def whole(self) -> Pair:
        return self.view(0, (self.size,), (1,))


def contiguous(be: Any, arr: Any, dtype: Any, offset: int = 0, device: int = 0) -> Pair:
    """``arr`` stored contiguously after ``offset`` unused elements (which hold a sentinel)."""
    arr = np.asarray(arr).astype(dtype.numpy)
    pad = np.full(offset, SENTINEL[dtype.name], dtype.numpy)
    t = Twin(be, np.concatenate([pad, arr.reshape(-1)]), dtype, device)
    return t.view(offset, arr.shape, contiguous_strides(arr.shape))


def reversed_axes(be: Any, arr: Any, dtype: Any, offset: int = 2) -> Pair:
    """``arr`` stored with its axes reversed (a transposed, column-major view) at ``offset``."""
    arr = np.asarray(arr).astype(dtype.numpy)
    p = contiguous(be, np.array(arr.transpose(), order="C"), dtype, offset)
    return p.twin.view(offset, arr.shape, tuple(reversed(p.dev.strides)))


def broadcast(be: Any, row: Any, shape: Sequence[int], dtype: Any, offset: int = 1) -> Pair:
    """``row`` (the last axis) repeated over the leading axes of ``shape`` with stride 0."""
    p = contiguous(be, np.asarray(row).reshape(-1), dtype, offset)
    strides = (0,) * (len(shape) - 1) + (1,)
    return p.twin.view(offset, tuple(shape), strides)


def empty(be: Any, shape: Sequence[int], dtype: Any, device: int = 0) -> Pair:
    """A contiguous view filled with a sentinel (primitives must overwrite every element)."""
    return contiguous(be, np.full(tuple(shape), SENTINEL[dtype.name], dtype.numpy), dtype,
                      device=device)


def gapped(be: Any, arr: Any, dtype: Any) -> Pair:
    """``arr`` as a non-contiguous view: every other element of a wider last axis, one element
    in, the gaps holding a sentinel."""
    arr = np.asarray(arr).astype(dtype.numpy)
    if not arr.shape:
        return contiguous(be, arr, dtype, offset=3)
    wide = np.full(arr.shape[:-1] + (2 * arr.shape[-1] + 1,), SENTINEL[dtype.name], dtype.numpy)
    wide[..., 1::2][..., :arr.shape[-1]] = arr
    p = contiguous(be, wide, dtype)
    strides = tuple(p.dev.strides[:-1]) + (2,)
    return p.twin.view(1, arr.shape, strides)


def strided_out(be: Any, shape: Sequence[int], dtype: Any) -> Pair:
    """A non-contiguous output (see :func:`gapped`) filled with a sentinel: the gaps must stay
    untouched."""
    return gapped(be, np.full(tuple(shape), SENTINEL[dtype.name], dtype.numpy), dtype)


def run_both(be: Any, method: str, *args: Any) -> None:
    """Call ``method`` on the reference with the ``ref`` side of every :class:`Pair` among
    ``args``, then on ``be`` with the ``dev`` side."""
    with np.errstate(all="ignore"):
        getattr(REF, method)(*[a.ref if isinstance(a, Pair) else a for a in args])
        getattr(be, method)(*[a.dev if isinstance(a, Pair) else a for a in args])


def to_ref_host(p: Pair) -> np.ndarray:
    return REF.to_host(p.ref)


def close_tol(dtype: Any, exact: bool) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing results of ``dtype`` (0 for exact ops)."""
    if exact or not dtype.is_floating_point:
        return 0.0, 0.0
    return {"float64": (1e-12, 1e-13), "float32": (2e-6, 1e-6), "float16": (2e-3, 1e-3),
            "bfloat16": (1.6e-2, 1e-2)}[dtype.name]


def assert_same(got: np.ndarray, want: np.ndarray, dtype: Any, exact: bool = True,
                tol: tuple[float, float] | None = None, what: str = "") -> None:
    """``got`` equals ``want`` (NaN where NaN, infinities of the same sign, signs of zero
    ignored); floating results within :func:`close_tol` unless ``exact``."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    if dtype.is_floating_point:
        g, w = got.astype(np.float64), want.astype(np.float64)
        rtol, atol = tol if tol is not None else close_tol(dtype, exact)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check(be: Any, p: Pair, exact: bool = True, tol: tuple[float, float] | None = None,
          what: str = "") -> None:
    """The view ``p`` holds the same values on both sides, and so does its whole buffer (writes
    outside a strided output, or into the gaps between its elements, are errors)."""
    assert_same(be.to_host(p.dev), REF.to_host(p.ref), p.dtype, exact, tol, what)
    w = p.twin.whole()
    if w.dev.shape != p.dev.shape or w.dev.strides != p.dev.strides or p.dev.offset:
        assert_same(be.to_host(w.dev), REF.to_host(w.ref), p.dtype, exact, tol,
                    f"{what} (the whole buffer around the output view)")


@functools.lru_cache(maxsize=8)
def _probe(be: Any) -> tuple[tuple[Any, ...], tuple[tuple[str, str], ...]]:
    stored, declined = [], []
    fp64 = be.get_device_properties(0).fp64
    for dt in DTYPES.values():
        if dt.name == "float64" and not fp64:
            declined.append((dt.name, "the device properties say fp64=False"))
            continue
        try:
            a = np.arange(5).astype(dt.numpy)
            buf = be.allocate(0, a.nbytes)
            v = View(buf, 0, (5,), (1,), dt)
            be.from_host(v, a)
            be.to_host(v)
        except (DTypeError, NotImplementedError) as exc:  # how a backend declines a dtype
            declined.append((dt.name, f"{type(exc).__name__}: {exc}"))
            continue
        # stored: whatever to_host gave back (its dtype, its bits) is for the tests to check
        stored.append(dt)
    return tuple(stored), tuple(declined)


def supported_dtypes(be: Any) -> tuple[Any, ...]:
    """The dtypes ``be`` stores: all but those it declines (see :func:`declined_dtypes`)."""
    return _probe(be)[0]


def declined_dtypes(be: Any) -> tuple[tuple[str, str], ...]:
    """``(dtype name, why)`` for each dtype ``be`` declines: float64 where the device properties
    say ``fp64=False``, and any whose ``allocate`` + ``from_host`` + ``to_host`` round trip raises
    :class:`~portagrad.errors.DTypeError` (or ``NotImplementedError``). A round trip that returns
    claims the dtype, so wrong data (another dtype, other bits) fails the tests rather than
    passing as a declined dtype."""
    return _probe(be)[1]


_RNG = np.random.default_rng(20240601)


def specials(dtype: Any) -> np.ndarray:
    """Edge values of ``dtype``: zeros, halves (rounding), NaN, infinities; integer extremes."""
    if dtype.name == "bool":
        return np.array([False, True])
    if dtype.is_floating_point:
        return np.array([0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, np.nan, np.inf, -np.inf,
                         1.0, -1.0, 3.0, -7.25], dtype=dtype.numpy)
    info = np.iinfo(dtype.numpy)
    vals = [0, 1, -1, 2, -7, 7, info.max, info.min, info.max - 1, info.min + 1]
    return np.array([v for v in vals if info.min <= v <= info.max]).astype(dtype.numpy)


def sample(dtype: Any, shape: Sequence[int], kind: str = "any") -> np.ndarray:
    """Random values of ``dtype``: ``any`` (with :func:`specials` mixed in), ``positive``,
    ``nonzero``, ``small`` (integers in [0, 4), floats finite)."""
    shape = tuple(shape)
    n = int(np.prod(shape)) if shape else 1
    if dtype.name == "bool":
        return (_RNG.random(n) > 0.5).reshape(shape)
    if dtype.is_floating_point:
        v = _RNG.standard_normal(n) * 3
        if kind == "positive":
            v = np.abs(v) + 0.1
        elif kind == "nonzero":
            v = np.where(np.abs(v) < 0.1, 0.5, v)
        elif kind == "any":
            sp = specials(dtype).astype(np.float64)
            k = min(n // 3, sp.size)
            v[_RNG.permutation(n)[:k]] = sp[:k]
        return v.astype(dtype.numpy).reshape(shape)
    info = np.iinfo(dtype.numpy)
    if kind == "small":
        iv = _RNG.integers(0, 4, n)
    elif kind == "positive":
        iv = _RNG.integers(1, min(int(info.max), 50) + 1, n)
    else:
        lo, hi = max(int(info.min), -60), min(int(info.max), 60)
        iv = _RNG.integers(lo, hi + 1, n)
        if kind == "nonzero":
            iv[iv == 0] = 3
        elif kind == "any":  # wrapping: extremes of the dtype
            sp = specials(dtype).astype(np.int64)
            k = min(n // 3, sp.size)
            iv[_RNG.permutation(n)[:k]] = sp[:k]
    return iv.astype(dtype.numpy).reshape(shape)
