"""Indexing: ``gather``/``scatter``, ``index_select``, masks and ``where``, ``__getitem__``/
``__setitem__``, ``flip``.

Everything reduces to two recorded primitives, ``_Gather`` and ``_ScatterAddZeros`` (in
:mod:`._gather`), which are each other's derivative (so higher-order gradients work). Index
values are checked on the host before a backend sees them: an out-of-range index raises
``IndexError`` naming the index, the dimension and its size.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype, _raw
from .._shape import broadcast_shapes, check_unique_dims, dim_size, wrap_dim, wrap_dim_no_scalar
from .._tensor import Tensor
from ..autograd.function import Function
from ._advanced import advanced_getitem, advanced_setitem
from ._common import (call, check_same_device, prepare_binary, sparse_fallback, to_scalar,
                      type_name)
from ._gather import _Gather, _span, check_index_range, linear_index, scatter_into_zeros
from .shape import as_strided, basic_index, expand, reshape

__all__ = ["gather", "scatter", "scatter_add", "index_select", "masked_fill", "masked_select",
           "nonzero", "flip", "where", "getitem", "setitem", "strided_region", "take_along_dim",
           "index_add", "index_fill", "index_copy", "check_index_copy", "scatter_add_in_order",
           "wrap_negative", "check_complex_source"]


def _as_index(index: Any, like: Tensor, name: str = "index") -> Tensor:
    if not isinstance(index, Tensor):
        index = _creation.tensor(index, device=like.device)
    if index.dtype.is_floating_point or index.dtype is _dtype.bool and name != "mask":
        raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors "
                         f"(got {index.dtype})")
    if index.dtype in (_dtype.uint8, _dtype.int8, _dtype.int16):  # PyTorch's index ops refuse them
        raise RuntimeError(f"Expected dtype int32/int64 for {name}, but got {index.dtype}")
    check_same_device(like, index, name)
    if index.dtype is not _dtype.int64:
        index = _raw.cast(index, _dtype.int64)
    return index


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` along ``dim`` (``torch.gather``)."""
    d = wrap_dim(dim, input.dim())
    if isinstance(index, Tensor) and index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")  # PyTorch's error
    index = _as_index(index, input)
    if input.dim() == 0 and index.dim() <= 1:  # a scalar is a 1-element vector here (PyTorch)
        return reshape(gather(reshape(input, (1,)), 0, reshape(index, (-1,))), tuple(index.shape))
    if index.dim() != input.dim() and not (index.dim() <= 1 and input.dim() <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i, (si, sx) in enumerate(zip(index.shape, input.shape)):
        if i != d and si > sx:
            raise RuntimeError(f"Size does not match at dimension {i} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {d}")
    check_index_range(index, input.shape[d] if input.dim() else 1, d, exc=RuntimeError)
    return call(_Gather, input, d, index)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``input`` read at ``indices`` along ``dim`` (both broadcast except along ``dim``); with
    ``dim=None``, both flattened first (PyTorch)."""
    if isinstance(indices, Tensor) and indices.dtype is not _dtype.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{type_name(indices.dtype)}")
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    if input.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number "
                           f"of dimensions, but got {input.dim()} dimensions for input, and "
                           f"{indices.dim()} dimensions for indices")
    d = wrap_dim_no_scalar(dim, input.dim())
    if input.shape[d] and indices.numel():
        # PyTorch (2.13) takes the indices modulo the size along dim: -1 is the last, size the
        # first; not so with dim=None (an out-of-range index raises there, as gather's)
        indices = indices % input.shape[d]
    shape_i = list(indices.shape)
    shape_x = list(input.shape)
    shape_i[d] = shape_x[d] = 1
    b = broadcast_shapes(tuple(shape_i), tuple(shape_x))
    idx_shape = list(b)
    idx_shape[d] = indices.shape[d]
    x_shape = list(b)
    x_shape[d] = input.shape[d]
    return gather(expand(input, tuple(x_shape)), d, expand(indices, tuple(idx_shape)))


class _Scatter(Function):
    """Out of place ``input.scatter(d, index, src)`` (``reduce`` None or "add")."""

    _backward_name = "ScatterBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, d: int, index: Tensor, src: Any, reduce: Any) -> Tensor:
        ctx.d, ctx.reduce = d, reduce
        ctx.save_for_backward(index)
        out = _raw.cast(x, x._v.dtype)
        if not isinstance(src, Tensor):
            src_t = _raw.fill(_raw.new_like(x, index._v.shape), src)
        else:
            src_t = src
        return _raw.scatter(out, d, index, src_t, reduce)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (index,) = ctx.saved_tensors
        d = ctx.d
        if ctx.reduce == "add":
            gx = g
        else:
            # overwritten positions get no gradient
            mask = _raw.fill(_raw.new_like(g, dtype=_dtype.bool), True)
            ones = _raw.fill(_raw.new_like(g, index._v.shape, _dtype.bool), False)
            _raw.scatter(mask, d, index, ones, None)
            gx = where(mask, g, 0.0)
        gsrc = call(_Gather, g, d, index) if ctx.needs_input_grad[3] else None
        return gx, None, None, gsrc, None


def check_scatter_index_shape(input: Tensor, d: int, index: Tensor, src: Any) -> None:
    """PyTorch's check of a scatter's index shape: no larger than ``input`` off dimension ``d``,
    nor than a tensor ``src`` anywhere."""
    is_src = isinstance(src, Tensor)
    if any(k != d and n > input.shape[k] for k, n in enumerate(index.shape)) or \
            (is_src and any(si > ss for si, ss in zip(index.shape, src.shape))):
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                           f"{list(input.shape)} apart from dimension {d}" +
                           (f" and to be no larger size than src {list(src.shape)}" if is_src
                            else ""))


def _scatter_args(input: Tensor, dim: int, index: Any, src: Any) -> tuple[int, Tensor, Any]:
    d = wrap_dim(dim, input.dim())
    index = _as_index(index, input)
    if index.dim() != input.dim():
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    check_scatter_index_shape(input, d, index, src)
    check_index_range(index, input.shape[d], d, exc=RuntimeError)
    if isinstance(src, Tensor):
        check_same_device(input, src, "scatter")
        if src.dtype is not input.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        if tuple(src.shape) != tuple(index.shape):
            src = basic_index(src, tuple(slice(0, n) for n in index.shape))
    return d, index, src


_HALF = _dtype.HALF_FLOATS


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """Out-of-place scatter: a copy of ``input`` with ``src`` (or ``value``) written at ``index``."""
    if src is None:
        src = value
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if input.dim() == 0:  # a scalar is a 1-element vector here (PyTorch)
        wrap_dim(dim, 0)
        src1 = reshape(src, (-1,)) if isinstance(src, Tensor) else src
        idx1 = reshape(index, (-1,)) if isinstance(index, Tensor) else index
        return reshape(scatter(reshape(input, (1,)), 0, idx1, src1, reduce=reduce), ())
    d, index, src = _scatter_args(input, dim, index, src)
    if reduce == "multiply":  # (PyTorch's deprecated spelling of scatter_reduce "prod")
        from .segment import scatter_reduce  # (segment builds on this module)
        if not isinstance(src, Tensor):
            src = _creation.full(tuple(index.shape), to_scalar(src, input.dtype),
                                 dtype=input.dtype, device=input.device)
        return scatter_reduce(input, d, index, src, "prod")
    if reduce == "add" and isinstance(src, Tensor) and input.dtype in _HALF:
        # PyTorch sums a 16-bit scatter-add in float32 and rounds each slot once (summing in 16
        # bits would round after every element: 300 ones would stop at 256 in bfloat16)
        f32 = _dtype.float32
        return call(_Scatter, input.to(f32), d, index, src.to(f32), reduce).to(input.dtype)
    return call(_Scatter, input, d, index, src, reduce)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Out-of-place scatter with accumulation of duplicates."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "scatter_add", scatter_add, input, dim=dim, index=index, src=src)) is not _SKIP:
        return _ac_out
    return scatter(input, dim, index, src, reduce="add")


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Rows (or slices along ``dim``) picked by the 1-D integer ``index``."""
    d = wrap_dim(dim, input.dim())
    if isinstance(index, Tensor) and index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if isinstance(index, Tensor) and index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    try:
        index = _as_index(index, input)
    except AttributeError:  # not a dense tensor: a sparse one (its own), or re-raised
        return sparse_fallback("index_select", index_select, input, dim, index)
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    index = reshape(index, (-1,))
    size = input.shape[d] if input.dim() else 1
    if input.dim() == 0:
        if index.shape[0] != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                             f"{index.shape[0]} value(s)")
        check_index_range(index, size, d)
        return reshape(index_select(reshape(input, (1,)), 0, index), ())  # 0-d in, 0-d out
    if input.dim() > 1 and index.shape[0] and (d == 1 or input.numel() == 0):
        # PyTorch's CPU kernel checks an empty input, and dim 1 (a loop of its own), with these
        # RuntimeErrors; every other case with an IndexError
        if size == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        lo, hi = _raw.min_max(index, (0, size - 1))
        if lo < 0 or hi >= size:
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={lo if lo < 0 else hi} "
                               f"axis_dim={size}")
    else:  # (consumed by _Gather alone: checked late where the device reads asynchronously)
        check_index_range(index, size, d, late=True)
    shape = [1] * input.dim()
    shape[d] = index.shape[0]
    idx = reshape(index, tuple(shape))
    target = list(input.shape)
    target[d] = index.shape[0]
    return call(_Gather, input, d, expand(idx, tuple(target)))


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    # PyTorch's checks, in its order: the index a vector of int32/int64, one dtype for self and
    # source, one index per slice of source, source's other dimensions those of self
    if isinstance(index, Tensor):
        if index.dim() > 1:
            raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                             f"{index.dim()} with type: {type_name(index.dtype)} and size: "
                             f"{list(index.shape)}")
        if index.dtype not in (_dtype.int32, _dtype.int64):
            raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                               f"{type_name(index.dtype)}")
    if isinstance(source, Tensor) and source.dtype is not input.dtype:
        raise RuntimeError(f"index_add_(): self ({type_name(input.dtype)}) and source "
                           f"({type_name(source.dtype)}) must have the same scalar type")
    if input.dim() == 0:
        if source.dim() != 0:
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                               f"specified dimension. Got self.shape = [] source.shape = "
                               f"{list(source.shape)}")
        return _scalar_as_vector(index_add, input, dim, index, source, alpha=alpha)
    d = wrap_dim(dim, input.dim())
    n_index = index.numel() if isinstance(index, Tensor) else len(np.atleast_1d(index))
    if d < source.dim() and n_index != source.shape[d]:
        raise RuntimeError(f"index_add_(): Number of indices ({n_index}) should be equal to "
                           f"source.size(dim): ({source.shape[d]}), for dim: {d}")
    if source.dim() != input.dim() or any(s != t for i, (s, t) in
                                          enumerate(zip(source.shape, input.shape)) if i != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")
    check_same_device(input, source, "index_add")  # (the backend would get another's buffer)
    raw_alpha = alpha.item() if isinstance(alpha, Tensor) else alpha
    unit = not isinstance(raw_alpha, (bool, np.bool_)) and raw_alpha == 1
    if not unit or input.dim() == 1:
        # PyTorch's slice-by-slice kernel (a 1-D self, or a scaled source) checks each index
        # with an IndexError; its scatter path below, a RuntimeError naming the index
        idx1 = _as_index(index, input)
        if idx1.numel():
            lo, hi = _raw.min_max(reshape(idx1, (-1,)), (0, input.shape[d] - 1))
            if lo < 0 or hi >= input.shape[d]:
                raise IndexError("index out of range in self")
    d, idx = _index_along(input, d, index, tuple(source.shape), exc=RuntimeError)  # PyTorch's
    # alpha takes source's dtype by PyTorch's checked conversion (truncated; 300 for uint8 raises)
    alpha = _dtype.fit_scalar(to_scalar(alpha, source.dtype), source.dtype.name)
    src = source * alpha if alpha != 1 else source
    if input.dtype in _HALF and isinstance(src, Tensor) and src.dtype is input.dtype:
        if alpha != 1:  # (PyTorch's kernel for a scaled source adds element by element)
            return scatter_add_in_order(input, d, idx, src)
        return _index_add_half(input, d, idx, src)
    return input + scatter_into_zeros(src, d, idx, tuple(input.shape))


def _index_add_half(input: Tensor, d: int, idx: Tensor, src: Tensor) -> Tensor:
    """16-bit ``index_add`` (``alpha`` 1) rounded as PyTorch's CPU kernel: slices of a tensor of
    two or more dimensions summed in float32 and rounded once; a 1-D tensor element after
    element in index order, each sum rounded."""
    if input.dim() == 1:
        return scatter_add_in_order(input, d, idx, src)
    f32 = _dtype.float32
    return (input.to(f32) + scatter_into_zeros(src.to(f32), d, idx, tuple(input.shape))
            ).to(input.dtype)


def scatter_add_in_order(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``input`` with ``src`` added at ``index`` one element after another in ``input``'s dtype
    (in 16 bits each sum is rounded: ``index_put(accumulate=True)``'s rule in PyTorch)."""
    return call(_Scatter, input, dim, index, src, "add")


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """``input`` with the slices ``index`` (negative ones counted from the end, as PyTorch)
    along ``dim`` set to ``value`` (a number or a 0-d tensor, which gets the gradient)."""
    if isinstance(index, Tensor) and index.dtype is not _dtype.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if isinstance(index, Tensor) and index.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    complex_value = value.dtype.is_complex if isinstance(value, Tensor) else \
        isinstance(value, (complex, np.complexfloating))
    if complex_value and not input.dtype.is_complex:  # (even with a zero imaginary part)
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not "
                           "supported")
    if input.dim() == 0:
        return _scalar_as_vector(index_fill, input, dim, index, value)
    d = wrap_dim(dim, input.dim())
    index = wrap_negative(reshape(_as_index(index, input), (-1,)), input.shape[d], d)
    d, idx = _index_along(input, d, index, None)
    if not isinstance(value, Tensor):
        return scatter(input, d, idx, value=value)
    mask = _creation.zeros(input.shape, dtype=_dtype.bool, device=input.device)
    mask = scatter(mask, d, idx, value=True)
    return where(mask, value.to(device=input.device, dtype=input.dtype), input)


def wrap_negative(index: Tensor, size: int, dim: int) -> Tensor:
    """The int64 ``index`` with values in ``[-size, 0)`` counted from the end; PyTorch's
    ``IndexError`` for any outside ``[-size, size)``."""
    if not index.numel():
        return index
    lo, hi = _raw.min_max(index)
    if lo < -size or hi >= size:
        bad = lo if lo < -size else hi
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    return where(index < 0, index + size, index) if lo < 0 else index


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "index_copy", index_copy, input, dim=dim, index=index, source=source)) is not _SKIP:
        return _ac_out
    if input.dim() == 0:
        return _scalar_as_vector(index_copy, input, dim, index, source)
    check_index_copy(input, dim, index, source)
    d, idx = _index_along(input, dim, index, tuple(source.shape), "index_copy_(): index")
    return scatter(input, d, idx, source)


def check_index_copy(input: Tensor, dim: int, index: Any, source: Any) -> None:
    """PyTorch's shape checks of ``index_copy`` (``input`` not 0-d): without them a source wider
    than the destination's slices would be written out of bounds on some backends."""
    d = wrap_dim(dim, input.dim())
    if isinstance(index, Tensor) and index.dim() > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.dim()})")
    if not isinstance(source, Tensor) or source.dim() == 0:
        return
    if source.dim() != input.dim():
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.dim()}), "
                         f"destination dimensionality ({input.dim()})")
    j = 0
    for i, (a, b) in enumerate(zip(input.shape, source.shape)):
        if i == d:
            continue
        if a != b:
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                               f"shapes. Destination slice shape: {a} at dimension {j} and "
                               f"source slice shape: {b} at dimension {j}.")
        j += 1
    n = index.numel() if isinstance(index, Tensor) else len(np.atleast_1d(np.asarray(index)))
    if n != source.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to "
                         f"source.size(dim) ({source.shape[d]})")


def _scalar_as_vector(op: Any, input: Tensor, dim: int, index: Any, source: Any, **kw: Any
                      ) -> Tensor:
    """``op`` on a 0-d ``input`` as on the 1-element vector PyTorch's index ops take it for (dim 0
    or -1; ``source`` flattened alike), giving a 0-d result."""
    wrap_dim(dim, 0)
    src = reshape(source, (-1,)) if isinstance(source, Tensor) else source
    return reshape(op(reshape(input, (1,)), 0, index, src, **kw), ())


def _index_along(input: Tensor, dim: int, index: Any, target: tuple | None,
                 what: str = "index", exc: type = IndexError) -> tuple[int, Tensor]:
    """Check a 1-D ``index`` into ``dim`` of ``input`` and broadcast it (stride 0) to ``target``
    (default: ``input``'s shape with ``dim`` of the index's length), for gather/scatter;
    ``what`` begins the out-of-range message."""
    d = wrap_dim(dim, input.dim())
    index = _as_index(index, input)
    if index.dim() != 1:
        index = reshape(index, (-1,))
    check_index_range(index, input.shape[d], d, what, exc)
    n = index.shape[0]
    if target is None:
        target = tuple(n if i == d else s for i, s in enumerate(input.shape))
    if target[d] != n:  # (callers check this; expand's own error otherwise)
        shape = [1] * input.dim()
        shape[d] = n
        return d, expand(reshape(index, tuple(shape)), target)
    # the index along d, broadcast (stride 0) over the other dimensions: one raw view, where
    # reshape and expand made two recorded ops (an int64 index has no gradient)
    step = index._v.strides[0]
    return d, _raw.view(index, tuple(target), tuple(step if i == d else 0
                                                    for i in range(len(target))))


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``input`` with ``value`` where the bool ``mask`` is true, both broadcast."""
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.dim()} dimension(s).")
        value = value.to(input.dtype)
    else:
        value = to_scalar(value, input.dtype)
    # the result takes the broadcast shape, larger than input's when mask's is (PyTorch expands
    # both); the in-place masked_fill_ refuses that shape when it writes the result back
    return where(mask, value, input)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of nonzero elements (``(n, ndim)`` int64, or a tuple of 1-D index tensors)."""
    host = input.detach()._host()
    idx = np.argwhere(host) if host.ndim else np.zeros((int(bool(host)), 0), np.int64)
    t = _creation.from_host(idx.astype(np.int64), device=input.device)
    if as_tuple:
        if input.dim() == 0:
            return (_creation.from_host(np.zeros(int(bool(host)), np.int64), device=input.device),)
        return tuple(t[:, i] for i in range(input.dim()))
    return t


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool:  # (uint8 too, in 2.13)
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(input.shape, mask.shape)
    x = expand(input, shape)
    m = expand(mask, shape)
    return getitem(x, m)


class _Where(Function):
    _backward_name = "WhereBackward0"

    @staticmethod
    def forward(ctx: Any, cond: Tensor, a: Any, b: Any) -> Tensor:
        ctx.save_for_backward(cond)
        t = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else cond
        dt = a._v.dtype if isinstance(a, Tensor) else b._v.dtype if isinstance(b, Tensor) \
            else ctx_dtype(a, b)
        return _raw.where(cond, a, b, dt, t)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (cond,) = ctx.saved_tensors
        ga = where(cond, g, 0.0) if ctx.needs_input_grad[1] else None
        gb = where(cond, 0.0, g) if ctx.needs_input_grad[2] else None
        return None, ga, gb


def ctx_dtype(a: Any, b: Any) -> Any:
    return _dtype.result_type(a, b)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:
    """``input`` where ``condition`` holds, else ``other`` (broadcasting; scalars allowed)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if condition.dtype is _dtype.uint8:  # still taken by PyTorch, with this warning
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=2)
        condition = condition != 0
    if condition.dtype is not _dtype.bool:  # PyTorch's error (it takes no other dtype)
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {type_name(condition.dtype)}")
    if isinstance(input, Tensor) or isinstance(other, Tensor):
        a, b, dt = prepare_binary(input, other, "where")
    else:
        dt = _dtype.result_type(input, other)
        a, b = to_scalar(input, dt), to_scalar(other, dt)
    # as PyTorch's where_self_out: a zero-dim CPU tensor (condition or value) meets the others'
    # device; any other device mismatch raises below
    dev = next((t.device for t in (condition, a, b) if isinstance(t, Tensor)
                and t.device.type != "cpu"), None)
    if dev is not None:
        condition, a, b = (t.to(dev) if isinstance(t, Tensor) and t.dim() == 0
                           and t.device.type == "cpu" else t for t in (condition, a, b))
    shapes = [condition.shape] + [t.shape for t in (a, b) if isinstance(t, Tensor)]
    shape = broadcast_shapes(*shapes)
    for t in (a, b):
        if isinstance(t, Tensor):
            check_same_device(condition, t, "where")
    cond = condition.expand(shape) if condition.shape != shape else condition
    a = a.expand(shape) if isinstance(a, Tensor) and a.shape != shape else a
    b = b.expand(shape) if isinstance(b, Tensor) and b.shape != shape else b
    return call(_Where, cond, a, b)


def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Reverse the order along ``dims`` (a copy, as PyTorch)."""
    if isinstance(dims, int):
        dims = (dims,)
    axes = [wrap_dim(d, input.dim()) for d in dims]
    check_unique_dims(axes)
    out = input
    for d in axes:
        n = dim_size(input.shape, d)
        if n <= 1:
            continue
        rev = _creation.arange(n - 1, -1, -1, device=input.device)
        out = index_select(out, d, rev)
    return out if out is not input else input.clone()


# ------------------------------------------------------------------ __getitem__
def _is_advanced(k: Any) -> bool:
    return isinstance(k, (Tensor, list, np.ndarray)) or (isinstance(k, bool))


def _key_tuple(key: Any) -> tuple:
    """The key as a tuple of per-dimension indices, with PyTorch's treatment of Python sequences:
    a ``range`` or a tuple inside the key is a sequence of indices (like a list), and a list
    (shorter than 32) holding a sequence, slice, tensor, ``None`` or ``...`` is read as a tuple of
    indices (numpy's legacy rule, which PyTorch keeps and warns about)."""
    if isinstance(key, list) and len(key) < 32 and any(
            k is None or k is Ellipsis or isinstance(k, (Tensor, list, tuple, range, slice,
                                                         np.ndarray)) for k in key):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; "
                      "use x[tuple(seq)] instead of x[seq]", UserWarning, stacklevel=4)
        key = tuple(key)
    if not isinstance(key, tuple):
        key = (key,)
    return tuple(list(k) if isinstance(k, (range, tuple)) else k for k in key)


def _zero_dim_ints(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """0-d integer tensors of a key read as Python ints; not bool and uint8 ones, which PyTorch
    reads as (0-d) masks: ``x[tensor(1, dtype=uint8)]`` adds a dimension, as ``x[True]``."""
    return tuple(int(k) if isinstance(k, Tensor) and k.dim() == 0 and not k.dtype.is_floating_point
                 and k.dtype not in (_dtype.bool, _dtype.uint8) else k for k in key)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]``: basic keys give views; integer/bool tensors or lists give copies."""
    key = _key_tuple(key)
    for k in key:
        if isinstance(k, float):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             "Variables are valid indices (got float)")
        if isinstance(k, str):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             "Variables are valid indices (got str)")
    key = tuple(int(k) if isinstance(k, np.integer) else k for k in key)
    key = _zero_dim_ints(key)
    if not any(_is_advanced(k) for k in key):
        return basic_index(x, key)
    return advanced_getitem(x, key)


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value`` in place (broadcasting ``value``)."""
    if isinstance(value, Tensor) and value.dim() and value.shape[0] == 1:
        # PyTorch drops the value's leading size-1 dimensions first (slicePrefix1sSize), so
        # x[0] = y[None] works although the value has more dimensions than x[0]
        k = next((i for i, n in enumerate(value.shape) if n != 1), value.dim())
        value = reshape(value, tuple(value.shape[k:]))
    key = _key_tuple(key)
    key = tuple(int(k) if isinstance(k, np.integer) else k for k in key)
    key = _zero_dim_ints(key)
    value = check_complex_source(x, key, value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and \
            x.dtype is not _dtype.bool and not x.dtype.is_complex:
        # a number the dtype cannot hold is refused, naming the C type (int64_t, float)
        _dtype.fit_scalar(value, x.dtype.name)
    if not any(_is_advanced(k) for k in key):
        view = basic_index(x, key)
        view.copy_(value)  # rebases the history of the view's base (CopySlices) if recording
        base = x._base
        if base is not None and view._base is base and base._grad_fn is not None and \
                base._grad_fn is not x._grad_fn:
            # x is itself a view: it now reads the rebased base
            fresh = as_strided(base, x._v.shape, x._v.strides, x._v.offset)
            x._grad_fn, x._output_nr, x._requires_grad = fresh._grad_fn, 0, True
        return
    advanced_setitem(x, key, value)


def check_complex_source(x: Tensor, key: tuple, value: Any) -> Any:
    """PyTorch's refusals for ``x[key] = value`` (``RuntimeError``): a tensor of another dtype
    under an advanced key (index_put_: dtypes must match; a complex value's imaginary part was
    dropped silently), except a one-element value under a lone mask, which PyTorch writes as
    the number ``value.item()``; a complex number with an imaginary part into a real tensor (a
    bool ``x`` takes it as its truth). Under a basic key a tensor value is copied (``copy_``
    drops the imaginary part with a warning, as PyTorch). Returns the value to write: a complex
    number that converts, as the real number (or truth) it converts to."""
    if isinstance(value, Tensor):
        if value.dtype is x.dtype or not any(_is_advanced(k) for k in key):
            return value
        mask = len(key) == 1 and isinstance(key[0], Tensor) and \
            key[0].dtype in (_dtype.bool, _dtype.uint8)
        if not (mask and value.numel() == 1):  # (index_put_: a tensor value of x's dtype only)
            raise RuntimeError(
                f"Index put requires the source and destination dtypes match, got "
                f"{_dtype.SCALAR_TYPE_NAMES.get(x.dtype.name, x.dtype.name)} for the destination "
                f"and {_dtype.SCALAR_TYPE_NAMES.get(value.dtype.name, value.dtype.name)} for the "
                f"source.")
        if x.dtype.is_complex or not value.dtype.is_complex:
            return value
        number = value.item()
        if number.imag == 0:
            return value  # (written as a tensor: the same values)
        value = number
    if x.dtype.is_complex or not isinstance(value, (complex, np.complexfloating)):
        return value
    if x.dtype is _dtype.bool:
        return bool(value)
    if value.imag != 0:
        raise RuntimeError(f"value cannot be converted to type {_dtype.scalar_ctype(x.dtype)} without "
                           "overflow")
    return float(value.real)


# ---------------------------------------------------------- in-place rebase helper
def strided_region(g: Tensor, base_geometry: tuple, view_geometry: tuple) -> tuple[Tensor, Tensor]:
    """For ``CopySlices``: ``(g with the view's region zeroed, g read at the view's region)``,
    where ``g`` has the base's shape and both geometries index the same storage."""
    b_shape, b_strides, b_offset = base_geometry
    v_shape, v_strides, v_offset = view_geometry
    span = max(_span(b_shape, b_strides, b_offset), _span(v_shape, v_strides, v_offset))
    b_idx = linear_index(g, b_shape, b_strides, b_offset)
    v_idx = linear_index(g, v_shape, v_strides, v_offset)
    flat = scatter_into_zeros(reshape(g, (-1,)), 0, b_idx, (span,))
    g_view = reshape(call(_Gather, flat, 0, v_idx), v_shape)
    keep = _raw.fill(_raw.new_like(g, (span,), g.dtype), 1)
    _raw.scatter(keep, 0, v_idx, _raw.fill(_raw.new_like(g, v_idx._v.shape), 0), None)
    keep_b = reshape(_raw.gather(keep, 0, b_idx), b_shape)
    # a select, not g * keep: the overwritten region's gradient is exactly 0 even where g is
    # infinite or NaN (a product gives NaN there), as PyTorch's CopySlices
    return where(keep_b != 0, g, 0.0), g_view
