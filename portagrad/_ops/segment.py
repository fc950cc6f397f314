"""Reductions into slots chosen by an index: ``scatter_reduce`` (sum, prod, mean, amax, amin) and
``index_reduce``, as graph-network code uses them.

The backend contract scatters only with ``=`` and ``+=``. ``amax``/``prod`` are therefore computed
by grouping: the elements of each slice along ``dim`` are stably sorted by value (for ``amax``) and
then by their target slot, so each slot's elements are consecutive; a segmented scan combines
them (``prod``) or the last one is the extremum (``amax``), and exactly one element per slot is
added into zeros, so duplicates never race. That value is not recorded: the derivative is
PyTorch's formula (``_ScatterReduce``), which spreads an extremum's gradient over all the tied
elements and treats zero factors of a product apart.
"""
from __future__ import annotations

from typing import Any

from .. import _creation, _dtype, _raw
from .._shape import wrap_dim
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _no_grad
from ._common import call
from .elementwise import (add, bitwise_not, div, eq, gt, logical_and, logical_or, maximum, mul, ne,
                          neg)
from .shape import narrow, reshape
from .indexing import check_scatter_index_shape, gather, scatter, scatter_add, where
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
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # (PyTorch's aliases)
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
    check_scatter_index_shape(input, d, index, src)
    s = src
    for k in range(src.dim()):  # only the part of src that index covers takes part
        if s.shape[k] != index.shape[k]:
            s = narrow(s, k, 0, index.shape[k])
    return call(_ScatterReduce, input, d, index, s, reduce, include_self)


class _ScatterReduce(Function):
    """The value composed by :func:`_reduced` (not recorded); PyTorch's derivative
    (``scatter_reduce_backward``): ``amax``/``amin`` split the gradient evenly among all the
    elements equal to the slot's result (the slot's own value counted even without
    ``include_self``, as PyTorch), ``prod`` divides out each factor (zeros handled apart)."""

    _backward_name = "ScatterReduceBackward0"

    @staticmethod
    def forward(ctx: Any, input: Tensor, d: int, index: Tensor, src: Tensor, reduce: str,
                include_self: bool) -> Tensor:
        out = _reduced(input, d, index, src, reduce, include_self)
        ctx.args = (d, reduce, include_self)
        ctx.save_for_backward(input, index, src, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        input, index, src, out = ctx.saved_tensors
        d, reduce, include_self = ctx.args
        if reduce == "sum":
            g_self, g_src = g, gather(g, d, index)
        elif reduce == "mean":
            n = _creation.ones(input.shape, dtype=g.dtype, device=g.device) if include_self \
                else _creation.zeros(input.shape, dtype=g.dtype, device=g.device)
            n = scatter_add(n, d, index, _creation.ones(index.shape, dtype=g.dtype,
                                                        device=g.device))
            n = where(eq(n, 0), 1.0, n)
            g_self, g_src = div(g, n), div(gather(g, d, index), gather(n, d, index))
        elif reduce == "prod":
            masked_self = where(eq(input, 0), 1.0, input)
            g_self = div(mul(g, scatter_reduce(masked_self, d, index, src, "prod",
                                               include_self=include_self)), masked_self)
            src_zero = eq(src, 0)
            zeros = _creation.zeros(input.shape, dtype=g.dtype, device=g.device)
            n_zeros = gather(scatter_add(zeros, d, index, src_zero.to(g.dtype)), d, index)
            single = logical_and(src_zero, eq(n_zeros, 1))
            masked_src = where(single, 1.0, src)
            without = scatter_reduce(input, d, index, masked_src, "prod",
                                     include_self=include_self)
            g_src = where(single, gather(mul(g, without), d, index),
                          div(gather(mul(g, out), d, index), where(src_zero, 1.0, src)))
        else:  # amax, amin
            value = gather(out, d, index)
            self_is = eq(input, out).to(g.dtype)
            src_is = eq(src, value).to(g.dtype)
            share = div(g, scatter_add(self_is, d, index, src_is))
            g_self = mul(self_is, share)
            g_src = mul(src_is, gather(share, d, index))
        if not include_self:
            g_self = scatter(g_self, d, index, value=0)
        return g_self, None, None, g_src, None, None


def _reduced(input: Tensor, d: int, index: Tensor, s: Tensor, reduce: str,
             include_self: bool) -> Tensor:
    """The value of :func:`scatter_reduce` (``s``: the part of ``src`` that ``index`` covers)."""
    with _no_grad():
        ones = _creation.ones(index.shape, dtype=_dtype.int64, device=input.device)
        count = scatter_add(_creation.zeros(input.shape, dtype=_dtype.int64,
                                            device=input.device), d, index, ones)
        hit = gt(count, 0)
    if reduce == "amin":
        # the amax of order-reversed values: -x for floats, ~x for integers and bools (-x wraps
        # for uint8 and at the most negative integer, ~x never does)
        rev = neg if input.dtype.is_floating_point else bitwise_not
        return rev(_reduced(rev(input), d, index, rev(s), "amax", include_self))
    half = input.dtype in (_dtype.float16, _dtype.bfloat16)
    if half and reduce == "prod":
        # PyTorch multiplies 16-bit values in float32 and rounds each slot once
        f32 = _dtype.float32
        return _reduced(input.to(f32), d, index, s.to(f32), "prod", include_self).to(input.dtype)
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
    if index.numel() and input.dim():
        lo, hi = _raw.min_max(index)
        if lo < 0 or hi >= input.shape[d]:  # (PyTorch's message and type)
            raise IndexError("index out of range in self")
    idx = reshape(index, shape).expand(source.shape)
    return scatter_reduce(input, d, idx, source, reduce, include_self=include_self)
