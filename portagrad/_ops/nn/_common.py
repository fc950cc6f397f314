"""Raw-view helpers the layer Functions of :mod:`portagrad._ops.nn` share.
"""
from __future__ import annotations

import math

from ... import _dtype, _raw
from ..._tensor import Tensor
from ..shape import compute_view_strides

__all__ = ["NORM_DTYPES", "tensor_like", "as_rows", "flat", "flat_or_none"]


def tensor_like(x: Tensor, shape: tuple) -> Tensor:
    """A new contiguous tensor of ``x``'s dtype on its device."""
    return _raw.new_on(x._storage, shape, x._v.dtype)


def as_rows(x: Tensor) -> Tensor:
    """``x`` as a 2-D (rows, features) raw view, copying only if the strides do not allow it
    (``x`` itself when it is 2-D already)."""
    if len(x._v.shape) == 2:
        return x
    k = x._v.shape[-1] if x._v.shape else 1
    n = math.prod(x._v.shape[:-1])  # not numel // k: that is 0 for k == 0, whatever the rows
    strides = compute_view_strides(x._v.shape, x._v.strides, (n, k))
    if strides is None:
        x = _raw.contiguous(x)
        strides = _raw.strides_for((n, k))
    return _raw.view(x, (n, k), strides)


#: dtypes the normalisation primitives are used for (others compose)
NORM_DTYPES = (_dtype.float32, _dtype.float64)


def flat(t: Tensor, shape: tuple) -> Tensor:
    """A raw contiguous view of ``t`` with ``shape`` (same number of elements)."""
    return _raw.view(_raw.contiguous(t), shape, _raw.strides_for(shape))


def flat_or_none(t: Tensor | None, n: int) -> Tensor | None:
    return None if t is None else flat(t, (n,))
