"""Diagonals and block structure: ``diagonal`` (a view), ``diag``, ``diag_embed``, ``diagflat``,
``trace``, ``fill_diagonal_``, ``triu_indices``/``tril_indices``, ``block_diag``, ``kron``.

``diagonal`` is a strided view (one stride, the sum of the two dimensions' strides), so in-place
writes through it come from the view machinery; its gradient goes to the diagonal elements of the
input's shape (``shape.StridedView``), whatever the input's layout. The others are built from it
and from ``cat``/``mul``/``reshape``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype
from .._shape import wrap_dim
from .._tensor import Tensor
from .shape import StridedView, reshape, strided_view
from .conversion import copy_
from .indexing import setitem
from .joining import cat
from .elementwise import mul

__all__ = ["diagonal", "diag", "diag_embed", "diagflat", "trace", "fill_diagonal_",
           "triu_indices", "tril_indices", "block_diag", "kron"]


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The view of the diagonal of ``dim1`` x ``dim2`` (``offset`` > 0 above the main one),
    appended as the last dimension."""
    nd = input.dim()
    if nd < 2:
        raise RuntimeError(f"diagonal dimensions requires ndim larger than 2, but got ndim={nd}")
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    shape = input.shape
    start = [0] * nd
    if offset >= 0:
        n = max(min(shape[d1], shape[d2] - offset), 0)
        start[d2] = offset if n else 0
    else:
        n = max(min(shape[d1] + offset, shape[d2]), 0)
        start[d1] = -offset if n else 0
    keep = [k for k in range(nd) if k not in (d1, d2)]
    unit = [[int(j == k) for j in range(nd)] for k in keep]
    diag = [int(j in (d1, d2)) for j in range(nd)]  # one step along both dimensions
    return strided_view(input, start, [shape[k] for k in keep] + [n], unit + [diag], _Diagonal)


class _Diagonal(StridedView):
    _backward_name = "DiagonalBackward0"


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose ``dim1`` x ``dim2`` diagonals (at ``offset``) hold the last dimension of
    ``input``; zeros elsewhere."""
    if input.dim() < 1:
        raise RuntimeError("diag_embed(): input must have at least 1 dimension")
    nd = input.dim() + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(offset)
    rest = iter(input.shape[:-1])
    shape = [n if k in (d1, d2) else next(rest) for k in range(nd)]
    out = _creation.zeros(shape, dtype=input.dtype, device=input.device)
    copy_(diagonal(out, offset, d1, d2), input)
    return out


def diag(input: Tensor, diagonal: int = 0) -> Tensor:  # PyTorch's parameter name
    """1-D input: the square matrix with ``input`` on its ``diagonal``; 2-D input: a copy of its
    ``diagonal``."""
    if input.dim() == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.dim() == 2:
        return globals()["diagonal"](input, diagonal).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The square matrix with the flattened ``input`` on its ``offset`` diagonal."""
    return diag_embed(reshape(input, (-1,)), offset, 0, 1)


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a 2-D tensor (integers summed as int64)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("trace", trace, input)) is not _SKIP:
        return _ac_out
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype is _dtype.bool:  # (PyTorch's kernel has no bool version)
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return diagonal(input).sum()


def fill_diagonal_(input: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Fill the main diagonal in place (all dimensions equal beyond 2-D; ``wrap``: a tall matrix
    restarts its diagonal every ``cols + 1`` rows)."""
    nd = input.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    rows, cols = input.shape[0], input.shape[1]
    if nd > 2 or not wrap or rows <= cols + 1:
        n = min(input.shape)
        idx = _creation.arange(n, device=input.device)
        setitem(input, (idx,) * nd, fill_value)
        return input
    flat = np.arange(0, rows * cols, cols + 1)
    r = _creation.tensor(flat // cols, device=input.device)
    c = _creation.tensor(flat % cols, device=input.device)
    setitem(input, (r, c), fill_value)
    return input


def _tri_indices(lower: bool, row: int, col: int, offset: int, dtype: Any, device: Any
                 ) -> Tensor:
    for name, n in (("row", row), ("col", col)):
        if n < 0:  # (numpy would give an empty result)
            raise RuntimeError(f"{name} must be non-negative, got{n}")
    r, c = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    if dtype is not _dtype.int64 and dtype is not _dtype.int32:
        raise NotImplementedError(f"\"{'tril' if lower else 'triu'}_indices\" not implemented for "
                           f"'{dtype}'")
    return _creation.tensor(np.stack([r, c]).reshape(2, -1), dtype=dtype, device=device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = _dtype.int64,
                 device: Any = None, layout: Any = None) -> Tensor:
    """``(2, N)`` row/column indices of the upper triangle of a ``row`` x ``col`` matrix."""
    return _tri_indices(False, row, col, offset, dtype, device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = _dtype.int64,
                 device: Any = None, layout: Any = None) -> Tensor:
    """``(2, N)`` row/column indices of the lower triangle of a ``row`` x ``col`` matrix."""
    return _tri_indices(True, row, col, offset, dtype, device)


def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix of ``tensors`` (0-D and 1-D inputs are 1 x n blocks)."""
    if not tensors:
        return _creation.empty(1, 0)
    for k, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {k} has {t.dim()} dimensions")
    dt = _dtype.result_type(*tensors)
    mats = [reshape(t, (1, -1)) if t.dim() < 2 else t for t in tensors]
    mats = [m.to(dt) for m in mats]
    total = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    dev = mats[0].device
    for m in mats:
        r, c = m.shape
        parts = [_creation.zeros(r, left, dtype=dt, device=dev), m,
                 _creation.zeros(r, total - left - c, dtype=dt, device=dev)]
        rows.append(cat(parts, 1))
        left += c
    return cat(rows, 0)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product (dimensions aligned from the right)."""
    nd = max(input.dim(), other.dim())
    a = reshape(input, (1,) * (nd - input.dim()) + tuple(input.shape))
    b = reshape(other, (1,) * (nd - other.dim()) + tuple(other.shape))
    ai = tuple(v for s in a.shape for v in (s, 1))
    bi = tuple(v for s in b.shape for v in (1, s))
    out = mul(reshape(a, ai), reshape(b, bi))
    return reshape(out, tuple(x * y for x, y in zip(a.shape, b.shape)))
