"""Ordering: ``sort``, ``argsort``, ``msort``, ``topk``, and the order statistics picked from a sort:
``kthvalue``, ``median``, ``nanmedian``, ``mode``.

The order comes from the backend's ``sort`` primitive (indices, stable), the values are gathered
with those indices, so every result is differentiable like ``gather``."""
from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from .. import _creation, _dtype, _raw
from .._shape import wrap_dim
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from . import elementwise, reduction
from ._common import call, refuse_bool, refuse_complex
from .indexing import gather, scatter_add, where
from .conversion import write_out_pair
from .joining import cat
from .shape import narrow, reshape, squeeze

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode"]

sort_result = namedtuple("sort_result", ["values", "indices"])
topk_result = namedtuple("topk_result", ["values", "indices"])


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False, *,
         out: Any = None) -> Any:
    """Sorted values and their indices along ``dim`` (stable)."""
    if out is not None:
        return write_out_pair("sort", sort(input, dim, descending, stable), out, (input,))
    _no_complex_sort(input)
    d = wrap_dim(dim, input.dim())  # (a 0-d tensor's dim is checked too: 0 or -1)
    if input.dim() == 0:
        return sort_result(input.clone(), _raw.fill(_raw.new_like(input, (), _dtype.int64), 0))
    _, idx = _raw.sort(input.detach(), d, bool(descending))
    values = gather(input, d, idx) if input._requires_grad else _raw.gather(input, d, idx)
    return sort_result(values, idx)


def _no_complex_sort(input: Tensor) -> None:
    if input.dtype.is_complex:  # PyTorch's message, leading space included
        raise RuntimeError(" Sort does not support complex dtypes on CPU")


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """Indices that sort ``input`` along ``dim``."""
    _no_complex_sort(input)
    d = wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return _raw.fill(_raw.new_like(input, (), _dtype.int64), 0)
    return _raw.sort(input.detach(), d, bool(descending))[1]


def msort(input: Tensor) -> Tensor:
    return sort(input, 0)[0]


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *,
         out: Any = None) -> Any:
    """The ``k`` largest (or smallest) values and their indices along ``dim``."""
    if out is not None:
        return write_out_pair("topk", topk(input, k, dim, largest, sorted), out, (input,))
    d = wrap_dim(dim, input.dim())
    n = input.shape[d] if input.dim() else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    refuse_bool("topk", input.dtype)
    if input.dtype.is_complex:  # PyTorch's message, leading space included
        raise RuntimeError(" topk does not support complex dtypes on CPU")
    if input.dim() == 0:
        return topk_result(input.clone(), _raw.fill(_raw.new_like(input, (), _dtype.int64), 0))
    _, idx = _raw.sort(input.detach(), d, bool(largest))
    idx = _raw.contiguous(narrow(idx, d, 0, k))
    return topk_result(gather(input, d, idx), idx)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *,
             out: Any = None) -> Any:
    """``(values, indices)`` of the ``k``-th smallest element along ``dim``."""
    if out is not None:
        return write_out_pair("kthvalue", kthvalue(input, k, dim, keepdim), out, (input,),
                              dtype_errors="kthvalue", warn_dim=_dropped(input, dim, keepdim))
    _no_bool("kthvalue_cpu", input)
    d = wrap_dim(dim, input.dim())
    n = input.shape[d] if input.dim() else 1
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:  # (k == 0 would narrow at -1: the largest value)
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if input.dim() == 0:  # a 0-d tensor is its own (only) value, index 0
        r = kthvalue(reshape(input, (1,)), k, 0, False)
        return sort_result(reshape(r[0], ()), reshape(r[1], ()))
    _, idx = _raw.sort(input.detach(), d, False)
    i = _raw.contiguous(narrow(idx, d, k - 1, 1))
    v = gather(input, d, i)
    if not keepdim:
        v, i = squeeze(v, d), squeeze(i, d)
    return sort_result(v, i)


class _MedianAll(reduction.EvenlyDistributed):
    _backward_name = "MedianBackward0"


class _NanmedianAll(reduction.EvenlyDistributed):
    _backward_name = "NanmedianBackward0"


def _median_all(x: Tensor) -> Tensor:
    """The lower median of all elements of ``x``, NaN if any is NaN (PyTorch's)."""
    flat = reshape(x, (-1,))
    if flat.shape[0] == 0 and x.dtype.is_floating_point:  # PyTorch: the median of nothing
        return _raw.fill(_raw.new_like(x, ()), math.nan)
    v = kthvalue(flat, (flat.shape[0] + 1) // 2, 0)[0]
    if x.dtype.is_floating_point:
        return where(reduction.any(elementwise.isnan(flat)), math.nan, v)
    return v


def _dropped(input: Tensor, dim: int, keepdim: bool) -> int | None:
    """The reduced dimension that PyTorch's kthvalue and mode keep in ``out`` while resizing it
    (write_out's ``warn_dim``), or None."""
    return None if keepdim or input.dim() == 0 else wrap_dim(dim, input.dim())


def _needs_dim(name: str, dim: Any, out: Any) -> None:
    if out is not None and dim is None:  # (PyTorch's median of all elements takes no out=)
        raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')


def _no_bool(kernel: str, input: Tensor) -> None:
    # PyTorch's kernels for these selections have no bool version, nor a complex one
    if isinstance(input, Tensor) and input.dtype is _dtype.bool:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if isinstance(input, Tensor):
        refuse_complex(kernel, input.dtype)


def median(input: Tensor, dim: Any = None, keepdim: bool = False, *, out: Any = None) -> Any:
    """Lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN where the
    elements hold a NaN, indexed at the first NaN (PyTorch's; ``nanmedian`` skips them)."""
    if out is not None:
        _needs_dim("median", dim, out)
        return write_out_pair("median", median(input, dim, keepdim), out, (input,),
                              dtype_errors="median")
    _no_bool("median_cpu" if dim is None else "median_out", input)
    if dim is None:
        return call(_MedianAll, input, _median_all)
    d = wrap_dim(dim, input.dim())
    if input.dim() and input.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    if input.dim() == 0 or not input.dtype.is_floating_point:
        return kthvalue(input, (input.shape[d] + 1) // 2 if input.dim() else 1, d, keepdim)
    with _no_grad():
        i = kthvalue(input.detach(), (input.shape[d] + 1) // 2, d, True)[1]
        nan = elementwise.isnan(input.detach())
        first = reduction.argmax(nan.to(_dtype.uint8), d, keepdim=True)
        i = where(reduction.any(nan, d, keepdim=True), first, i)
    v = gather(input, d, i)
    if not keepdim:
        v, i = squeeze(v, d), squeeze(i, d)
    return sort_result(v, i)


median_result = namedtuple("median_result", ["values", "indices"])
mode_result = namedtuple("mode_result", ["values", "indices"])


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
              out: Any = None) -> Any:
    """The lower median of the non-NaN elements (of all, or ``(values, indices)`` along
    ``dim``)."""
    if out is not None:
        _needs_dim("nanmedian", dim, out)
        return write_out_pair("nanmedian", nanmedian(input, dim, keepdim), out, (input,),
                              dtype_errors="median")
    _no_bool("median_cpu" if dim is None else "median_out", input)
    if dim is None:
        return call(_NanmedianAll, input, _nanmedian_all)
    d = wrap_dim(dim, max(input.dim(), 1))
    x = reshape(input, (1,)) if input.dim() == 0 else input
    if x.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    vals, idx = sort(x, d)
    with _no_grad():
        nonnan = reduction.sum(elementwise.logical_not(elementwise.isnan(x)), d, keepdim=True) \
            if x.dtype.is_floating_point else \
            _creation.full_like(narrow(x, d, 0, 1), x.shape[d], dtype=_dtype.int64)
        k = elementwise.floor_divide(elementwise.clamp(nonnan - 1, 0, None), 2)
    v = gather(vals, d, k)
    i = gather(idx, d, k)
    if not keepdim or input.dim() == 0:
        v, i = squeeze(v, d), squeeze(i, d)
    return median_result(v, i)


def _nanmedian_all(x: Tensor) -> Tensor:
    flat = reshape(x, (-1,))
    if flat.numel() == 0:
        return _creation.full((), float("nan"), dtype=x.dtype, device=x.device)
    return nanmedian(flat, 0).values


def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *, out: Any = None) -> Any:
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest among equally
    frequent ones) and the index of its last occurrence."""
    if out is not None:
        return write_out_pair("mode", mode(input, dim, keepdim), out, (input,),
                              dtype_errors="mode", warn_dim=_dropped(input, dim, keepdim))
    refuse_complex("mode_cpu", input.dtype)  # (bool has a mode; complex has none)
    x = reshape(input, (1,)) if input.dim() == 0 else input
    d = wrap_dim(dim, x.dim())
    n = x.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    with _no_grad():
        s, order = sort(x, d, stable=True)
        head = _creation.ones(tuple(1 if k == d else v for k, v in enumerate(s.shape)),
                              dtype=_dtype.bool, device=s.device)
        # a run of equal values starts at 0 and wherever the sorted value changes
        start = cat([head, elementwise.ne(narrow(s, d, 1, n - 1), narrow(s, d, 0, n - 1))], d) \
            if n > 1 else head
        run = start.to(_dtype.int64).cumsum(d) - 1
        counts = scatter_add(_creation.zeros(s.shape, dtype=_dtype.int64, device=s.device), d,
                             run, _creation.ones_like(run))
        best = reduction.argmax(counts, d, keepdim=True)  # the first longest run: the smallest value
        end = gather(counts.cumsum(d) - 1, d, best)  # its last element, sorted stably
        idx = gather(order, d, end)
    values = gather(x, d, idx)
    if not keepdim or input.dim() == 0:
        values, idx = squeeze(values, d), squeeze(idx, d)
    return mode_result(values, idx)
