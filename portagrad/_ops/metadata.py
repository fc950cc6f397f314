"""Methods about a tensor's geometry and storage: in-place view changes (``t_``, ``transpose_``,
``squeeze_``, ``unsqueeze_``, ``swapaxes_``, ``as_strided_``), ``dim_order``, ``get_device``,
``is_set_to``, and ``nonzero_static``."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _creation, _dtype, _raw
from ..backends.interface import View
from .._tensor import Tensor
from ..autograd.grad_mode import _flags, _no_grad
from .complexnum import conj, is_conj, real, resolve_conj
from .conversion import copy_
from .shape import as_strided, narrow, reshape
from .indexing import nonzero
from .joining import cat

__all__ = ["inplace_view", "dim_order", "get_device", "is_set_to", "nonzero_static", "can_cast",
           "is_same_size", "narrow_copy", "conj", "resolve_conj", "resolve_neg", "real",
           "is_complex", "is_conj", "is_neg", "is_signed", "is_inference", "apply_", "map_", "resize_",
           "set_"]


def inplace_view(x: Tensor, name: str, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """Give ``x`` the geometry of the view ``fn(x)`` (same storage, data untouched)."""
    if _flags.grad and x.requires_grad:
        if x.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        raise NotImplementedError(f"{name} on a tensor that is part of an autograd graph is not "
                                  f"implemented; use the out-of-place {name[:-1]}")
    with _no_grad():
        v = fn(x)
    x._v = v._v  # the view's geometry on the same storage and version counter
    return x


def dim_order(x: Tensor, *, ambiguity_check: Any = False) -> tuple[int, ...]:
    """The dimensions from outermost to innermost in memory (by decreasing stride)."""
    strides = x.stride()
    return tuple(sorted(range(x.dim()), key=lambda k: (-strides[k], k)))


def get_device(x: Tensor) -> int:
    """``-1`` for a ``cpu`` tensor, else the index of its device."""
    dev = x.device
    return -1 if dev.type == "cpu" else (dev.index or 0)


def is_set_to(x: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors view the same storage with the same offset, shape and strides."""
    return (x._storage is tensor._storage and x.storage_offset() == tensor.storage_offset()
            and x.shape == tensor.shape and x.stride() == tensor.stride())


# the C++ element type names PyTorch's set_ error uses
_CPP_NAMES = _dtype.CPP_TYPE_NAMES


def set_(x: Tensor, source: Any = None, storage_offset: int = 0, size: Any = None,
         stride: Any = None) -> Tensor:
    """Re-point ``x`` at other memory, in place (``Tensor.set_``): with no ``source`` an empty
    storage (shape ``(0,)``); a tensor: its storage, and its offset, shape and strides unless
    ``size`` is given (then ``storage_offset``, ``size`` and ``stride``, contiguous by default);
    a storage (``untyped_storage()``/``storage()``): that memory from ``storage_offset``, all of
    it by default. ``x`` and ``source`` then share memory (a write to one shows in the other).
    Storages are not resized here: a geometry past the end raises PyTorch's ``setStorage``
    error (PyTorch grows a tensor's storage instead). PyTorch defines no derivative of
    ``set_``; where one would be recorded (``source`` or ``x`` requiring grad, grad mode on) it
    raises ``NotImplementedError`` at once rather than at backward."""
    dt = x._v.dtype
    st: Any
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    if x.requires_grad and _flags.grad:
        if x._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        raise NotImplementedError("the derivative for 'set_' is not implemented.")
    if source is None:
        st = _creation.empty((0,), dtype=dt, device=x.device)._storage
        offset, shape, strides = 0, (0,), (1,)
    elif isinstance(source, Tensor):
        if source.dtype is not dt:
            raise RuntimeError(f"Could not set tensor of type {_CPP_NAMES.get(source.dtype.name)} "
                               f"to a tensor of type {_CPP_NAMES.get(dt.name)}")
        if source.requires_grad and _flags.grad:
            raise NotImplementedError("the derivative for 'set_' is not implemented.")
        st = source._storage
        if size is None and storage_offset == 0 and stride is None:
            offset, shape, strides = source._v.offset, source._v.shape, source._v.strides
        else:
            offset, shape = storage_offset, tuple(size if size is not None else source.shape)
            strides = tuple(stride) if stride else _contiguous(shape)
    else:
        untyped = getattr(source, "_untyped", source)  # a TypedStorage wraps an untyped one
        st = getattr(untyped, "_storage", None)
        if st is None:
            raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not "
                            f"{type(source).__name__}")
        offset = storage_offset
        shape = tuple(size) if size is not None else (st.nbytes // dt.itemsize - offset,)
        strides = tuple(stride) if stride else _contiguous(shape)
    if st.device != x.device:
        raise RuntimeError(f"Attempted to set the storage of a tensor on device \"{x.device}\" "
                           f"to a storage on different device \"{st.device}\".  This is no "
                           f"longer allowed; the devices must match.")
    need = 0 if 0 in shape else offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1
    if need * dt.itemsize > st.nbytes:
        raise RuntimeError(f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage "
                           f"offset {offset}, and itemsize {dt.itemsize} requiring a storage size "
                           f"of {need * dt.itemsize} are out of bounds for storage of size "
                           f"{st.nbytes}")
    st._epoch = None  # shared from now on
    x._storage = st
    x._v = View(st.buffer, offset, tuple(shape), tuple(strides), dt)
    x._base = None  # no longer a view of what it viewed
    x._view_ver = None
    _raw.bump(x)
    return x


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero`` padded with ``fill_value`` (or truncated) to exactly ``size`` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"{size}")
    nz = nonzero(input)
    n = nz.shape[0]
    if n >= size:
        return narrow(nz, 0, 0, size)
    pad = _creation.full((size - n, max(input.dim(), nz.shape[1])), fill_value,
                         dtype=_dtype.int64, device=input.device)
    return cat([nz, pad], 0)



def can_cast(from_: _dtype.dtype, to: _dtype.dtype) -> bool:
    """Whether PyTorch's casting rule allows writing a ``from_`` result into a ``to`` tensor
    (never floating into integer, nor integer into bool)."""
    return from_._kind <= to._kind


def is_same_size(input: Tensor, other: Tensor) -> bool:
    return input.shape == other.shape


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A copy of ``narrow(dim, start, length)``."""
    return narrow(input, dim, start, length).clone()


def resolve_neg(input: Tensor) -> Tensor:
    return input


def is_complex(input: Tensor) -> bool:
    """Whether ``input`` has a complex dtype."""
    return input._v.dtype.is_complex


def is_neg(input: Tensor) -> bool:
    return False


def is_signed(input: Tensor) -> bool:
    return input.is_signed()


def is_inference(input: Tensor) -> bool:
    return input.is_inference()


def apply_(input: Tensor, fn: Any) -> Tensor:
    """``fn`` applied to every element (a Python call each, on the host), in place."""
    arr = input.detach().numpy(force=True)
    res = np.vectorize(fn, otypes=[arr.dtype])(arr) if arr.size else arr
    copy_(input, _creation.tensor(res, dtype=input.dtype, device=input.device))
    return input


def map_(input: Tensor, other: Tensor, fn: Any, other2: Tensor | None = None) -> Tensor:
    """``input[i] = fn(input[i], other[i])`` (``other`` broadcast to ``input``), in place;
    with ``other2``: ``fn(input[i], other[i], other2[i])``."""
    arr = input.detach().numpy(force=True)
    more = [o.detach().expand(input.shape).numpy(force=True)
            for o in (other, other2) if o is not None]
    res = np.vectorize(fn, otypes=[arr.dtype])(arr, *more) if arr.size else arr
    copy_(input, _creation.tensor(res, dtype=input.dtype, device=input.device))
    return input


def _contiguous_strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return out[::-1]


def resize_(input: Tensor, *sizes: Any) -> Tensor:
    """Give ``input`` the contiguous shape ``sizes``: a view of its own storage when the elements
    fit and it is contiguous, else a new storage holding the old elements first (the rest
    uninitialised)."""
    shape = _creation.parse_size(sizes, "resize_")
    if input.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = math.prod(shape)
    with _no_grad():
        if input.is_contiguous() and n <= input.numel():
            new = as_strided(input, shape, _contiguous_strides(shape))
        else:
            new = _creation.empty(shape, dtype=input.dtype, device=input.device)
            k = min(n, input.numel())
            if k:
                copy_(narrow(reshape(new, (-1,)), 0, 0, k),
                      narrow(reshape(input, (-1,)), 0, 0, k))
    input._set_from(new)
    return input
