"""Softmax and log-softmax along one axis as one node (or one backend call where the backend has
the optional ``softmax`` primitive).
"""
from __future__ import annotations

from typing import Any

from ... import _dtype, _raw
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ..elementwise import exp
from .. import reduction
from .._common import call

__all__ = ["softmax", "softmax_rows"]

_HALF16 = _dtype.HALF_FLOATS


class _Softmax(Function):
    """Max-subtracted softmax / log-softmax along one axis (or a backend's fused kernel). A
    16-bit ``x`` is computed in float32 and rounded once, as PyTorch's kernels: by the backend's
    primitive, which takes 16-bit inputs, or else composed on a float32 copy; the node keeps the
    16-bit result for backward (computed in float32 too), not a float32 copy."""

    _backward_name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, d: int, log: bool) -> Tensor:
        ctx.d, ctx.log = d, log
        if x._v.dtype in _HALF16 and not _raw.has_prims(x, "softmax"):
            y = _Softmax.forward(ctx, _raw.cast(x, _dtype.float32), d, log)
            y = _raw.cast(y, x._v.dtype)
            ctx.save_for_backward(y)
            return y
        if _raw.has_prims(x, "softmax"):
            y = _raw.softmax(_raw.contiguous(x), d, _raw.new_like(x), log)
        else:
            shape = x._v.shape
            m = _raw.reduce("max", x, (d,), True)
            z = _raw.binary("sub", x, _raw.expand_view(m, shape), x._v.dtype)
            e = _raw.unary("exp", z)
            s = _raw.reduce("sum", e, (d,), True)
            if log:
                y = _raw.binary("sub", z, _raw.expand_view(_raw.unary("log", s), shape), x._v.dtype)
            else:
                y = _raw.binary("div", e, _raw.expand_view(s, shape), x._v.dtype)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (y,) = ctx.saved_tensors
        d = ctx.d
        if y.dtype in _HALF16 and not (not is_grad_enabled() and _raw.has_prims(
                y, "softmax_backward") and g.dtype is y.dtype):
            # the float32 backward of the rounded result, rounded once (a backend's 16-bit
            # softmax_backward primitive does the same itself)
            if not is_grad_enabled():
                y32, g32 = _raw.cast(y, _dtype.float32), _raw.cast(g, _dtype.float32)
            else:
                y32, g32 = y.to(_dtype.float32), g.to(_dtype.float32)
            gx = _Softmax._grad(ctx, y32, g32, d)
            return (_raw.cast(gx, y.dtype) if not is_grad_enabled() else gx.to(y.dtype)), None, None
        return _Softmax._grad(ctx, y, g, d), None, None

    @staticmethod
    def _grad(ctx: Any, y: Tensor, g: Tensor, d: int) -> Tensor:
        if not is_grad_enabled() and _raw.has_prims(y, "softmax_backward") and g.dtype is y.dtype:
            # nothing records: one backend call (y is the forward's contiguous output)
            return _raw.softmax_backward(_raw.contiguous(g), y, d, _raw.new_like(y), ctx.log)
        if ctx.log:
            return g - exp(y) * reduction.sum(g, d, keepdim=True)
        return y * (g - reduction.sum(g * y, d, keepdim=True))


def softmax_rows(x: Tensor) -> Tensor:
    m = reduction.amax(x, 1, keepdim=True).detach()
    e = exp(x - m)
    return e / reduction.sum(e, 1, keepdim=True)


def softmax(x: Tensor, d: int, log: bool) -> Tensor:
    """Softmax (``log=False``) or log-softmax of a floating ``x`` (at least 1-D) along axis ``d``."""
    return call(_Softmax, x, d, log)
