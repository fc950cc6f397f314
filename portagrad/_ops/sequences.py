"""Functions on sequences of values: ``isin``, ``combinations``, ``trapezoid`` (``trapz``),
``cumulative_trapezoid``, ``unravel_index``, ``vander``, ``pdist``, ``chain_matmul``."""
from __future__ import annotations

import itertools
import math
from typing import Any

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype
from .._shape import wrap_dim
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from . import elementwise
from . import reduction
from .shape import narrow, reshape
from .diagonal import triu_indices
from .indexing import index_select, where
from .joining import stack
from .scan import cumsum
from .sorting import sort
from .matmul import matmul
from .search import searchsorted

__all__ = ["isin", "combinations", "trapezoid", "trapz", "cumulative_trapezoid",
           "unravel_index", "vander", "pdist", "chain_matmul"]


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` is in ``test_elements`` (``invert``: is not)."""
    ref = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(ref, Tensor):
        raise TypeError("isin(): at least one of 'elements' and 'test_elements' must be a Tensor")
    dt = _dtype.result_type(elements, test_elements)
    e = elements.to(dt) if isinstance(elements, Tensor) else \
        _creation.tensor(elements, dtype=dt, device=ref.device)
    t = test_elements.to(dt) if isinstance(test_elements, Tensor) else \
        _creation.tensor([test_elements], dtype=dt, device=ref.device)
    with _no_grad():
        s = sort(reshape(t, (-1,)))[0]
        m = s.shape[0]
        if m == 0:
            found = _creation.zeros(e.shape, dtype=_dtype.bool, device=e.device)
        else:
            # NaNs sort last but break the binary search (1.0 in [1.0, nan] was not found):
            # searched as inf; they still match nothing, being compared as NaN below
            key = where(elementwise.isnan(s), math.inf, s) \
                if dt.is_floating_point else s
            pos = elementwise.clamp(searchsorted(key, e), 0, m - 1)
            found = elementwise.eq(reshape(index_select(s, 0, reshape(pos, (-1,))), e.shape), e)
        return elementwise.logical_not(found) if invert else found


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """All length-``r`` combinations of the elements of a 1-D tensor, as rows (itertools order)."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _creation.empty(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return _creation.empty(0, r, dtype=input.dtype, device=input.device)
    idx = _creation.tensor(rows, dtype=_dtype.int64, device=input.device)
    out = reshape(index_select(input, 0, reshape(idx, (-1,))), (len(rows), r))
    return out


def _trap_terms(y: Tensor, x: Tensor | None, dx: Any, dim: int) -> tuple[Tensor, int]:
    d = wrap_dim(dim, y.dim())
    n = y.shape[d]
    if n == 0:
        return narrow(y, d, 0, 0), d
    avg = (narrow(y, d, 1, n - 1) + narrow(y, d, 0, n - 1)) * 0.5
    if x is not None:
        if x.dim() == 1:
            if x.shape[0] != n:
                raise RuntimeError("trapezoid: There must be one `x` value for each sample "
                                   "point")
            shape = [1] * y.dim()
            shape[d] = n - 1
            step = reshape(narrow(x, 0, 1, n - 1) - narrow(x, 0, 0, n - 1), shape)
        else:
            step = narrow(x, d, 1, n - 1) - narrow(x, d, 0, n - 1)
        return avg * step, d
    return (avg * dx if dx != 1 else avg), d


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: with sample points ``x`` or a constant spacing
    ``dx`` (default 1)."""
    if isinstance(x, (int, float)):
        x, dx = None, x
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx")
    terms, d = _trap_terms(y, x, 1 if dx is None else dx, dim)
    return reduction.sum(terms, d)


trapz = trapezoid


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral along ``dim`` (one element shorter than ``y``)."""
    if isinstance(x, (int, float)):
        x, dx = None, x
    terms, d = _trap_terms(y, x, 1 if dx is None else dx, dim)
    return cumsum(terms, d)


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of ``shape`` of flat ``indices`` (a tuple of tensors)."""
    idx = indices if isinstance(indices, Tensor) else _creation.tensor(indices)
    if idx.dtype.is_floating_point or idx.dtype is _dtype.bool:
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{idx.dtype}")
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    total = 1
    for s in dims:
        total *= s
    with _no_grad():
        if idx.numel() and (int(idx.min().item()) < -total or int(idx.max().item()) >= total):
            raise RuntimeError("'indices' must be in range [-prod(shape), prod(shape) - 1]")
        rest = where(idx < 0, idx + total, idx).to(_dtype.int64)
        out = []
        for s in reversed(dims):
            out.append(elementwise.remainder(rest, s))
            rest = elementwise.floor_divide(rest, s)
    return tuple(reversed(out))


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-D ``x``: columns ``x ** (N-1), ..., x, 1`` (reversed when
    ``increasing``)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    base = x if x.dtype.is_floating_point or x.dtype.is_complex else x.to(_dtype.int64)
    powers = _creation.arange(n, device=x.device)
    if not increasing:
        powers = n - 1 - powers
    cols = [base ** int(p) if not base.dtype.is_floating_point else base ** float(p)
            for p in powers.tolist()]
    if not cols:
        return _creation.empty(x.shape[0], 0, dtype=base.dtype, device=x.device)
    return stack(cols, 1)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distances between all pairs of rows ``i < j`` (row-major order)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("pdist", pdist, input, p=p)) is not _SKIP:
        return _ac_out
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    if n < 2:
        return _creation.empty(0, dtype=input.dtype, device=input.device)
    ij = triu_indices(n, n, 1, device=input.device)
    a = index_select(input, 0, ij[0])
    b = index_select(input, 0, ij[1])
    return reduction.norm(a - b, p, -1)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of 2-D matrices, left to right."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("chain_matmul", chain_matmul, *matrices)) is not _SKIP:
        return _ac_out
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:  # matrices only (no vectors, unlike linalg.multi_dot)
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    out = matrices[0]
    for m in matrices[1:]:
        out = matmul(out, m)
    return out if len(matrices) > 1 else out.clone()

