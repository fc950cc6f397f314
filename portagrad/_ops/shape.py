"""Views (they share storage and the version counter) and their derivatives.

``view``/``reshape``, ``expand``, ``transpose``/``t``/``permute``, ``squeeze``/``unsqueeze``,
``flatten``/``unflatten``, ``narrow``/``select``/basic slicing, ``unbind``, ``as_strided``.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from .. import _dtype, _raw
from .._shape import (check_unique_dims, compute_view_strides, infer_size, maybe_overlapping,
                      wrap_dim, wrap_dim_no_scalar)
from .._tensor import Tensor
from ..autograd.function import Function
from ._common import call, sparse_fallback
from ._gather import as_strided_scatter_add, linear_index

__all__ = [
    "view", "reshape", "expand", "expand_as", "broadcast_to", "transpose", "swapaxes", "swapdims",
    "t", "adjoint", "permute", "movedim", "moveaxis", "squeeze", "unsqueeze", "flatten", "unflatten",
    "narrow", "select", "basic_index", "unbind", "as_strided", "sum_to_shape", "view_as",
    "reshape_as", "view_dtype", "index_basic_key", "StridedView", "StridedViewScatter",
    "strided_view",
]


class _Reshape(Function):
    _backward_name = "ViewBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, shape: tuple[int, ...], must_view: bool) -> Tensor:
        ctx.in_shape = x._v.shape
        strides = compute_view_strides(x._v.shape, x._v.strides, shape)
        if strides is None:
            if must_view:
                raise RuntimeError(
                    "view size is not compatible with input tensor's size and stride (at least one "
                    "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
            x = _raw.contiguous(x)
            return Tensor._make(x._storage, x._v.offset, shape, _raw.strides_for(shape), x._v.dtype,
                                x._vc)
        return x._view_of(x._v.offset, shape, strides)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return reshape(g, ctx.in_shape), None, None


def _shape_arg(shape: Sequence[Any]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def view_dtype(x: Tensor, dtype: Any) -> Tensor:
    """``x``'s memory read as ``dtype`` (``Tensor.view(dtype)``), PyTorch's rules: with another
    element size the last dimension must be contiguous and is scaled by the size ratio, and
    (for a larger element) its size, the storage offset and the other strides must divide by
    the ratio."""
    dt = _dtype.as_dtype(dtype)
    v = x._v
    old, new = v.dtype.itemsize, dt.itemsize
    if new == old:
        return Tensor._make(x._storage, v.offset, v.shape, v.strides, dt, x._vc, x)
    names = _dtype.SCALAR_TYPE_NAMES
    what = (f"to view {names.get(v.dtype.name, v.dtype.name)} as {names.get(dt.name, dt.name)} "
            f"(different element sizes)")
    if not v.shape:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if v.strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {v.strides[-1]}")
    shape, strides, offset = list(v.shape), list(v.strides), v.offset
    if old > new:  # a smaller element: the last dimension grows by the ratio
        r = old // new
        shape[-1] *= r
        strides = [s * r for s in strides[:-1]] + [1]
        offset *= r
    else:
        r = new // old
        if shape[-1] % r:
            raise RuntimeError(f"self.size(-1) must be divisible by {r} {what}, but got "
                               f"{shape[-1]}")
        if offset % r:
            raise RuntimeError(f"self.storage_offset() must be divisible by {r} {what}, but got "
                               f"{offset}")
        for i, s in enumerate(strides[:-1]):
            if s % r:
                raise RuntimeError(f"self.stride({i}) must be divisible by {r} {what}, but got "
                                   f"{s}")
        shape[-1] //= r
        strides = [s // r for s in strides[:-1]] + [1]
        offset //= r
    return Tensor._make(x._storage, offset, tuple(shape), tuple(strides), dt, x._vc, x)


def view(x: Tensor, *shape: Any) -> Tensor:
    """A view with a new shape (no copy; errors when the strides do not allow it)."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return view_dtype(x, shape[0])
    new = infer_size(_shape_arg(shape), x.numel())
    if new == x._v.shape:
        return call(_Reshape, x, new, True)
    return call(_Reshape, x, new, True)


def reshape(x: Tensor, *shape: Any) -> Tensor:
    """A tensor with a new shape: a view when possible, else a copy."""
    new = infer_size(_shape_arg(shape), x.numel())
    return call(_Reshape, x, new, False)


def view_as(x: Tensor, other: Tensor) -> Tensor:
    return view(x, other.shape)


def reshape_as(x: Tensor, other: Tensor) -> Tensor:
    return reshape(x, other.shape)


def sum_to_shape(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` down to ``shape`` (the derivative of broadcasting)."""
    if g._v.shape == tuple(shape):
        return g
    lead = g.dim() - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and g._v.shape[lead + i] != 1:
            axes.append(lead + i)
    out = g.sum(axes, keepdim=True) if axes else g
    if lead:
        out = reshape(out, shape)
    return out


class _Expand(Function):
    _backward_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, shape: tuple[int, ...]) -> Tensor:
        ctx.in_shape = x._v.shape
        lead = len(shape) - x.dim()
        strides = []
        for i, n in enumerate(shape):
            if i < lead:
                strides.append(0)
                continue
            old = x._v.shape[i - lead]
            if old == n:
                strides.append(x._v.strides[i - lead])
            elif old == 1:
                strides.append(0)
            else:
                raise RuntimeError(
                    f"The expanded size of the tensor ({n}) must match the existing size ({old}) at "
                    f"non-singleton dimension {i}.  Target sizes: {list(shape)}.  Tensor sizes: "
                    f"{list(x._v.shape)}")
        return x._view_of(x._v.offset, tuple(shape), tuple(strides))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return sum_to_shape(g, ctx.in_shape), None


def expand(x: Tensor, *sizes: Any) -> Tensor:
    """A broadcast view (stride 0 along new or size-1 dimensions); ``-1`` keeps a size."""
    shape = _shape_arg(sizes)
    if len(shape) < x.dim():
        raise RuntimeError(f"expand(): the number of sizes provided ({len(shape)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({x.dim()})")
    lead = len(shape) - x.dim()
    for i in range(lead):
        if shape[i] == -1:
            raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                               f"non-existing dimension {i}")
    shape = tuple(x._v.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(shape))
    if any(s < 0 for s in shape):
        raise RuntimeError(f"expand(): invalid size {list(sizes)}")
    if shape == x._v.shape:
        return x
    return call(_Expand, x, shape)


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    return expand(x, other.shape)


def broadcast_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    return expand(x, tuple(shape))


class _Permute(Function):
    _backward_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, dims: tuple[int, ...]) -> Tensor:
        ctx.dims = dims
        return x._view_of(x._v.offset, tuple(x._v.shape[d] for d in dims),
                          tuple(x._v.strides[d] for d in dims))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        inv = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inv[d] = i
        return permute(g, tuple(inv)), None


def permute(x: Tensor, *dims: Any) -> Tensor:
    """Reorder dimensions (a view)."""
    dims_t = _shape_arg(dims)
    n = x.dim()
    if len(dims_t) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                           f"match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {n} is not equal to len(dims) = {len(dims_t)}")
    dims_t = tuple(wrap_dim(d, n) for d in dims_t)
    if len(set(dims_t)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    try:
        return call(_Permute, x, dims_t)
    except AttributeError:  # not a dense tensor: a sparse one (its own permute), or re-raised
        return sparse_fallback("permute", permute, x, dims_t)


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    n = x.dim()
    if n == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return call(_Permute, x, ())
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    dims = list(range(n))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    try:
        return call(_Permute, x, tuple(dims))
    except AttributeError:  # not a dense tensor: a sparse one (its own transpose), or re-raised
        return sparse_fallback("transpose", transpose, x, dim0, dim1)


def adjoint(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions, a view (for real dtypes the transpose).
    A 1-d tensor raises; a 0-d one is returned as a view with PyTorch's deprecation warning."""
    if x.dim() == 0:
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().",
                      UserWarning, stacklevel=2)
        return call(_Permute, x, ())
    if x.dim() == 1:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           "matrices. Got 1-D tensor.")
    return transpose(x, -2, -1)


swapaxes = transpose
swapdims = transpose


def t(x: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dimensions."""
    if x.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.dim()}D")
    if x.dim() < 2:
        return call(_Permute, x, tuple(range(x.dim())))
    return transpose(x, 0, 1)


def movedim(x: Tensor, source: Any, destination: Any) -> Tensor:
    n = x.dim()
    src = [wrap_dim(s, n) for s in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [wrap_dim(d, n) for d in (destination if isinstance(destination, (list, tuple))
                                    else [destination])]
    if len(src) != len(dst):
        given_s = list(source) if isinstance(source, (list, tuple)) else [source]
        given_d = list(destination) if isinstance(destination, (list, tuple)) else [destination]
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({given_s} dims) "
                           f"should contain the same number of dims as destination ({given_d} "
                           f"dims)")
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    if n == 0:  # dims 0 and -1 of a scalar are valid and moving them changes nothing
        return x
    placed: list[int | None] = [None] * n
    for s, d in zip(src, dst):
        placed[d] = s
    rest = iter(i for i in range(n) if i not in src)
    order = [o if o is not None else next(rest) for o in placed]
    return permute(x, tuple(order))


moveaxis = movedim


def squeeze(x: Tensor, dim: Any = None) -> Tensor:
    """Drop size-1 dimensions (all, or the given ones)."""
    n = x.dim()
    if dim is None:
        axes = {i for i, s in enumerate(x._v.shape) if s == 1}
    else:
        dims = dim if isinstance(dim, (list, tuple)) else [dim]
        wrapped = [wrap_dim(d, n) for d in dims]  # checks the range on 0-dim tensors too
        check_unique_dims(wrapped)
        axes = set(wrapped) if n else set()
        axes = {a for a in axes if x._v.shape[a] == 1}
    shape = tuple(s for i, s in enumerate(x._v.shape) if i not in axes)
    if shape == x._v.shape:
        return call(_Reshape, x, shape, True)
    return call(_Reshape, x, shape, True)


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dimension at ``dim``."""
    d = wrap_dim(dim, x.dim() + 1)
    try:
        shape = x._v.shape[:d] + (1,) + x._v.shape[d:]
    except AttributeError:  # not a dense tensor: a sparse one (its own unsqueeze), or re-raised
        return sparse_fallback("unsqueeze", unsqueeze, x, dim)
    return call(_Reshape, x, shape, True)


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim..end_dim`` into one."""
    n = x.dim()
    if n == 0:
        return reshape(x, (1,))
    s, e = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = x._v.shape[:s] + (math.prod(x._v.shape[s:e + 1]),) + x._v.shape[e + 1:]
    return reshape(x, shape)


def unflatten(x: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = wrap_dim_no_scalar(dim, x.dim())
    sizes = list(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = x._v.shape[d]
    known = 1
    for s in sizes:
        known *= s if s != -1 else 1
    if sizes.count(-1) <= 1 and (known == 0 or n % known if -1 in sizes else known != n):
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of "
                           f"dim {dim} ({n}) in the input tensor")
    sizes = infer_size(sizes, n)
    return reshape(x, x._v.shape[:d] + tuple(sizes) + x._v.shape[d + 1:])


# ------------------------------------------------------------------ basic indexing
def index_basic_key(x_shape: tuple[int, ...], key: tuple[Any, ...]
                    ) -> tuple[list[Any], list[int | None]]:
    """Normalise a basic key (ints, slices, None, Ellipsis) against ``x_shape``.

    Returns ``(the key's items with the Ellipsis expanded and trailing dims filled with full
    slices, [])``; raises ``IndexError`` for a second Ellipsis or too many indices (integers are
    range-checked by the caller, which knows the dimension)."""
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > len(x_shape):
        raise IndexError(f"too many indices for tensor of dimension {len(x_shape)}")
    expanded: list[Any] = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (len(x_shape) - n_real))
        else:
            expanded.append(k)
    if Ellipsis not in key:
        expanded.extend([slice(None)] * (len(x_shape) - n_real))
    return expanded, []


def _apply_basic(x: Tensor, key: tuple[Any, ...]) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    items, _ = index_basic_key(x._v.shape, key)
    offset = x._v.offset
    shape: list[int] = []
    strides: list[int] = []
    d = 0
    for k in items:
        if k is None:
            shape.append(1)
            strides.append(0)
            continue
        size, stride = x._v.shape[d], x._v.strides[d]
        if isinstance(k, slice):
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = k.indices(size)
            length = max(0, (stop - start + step - 1) // step) if step > 0 else 0
            offset += start * stride if length else 0
            shape.append(length)
            strides.append(stride * step)
        else:
            i = int(k)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
            offset += (i % size) * stride
        d += 1
    return offset, tuple(shape), tuple(strides)


class _BasicIndex(Function):
    _backward_name = "SliceBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, key: tuple[Any, ...]) -> Tensor:
        ctx.in_shape = x._v.shape
        ctx.key = key
        offset, shape, strides = _apply_basic(x, key)
        return x._view_of(offset, shape, strides)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return call(_BasicIndexScatter, g, ctx.in_shape, ctx.key), None


class _BasicIndexScatter(Function):
    """``zeros(shape)`` with ``g`` written at ``key``: the derivative of basic indexing."""

    _backward_name = "SliceScatterBackward0"

    @staticmethod
    def forward(ctx: Any, g: Tensor, shape: tuple[int, ...], key: tuple[Any, ...]) -> Tensor:
        ctx.key = key
        out = _raw.fill(_raw.new_like(g, shape), 0)
        offset, vshape, vstrides = _apply_basic(out, key)
        _raw.copy_region(out, offset, vshape, vstrides, g)
        return out

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Any:
        return basic_index(gg, ctx.key), None, None


def basic_index(x: Tensor, key: tuple[Any, ...]) -> Tensor:
    """``x[key]`` for keys of ints, slices, ``None`` and ``...`` (a view)."""
    return call(_BasicIndex, x, key)


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The view ``x[..., start:start+length, ...]`` along ``dim``."""
    if x.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, x.dim())
    size = x._v.shape[d]
    if isinstance(start, Tensor):
        start = int(start.item())
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but "
                         f"got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return basic_index(x, (slice(None),) * d + (slice(start, start + length),))


def select(x: Tensor, dim: int, index: int) -> Tensor:
    """The view ``x[..., index, ...]`` along ``dim`` (that dimension removed)."""
    if x.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, x.dim())
    size = x._v.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(x._v.shape)} at dimension {d}")
    return basic_index(x, (slice(None),) * d + (int(index),))


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of each slice along ``dim``."""
    if x.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, x.dim())
    return tuple(select(x, d, i) for i in range(x._v.shape[d]))


def _stepped(shape: tuple[int, ...], strides: tuple[int, ...], offset: int,
             start: tuple[int, ...], steps: tuple[tuple[int, ...], ...]
             ) -> tuple[int, tuple[int, ...]]:
    """The memory offset and strides of the view that starts at element ``start`` of a tensor
    laid out as ``(shape, strides, offset)`` and whose dimension ``k`` advances ``steps[k][j]``
    elements along dimension ``j`` of it."""
    return (offset + sum(i * st for i, st in zip(start, strides)),
            tuple(sum(c * st for c, st in zip(step, strides)) for step in steps))


class StridedView(Function):
    """A view defined on the input's *elements*, not its memory: it starts at the element
    ``start`` and its dimension ``k`` (of size ``sizes[k]``) steps ``steps[k][j]`` elements along
    the input's dimension ``j``. ``diagonal`` (one dimension stepping along two) and ``unfold``
    (two dimensions stepping along one) are such views; the strides follow from the input's, so
    an expanded input gives an expanded view.

    The derivative (:class:`StridedViewScatter`) adds the gradient into a zero tensor of the
    input's shape at the elements the view reads, whatever the input's layout. Scattering into
    the input's *memory* instead (``as_strided``'s derivative) counts a location read through an
    expanded dimension once per element that shares it. Subclasses name the view
    (``_backward_name``)."""

    _backward_name = "StridedViewBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, start: tuple[int, ...], sizes: tuple[int, ...],
                steps: tuple[tuple[int, ...], ...]) -> Tensor:
        ctx.meta = (x._v.shape, start, sizes, steps)
        offset, strides = _stepped(x._v.shape, x._v.strides, x._v.offset, start, steps)
        return x._view_of(offset, sizes, strides)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        shape, start, sizes, steps = ctx.meta
        return call(StridedViewScatter, g, shape, start, steps, ctx._fn_cls), None, None, None


class StridedViewScatter(Function):
    """``zeros(shape)`` plus ``g`` at the elements the :class:`StridedView` ``(start, steps)``
    reads (elements read more than once, as by overlapping windows, accumulate): the derivative
    of that view, and its own derivative is the view."""

    _backward_name = "StridedViewScatterBackward0"

    @staticmethod
    def forward(ctx: Any, g: Tensor, shape: tuple[int, ...], start: tuple[int, ...],
                steps: tuple[tuple[int, ...], ...], view: type) -> Tensor:
        ctx.meta = (start, g._v.shape, steps, view)
        out = _raw.fill(_raw.new_like(g, shape), 0)
        if not out.numel() or not g.numel():
            return out
        offset, strides = _stepped(shape, _raw.strides_for(shape), 0, start, steps)
        if not maybe_overlapping(g._v.shape, strides):
            _raw.copy_region(out, offset, g._v.shape, strides, g)  # each element written once
            return out
        n, m = out.numel(), g.numel()
        flat = _raw.moved(out, (n,), (1,))
        src = _raw.contiguous(g)
        src = _raw.moved(src, (m,), (1,)) if src is not g else _raw.view(g, (m,), (1,))
        _raw.scatter(flat, 0, linear_index(g, g._v.shape, strides, offset), src, "add")
        return _raw.moved(flat, shape, _raw.strides_for(shape))

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Any:
        start, sizes, steps, view = ctx.meta
        return call(view, gg, start, sizes, steps), None, None, None, None


def strided_view(x: Tensor, start: Sequence[int], sizes: Sequence[int],
                 steps: Sequence[Sequence[int]], kind: type = StridedView) -> Tensor:
    """The :class:`StridedView` of ``x`` (``kind``: a subclass naming it)."""
    return call(kind, x, tuple(start), tuple(sizes), tuple(tuple(s) for s in steps))


class _AsStrided(Function):
    _backward_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, size: tuple[int, ...], stride: tuple[int, ...],
                offset: int) -> Tensor:
        ctx.geometry = (x._v.shape, x._v.strides, x._v.offset)
        ctx.new = (size, stride, offset)
        span = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
        if span * x._v.dtype.itemsize > x._storage.nbytes:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                               f"offset {offset} require a storage of at least "
                               f"{span * x._v.dtype.itemsize} bytes, but it has "
                               f"{x._storage.nbytes}")
        return x._view_of(offset, size, stride)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        # scatter-add g into a zero buffer laid out like the input's storage, then read the
        # input's geometry back out of it (handles overlapping views by accumulation)
        return as_strided_scatter_add(g, ctx.geometry, ctx.new), None, None, None


def as_strided(x: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """A view with explicit sizes, strides (in elements) and storage offset."""
    if any(int(st) < 0 for st in stride):  # (a backend's views have non-negative strides)
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {[int(st) for st in stride]}")
    return call(_AsStrided, x, tuple(size), tuple(stride),
                x._v.offset if storage_offset is None else storage_offset)
