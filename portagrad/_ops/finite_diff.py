"""``gradient``: the numerical derivative of sampled values along one or more dimensions, by
second-order central differences inside and first- or second-order one-sided differences at the
two ends (``edge_order``), for uniform spacing or for sample coordinates, as ``numpy.gradient``
and ``torch.gradient``.

Every result is built from slices and arithmetic of the input, so it is differentiable.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _dtype
from .._shape import wrap_dim
from .._tensor import Tensor
from .joining import cat
from .shape import narrow, reshape

__all__ = ["gradient"]


def _float(t: Tensor) -> Tensor:
    """Integer and bool values differentiate in the default float dtype, as PyTorch."""
    if t.dtype.is_floating_point:
        return t
    return t.to(_dtype.get_default_dtype())


def _uniform(f: Tensor, d: int, h: float, edge_order: int) -> Tensor:
    n = f.shape[d]

    def s(start: int, length: int) -> Tensor:
        return narrow(f, d, start % n, length)

    inner = (s(2, n - 2) - s(0, n - 2)) / (2.0 * h)
    if edge_order == 1:
        first = (s(1, 1) - s(0, 1)) / h
        last = (s(-1, 1) - s(-2, 1)) / h
    else:
        first = (-1.5 * s(0, 1) + 2.0 * s(1, 1) - 0.5 * s(2, 1)) / h
        last = (0.5 * s(-3, 1) - 2.0 * s(-2, 1) + 1.5 * s(-1, 1)) / h
    return cat([first, inner, last], d)


def _coordinates(f: Tensor, d: int, x: Tensor, edge_order: int) -> Tensor:
    n = f.shape[d]
    # the coordinates along d, broadcastable against f
    x = reshape(_float(x).to(device=f.device), [n if i == d else 1 for i in range(f.dim())])

    def s(t: Tensor, start: int, length: int) -> Tensor:
        return narrow(t, d, start % t.shape[d], length)

    dx = s(x, 1, n - 1) - s(x, 0, n - 1)  # n - 1 steps
    dx1, dx2 = s(dx, 0, n - 2), s(dx, 1, n - 2)
    # the weights of the three-point formula that is exact for quadratics
    inner = (-dx2 / (dx1 * (dx1 + dx2)) * s(f, 0, n - 2)
             + (dx2 - dx1) / (dx1 * dx2) * s(f, 1, n - 2)
             + dx1 / (dx2 * (dx1 + dx2)) * s(f, 2, n - 2))
    if edge_order == 1:
        first = (s(f, 1, 1) - s(f, 0, 1)) / s(dx, 0, 1)
        last = (s(f, -1, 1) - s(f, -2, 1)) / s(dx, -1, 1)
    else:
        a1, a2 = s(dx, 0, 1), s(dx, 1, 1)
        first = (-(2.0 * a1 + a2) / (a1 * (a1 + a2)) * s(f, 0, 1)
                 + (a1 + a2) / (a1 * a2) * s(f, 1, 1)
                 - a1 / (a2 * (a1 + a2)) * s(f, 2, 1))
        b1, b2 = s(dx, -2, 1), s(dx, -1, 1)
        last = (b2 / (b1 * (b1 + b2)) * s(f, -3, 1)
                - (b1 + b2) / (b1 * b2) * s(f, -2, 1)
                + (2.0 * b2 + b1) / (b2 * (b1 + b2)) * s(f, -1, 1))
    return cat([first, inner, last], d)


def _dims(input: Tensor, dim: Any) -> list[int]:
    if dim is None:
        return list(range(input.dim()))
    raw = [dim] if isinstance(dim, int) else list(dim)
    dims = [wrap_dim(d, input.dim()) for d in raw]
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return dims


def _spacings(input: Tensor, spacing: Any, dims: list[int], dim_given: bool) -> list[Any]:
    """One entry per dimension of ``dims``: a float step or a 1-d coordinate tensor."""
    if isinstance(spacing, Tensor):
        if spacing.dim() != 0:
            raise TypeError("gradient(): argument 'spacing' must be a number, a 0-d tensor or a "
                            "sequence of numbers or 1-d tensors, not a "
                            f"{spacing.dim()}-d tensor")
        spacing = spacing.item()
    if isinstance(spacing, (int, float)) and not isinstance(spacing, bool):
        return [float(spacing)] * len(dims)
    if not isinstance(spacing, Sequence):
        raise TypeError(f"gradient(): argument 'spacing' must be a number or a sequence, not "
                        f"{type(spacing).__name__}")
    items = list(spacing)
    if len(items) != len(dims):
        what = (f"'len(dim) = {len(dims)}', since dim argument was given" if dim_given else
                f"'self.dim() = {input.dim()}', since dim argument was not given")
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a "
                           f"list of length equal to {what}, but got a list of length "
                           f"{len(items)}")
    out: list[Any] = []
    for item, d in zip(items, dims):
        if isinstance(item, Tensor):
            if item.dim() != 1:
                raise RuntimeError(f"torch.gradient expected each element of spacing to have one "
                                   f"dimension, but got an element with {item.dim()} dimensions!")
            if item.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected the coordinates of dimension {d} to "
                                   f"have {input.shape[d]} elements (its size), but got "
                                   f"{item.shape[0]}")
            out.append(item)
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            out.append(float(item))
        else:
            raise TypeError(f"gradient(): each element of 'spacing' must be a number or a 1-d "
                            f"tensor, not {type(item).__name__}")
    return out


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1
             ) -> tuple[Tensor, ...]:
    """The derivative of ``input``'s values along each dimension of ``dim`` (default: all), one
    tensor per dimension. ``spacing`` is the distance between samples: a number for every
    dimension, one number per dimension, or one 1-d tensor of sample coordinates per dimension.
    ``edge_order`` (1 or 2) is the accuracy order of the one-sided differences at the ends."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _dims(input, dim)
    steps = _spacings(input, spacing, dims, dim is not None)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = _float(input)
    return tuple(_coordinates(f, d, h, edge_order) if isinstance(h, Tensor)
                 else _uniform(f, d, h, edge_order) for d, h in zip(dims, steps))
