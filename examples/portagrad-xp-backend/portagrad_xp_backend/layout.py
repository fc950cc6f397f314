"""How a strided :class:`~portagrad.backends.interface.View` maps onto a flat Array API array.

Array API arrays have no strides, so every view is expressed with the operations the standard
does have, chosen once per view on the host and memoised in ``View.cache`` (a view is immutable):

* ``EMPTY`` -- no elements: nothing to read or write;
* ``CONTIG`` -- a contiguous range: ``flat[start:start+n]`` reshaped;
* ``PERM`` -- a permutation of a contiguous range (a transpose), possibly broadcast along
  stride-0 dimensions: slice, reshape, ``permute_dims``, ``broadcast_to``;
* ``GATHER`` -- anything else (steps, overlapping windows): ``take(flat, indices)`` with the flat
  element indices computed here with numpy, then broadcast.

Writes (``out`` views) use the same plan in reverse; see :mod:`portagrad_xp_backend.backend`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Layout", "EMPTY", "CONTIG", "PERM", "GATHER", "plan"]

EMPTY, CONTIG, PERM, GATHER = 0, 1, 2, 3


class Layout:
    """The plan for one view (see the module doc). ``inner_shape`` is the shape of the
    non-broadcast part, in the view's dimension order with broadcast dimensions as 1s."""

    __slots__ = ("kind", "start", "n", "ndim", "sorted_shape", "perm", "inner_shape", "shape",
                 "broadcast", "host_index", "index", "scatter", "dims_shape", "inverse_perm")

    def __init__(self) -> None:
        self.kind = CONTIG
        self.start = 0
        self.n = 0  # elements of the non-broadcast part
        self.ndim = 0
        self.sorted_shape: tuple[int, ...] = ()
        self.perm: tuple[int, ...] | None = None
        self.inverse_perm: tuple[int, ...] = ()  # view order (size-1 dims dropped) -> sorted
        self.dims_shape: tuple[int, ...] = ()  # inner_shape without its 1s
        self.inner_shape: tuple[int, ...] = ()
        self.shape: tuple[int, ...] = ()
        self.broadcast = False
        self.host_index: np.ndarray | None = None  # GATHER: flat indices, C order of inner_shape
        self.index: Any = None  # the same on the device (made on first use)
        self.scatter: Any = None  # writes without integer assignment: (mask, inverse) on device


def plan(offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> Layout:
    """The layout of a view."""
    lay = Layout()
    lay.shape = shape
    lay.start = offset
    lay.ndim = len(shape)
    if 0 in shape:
        lay.kind = EMPTY
        return lay
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            break
        expected *= size
    else:
        lay.kind = CONTIG
        lay.n = expected
        lay.inner_shape = shape
        return lay
    # broadcast (stride 0) and size-1 dimensions read nothing of their own
    inner = tuple(1 if (st == 0 or n == 1) else n for n, st in zip(shape, strides))
    lay.inner_shape = inner
    lay.broadcast = inner != shape
    dims = [d for d, n in enumerate(inner) if n != 1]
    n = 1
    for d in dims:
        n *= inner[d]
    lay.n = n
    # sort the remaining dims by decreasing stride: contiguous after sorting means a transpose
    order = sorted(dims, key=lambda d: -strides[d])
    expected = 1
    dense = True
    for d in reversed(order):
        if strides[d] != expected:
            dense = False
            break
        expected *= inner[d]
    if dense:
        lay.kind = PERM
        lay.sorted_shape = tuple(inner[d] for d in order)
        # permute_dims(sorted block, perm) puts the dims back in view order
        lay.perm = tuple(order.index(d) for d in dims) if order != dims else None
        lay.inverse_perm = tuple(dims.index(d) for d in order)
        lay.dims_shape = tuple(inner[d] for d in dims)
        return lay
    lay.kind = GATHER
    idx = np.full((1,) * len(shape), offset, np.int64)
    for d in dims:
        ax = np.arange(inner[d], dtype=np.int64) * strides[d]
        idx = idx + ax.reshape(tuple(inner[d] if k == d else 1 for k in range(len(shape))))
    lay.host_index = idx.reshape(-1)
    return lay
