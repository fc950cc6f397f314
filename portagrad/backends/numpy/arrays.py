"""Views as numpy arrays, scratch buffers and bfloat16-through-float32: what the numpy backend's
modules share.

:mod:`.backend` (the primitives), :mod:`.norms` and :mod:`.conv` (the optional fast paths) all
turn a :class:`~portagrad.backends.interface.View` into the numpy array over its buffer with
:func:`nd`, take large temporaries from :func:`scratch`, and compute bfloat16 in float32 with
:func:`via_f32` (rounded once per primitive, as PyTorch does).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import _dtype
from ..interface import View
from . import jit
from .pool import BufferPool

__all__ = ["BFLOAT16", "BFLOAT16_NP", "SCRATCH_POOL", "nd", "scratch", "is_bf16", "f32_view",
           "round_into", "via_f32", "widen"]

# bfloat16 (ml_dtypes) is stored as itself but computed in float32 and rounded once per primitive,
# as PyTorch does: ml_dtypes' own ufuncs would round every intermediate of a composite (sigmoid),
# accumulate reductions and products in bfloat16, and numpy's sort/argmax don't know the type
BFLOAT16 = _dtype.bfloat16
"""portagrad's bfloat16 (compare a view's ``dtype`` with ``is``)."""
BFLOAT16_NP = _dtype.bfloat16.numpy
"""bfloat16's numpy dtype (ml_dtypes)."""

# The large temporaries of the kernels come from a pool of their own, with a smaller cap than the
# device buffers' (backend.py): the pool keeps a freed buffer for the next request of its size,
# and temporaries come in many sizes (one im2col matrix per layer shape) that all stay held up to
# the cap
SCRATCH_POOL = BufferPool(max_bytes=128 << 20)
"""The pool behind :func:`scratch` (the backend's ``empty_cache`` releases its free buffers)."""


def scratch(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised array from the buffer pool: a large temporary reuses memory instead of
    faulting in fresh pages on every call."""
    dt = np.dtype(dtype)
    n = dt.itemsize
    for d in shape:
        n *= d
    return SCRATCH_POOL.allocate(n)[:n].view(dt).reshape(shape)


# byte strides per (itemsize, element strides): building the tuple costs more than the ndarray
_BYTE_STRIDES: dict[int, dict[tuple[int, ...], tuple[int, ...]]] = {}


def nd(v: View) -> np.ndarray:
    """The numpy array for a view, memoised in ``View.cache`` (views are immutable)."""
    a = v.cache
    if a is None:
        np_dtype = v.dtype.numpy
        if v.offset == 0 and v.strides == (1,):
            # one dimension from the buffer's start (every fresh 1-D result): the byte buffer
            # viewed as the dtype when the view covers all of it (a third of the strided
            # constructor's cost below), else numpy's defaults without an offset and strides
            buf = v.buffer
            if buf.__class__ is np.ndarray:
                try:
                    a = buf.view(np_dtype)
                except ValueError:  # a buffer that is not contiguous, or not whole elements
                    a = None
                if a is not None and a.shape == v.shape:
                    v.cache = a
                    return a
            try:
                a = v.cache = np.ndarray(v.shape, np_dtype, buf)
                return a
            except ValueError:
                pass  # an empty region: the general path below handles it
        isz = np_dtype.itemsize
        strides = v.strides
        table = _BYTE_STRIDES.get(isz)
        if table is None:
            table = _BYTE_STRIDES[isz] = {}
        bs = table.get(strides) if strides.__class__ is tuple else None
        if bs is None:
            bs = tuple([s * isz for s in strides])
            if len(table) < 8192 and strides.__class__ is tuple:
                table[strides] = bs
        try:
            a = np.ndarray(v.shape, np_dtype, v.buffer, v.offset * isz, bs)
        except ValueError:
            if 0 not in v.shape:
                raise
            # no element is read or written, but numpy still checks the view's offset and
            # strides against the buffer, which an empty region (a zero-size piece of a cat, a
            # reduction over an empty dim) need not fit; the check stays off the common path
            try:
                a = np.empty(v.shape, np_dtype)
            except ValueError:  # numpy bounds the product of every size but the zero ones
                raise RuntimeError(f"the numpy backend cannot compute on an empty tensor of shape "
                                   f"{list(v.shape)}: numpy limits the product of its other "
                                   f"sizes to 2**63 bytes") from None
        v.cache = a
    return a


def is_bf16(x: Any) -> bool:
    """Whether ``x`` (a view or a Python scalar) is a bfloat16 view."""
    return x.__class__ is View and x.dtype is BFLOAT16


def f32_view(v: View) -> View:
    """A float32 copy of the bfloat16 view ``v`` (exact: every bfloat16 is a float32), laid out
    as :func:`widen` lays it out."""
    flat, f = _widen(nd(v))
    out = View(flat, 0, v.shape, tuple(s // 4 for s in f.strides), _dtype.float32)
    out.cache = f
    return out


def widen(a: np.ndarray) -> np.ndarray:
    """The bfloat16 array ``a`` as float32 (exact), in a new pooled buffer.

    A bfloat16 is the top half of the float32 of the same value, so the copy shifts the 16-bit
    patterns into place (twice as fast as ml_dtypes' cast, NaN payloads kept). An array that is
    a permutation of a dense block (a weight's transpose ``W.T`` in ``x @ W.T``) keeps its
    memory order: converted in one pass over memory instead of a strided gather, and BLAS
    takes the transposed operand as it is."""
    return _widen(a)[1]


def _widen(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the new buffer as flat bytes, ``a`` widened to float32 over it): see :func:`widen`."""
    perm = _dense_order(a)
    if perm is None:
        # reshape: ascontiguousarray makes a 0-d view 1-d
        u = np.ascontiguousarray(a.view(np.uint16)).reshape(a.shape)
        perm = tuple(range(a.ndim))
    else:
        u = a.view(np.uint16).transpose(perm)  # C-contiguous: memory order
    bits = scratch(u.shape, np.uint32)  # pooled: a head's weights would fault in 150 MB a call
    if not jit.bf16_cast(u.view(BFLOAT16_NP), bits.view(np.float32)):
        np.left_shift(u, 16, out=bits, dtype=np.uint32)
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return bits.reshape(-1).view(np.uint8), bits.view(np.float32).transpose(inv)


def _dense_order(a: np.ndarray) -> tuple[int, ...] | None:
    """The axis order in which ``a`` is C-contiguous, when ``a`` is a permutation of a dense
    block of at least two dimensions and not C-contiguous already; else None."""
    if a.ndim < 2 or a.flags.c_contiguous or a.size == 0:
        return None
    perm = tuple(sorted(range(a.ndim), key=lambda i: a.strides[i], reverse=True))
    return perm if a.transpose(perm).flags.c_contiguous else None


def via_f32(fn: Callable[..., None], outs: Sequence[int], *args: Any) -> None:
    """Run primitive ``fn`` with every bfloat16 view among ``args`` replaced by a float32 copy,
    then round the float32 results at positions ``outs`` back into their bfloat16 views."""
    conv = [f32_view(a) if is_bf16(a) else a for a in args]
    fn(*conv)
    for i in outs:
        if conv[i] is not args[i]:
            round_into(nd(args[i]), nd(conv[i]))


def round_into(dst: np.ndarray, src: Any) -> None:
    """``dst = src`` rounded to ``dst``'s dtype (bfloat16 from float32: to the nearest even, in
    numba's loop where it runs)."""
    if not jit.bf16_cast(src, dst):
        np.copyto(dst, src, casting="unsafe")
