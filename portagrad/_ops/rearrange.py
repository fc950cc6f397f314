"""Rearranging elements: ``rot90``, ``fliplr``, ``flipud``, ``ravel`` and ``unfold`` (a strided
view of sliding windows).

Each is written with ops that already have derivatives, so gradients come from those.
"""
from __future__ import annotations

from collections.abc import Sequence


from .._shape import wrap_dim
from .._tensor import Tensor
from .shape import (
    StridedView, reshape, strided_view, transpose,
)
from .conversion import contiguous
from .indexing import flip

__all__ = ["unfold", "rot90", "fliplr", "flipud", "ravel"]


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """The view of all windows of ``size`` elements, ``step`` apart, along ``dimension`` (a new
    last dimension of length ``size``)."""
    nd = max(input.dim(), 1)
    d = wrap_dim(dimension, nd)
    shape = list(input.shape) or [1]
    if size > shape[d]:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {shape[d]} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if input.dim() == 0:  # PyTorch: the 0-d tensor as its only window, of stride 1
        return strided_view(reshape(input, (1,)), (0,), (size,), ((1,),), _Unfold)
    n = (shape[d] - size) // step + 1
    steps = [[int(j == k) * (step if k == d else 1) for j in range(nd)] for k in range(nd)]
    steps.append([int(j == d) for j in range(nd)])  # along a window: one element at a time
    return strided_view(input, [0] * nd, shape[:d] + [n] + shape[d + 1:] + [size], steps,
                          _Unfold)


class _Unfold(StridedView):
    _backward_name = "UnfoldBackward0"


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane ``dims`` (from the first towards the
    second)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = wrap_dim(dims[0], input.dim()), wrap_dim(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return transpose(flip(input, [d1]), d0, d1)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return flip(transpose(input, d0, d1), [d1])
    return input.clone()


def fliplr(input: Tensor) -> Tensor:
    """Reverse the columns (dimension 1)."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, [1])


def flipud(input: Tensor) -> Tensor:
    """Reverse the rows (dimension 0)."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, [0])


def ravel(input: Tensor) -> Tensor:
    """The flattened contiguous tensor: a view of a contiguous input, else a copy (PyTorch's
    ``contiguous().view(-1)``: a copy even where a strided view would do, unlike ``flatten``)."""
    return reshape(contiguous(input), (-1,))
