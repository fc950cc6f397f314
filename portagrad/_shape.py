"""Shape arithmetic: strides, broadcasting, view geometry, dimension wrapping.

Pure functions of shapes and strides (tuples of ints), used by every layer from ``Tensor`` up; they
import nothing from the package but its error types.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import ShapeError

__all__ = ["broadcast_shapes", "compute_view_strides", "contiguous_strides", "dim_size",
           "infer_size", "maybe_overlapping", "require_dims", "wrap_dim", "wrap_dim_no_scalar",
           "wrap_dims"]


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """C-order strides (in elements) for ``shape``."""
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def maybe_overlapping(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether two elements of the layout ``(shape, strides)`` may share a memory location
    (PyTorch's ``_maybe_overlapping_memory``): ``False`` is a proof that none do; ``True`` for any
    stride 0 of a dimension longer than 1 (an ``expand``) and for windows that overlap."""
    if not all(shape):
        return False
    dims = sorted((st, n) for n, st in zip(shape, strides) if n != 1)
    reach = 0  # the largest offset the dimensions of smaller strides span together
    for st, n in dims:
        if st <= reach:
            return True
        reach += st * (n - 1)
    return False


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast shape, or a ``RuntimeError`` naming the mismatching sizes."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, n in enumerate(s):
            j = off + i
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                raise ShapeError(
                    f"The size of tensor a ({out[j]}) must match the size of tensor b ({n}) at "
                    f"non-singleton dimension {j}")
    return tuple(out)


def check_expandable(shape: Sequence[int], target: Sequence[int]) -> None:
    """Raise PyTorch's ``expand`` error unless ``shape`` broadcasts to ``target`` without growing
    it (the rule for a bias or ``input`` added to a product: ``addmm``, ``linear`` ...)."""
    if len(shape) > len(target):
        raise RuntimeError(f"expand: the number of sizes provided ({len(target)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({len(shape)}). "
                           f"Target sizes: {list(target)}.  Tensor sizes: {list(shape)}")
    lead = len(target) - len(shape)
    for i, old in enumerate(shape):
        n = target[lead + i]
        if old != n and old != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size ({old}) at "
                f"non-singleton dimension {lead + i}.  Target sizes: {list(target)}.  Tensor "
                f"sizes: {list(shape)}")


def infer_size(shape: Sequence[int], numel: int) -> tuple[int, ...]:
    """Resolve one ``-1`` in ``shape`` and check the element count."""
    shape = tuple(int(s) for s in shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if neg:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} "
                               f"because the unspecified dimension size -1 can be any value and "
                               f"is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def compute_view_strides(old_shape: tuple[int, ...], old_strides: tuple[int, ...],
                         new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides that view ``old`` as ``new_shape`` without copying, or ``None`` (PyTorch's
    ``computeStride``: sizes must split/merge within contiguous chunks)."""
    if math.prod(old_shape) == 0 or not old_shape:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def wrap_dim(dim: int, ndim: int) -> int:
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if dim < lo or dim > hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {dim})")
    return int(dim) % max(ndim, 1)


def wrap_dim_no_scalar(dim: int, ndim: int) -> int:
    """``wrap_dim`` for ops that need a real dimension (PyTorch's ``wrap_scalar=False``): a 0-d
    tensor has none, where :func:`wrap_dim` would hand out dimension 0 of an empty shape."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(dim, ndim)


def dim_size(shape: Sequence[int], d: int) -> int:
    """The size of (wrapped) dimension ``d``; a 0-d shape counts as one element along its one
    wrappable dimension, as PyTorch's indexing ops treat a scalar."""
    return shape[d] if shape else 1


def require_dims(ndim: int, message: str) -> None:
    """PyTorch's ``RuntimeError`` for an op that needs at least one dimension (``chunk``,
    ``split`` ...) given a 0-d tensor."""
    if ndim == 0:
        raise RuntimeError(message)


def check_unique_dims(axes: Sequence[int]) -> None:
    """PyTorch's ``RuntimeError`` naming the first wrapped dimension given twice."""
    seen: set[int] = set()
    for a in axes:
        if a in seen:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        seen.add(a)


def wrap_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """Normalise ``dim`` (None, int or sequence) to a sorted tuple of axes; None means all."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        axes = tuple(wrap_dim(d, ndim) for d in dim)
        check_unique_dims(axes)
        return tuple(sorted(axes)) if ndim else ()
    axis = wrap_dim(dim, ndim)  # (checked for a 0-d tensor too: only 0 and -1 are its dims)
    return (axis,) if ndim else ()
