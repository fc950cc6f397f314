"""Methods about a tensor's geometry and storage: in-place view changes (``t_``, ``transpose_``,
``squeeze_``, ``unsqueeze_``, ``swapaxes_``, ``as_strided_``), ``dim_order``, ``get_device``,
``is_set_to``, and ``nonzero_static``."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import _flags, _no_grad
from . import shape as S
from .indexing import nonzero
from .joining import cat

__all__ = ["inplace_view", "dim_order", "get_device", "is_set_to", "nonzero_static"]


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


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero`` padded with ``fill_value`` (or truncated) to exactly ``size`` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"{size}")
    nz = nonzero(input)
    n = nz.shape[0]
    if n >= size:
        return S.narrow(nz, 0, 0, size)
    pad = _creation.full((size - n, max(input.dim(), nz.shape[1])), fill_value,
                         dtype=_dtype.int64, device=input.device)
    return cat([nz, pad], 0)

