"""The numpy reference of ``where``, ``arg_reduce``, ``cumsum``, ``gather``, ``scatter``, ``sort``,
``random``, ``eigh`` and ``svd``: the numpy backend's primitives and the default methods of
:class:`~portagrad.backends.interface.Backend`.

A backend that implements only the small required core inherits these seven from the base class,
which reads the operands back with ``to_host``, computes here on numpy arrays, and writes the
result with ``from_host``; the numpy backend calls the same functions on the arrays over its
buffers, writing into ``out``. They hold the contract's fine print (NaN rules, stability,
bfloat16 computed in float32 and rounded once, PyTorch's checked scalar stores), so a minimal
backend gets the same answers as the numpy backend.

They take and return plain numpy arrays and know nothing of views. Each returns a new array, or,
given ``out`` (an array of the result's shape and dtype, any strides), writes into it, without a
temporary of the result's size where numpy allows, and returns it.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _dtype
from ..errors import LinAlgError
from . import philox
from .ufuncs import fit_scalar

__all__ = ["where", "arg_reduce", "cumsum", "gather", "scatter", "sort", "random", "eigh", "svd", "eig"]

# IEEE results (inf, nan) are what tensors compute, as in PyTorch: numpy's floating-point warnings
# from this module (a float16 prefix sum overflowing to inf as it is rounded) are noise, as in the
# numpy backend's modules. A filter costs nothing per call, unlike entering np.errstate.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)

_BF16 = _dtype.bfloat16.numpy
_F16 = np.dtype(np.float16)


def _computable(a: np.ndarray) -> np.ndarray:
    """``a`` in a dtype numpy sorts and compares natively: bfloat16 (ml_dtypes) as float32, which
    holds every bfloat16 exactly."""
    return a.astype(np.float32) if a.dtype == _BF16 else a


def where(cond: np.ndarray, a: Any, b: Any, np_dtype: np.dtype, dtype_name: str,
          out: np.ndarray | None = None) -> np.ndarray:
    """``cond ? a : b`` in ``np_dtype``; ``a``/``b`` are arrays or Python scalars (an ``int``
    stored into a narrow integer dtype is checked as PyTorch does). ``a`` may be ``out`` itself
    (in-place ``masked_fill_``): then only the positions where ``cond`` is false are written."""
    if a.__class__ is int or a.__class__ is float:
        a = _as_bf16(fit_scalar(a, dtype_name), np_dtype)
    if b.__class__ is int or b.__class__ is float:
        b = _as_bf16(fit_scalar(b, dtype_name), np_dtype)
    if out is None:
        out = np.empty(cond.shape, np_dtype)
    elif a is out:  # (copying b first would overwrite a)
        np.copyto(out, b, where=~cond)
        return out
    if _keeps_or_zeros(cond, a, b, out):
        return out
    if _native(a, out.dtype) and _native(b, out.dtype):
        # np.where then one copy: numpy's masked copy (copyto with where=) runs about five times
        # slower than both together. Only where a and b are of out's dtype (or Python scalars,
        # which never change it): mixed dtypes would be promoted, then rounded twice.
        np.copyto(out, np.where(cond, a, b), casting="unsafe")
        return out
    # two masked copies straight into out, each operand rounded once into out's dtype
    np.copyto(out, b, casting="unsafe")
    np.copyto(out, a, casting="unsafe", where=cond)
    return out


def _as_bf16(x: Any, np_dtype: np.dtype) -> Any:
    """A Python scalar of a bfloat16 ``where`` as a bfloat16 scalar, rounded through float32 as
    the float32 select it replaces rounded it (numpy selects a Python float with a bfloat16
    array as float32, a result then rounded back element by element: three times the time);
    other dtypes' scalars unchanged."""
    if np_dtype != _BF16 or (x.__class__ is not float and x.__class__ is not int):
        return x
    return np.float32(x).astype(_BF16)


_BITS = {2: np.int16, 4: np.int32, 8: np.int64}


def _native(v: Any, dt: np.dtype) -> bool:
    return not isinstance(v, np.ndarray) or v.dtype == dt


def is_plus_zero(b: Any) -> bool:
    """Whether ``b`` is the Python float ``+0.0`` (the ``b`` of a ``cond ? a : 0`` select: a
    ``-0.0`` must land as ``-0.0``)."""
    return b.__class__ is float and b == 0.0 and math.copysign(1.0, b) > 0


def _keeps_or_zeros(cond: np.ndarray, a: Any, b: Any, out: np.ndarray) -> bool:
    """``out = cond ? a : +0.0`` for a floating ``a`` of out's dtype and shape (a ReLU's or a
    mask's gradient) as a bitwise and of ``a``'s bits with an all-ones-or-zero mask: two
    vectorised passes, and ``a``'s values kept bit for bit (NaN and infinities included, where a
    product with a 0/1 mask would make NaN). False (nothing done) for other operands."""
    if (not is_plus_zero(b) or not isinstance(a, np.ndarray) or a.dtype != out.dtype or out.dtype.kind != "f"
            or a.shape != out.shape or cond.shape != out.shape or cond.dtype != np.bool_):
        return False
    bits = _BITS.get(out.dtype.itemsize)
    if bits is None:
        return False
    mask = np.negative(cond.view(np.int8), dtype=bits)  # 0 or -1 (all bits set)
    np.bitwise_and(a.view(bits), mask, out=out.view(bits))
    return True


def arg_reduce(op: str, x: np.ndarray, axis: int, out: np.ndarray | None = None) -> np.ndarray:
    """int64 index of the first maximum (``argmax``) or minimum (``argmin``) along ``axis``, keepdim
    layout; numpy's argmax/argmin already treat the first NaN as the extreme, as PyTorch does."""
    x = _computable(x)
    if x.ndim == 0:
        r = np.zeros((), np.int64)
    else:
        r = (np.argmax if op == "argmax" else np.argmin)(x, axis=axis, keepdims=True)
    if out is None:
        return r.astype(np.int64, copy=False)
    out[...] = r
    return out


def cumsum(x: np.ndarray, axis: int, np_dtype: np.dtype, out: np.ndarray | None = None) -> np.ndarray:
    """Inclusive prefix sum along ``axis`` in ``np_dtype``; bfloat16 and float16 accumulate in
    float32, each prefix rounded once (as PyTorch)."""
    if x.ndim == 0:
        if out is None:
            return x.astype(np_dtype)
        np.copyto(out, x, casting="unsafe")
        return out
    if np_dtype == _BF16 or np_dtype == _F16:
        # numpy's add reads float16 as float32 itself; bfloat16 (ml_dtypes) is converted first
        s = np.cumsum(_computable(x), axis=axis, dtype=np.float32)
        if out is None:
            return s.astype(np_dtype)
        np.copyto(out, s, casting="unsafe")  # round to nearest even
        return out
    return np.cumsum(x, axis=axis, dtype=np_dtype, out=out)


def _head(a: np.ndarray, shape: tuple[int, ...], axis: int | None) -> np.ndarray:
    """``a`` cut to ``shape`` along every axis but ``axis`` (PyTorch lets ``x``/``src`` be larger
    than the index there)."""
    return a[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(shape))]


def gather(x: np.ndarray, axis: int, index: np.ndarray, out: np.ndarray | None = None
           ) -> np.ndarray:
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis``; the indices are in
    range (the core checks them)."""
    if x.ndim == 0:
        if out is None:
            return x.copy()
        out[...] = x
        return out
    # the index may be smaller than x along the other axes (PyTorch's rule); take_along_axis
    # would broadcast them against each other instead
    src = _head(x, index.shape, axis)
    if index.size and all(index.strides[d] == 0 for d in range(index.ndim) if d != axis):
        # the index is one row broadcast over the other axes (index_select, im2col, any 1-d
        # index): np.take copies whole rows where take_along_axis does fancy indexing per element
        row = index[tuple(slice(None) if d == axis else 0 for d in range(index.ndim))]
        if out is None:
            out = np.empty(index.shape, x.dtype)
        np.take(src, row, axis=axis, out=out, mode="clip")  # ("raise" would buffer out)
        return out
    r = np.take_along_axis(src, index, axis=axis)
    if out is None:
        return r
    out[...] = r
    return out


def scatter(out: np.ndarray, axis: int, index: np.ndarray, src: np.ndarray,
            reduce: str | None) -> np.ndarray:
    """``out`` with ``src`` written (``reduce=None``) or added (``"add"``, duplicates accumulate)
    at ``index`` along ``axis``; ``out`` is modified in place and returned."""
    if out.ndim == 0:
        work, idx, s = out.reshape(1), index.reshape(1), src.reshape(1)
        axis = 0
    else:
        work, idx, s = out, index, _head(src, index.shape, None)
    # a full index tuple: every axis but `axis` indexes itself
    grids: list[Any] = list(np.indices(idx.shape, sparse=True))
    grids[axis] = idx
    if reduce == "add":
        np.add.at(work, tuple(grids), s)
    else:
        work[tuple(grids)] = s
    return out


def sort(x: np.ndarray, axis: int, descending: bool,
         out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Stable sort along ``axis``: ``(values, int64 indices)`` (``out``: the two arrays to write);
    NaN is larger than every number (last ascending, first descending), and ties keep their order
    either way."""
    if x.ndim == 0:
        if out is None:
            return x.copy(), np.zeros((), np.int64)
        out[0][...] = x
        out[1][...] = 0
        return out
    keys = _computable(x)
    if descending:
        # ascending stable sort of the reversed axis, reversed back: ties keep their original
        # order and NaN comes first, as in PyTorch
        n = keys.shape[axis]
        rev = np.flip(np.argsort(np.flip(keys, axis), axis=axis, kind="stable"), axis)
        idx = (n - 1) - rev
    else:
        idx = np.argsort(keys, axis=axis, kind="stable")
    if out is None:
        idx = idx.astype(np.int64, copy=False)
        return np.take_along_axis(x, idx, axis=axis), idx
    out[1][...] = idx
    # the values from x itself: a bfloat16 is the same number after the round trip via float32
    out[0][...] = np.take_along_axis(x, idx, axis=axis)
    return out


def random(kind: str, n: int, np_dtype: np.dtype, seed: int, offset: int, a: float, b: float,
           out: np.ndarray | None = None) -> np.ndarray:
    """``n`` numbers of the contract's Philox stream (``uniform`` in ``[a, b)``, ``normal`` with
    mean ``a`` and standard deviation ``b``), flat or ``out`` (``n`` elements) filled in order;
    bfloat16 is the float32 stream rounded."""
    gen = philox.uniform if kind == "uniform" else philox.normal
    if np_dtype == _BF16:
        r = gen(n, seed, offset, a, b, np.float32)
        if out is None:
            return r.astype(_BF16)
        np.copyto(out, r.reshape(out.shape), casting="unsafe")  # round to nearest even
        return out
    if out is None:
        return gen(n, seed, offset, a, b, np_dtype)
    if out.flags.c_contiguous:  # (as the contract says outputs are): drawn straight into it
        gen(n, seed, offset, a, b, np_dtype, out=out.reshape(-1))
    else:
        out[...] = gen(n, seed, offset, a, b, np_dtype).reshape(out.shape)
    return out


def _lapack_dtype(a: np.ndarray) -> np.ndarray:
    """``a`` as LAPACK computes it: float32 stays float32 (``ssyevd``/``sgesdd``, as PyTorch),
    float64 stays float64, complex64/complex128 likewise (``cheevd``/``zgesdd`` ...)."""
    if a.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError(f"eigh/svd take float32, float64, complex64 or complex128 arrays, not "
                        f"{a.dtype}")
    return a


def eigh(a: np.ndarray, uplo: str, vectors: bool = True,
         out: tuple[np.ndarray, np.ndarray | None] | None = None
         ) -> tuple[np.ndarray, np.ndarray | None]:
    """Eigenvalues (ascending) and, if ``vectors``, orthonormal eigenvectors (the columns) of the
    symmetric matrices in the last two axes of ``a``, reading only the ``uplo`` (``"L"`` or
    ``"U"``) triangle: LAPACK's ``syevd`` through numpy, in ``a``'s dtype. ``out``: the arrays
    ``(w, v)`` to write (``v`` ``None`` without vectors). A matrix with a non-finite entry gets
    NaN eigenvalues and eigenvectors (PyTorch's result; LAPACK itself may fail or loop on one),
    the others of the batch their decomposition; a failure to converge raises
    :class:`~portagrad.errors.LinAlgError`."""
    a = _lapack_dtype(a)
    bad = None
    if a.size and not np.isfinite(a).all():
        bad = ~np.isfinite(a).all(axis=(-2, -1))  # (batch...,): the matrices to give NaN
        a = np.where(bad[..., None, None], 0, a).astype(a.dtype)
    try:
        if vectors:
            w, v = np.linalg.eigh(a, UPLO=uplo)  # type: ignore[call-overload]
        else:
            w, v = np.linalg.eigvalsh(a, UPLO=uplo), None  # type: ignore[call-overload]
    except np.linalg.LinAlgError as exc:
        raise LinAlgError("linalg.eigh: The algorithm failed to converge because the input "
                          "matrix is ill-conditioned or has too many repeated eigenvalues "
                          f"({exc}).") from None
    if bad is not None:
        w = np.where(bad[..., None], np.nan, w).astype(w.dtype)
        if v is not None:
            v = np.where(bad[..., None, None], np.nan, v).astype(a.dtype)
    if out is None:
        return w, v
    out[0][...] = w
    if v is not None and out[1] is not None:
        out[1][...] = v
    return out


def svd(a: np.ndarray, full_matrices: bool, vectors: bool = True,
        out: tuple[np.ndarray | None, np.ndarray, np.ndarray | None] | None = None
        ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """``(U, S, Vh)`` of the matrices in the last two axes of ``a`` (``S`` descending, ``A = U
    diag(S) Vh``; ``full_matrices``: square ``U`` and ``Vh``), LAPACK's ``gesdd`` through numpy,
    in ``a``'s dtype; without ``vectors`` only ``S`` (``U``/``Vh`` ``None``). ``out``: the arrays
    to write. Non-finite entries raise :class:`~portagrad.errors.LinAlgError` with PyTorch's
    message (LAPACK would not converge, or loop)."""
    a = _lapack_dtype(a)
    if a.size and not np.isfinite(a).all():
        raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix "
                          "contained non-finite values.")
    try:
        if vectors:
            u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        else:
            u, s, vh = None, np.linalg.svd(a, compute_uv=False), None
    except np.linalg.LinAlgError as exc:
        raise LinAlgError(f"linalg.svd: The algorithm failed to converge ({exc}).") from None
    if out is None:
        return u, s, vh
    out[1][...] = s
    if u is not None and out[0] is not None:
        out[0][...] = u
    if vh is not None and out[2] is not None:
        out[2][...] = vh
    return out


def eig(a: np.ndarray, vectors: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Eigenvalues and, if ``vectors``, right eigenvectors (the columns, each of unit 2-norm,
    LAPACK's ``geev`` normalisation: its largest component real) of the general square matrices
    in the last two axes of ``a`` (float32/float64/complex64/complex128), through
    ``numpy.linalg.eig``. Both are complex, of ``a``'s precision (float32 gives complex64, as
    PyTorch), whether or not the eigenvalues happen to be real. Non-finite entries raise
    :class:`~portagrad.errors.LinAlgError` with PyTorch's message (LAPACK would fail or loop)."""
    if a.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError(f"eig takes float32/float64/complex64/complex128 arrays, not {a.dtype}")
    cdt = np.result_type(a.dtype, np.complex64)
    if a.size and not np.isfinite(a).all():
        raise LinAlgError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    try:
        if vectors:
            w, v = np.linalg.eig(a)
            return w.astype(cdt, copy=False), v.astype(cdt, copy=False)
        return np.linalg.eigvals(a).astype(cdt, copy=False), None
    except np.linalg.LinAlgError as exc:
        raise LinAlgError(f"linalg.eig: The algorithm failed to converge ({exc}).") from None
