"""Activations as single nodes: the piecewise-linear ones with PyTorch's derivatives at their
kinks, and GELU and SiLU, which keep only their input for backward.

Composed from ``clamp``, their gradient at a boundary would be ``clamp``'s (which passes the
gradient at ``min`` and ``max`` inclusive); PyTorch's ``hardtanh`` (and ``relu6``), ``hardsigmoid``
and ``hardswish`` have their own backward formulas, strict at the kinks: ``hardtanh``'s gradient
is 0 at ``min_val`` and ``max_val``, ``hardsigmoid``'s 0 at -3 and 3, ``hardswish``'s 0 at -3 and 1
at 3.

``gelu`` composed from elementwise ops would keep several intermediates for backward (and, for a
16-bit input computed in float32, a float32 copy of it); PyTorch's kernel keeps the input alone,
in its own dtype, and so does this node: 16-bit inputs are computed in float32 and rounded once,
forward and backward.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _dtype, _raw
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import _no_grad, is_grad_enabled
from .._common import call
from ..elementwise import erf, exp, gelu_erf, sigmoid, softplus_raw, tanh
from ..indexing import where

__all__ = ["hardtanh", "hardsigmoid", "hardswish", "gelu", "mish", "silu"]

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
        # 0 at and beyond the bounds; NaN is not beyond them, so its gradient passes (PyTorch's)
        outside = (x <= ctx.lo).logical_or(x >= ctx.hi)
        return where(outside, 0.0, g), None, None


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


_HALF16 = _dtype.HALF_FLOATS
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_BETA = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715
_PDF = 1.0 / math.sqrt(2.0 * math.pi)  # the normal density's constant


def _gelu_value(x: Tensor, approximate: str) -> Tensor:
    if approximate == "none":
        return gelu_erf(x)
    inner = (x + x * x * x * _KAPPA) * _BETA
    return x * 0.5 * (tanh(inner) + 1.0)


def _gelu_slope(x: Tensor, approximate: str) -> Tensor:
    """d gelu / dx, PyTorch's GeluBackward formulas."""
    if approximate == "none":
        return (erf(x * _SQRT1_2) + 1.0) * 0.5 + x * (exp(x * x * -0.5) * _PDF)
    t = tanh((x + x * x * x * _KAPPA) * _BETA)
    return (t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * ((x * x * (3.0 * _KAPPA) + 1.0) * _BETA)


class _Smooth(Function):
    """An activation ``value(x)`` with derivative ``slope(x)`` as one node keeping only ``x``;
    16-bit inputs are computed in float32 and rounded once, forward and backward."""

    @staticmethod
    def _value(x: Tensor, arg: Any) -> Tensor:
        raise NotImplementedError

    @staticmethod
    def _slope(x: Tensor, arg: Any) -> Tensor:
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx: Any, x: Tensor, arg: Any) -> Tensor:
        ctx.arg = arg
        ctx.save_for_backward(x)
        with _no_grad():
            if x.dtype in _HALF16:
                return cls._value(x.to(_dtype.float32), arg).to(x.dtype)
            return cls._value(x, arg)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        if x.dtype in _HALF16:  # in float32, rounded once
            x32, g32 = x.to(_dtype.float32), g.to(_dtype.float32)
            return (g32 * cls._slope(x32, ctx.arg)).to(x.dtype), None
        return g * cls._slope(x, ctx.arg), None


def _gelu_prims(x: Tensor, approximate: Any) -> bool:
    """Whether exact GELU of ``x`` runs as the backend's ``gelu``/``gelu_backward``: float32
    and contiguous, or 16-bit (computed on a float32 copy, rounded once), on a backend that has
    both."""
    dt = x._v.dtype
    return (approximate == "none" and (dt is _dtype.float32 and x._v.is_contiguous()
                                       or dt in _HALF16)
            and _raw.has_prims(x, "gelu", "gelu_backward"))


def _gelu_as_is(x: Tensor) -> bool:
    """Whether the backend's ``gelu`` pair takes 16-bit ``x`` as it is (its
    ``gelu_half_dtypes``), not a float32 copy."""
    dt = x._v.dtype
    return dt in _HALF16 and dt.name in x._storage.backend.gelu_half_dtypes


def _f32(t: Tensor) -> Tensor:
    """``t`` itself when contiguous float32, else a contiguous float32 copy of it."""
    return _raw.contiguous(t) if t._v.dtype is _dtype.float32 else _raw.cast(t, _dtype.float32)


def _rounded(t: Tensor, dt: Any) -> Tensor:
    return t if dt is _dtype.float32 else _raw.cast(t, dt)


class _Gelu(_Smooth):
    """GELU; exact GELU of a float32 or 16-bit tensor is one backend call each way where the
    backend has ``gelu``/``gelu_backward`` (16-bit: on a float32 copy, rounded once; the backward
    composed under ``create_graph``)."""

    _backward_name = "GeluBackward0"

    @classmethod
    def forward(cls, ctx: Any, x: Tensor, arg: Any) -> Tensor:
        if not _gelu_prims(x, arg):
            return super().forward(ctx, x, arg)
        ctx.arg = arg
        ctx.save_for_backward(x)
        if _gelu_as_is(x):
            xc = _raw.contiguous(x)
            return _raw.gelu(xc, _raw.new_like(xc))
        x32 = _f32(x)
        return _rounded(_raw.gelu(x32, _raw.new_like(x32)), x._v.dtype)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        if (is_grad_enabled() or not _gelu_prims(x, ctx.arg) or g._v.dtype is not x._v.dtype
                or tuple(g._v.shape) != tuple(x._v.shape)):
            return super().backward(ctx, g)
        if _gelu_as_is(x):
            xc = _raw.contiguous(x)
            return _raw.gelu_backward(_raw.contiguous(g), xc, _raw.new_like(xc)), None
        x32 = _f32(x)
        return _rounded(_raw.gelu_backward(_f32(g), x32, _raw.new_like(x32)), x._v.dtype), None

    @staticmethod
    def _value(x: Tensor, arg: Any) -> Tensor:
        return _gelu_value(x, arg)

    @staticmethod
    def _slope(x: Tensor, arg: Any) -> Tensor:
        return _gelu_slope(x, arg)


class _Silu(_Smooth):
    _backward_name = "SiluBackward0"

    @staticmethod
    def _value(x: Tensor, arg: Any) -> Tensor:
        return x * sigmoid(x)

    @staticmethod
    def _slope(x: Tensor, arg: Any) -> Tensor:
        s = sigmoid(x)
        return s * (x * (1.0 - s) + 1.0)


class _Mish(_Smooth):
    """``x * tanh(softplus(x))`` with PyTorch's MishBackward formula: the slope is computed,
    then multiplied by the incoming gradient (the composition's chain rule adds two products
    of it, and an infinite gradient gave inf - inf = NaN)."""

    _backward_name = "MishBackward0"

    @staticmethod
    def _value(x: Tensor, arg: Any) -> Tensor:
        return x * tanh(softplus_raw(x, 1.0, 20.0))

    @staticmethod
    def _slope(x: Tensor, arg: Any) -> Tensor:
        t = tanh(softplus_raw(x, 1.0, 20.0))
        return t + x * sigmoid(x) * (1.0 - t * t)


def mish(x: Tensor) -> Tensor:
    """``x * tanh(softplus(x))`` as one node that keeps only ``x`` for backward."""
    return call(_Mish, x, None)


def gelu(x: Tensor, approximate: str) -> Tensor:
    """GELU (``approximate`` "none": ``x * Phi(x)``; "tanh": the tanh approximation) as one node
    that keeps only ``x`` for backward."""
    return call(_Gelu, x, approximate)


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` as one node that keeps only ``x`` for backward."""
    return call(_Silu, x, None)
