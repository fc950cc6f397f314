"""Joining and splitting: ``cat``, ``stack``, ``split``, ``chunk``, ``repeat``, ``roll``, ``tril`` ..."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype, _raw
from .._shape import require_dims, wrap_dim, wrap_dim_no_scalar
from .._tensor import Tensor
from ..autograd.function import Function
from ._common import call, check_same_device, sparse_fallback, to_scalar
from .conversion import _TYPE_NAMES, unaliased, write_out
from .indexing import index_select, where
from .shape import expand, narrow, reshape, unsqueeze

__all__ = ["cat", "concat", "concatenate", "stack", "vstack", "hstack", "split", "chunk",
           "tensor_split", "repeat", "tile", "repeat_interleave", "roll", "tril", "triu"]


class _Cat(Function):
    _backward_name = "CatBackward0"

    @staticmethod
    def forward(ctx: Any, d: int, *tensors: Tensor) -> Tensor:
        ctx.d = d
        ctx.sizes = sizes = [t._v.shape[d] for t in tensors]  # (ctx may be the no-op NULL_CTX)
        first = tensors[0]
        shape = list(first._v.shape)
        shape[d] = sum(sizes)
        out = _raw.new_like(first, tuple(shape))
        off = 0
        for t in tensors:
            n = t._v.shape[d]
            if n:
                _raw.copy_region(out, off * out._v.strides[d], t._v.shape, out._v.strides, t)
            off += n
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        grads: list[Any] = [None]
        off = 0
        for i, n in enumerate(ctx.sizes):
            grads.append(narrow(g, ctx.d, off, n) if ctx.needs_input_grad[i + 1] else None)
            off += n
        return tuple(grads)


def cat(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Concatenate along ``dim`` (shapes must match elsewhere; legacy 1-D empty tensors skipped)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("cat", cat, tensors, dim=dim, out=out)) is not _SKIP:
        return _ac_out
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError("cat(): argument 'tensors' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    # the result type is promoted over every input, the skipped empty ones too (PyTorch)
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = _dtype.promote_types(dt, t.dtype)
    kept = [(i, t) for i, t in enumerate(tensors) if not (t.dim() == 1 and t.shape[0] == 0)]
    if kept:
        d = wrap_dim(dim, kept[0][1].dim())
    else:  # only legacy empty tensors: PyTorch never checks dim against them, the result is [0]
        kept, d = [(0, tensors[0])], 0
    ts = [t for _, t in kept]
    ref = ts[0]
    for i, t in kept:
        try:
            check_same_device(ref, t, "cat")
        except AttributeError:  # not dense tensors: sparse ones (their own cat), or re-raised
            return sparse_fallback("cat", cat, tensors, dim, out=out)
        if t.dim() != ref.dim():
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.dim()} and "
                               f"{t.dim()}")
        for j in range(ref.dim()):
            if j != d and t.shape[j] != ref.shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                                   f"size {ref.shape[j]} but got size {t.shape[j]} for tensor "
                                   f"number {i} in the list.")
    if out is not None:
        _check_cat_out(dt, out)
    ts = [t if t.dtype is dt else t.to(dt) for t in ts]
    res = call(_Cat, d, *ts)
    return res if out is None else write_out("cat", res, out, tuple(tensors))


concat = concatenate = cat


def _check_cat_out(dt: _dtype.dtype, out: Tensor) -> None:
    """cat's (and stack's) refusal of an ``out`` the promoted inputs cannot be cast into."""
    if not _dtype.can_cast(dt, out.dtype):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{_TYPE_NAMES[out.dtype.name]}")


def stack(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Stack equal-shaped tensors along a new dimension."""
    if out is not None:
        res = stack(tensors, dim)
        _check_cat_out(res.dtype, out)
        return write_out("stack", res, out, tuple(tensors))
    if _AUTOCAST.on and (_ac_out := _autocast_call("stack", stack, tensors, dim=dim)) is not _SKIP:
        return _ac_out
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tensors[0]
    d = wrap_dim(dim, ref.dim() + 1)  # before the sizes, as PyTorch checks them
    for i, t in enumerate(tensors):
        if t.shape != ref.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(ref.shape)} at entry 0 and {list(t.shape)} at entry {i}")
    return cat([unsqueeze(t, d) for t in tensors], d)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack rows: 1-D inputs become rows."""
    return cat([reshape(t, (1, -1)) if t.dim() < 2 else t for t in tensors], 0)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    if all(t.dim() == 1 for t in tensors):
        return cat(list(tensors), 0)
    return cat(list(tensors), 1)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of chunks of ``split_size`` (last may be smaller) or of the given section sizes."""
    require_dims(tensor.dim(), "split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, tensor.dim())
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        # (PyTorch: max(ceil(n / size), 1) chunks, so an empty dim gives one empty chunk)
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if size and n else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                               f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    out = []
    off = 0
    for s in sizes:
        out.append(narrow(tensor, d, off, s))
        off += s
    return tuple(out)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` nearly equal views (fewer if the size is small)."""
    require_dims(input.dim(), "chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input.dim())
    n = input.shape[d]
    size = -(-n // chunks) if n else 0
    if size == 0:
        return tuple(narrow(input, d, 0, 0) for _ in range(chunks)) if n == 0 else (input,)
    return split(input, size, d)


_NO_ARG: Any = object()


def tensor_split(input: Tensor, indices_or_sections: Any = _NO_ARG, dim: int = 0, *,
                 sections: Any = _NO_ARG, indices: Any = _NO_ARG,
                 tensor_indices_or_sections: Any = _NO_ARG) -> tuple[Tensor, ...]:
    """Views of ``input`` split along ``dim`` into ``sections`` nearly equal parts, or at
    ``indices`` (each counted from the end when negative, clamped to the size, as Python
    slices: a part whose end comes before its start is empty). A tensor argument is a number
    of sections when 0-d, indices when 1-D (int64). PyTorch's keyword forms ``sections=``,
    ``indices=`` and ``tensor_indices_or_sections=`` are taken too."""
    given = [a for a in (indices_or_sections, sections, indices, tensor_indices_or_sections)
             if a is not _NO_ARG]
    if len(given) != 1:
        raise TypeError("tensor_split() missing required argument 'indices_or_sections'"
                        if not given else "tensor_split() got multiple values for argument "
                        "'indices_or_sections'")
    arg = given[0]
    require_dims(input.dim(), f"tensor_split expected at least a 1-dimensional tensor, but got a "
                              f"tensor with {input.dim()} dims")
    d = wrap_dim(dim, input.dim())
    n = input.shape[d]
    if isinstance(arg, Tensor):
        if arg.dim() > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {arg.dim()} dims")
        if arg.dtype is not _dtype.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {_TYPE_NAMES[arg.dtype.name]}")
        arg = int(arg.item()) if arg.dim() == 0 else [int(i) for i in arg.tolist()]
    elif isinstance(arg, (bool, float)) or not isinstance(arg, (int, np.integer, list, tuple)):
        raise TypeError(f"tensor_split(): argument 'indices_or_sections' must be int, tuple of "
                        f"ints or Tensor, not {type(arg).__name__}")
    if not isinstance(arg, (list, tuple)):
        k = int(arg)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        base, extra = divmod(n, k)
        sizes = [base + 1] * extra + [base] * (k - extra)
        return split(input, sizes, d)
    bounds = [0] + [_slice_bound(int(i), n) for i in arg] + [n]
    return tuple(narrow(input, d, a, max(b - a, 0)) for a, b in zip(bounds[:-1], bounds[1:]))


def _slice_bound(i: int, n: int) -> int:
    """A split index as a Python slice bound: from the end when negative, clamped to [0, n]."""
    if i < 0:
        i += n
    return min(max(i, 0), n)


def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """Tile ``input`` ``sizes`` times along each dimension (a copy)."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = tuple(sizes[0])
    if len(sizes) < input.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    shape = (1,) * (len(sizes) - input.dim()) + tuple(input.shape)
    inter: list[int] = []
    target: list[int] = []
    for r, n in zip(sizes, shape):
        inter += [1, n]
        target += [r, n]
    x = expand(reshape(input, tuple(inter)), tuple(target))
    # the reshape is a view of the input where nothing is repeated across memory (all sizes 1,
    # or one element repeated along a size-1 dimension): a copy nonetheless, as PyTorch
    return unaliased(reshape(x, tuple(r * n for r, n in zip(sizes, shape))), input)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``repeat`` with ones prepended to ``dims`` up to ``input``'s number of dimensions."""
    dims = tuple(dims)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input: Tensor, repeats: Any, dim: int | None = None) -> Tensor:
    x = reshape(input, (-1,)) if dim is None else input
    d = 0 if dim is None else wrap_dim_no_scalar(dim, input.dim())
    n = x.shape[d]
    reps = repeats.tolist() if isinstance(repeats, Tensor) else repeats
    # PyTorch's checks, before numpy's ValueErrors ("negative dimensions", broadcasting)
    if isinstance(reps, int):
        if reps < 0:
            raise RuntimeError("Repeats must be non-negative")
    else:
        r = np.asarray(reps)
        if r.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if r.ndim == 1 and r.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {r.shape[0]} and input.size(0) = {n}")
        if np.any(r < 0):
            raise RuntimeError("repeats can not be negative")
    idx = np.repeat(np.arange(n), reps)
    return index_select(x, d, _creation.from_host(idx.astype(np.int64), device=input.device))


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift the elements along ``dims`` (of the flattened tensor without ``dims``), wrapping
    around; always a copy, as PyTorch, even when every shift is a multiple of its size."""
    if dims is None:
        if isinstance(shifts, (list, tuple)) and len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        flat = reshape(input, (-1,))
        return unaliased(reshape(roll(flat, shifts, 0), tuple(input.shape)), input)
    shifts = shifts if isinstance(shifts, (list, tuple)) else (shifts,)
    dims = dims if isinstance(dims, (list, tuple)) else (dims,)
    if not shifts and not dims:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    out = input
    for s, d in zip(shifts, dims):
        d = wrap_dim_no_scalar(d, input.dim())
        n = input.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return unaliased(out, input)


def _tri(input: Tensor, diagonal: int, upper: bool) -> Tensor:
    if input.dim() < 2:
        raise RuntimeError("tril/triu: input tensor must have at least 2 dimensions")
    m, n = input.shape[-2], input.shape[-1]
    mask = np.triu(np.ones((m, n), bool), diagonal) if upper else np.tril(np.ones((m, n), bool),
                                                                        diagonal)
    mt = _creation.from_host(mask, device=input.device)
    return where(mt, input, to_scalar(0, input.dtype))  # a zero of input's dtype: bool stays bool


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """Lower triangle (the rest zeroed)."""
    return _tri(input, diagonal, False)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """Upper triangle (the rest zeroed)."""
    return _tri(input, diagonal, True)
