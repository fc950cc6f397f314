"""Reads and writes by index composed from gather/scatter and views: ``take``, ``put``,
``index_put``, ``masked_scatter``, ``argwhere``, and the embeddings ``diagonal_scatter``,
``select_scatter``, ``slice_scatter``, ``as_strided_scatter``.

Each is written with ops that already have derivatives, so gradients come from those.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype
from .._shape import broadcast_shapes, wrap_dim
from .._tensor import Tensor
from ..autograd.function import Function
from . import elementwise
from ._common import call, check_same_device
from .shape import (
    as_strided, narrow, reshape, select,
)
from .conversion import copy_
from .diagonal import diagonal
from ._gather import check_index_range
from .indexing import (check_complex_source, index_select, nonzero, scatter_add_in_order,
                       setitem, where, wrap_negative)

__all__ = ["take", "masked_scatter", "argwhere", "put", "index_put", "diagonal_scatter",
           "select_scatter", "slice_scatter", "as_strided_scatter", "slice_inverse"]


# ------------------------------------------------------------------------------- indexing
def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened ``input`` at ``index`` (result shaped like ``index``)."""
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{elementwise._type_name(index.dtype)}")
    flat = reshape(input, (-1,))
    n = flat.shape[0]
    if index.numel():
        lo, hi = int(index.min().item()), int(index.max().item())
        if lo < -n or hi >= n:
            bad = hi if hi >= n else lo
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                             f"elements.")
    idx = reshape(index, (-1,))
    idx = where(idx < 0, idx + n, idx)
    return reshape(index_select(flat, 0, idx), index.shape)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` whose elements where ``mask`` is true are taken, in order, from
    ``source``."""
    if mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_scatter_only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype}")
    m = reshape(mask.expand(input.shape), (-1,))
    pos = reshape(nonzero(m), (-1,))
    k = pos.shape[0]
    if source.numel() < k:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    flat = reshape(input, (-1,))
    src = narrow(reshape(source, (-1,)), 0, 0, k).to(input.dtype)
    out = flat.index_copy(0, pos, src)
    return reshape(out, input.shape)


def argwhere(input: Tensor) -> Tensor:
    """Indices of the nonzero elements, ``(n, ndim)``."""
    return nonzero(input)


def _flat_index(index: Tensor, n: int, what: str) -> Tensor:
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"{what}(): Expected a long tensor for index, but got "
                           f"{elementwise._type_name(index.dtype)}")
    idx = reshape(index, (-1,))
    if idx.numel():
        lo, hi = int(idx.min().item()), int(idx.max().item())
        if lo < -n or hi >= n:
            bad = hi if hi >= n else lo
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                             f"elements.")
    return where(idx < 0, idx + n, idx)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source`` written at the flat positions ``index`` (added when
    ``accumulate``)."""
    # PyTorch's checks, in its order: a long index, source of self's dtype, one index per
    # element of source (an IndexError)
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{elementwise._type_name(index.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {elementwise._type_name(input.dtype)} and "
                           f"source.dtype = {elementwise._type_name(source.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, index.numel() = "
                         f"{index.numel()}")
    flat = reshape(input, (-1,))
    idx = _flat_index(index, flat.shape[0], "put_")
    src = reshape(source, (-1,)).to(input.dtype)
    out = flat.index_add(0, idx, src) if accumulate else flat.index_copy(0, idx, src)
    return reshape(out, input.shape)


def index_put(input: Tensor, indices: Sequence[Any], values: Any, accumulate: bool = False
              ) -> Tensor:
    """A copy of ``input`` with ``values`` written at ``input[indices]`` (``indices``: a tuple of
    index tensors for the leading dimensions); duplicates added when ``accumulate``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "index_put", index_put, input, indices=indices, values=values,
            accumulate=accumulate)) is not _SKIP:
        return _ac_out
    indices = tuple(indices)
    if len(indices) > input.dim():
        raise IndexError(f"too many indices for tensor of dimension {input.dim()} (got "
                         f"{len(indices)})")
    if not accumulate:
        out = input.clone()
        setitem(out, indices, values)
        return out
    check_complex_source(input, indices, values)  # (setitem checks the other branch)
    idx: list[Tensor] = []
    for t in indices:
        if isinstance(t, Tensor) and t.dtype is _dtype.bool:
            idx.extend(nonzero(t, as_tuple=True))
        else:
            idx.append(t if isinstance(t, Tensor) else
                       _creation.tensor(t, dtype=_dtype.int64, device=input.device))
    k = len(idx)
    lead, rest = tuple(input.shape[:k]), tuple(input.shape[k:])
    shape = broadcast_shapes(*(t.shape for t in idx))
    lin = _creation.zeros(shape, dtype=_dtype.int64, device=input.device)
    for j, (t, n) in enumerate(zip(idx, lead)):
        # each index checked on its own (PyTorch's message names it, not the linear index);
        # CPU indices serve a tensor on any device, as in PyTorch
        if t.device != input.device and t.device.type != "cpu":
            check_same_device(input, t, "index_put_")
        lin = lin * n + wrap_negative(t.to(device=input.device, dtype=_dtype.int64), n, j)
    v = values if isinstance(values, Tensor) else _creation.tensor(values, dtype=input.dtype,
                                                                   device=input.device)
    if v.device != input.device:
        if v.dim() or v.device.type != "cpu":  # (a 0-d CPU value serves any device)
            check_same_device(input, v, "index_put_")
        v = v.to(input.device)
    v = reshape(v.to(input.dtype).expand(tuple(shape) + rest), (-1,) + rest)
    flat = reshape(input, (-1,) + rest)
    lin = reshape(lin, (-1,))
    if input.dtype in (_dtype.float16, _dtype.bfloat16):
        # PyTorch accumulates 16-bit values one after another, rounding each sum
        check_index_range(lin, flat.shape[0], 0)
        full = reshape(lin, (-1,) + (1,) * len(rest)).expand(tuple(v.shape))
        return reshape(scatter_add_in_order(flat, 0, full, v), input.shape)
    return reshape(flat.index_add(0, lin, v), input.shape)


def _embed(input: Tensor, src: Tensor, view: Any, name: str) -> Tensor:
    """A copy of ``input`` with ``src`` written into the view ``view(copy)``."""
    out = input.clone()
    target = view(out)
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src "
                           f"size = {list(src.shape)}, slice size = {list(target.shape)}")
    copy_(target, src)
    return out


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
                     ) -> Tensor:
    """A copy of ``input`` with ``src`` written on the diagonal ``diagonal(offset, dim1, dim2)``."""
    return _embed(input, src, lambda t: diagonal(t, offset, dim1, dim2), "diagonal_scatter")


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``select(dim, index)``."""
    return _embed(input, src, lambda t: select(t, dim, index), "select_scatter")


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input[..., start:end:step, ...]`` along
    ``dim``."""
    d = wrap_dim(dim, input.dim())
    key = (slice(None),) * d + (slice(start, end, step),)
    return _embed(input, src, lambda t: t[key], "slice_scatter")


class _SliceInverse(Function):
    """``src``'s geometry over ``input``'s memory (an alias of ``input``); PyTorch's derivative:
    ``input`` gets the gradient's slice, ``src`` the rest (the slice zeroed)."""

    _backward_name = "SliceInverseBackward0"

    @staticmethod
    def forward(ctx: Any, input: Tensor, src: Tensor, dim: int, start: Any, end: Any,
                step: int) -> Tensor:
        ctx.key = (slice(None),) * dim + (slice(start, end, step),)
        ctx.dims = (dim, start, end, step)
        ctx.input_shape = tuple(input.shape)
        return Tensor._make(input._storage, src._v.offset, src._v.shape, src._v.strides,
                            input._v.dtype, input._vc)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        dim, start, end, step = ctx.dims
        g_input = g[ctx.key].contiguous()
        zeros = _creation.zeros(ctx.input_shape, dtype=g.dtype, device=g.device)
        g_src = slice_scatter(g, zeros, dim, start, end, step)
        return g_input, g_src, None, None, None, None


def slice_inverse(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """The inverse of slicing (``torch.slice_inverse``, functionalization's view replay):
    ``input`` is ``src[..., start:end:step, ...]`` along ``dim`` (or a tensor standing for it);
    the result has ``src``'s shape, strides and offset over ``input``'s memory (so it is ``src``
    again when ``input`` is a slice of it). Its gradient reaches ``input`` (the gradient's
    slice) and ``src`` (the rest), as PyTorch's. ``input``'s memory must hold that geometry.
    The result shares ``input``'s memory and version counter but is not a differentiable view
    of it: an in-place change of it is not replayed into ``input``'s history."""
    if not isinstance(input, Tensor) or not isinstance(src, Tensor):
        raise TypeError("slice_inverse(): arguments 'input' and 'src' must be Tensors")
    d = wrap_dim(dim, src.dim())
    v = src._v
    need = 0 if 0 in v.shape else v.offset + sum((n - 1) * st for n, st in
                                                 zip(v.shape, v.strides)) + 1
    isz = input.dtype.itemsize
    if need * isz > input._storage.nbytes:
        raise RuntimeError(f"setStorage: sizes {list(v.shape)}, strides {list(v.strides)}, "
                           f"storage offset {v.offset}, and itemsize {isz} requiring a storage "
                           f"size of {need * isz} are out of bounds for storage of size "
                           f"{input._storage.nbytes}")
    return call(_SliceInverse, input, src, d, start, end, step)  # type: ignore[no-any-return]


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``as_strided(size, stride, offset)``."""
    return _embed(input, src, lambda t: as_strided(t, size, stride, storage_offset),
                  "as_strided_scatter")
