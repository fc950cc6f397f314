"""In-place update arithmetic for optimizers, on :mod:`portagrad._raw`'s primitives.

An optimizer step runs without autograd, so it does not need the op layer (broadcasting, type
promotion, in-place bookkeeping for recording): each helper below is one or two elementwise
primitive calls, writing into the state tensor itself (the backend contract allows an output that is
exactly the same view as an input). That keeps a step on every device and keeps the per-parameter
Python cost to a few microseconds. Scalars are Python floats; backends compute them in the tensor's
dtype (float32 rounding, as PyTorch's CPU kernels).

Every helper that changes a tensor bumps its version counter once (``_raw``'s in-place writes do),
so autograd still notices that a parameter saved for backward was modified.
"""
from __future__ import annotations

from typing import Any

from .. import _dtype, _raw
from .._tensor import Tensor

__all__ = ["scale_", "axpy_", "lerp_", "addcmul_", "addcdiv_", "maximum_", "copy", "sqrt",
           "add_scalar_", "div_scalar_", "div_", "mul_", "zeros_like", "full_like", "fill_",
           "update_grad", "unary", "rdiv_scalar_", "clamp_", "assign_", "device_zero",
           "adam_denominator_terms", "scale_shift_"]

_binary_ = _raw.binary_


def scale_(y: Tensor, s: float) -> Tensor:
    """``y *= s``."""
    return _binary_("mul", y, s)


def mul_(y: Tensor, x: Tensor) -> Tensor:
    """``y *= x`` (same shape)."""
    return _binary_("mul", y, x)


def div_(y: Tensor, x: Tensor) -> Tensor:
    """``y /= x`` (same shape)."""
    return _binary_("div", y, x)


def div_scalar_(y: Tensor, s: float) -> Tensor:
    """``y /= s``."""
    return _binary_("div", y, s)


def rdiv_scalar_(y: Tensor, s: float) -> Tensor:
    """``y = s / y``."""
    v = y._v
    y._storage.backend.binary("div", s, v, v)
    _raw.bump(y)
    return y


def clamp_(y: Tensor, lo: float | None = None, hi: float | None = None) -> Tensor:
    """``y = min(max(y, lo), hi)`` (either bound optional), as ``Tensor.clamp_``."""
    if lo is not None:
        _binary_("maximum", y, lo)
    if hi is not None:
        _binary_("minimum", y, hi)
    return y


def assign_(y: Tensor, x: Tensor) -> Tensor:
    """``y[...] = x`` (same shape; ``x`` may be any tensor computed from the op layer)."""
    return _raw.copy_(y, x)


def add_scalar_(y: Tensor, s: float) -> Tensor:
    """``y += s``."""
    return _binary_("add", y, s)


axpy_ = _raw.axpy_  # y += alpha * x
lerp_ = _raw.lerp_  # y += w * (x - y), PyTorch's rounding


def addcmul_(y: Tensor, a: Tensor, b: Tensor, value: float = 1.0) -> Tensor:
    """``y += value * a * b``."""
    return _raw.addc_("mul", y, a, b, value)


def addcdiv_(y: Tensor, a: Tensor, b: Tensor, value: float = 1.0) -> Tensor:
    """``y += value * a / b``."""
    return _raw.addc_("div", y, a, b, value)


def maximum_(y: Tensor, x: Tensor) -> Tensor:
    """``y = max(y, x)``."""
    return _binary_("maximum", y, x)


def copy(x: Tensor) -> Tensor:
    """A new contiguous tensor with ``x``'s values (no autograd history)."""
    return _raw.cast(x, x._v.dtype)


def sqrt(x: Tensor) -> Tensor:
    """A new tensor ``sqrt(x)``."""
    return _raw.unary("sqrt", x)


def unary(op: str, x: Tensor) -> Tensor:
    """A new tensor ``op(x)`` for a backend unary op (``"abs"``, ``"sign"``, ``"rsqrt"`` ...)."""
    return _raw.unary(op, x)


def fill_(y: Tensor, value: Any) -> Tensor:
    """Every element of ``y`` set to ``value``."""
    return _raw.fill_(y, value)


def full_like(x: Tensor, value: Any) -> Tensor:
    """A new contiguous tensor like ``x`` filled with ``value``."""
    return _raw.fill(_raw.new_like(x), value)


def zeros_like(x: Tensor) -> Tensor:
    return full_like(x, 0)


def update_grad(p: Any, maximize: bool, weight_decay: float) -> Any:
    """The gradient an update uses: ``p``'s, negated when maximizing, plus ``weight_decay * p``
    (a copy whenever it differs, so ``p.grad`` itself is never changed)."""
    g = p._grad
    if maximize:
        g = scale_(copy(g), -1.0)
    if weight_decay != 0:
        g = axpy_(copy(g) if g is p._grad else g, weight_decay, p)
    return g


def device_zero(p: Tensor) -> Tensor:
    """A float32 0-d zero on ``p``'s device (a step counter that never reads the host)."""
    return _raw.fill(_raw.new_on(p._storage, (), _dtype.float32), 0)


def adam_denominator_terms(step_t: Tensor, dt: Any, lr: float, beta1: float, beta2: float,
                           eps: float) -> tuple[Tensor, Tensor]:
    """Adam's bias corrections computed on the device from the step count ``step_t`` (PyTorch's
    capturable formula), folded into two 0-d tensors of dtype ``dt``: with ``denom = sqrt(v)``,
    ``denom / scale + shift`` is ``sqrt(v) / (sqrt(bc2) * -step_size) + eps / -step_size``, so that
    ``p += m / denom`` is the update."""
    step = step_t if step_t._v.dtype is dt else _raw.cast(step_t, dt)
    bc1 = _raw.binary("sub", 1.0, _raw.binary("pow", beta1, step, dt), dt, like=step)
    bc2 = _raw.binary("sub", 1.0, _raw.binary("pow", beta2, step, dt), dt, like=step)
    neg_step_size = _raw.unary("neg", _raw.binary("div", lr, bc1, dt, like=step))
    scale = _raw.binary("mul", _raw.unary("sqrt", bc2), neg_step_size, dt)
    shift = _raw.binary("div", eps, neg_step_size, dt, like=step)
    return scale, shift


def scale_shift_(y: Tensor, scale: Tensor, shift: Tensor) -> Tensor:
    """``y = y / scale + shift`` for 0-d device tensors ``scale`` and ``shift``."""
    shape = y._v.shape
    _raw.binary_into("div", y, _raw.bare_expand(scale._v, shape))
    _raw.binary_into("add", y, _raw.bare_expand(shift._v, shape))
    return y
