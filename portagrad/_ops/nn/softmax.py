"""Softmax and log-softmax along one axis as one node (or one backend call where the backend has
the optional ``softmax`` primitive).
"""
from __future__ import annotations

from typing import Any

from ... import _raw
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ..elementwise import exp
from .. import reduction
from .._common import call

__all__ = ["fused", "softmax", "softmax_rows"]


class _Softmax(Function):
    """Max-subtracted softmax / log-softmax along one axis (or a backend's fused kernel)."""

    _backward_name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, d: int, log: bool) -> Tensor:
        ctx.d, ctx.log = d, log
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
        if not is_grad_enabled() and _raw.has_prims(y, "softmax_backward") and g.dtype is y.dtype:
            # nothing records: one backend call (y is the forward's contiguous output)
            return _raw.softmax_backward(_raw.contiguous(g), y, d, _raw.new_like(y),
                                         ctx.log), None, None
        if ctx.log:
            return g - exp(y) * reduction.sum(g, d, keepdim=True), None, None
        return y * (g - reduction.sum(g * y, d, keepdim=True)), None, None


def softmax_rows(x: Tensor) -> Tensor:
    m = reduction.amax(x, 1, keepdim=True).detach()
    e = exp(x - m)
    return e / reduction.sum(e, 1, keepdim=True)


def fused(x: Tensor) -> bool:
    """Whether ``x``'s backend computes softmax as one primitive (which takes 16-bit inputs and
    computes them in float32, rounding once) rather than composed from elementwise ops."""
    return _raw.has_prims(x, "softmax")


def softmax(x: Tensor, d: int, log: bool) -> Tensor:
    """Softmax (``log=False``) or log-softmax of a floating ``x`` (at least 1-D) along axis ``d``."""
    return call(_Softmax, x, d, log)
