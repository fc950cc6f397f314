"""Searching and counting: ``searchsorted``, ``bucketize``, ``bincount``, ``histc``, ``unique``,
``unique_consecutive``.

Searches compare every value with every boundary (broadcast comparisons, then a sum), which runs
on every backend. Functions whose output size depends on the data (``bincount``, ``unique``) read
that size back to the host once, as PyTorch does.
"""
from __future__ import annotations

import math
from typing import Any

from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from . import elementwise
from .shape import movedim, narrow, reshape, select
from .indexing import gather, index_select, masked_select, nonzero, scatter_add, where
from .._shape import wrap_dim_no_scalar
from .joining import cat
from ._common import refuse_complex
from .sorting import sort

__all__ = ["searchsorted", "bucketize", "bincount", "histc", "unique", "unique_consecutive"]


def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter: Tensor | None = None
                 ) -> Tensor:
    """Indices at which ``input`` would be inserted into the innermost dimension of
    ``sorted_sequence`` to keep it sorted (``right``: after equal elements)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    # PyTorch's checks, in its order: sorter's shape, a scalar input only for 1-D boundaries,
    # boundaries of at least one dimension, sorter's dtype, (boundaries' leading dimensions and
    # sorter's values, below)
    if sorter is not None and sorter.shape != sorted_sequence.shape:
        raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, "
                           f"but got boundary tensor {list(sorted_sequence.shape)}and got sorter "
                           f"tensor {list(sorter.shape)}")
    in_dim, in_numel = (input.dim(), input.numel()) if isinstance(input, Tensor) else (0, 1)
    if in_dim == 0 and sorted_sequence.dim() != 1:
        raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when "
                           f"boundaries tensor dimension is 1, but we got boundaries tensor dim("
                           f"{sorted_sequence.dim()}) and input value's dim({in_dim}) numel("
                           f"{in_numel})")
    if sorted_sequence.dim() == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if sorter is not None and sorter.dtype is not _dtype.int64:
        raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got "
                           f"dtype {elementwise._type_name(sorter.dtype)}")
    with _no_grad():
        seq = sorted_sequence
        scalar = not isinstance(input, Tensor)
        # a number is compared in PyTorch's common type of the two (2.5 cast to int64
        # boundaries' dtype would be searched as 2)
        vals = _creation.tensor(input, dtype=_dtype.result_type(seq, input),
                                device=seq.device) if scalar else input
        if seq.dim() > 1 and (vals.dim() != seq.dim() or vals.shape[:-1] != seq.shape[:-1]):
            raise RuntimeError(
                f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                f"N-1 dimensions of boundaries tensor and input value tensor must match, but "
                f"we got boundaries tensor {list(seq.shape)} and input value tensor "
                f"{list(vals.shape)}")
        if sorter is not None:
            if sorter.numel():
                lo_s, hi_s = int(sorter.min().item()), int(sorter.max().item())
                if lo_s < 0 or hi_s >= seq.shape[-1]:
                    raise RuntimeError("torch.searchsorted(): sorter index out of range")
            seq = seq.gather(-1, sorter)
        m = seq.shape[-1] if seq.dim() else 1
        # binary search on whole tensors: ceil(log2(m + 1)) rounds of gather and compare
        lo = _creation.zeros(vals.shape, dtype=_dtype.int64, device=vals.device)
        hi = _creation.full(vals.shape, m, dtype=_dtype.int64, device=vals.device)
        flat_seq = reshape(seq, (-1,)) if seq.dim() <= 1 else None
        for _ in range(m.bit_length()):
            mid = elementwise.floor_divide(lo + hi, 2)
            safe = elementwise.clamp(mid, 0, max(m - 1, 0))
            if flat_seq is not None:
                v_mid = reshape(index_select(flat_seq, 0, reshape(safe, (-1,))), vals.shape)
            else:
                v_mid = gather(seq, -1, safe)
            # PyTorch's tests, "not (mid >= value)" ("not (mid > value)" for right): a NaN
            # value goes past every boundary, and a NaN boundary is passed
            go_right = elementwise.logical_not(v_mid > vals if right else v_mid >= vals)
            go_right = elementwise.logical_and(go_right, mid < hi)
            lo = where(go_right, mid + 1, lo)
            hi = where(go_right, hi, mid)
        return lo.to(_dtype.int32) if out_int32 else lo


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False
              ) -> Tensor:
    """Index of the bucket of each element of ``input`` given 1-D sorted ``boundaries``."""
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Count of each value of a 1-D non-negative integer tensor (weighted sums with
    ``weights``); length ``max(input.max() + 1, minlength)``."""
    if input.dtype.is_floating_point or input.dtype.is_complex or input.dtype is _dtype.bool:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for "
                                  f"'{elementwise._type_name(input.dtype)}'")
    if input.dim() != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and weights.shape != input.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    n = input.shape[0]
    if n == 0:  # (PyTorch's early return: int64 even with weights)
        return _creation.zeros(minlength, dtype=_dtype.int64, device=input.device)
    if int(input.min().item()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    size = max(int(input.max().item()) + 1 if n else 0, minlength)
    if weights is None:
        src = _creation.ones(n, dtype=_dtype.int64, device=input.device)
    else:
        # PyTorch keeps float32 and float64 weights' dtype and sums any other in float64
        src = weights if weights.dtype in (_dtype.float32, _dtype.float64) else \
            weights.to(_dtype.float64)
    zeros = _creation.zeros(size, dtype=src.dtype, device=input.device)
    return scatter_add(zeros, 0, input.to(_dtype.int64), src)


def histc(input: Tensor, bins: int = 100, min: Any = 0, max: Any = 0) -> Tensor:  # torch's names
    """Histogram of ``bins`` equal-width bins over ``[min, max]`` (the data's range when both are
    0); elements outside are ignored."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{elementwise._type_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError("torch.histc(): bins must be > 0, but got " + str(bins) + " for bins")
    with _no_grad():
        lo, hi = float(min), float(max)
        if lo == hi and input.numel():
            lo, hi = float(input.min().item()), float(input.max().item())
        if not (math.isfinite(lo) and math.isfinite(hi)):  # (NaN or an infinity in the data)
            raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
        if lo == hi:
            lo, hi = lo - 1.0, hi + 1.0
        if lo > hi:
            raise RuntimeError("torch.histc: max must be larger than min")
        x = reshape(input, (-1,))
        inside = elementwise.logical_and(x >= lo, x <= hi)
        k = elementwise.floor((x - lo) * (bins / (hi - lo))).to(_dtype.int64)
        k = elementwise.clamp(k, 0, bins - 1)  # x == max falls in the last bin
        k = masked_select(k, inside)
        ones = _creation.ones(k.shape[0], dtype=input.dtype, device=input.device)
        return scatter_add(_creation.zeros(bins, dtype=input.dtype, device=input.device), 0, k,
                           ones)


def _runs(s: Tensor, return_inverse: bool, return_counts: bool, order: Tensor | None,
          shape: tuple) -> Any:
    """Unique runs of ``s`` (1-D, or 2-D: runs of equal rows): values, and the inverse (mapped
    back through ``order``, the permutation that produced ``s``) and counts when asked."""
    n = s.shape[0]
    dev = s.device
    if n == 0:
        first = _creation.zeros(0, dtype=_dtype.bool, device=dev)
    else:
        change = elementwise.ne(narrow(s, 0, 1, n - 1), narrow(s, 0, 0, n - 1))
        if s.dim() == 2:
            change = change.any(1)
        first = cat([_creation.ones(1, dtype=_dtype.bool, device=dev), change])
    starts = reshape(nonzero(first), (-1,))
    values = index_select(s, 0, starts)
    out: list[Tensor] = [values]
    if return_inverse:
        run = first.to(_dtype.int64).cumsum(0) - 1
        if order is not None:
            inv = _creation.zeros(n, dtype=_dtype.int64, device=dev)
            inv = inv.scatter(0, order, run)
        else:
            inv = run
        out.append(reshape(inv, shape))
    if return_counts:
        ends = cat([narrow(starts, 0, 1, starts.shape[0] - 1),
                    _creation.tensor([n], device=dev)]) if starts.shape[0] else starts
        out.append(ends - starts)
    return out[0] if len(out) == 1 else tuple(out)


def _slices(input: Tensor, dim: int) -> tuple[Tensor, int]:
    """The slices of ``input`` along ``dim`` as the rows of a 2-D tensor, and ``dim`` wrapped."""
    d = wrap_dim_no_scalar(dim, input.dim())
    if any(n == 0 for i, n in enumerate(input.shape) if i != d):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    rows = movedim(input, d, 0)
    return reshape(rows, (rows.shape[0], math.prod(rows.shape[1:]))), d


def _from_rows(values: Tensor, input: Tensor, d: int) -> Tensor:
    moved = movedim(input, d, 0)
    return movedim(reshape(values, (values.shape[0],) + tuple(moved.shape[1:])), 0, d)


def _finish(res: Any, input: Tensor, d: int) -> Any:
    if isinstance(res, tuple):
        return (_from_rows(res[0], input, d),) + res[1:]
    return _from_rows(res, input, d)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The sorted unique elements, or the unique slices along ``dim`` in lexicographic order
    (and the inverse indices / counts when asked)."""
    refuse_complex("unique" if dim is None else "unique_dim", input.dtype)
    with _no_grad():
        if dim is None:
            flat = reshape(input, (-1,))
            s, order = sort(flat, stable=True)
            return _runs(s, return_inverse, return_counts, order, tuple(input.shape))
        rows, d = _slices(input, dim)
        n = rows.shape[0]
        order = _creation.arange(n, device=input.device)
        # lexicographic order: stable sorts by each column, the last column first
        for col in reversed(range(rows.shape[1])):
            key = index_select(select(rows, 1, col), 0, order)
            order = index_select(order, 0, sort(key, stable=True)[1])
        res = _runs(index_select(rows, 0, order), return_inverse, return_counts, order, (n,))
        return _finish(res, input, d)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Collapse each run of equal consecutive elements (or slices along ``dim``) to one (and
    inverse / counts)."""
    refuse_complex("unique" if dim is None else "unique_dim", input.dtype)
    with _no_grad():
        if dim is None:
            return _runs(reshape(input, (-1,)), return_inverse, return_counts, None,
                         tuple(input.shape))
        rows, d = _slices(input, dim)
        res = _runs(rows, return_inverse, return_counts, None, (rows.shape[0],))
        return _finish(res, input, d)
