"""Reductions into slots chosen by an index: ``scatter_reduce`` (sum, prod, mean, amax, amin) and
``index_reduce``, as graph-network code uses them.

The backend contract scatters only with ``=`` and ``+=``. ``amax``/``prod`` are therefore computed
by grouping: the elements of each slice along ``dim`` are stably sorted by value (for ``amax``) and
then by their target slot, so each slot's elements are consecutive; a segmented scan combines
them (``prod``) or the last one is the extremum (``amax``), and exactly one element per slot is
added into zeros, so duplicates never race. Everything is composed of recorded ops, so the
gradient reaches the elements that produced each slot's value (one of them when values tie:
PyTorch spreads it over all tied elements).
"""
from __future__ import annotations

from typing import Any

from .. import _creation, _dtype
from .._shape import wrap_dim
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from .elementwise import add, bitwise_not, div, gt, logical_or, maximum, mul, ne, neg
from .shape import narrow, reshape
from .indexing import gather, scatter_add, where
from .joining import cat
from .sorting import sort
from .scan import _scan

__all__ = ["scatter_reduce", "index_reduce"]

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _grouped(index: Tensor, src: Tensor, d: int, by_value: bool) -> tuple[Tensor, Tensor, Tensor]:
    """``(index, src, last)`` reordered along ``d`` so that equal indices are consecutive (values
    ascending within a group when ``by_value``); ``last`` marks the last element of each group."""
    with _no_grad():
        order = None
        idx = index
        if by_value:
            _, order = sort(src.detach(), d, stable=True)
            idx = gather(index, d, order)
        idx, order2 = sort(idx, d, stable=True)
        order = order2 if order is None else gather(order, d, order2)
        n = idx.shape[d]
        if n:
            diff = ne(narrow(idx, d, 1, n - 1), narrow(idx, d, 0, n - 1))
            end = _creation.ones(tuple(1 if k == d else s for k, s in enumerate(idx.shape)),
                                 dtype=_dtype.bool, device=idx.device)
            last = cat([diff, end], d)
        else:
            last = _creation.zeros(idx.shape, dtype=_dtype.bool, device=idx.device)
    return idx, gather(src, d, order), last


def _one_per_slot(input: Tensor, d: int, idx: Tensor, vals: Tensor, last: Tensor) -> Tensor:
    """Each slot's single marked value added into zeros shaped like ``input``."""
    zeros = _creation.zeros(input.shape, dtype=vals.dtype, device=input.device)
    return scatter_add(zeros, d, idx, where(last, vals, _creation.zeros_like(vals)))  # bool: bool


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """``input`` with the elements of ``src`` reduced (``sum``, ``prod``, ``mean``, ``amax``,
    ``amin``) into the slots ``index`` names along ``dim``; ``include_self``: the slot's own
    value takes part. Slots no index names keep their value."""
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if index.dtype is not _dtype.int64:
        raise RuntimeError("scatter_reduce(): Expected dtype int64 for index")
    if input.dtype is not src.dtype:
        raise RuntimeError("scatter_reduce(): Expected self.dtype to be equal to src.dtype")
    if index.dim() != src.dim() or index.dim() != input.dim():
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    d = wrap_dim(dim, max(input.dim(), 1))
    if input.dim() == 0:
        return reshape(scatter_reduce(reshape(input, (1,)), 0, reshape(index, (1,)),
                                        reshape(src, (1,)), reduce,
                                        include_self=include_self), ())
    for k in range(index.dim()):
        if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > input.shape[k]):
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(index.shape)} to be smaller than self "
                               f"{list(input.shape)} apart from dimension {d} and to be "
                               f"smaller size than src {list(src.shape)}")
    s = src
    for k in range(src.dim()):  # only the part of src that index covers takes part
        if s.shape[k] != index.shape[k]:
            s = narrow(s, k, 0, index.shape[k])
    with _no_grad():
        ones = _creation.ones(index.shape, dtype=_dtype.int64, device=input.device)
        count = scatter_add(_creation.zeros(input.shape, dtype=_dtype.int64,
                                            device=input.device), d, index, ones)
        hit = gt(count, 0)
    if reduce == "amin":
        # the amax of order-reversed values: -x for floats, ~x for integers and bools (-x wraps
        # for uint8 and at the most negative integer, ~x never does)
        rev = neg if input.dtype.is_floating_point else bitwise_not
        return rev(scatter_reduce(rev(input), d, index, rev(s), "amax",
                                  include_self=include_self))
    half = input.dtype in (_dtype.float16, _dtype.bfloat16)
    if half and reduce == "prod":
        # PyTorch multiplies 16-bit values in float32 and rounds each slot once
        f32 = _dtype.float32
        return scatter_reduce(input.to(f32), d, index, s.to(f32), "prod",
                              include_self=include_self).to(input.dtype)
    if reduce in ("sum", "mean"):
        zeros = _creation.zeros(input.shape, dtype=input.dtype, device=input.device)
        if half:
            # scatter_add's 16-bit rule (PyTorch's): the slot's own value and everything added
            # to it summed in float32, rounded once; a mean divides that rounded sum
            total = scatter_add(input if include_self else zeros, d, index, s)
        else:
            total = scatter_add(zeros, d, index, s)
            if include_self:
                total = add(total, input)
        if reduce == "sum":
            return total if include_self else where(hit, total, input)
        n = add(count, 1) if include_self else maximum(count, 1)
        if input.dtype.is_floating_point:
            mean = div(total, n.to(input.dtype))
        else:
            # floored in int64, then back to the input's dtype (PyTorch's mean keeps int8 int8)
            mean = div(total, n, rounding_mode="floor").to(input.dtype)
        return where(hit, mean, input)
    if reduce == "amax":
        idx, vals, last = _grouped(index, s, d, by_value=True)
        top = _one_per_slot(input, d, idx, vals, last)
        if include_self:
            top = maximum(top, input)
        return where(hit, top, input)
    # prod: a segmented scan of products, restarting where a new slot begins
    idx, vals, last = _grouped(index, s, d, by_value=False)
    n = idx.shape[d]
    with _no_grad():
        start = cat([_creation.ones(tuple(1 if k == d else v for k, v in enumerate(idx.shape)),
                                    dtype=_dtype.bool, device=idx.device),
                     ne(narrow(idx, d, 1, n - 1), narrow(idx, d, 0, n - 1))], d) \
            if n else last

    def combine(early: Any, late: Any) -> Any:
        (f1, v1), (f2, v2) = early, late
        return logical_or(f1, f2), where(f2, v2, mul(v1, v2))

    _, prods = _scan((start, vals), d, combine)
    one = _one_per_slot(input, d, idx, prods, last)
    top = mul(one, input) if include_self else one
    return where(hit, top, input)


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """``input`` with the slices of ``source`` along ``dim`` reduced (``prod``, ``mean``,
    ``amax``, ``amin``) into the slices the 1-D ``index`` names."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    d = wrap_dim(dim, max(source.dim(), 1))
    if source.dim() and index.numel() != source.shape[d]:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim) ({source.shape[d]})")
    shape = [1] * source.dim()
    if source.dim():
        shape[d] = index.numel()
    idx = reshape(index, shape).expand(source.shape)
    return scatter_reduce(input, d, idx, source, reduce, include_self=include_self)
