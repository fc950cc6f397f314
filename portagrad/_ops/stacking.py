"""Stacking and splitting by axis: ``meshgrid``, ``cartesian_prod``, ``atleast_1d/2d/3d``,
``dstack``, ``column_stack``, ``row_stack``, ``split_with_sizes``, ``hsplit``/``vsplit``/``dsplit``.

Each is written with ops that already have derivatives, so gradients come from those.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


from .._shape import wrap_dim
from .._tensor import Tensor
from .shape import (
    reshape, unsqueeze,
)
from .joining import cat, split, stack

__all__ = ["meshgrid", "cartesian_prod", "atleast_1d", "atleast_2d", "atleast_3d", "dstack",
           "column_stack", "row_stack", "split_with_sizes", "hsplit", "vsplit", "dsplit"]


# ------------------------------------------------------------------------------- grids, stacks
def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (``indexing="ij"``, the default, or ``"xy"``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t.dim()}D tensor")
    ts = [reshape(t, (-1,)) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    out = []
    for k, t in enumerate(ts):
        v = [1] * len(ts)
        v[k] = shape[k]
        out.append(reshape(t, v).expand(shape))
    if swap:  # "xy": the grids of the first two swapped back (shapes (len(y), len(x), ...))
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of the elements of 1-D ``tensors`` (``(N, len(tensors))``)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


def atleast_1d(*tensors: Any) -> Any:
    """Views with at least 1 dimension (one tensor in, one out)."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = tuple(reshape(t, (1,)) if t.dim() == 0 else t for t in ts)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else out


def atleast_2d(*tensors: Any) -> Any:
    """Views with at least 2 dimensions (1-D ``(n,)`` becomes ``(1, n)``)."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = tuple(reshape(t, (1, -1) if t.dim() == 1 else (1, 1)) if t.dim() < 2 else t
                for t in ts)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else out


def atleast_3d(*tensors: Any) -> Any:
    """Views with at least 3 dimensions (``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``)."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors

    def up(t: Tensor) -> Tensor:
        if t.dim() == 0:
            return reshape(t, (1, 1, 1))
        if t.dim() == 1:
            return reshape(t, (1, -1, 1))
        if t.dim() == 2:
            return unsqueeze(t, -1)
        return t

    out = tuple(up(t) for t in ts)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else out


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along the third dimension (after ``atleast_3d``)."""
    return cat(list(atleast_3d(list(tensors))), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack 0-D/1-D tensors as columns (and concatenate 2-D ones) along dimension 1."""
    cols = [reshape(t, (-1, 1)) if t.dim() <= 1 else t for t in tensors]
    return cat(cols, 1)


def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """``vstack``: concatenate along dimension 0 after ``atleast_2d``."""
    return cat(list(atleast_2d(list(tensors))), 0)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0
                     ) -> tuple[Tensor, ...]:
    """Views of consecutive pieces of the given sizes along ``dim`` (they must add up)."""
    d = wrap_dim(dim, input.dim())
    if sum(split_sizes) != input.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[d]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={list(split_sizes)}")
    return split(input, list(split_sizes), d)


def _split_n(name: str, input: Tensor, sections: Any, dim: int, min_dim: int) -> tuple:
    if input.dim() < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {input.dim()} dimensions!")
    if isinstance(sections, int):
        if input.shape[dim] % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {input.shape[dim]} is not divisible by the "
                               f"split_size {sections}!")
        return split(input, input.shape[dim] // sections, dim)
    return input.tensor_split(list(sections), dim)


def hsplit(input: Tensor, sections: Any) -> tuple:
    """Split along dimension 1 (dimension 0 for 1-D input)."""
    return _split_n("hsplit", input, sections, 1 if input.dim() > 1 else 0, 1)


def vsplit(input: Tensor, sections: Any) -> tuple:
    """Split along dimension 0."""
    return _split_n("vsplit", input, sections, 0, 2)


def dsplit(input: Tensor, sections: Any) -> tuple:
    """Split along dimension 2."""
    return _split_n("dsplit", input, sections, 2, 3)
