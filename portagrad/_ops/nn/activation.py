"""Piecewise-linear activations as single nodes with PyTorch's derivatives at their kinks.

Composed from ``clamp``, their gradient at a boundary would be ``clamp``'s (which passes the
gradient at ``min`` and ``max`` inclusive); PyTorch's ``hardtanh`` (and ``relu6``), ``hardsigmoid``
and ``hardswish`` have their own backward formulas, strict at the kinks: ``hardtanh``'s gradient
is 0 at ``min_val`` and ``max_val``, ``hardsigmoid``'s 0 at -3 and 3, ``hardswish``'s 0 at -3 and 1
at 3.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import _no_grad
from .._common import call
from ..indexing import where

__all__ = ["hardtanh", "hardsigmoid", "hardswish"]

# PyTorch's hardsigmoid derivative is the float32 constant 1/6 in every dtype (float64 included)
_ONE_SIXTH = float(np.float32(1.0) / np.float32(6.0))


class _Hardtanh(Function):
    _backward_name = "HardtanhBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, lo: float, hi: float) -> Tensor:
        ctx.lo, ctx.hi = lo, hi
        ctx.save_for_backward(x)
        with _no_grad():
            return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        inside = (x > ctx.lo).logical_and(x < ctx.hi)
        return where(inside, g, 0.0), None, None


class _Hardsigmoid(Function):
    _backward_name = "HardsigmoidBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        with _no_grad():
            return (x + 3.0).clamp(0.0, 6.0) / 6.0

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        return where((x > -3.0).logical_and(x < 3.0), g * _ONE_SIXTH, 0.0)


class _Hardswish(Function):
    _backward_name = "HardswishBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        with _no_grad():
            return x * ((x + 3.0).clamp(0.0, 6.0) / 6.0)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        mid = g * (x / 3.0 + 0.5)
        return where(x <= -3.0, 0.0, where(x < 3.0, mid, g))


def hardtanh(x: Tensor, lo: float, hi: float) -> Tensor:
    """``x`` clamped to ``[lo, hi]``, gradient 1 strictly inside, 0 elsewhere."""
    return call(_Hardtanh, x, lo, hi)


def hardsigmoid(x: Tensor) -> Tensor:
    """``clamp(x + 3, 0, 6) / 6``, gradient 1/6 strictly between -3 and 3."""
    return call(_Hardsigmoid, x)


def hardswish(x: Tensor) -> Tensor:
    """``x * clamp(x + 3, 0, 6) / 6``; gradient 0 up to -3, ``x/3 + 1/2`` below 3, 1 from 3."""
    return call(_Hardswish, x)
