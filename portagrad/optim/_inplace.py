"""In-place update arithmetic for optimizers, straight on backend primitives.

An optimizer step runs without autograd, so it does not need the op layer (broadcasting, type
promotion, in-place bookkeeping for recording): each helper below is one or two calls of the
backend's elementwise primitive, writing into the state tensor itself (the backend contract allows an
output that is exactly the same view as an input). That keeps a step on every device and keeps the
per-parameter Python cost to a few microseconds. Scalars are Python floats; backends compute them in
the tensor's dtype (float32 rounding, as PyTorch's CPU kernels).

Every helper bumps the version counter of the tensor it changes, so autograd still notices that a
parameter saved for backward was modified.
"""
from __future__ import annotations

from typing import Any

from .._raw import new_on
from .._tensor import Tensor

__all__ = ["scale_", "axpy_", "lerp_", "addcmul_", "addcdiv_", "maximum_", "copy", "sqrt",
           "add_scalar_", "div_scalar_", "div_", "mul_", "zeros_like", "full_like", "fill_",
           "update_grad"]


def _tmp(t: Tensor) -> Tensor:
    return new_on(t._storage, t._v.shape, t._v.dtype)


def _check(y: Tensor, x: Tensor) -> None:
    if x._storage.device != y._storage.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                           f"devices, {y.device} and {x.device}!")


def scale_(y: Tensor, s: float) -> Tensor:
    """``y *= s``."""
    y._storage.backend.binary("mul", y._v, s, y._v)
    y._vc[0] += 1
    return y


def mul_(y: Tensor, x: Tensor) -> Tensor:
    """``y *= x`` (same shape)."""
    y._storage.backend.binary("mul", y._v, x._v, y._v)
    y._vc[0] += 1
    return y


def div_(y: Tensor, x: Tensor) -> Tensor:
    """``y /= x`` (same shape)."""
    y._storage.backend.binary("div", y._v, x._v, y._v)
    y._vc[0] += 1
    return y


def div_scalar_(y: Tensor, s: float) -> Tensor:
    """``y /= s``."""
    y._storage.backend.binary("div", y._v, s, y._v)
    y._vc[0] += 1
    return y


def add_scalar_(y: Tensor, s: float) -> Tensor:
    """``y += s``."""
    y._storage.backend.binary("add", y._v, s, y._v)
    y._vc[0] += 1
    return y


def axpy_(y: Tensor, alpha: float, x: Tensor) -> Tensor:
    """``y += alpha * x`` (PyTorch's ``y.add_(x, alpha=alpha)``)."""
    be = y._storage.backend
    if alpha == 1:
        be.binary("add", y._v, x._v, y._v)
    elif alpha == -1:
        be.binary("sub", y._v, x._v, y._v)
    else:
        t = _tmp(y)
        be.binary("mul", x._v, alpha, t._v)
        be.binary("add", y._v, t._v, y._v)
    y._vc[0] += 1
    return y


def lerp_(y: Tensor, x: Tensor, w: float) -> Tensor:
    """``y += w * (x - y)`` (PyTorch's ``lerp_`` for weights below 0.5)."""
    be = y._storage.backend
    t = _tmp(y)
    if w < 0.5:
        be.binary("sub", x._v, y._v, t._v)
        be.binary("mul", t._v, w, t._v)
        be.binary("add", y._v, t._v, y._v)
    else:  # PyTorch's formula for weight >= 0.5: end - (end - start) * (1 - weight)
        be.binary("sub", x._v, y._v, t._v)
        be.binary("mul", t._v, 1 - w, t._v)
        be.binary("sub", x._v, t._v, y._v)
    y._vc[0] += 1
    return y


def _add_scaled(y: Tensor, a: Tensor, b: Tensor, value: float, op: str) -> Tensor:
    """``y += value * (a op b)`` (``value`` applied to ``a`` first, as PyTorch rounds it)."""
    be = y._storage.backend
    t = _tmp(y)
    if value == 1:
        be.binary(op, a._v, b._v, t._v)
    else:
        be.binary("mul", a._v, value, t._v)
        be.binary(op, t._v, b._v, t._v)
    be.binary("add", y._v, t._v, y._v)
    y._vc[0] += 1
    return y


def addcmul_(y: Tensor, a: Tensor, b: Tensor, value: float = 1.0) -> Tensor:
    """``y += value * a * b``."""
    return _add_scaled(y, a, b, value, "mul")


def addcdiv_(y: Tensor, a: Tensor, b: Tensor, value: float = 1.0) -> Tensor:
    """``y += value * a / b``."""
    return _add_scaled(y, a, b, value, "div")


def maximum_(y: Tensor, x: Tensor) -> Tensor:
    """``y = max(y, x)``."""
    y._storage.backend.binary("maximum", y._v, x._v, y._v)
    y._vc[0] += 1
    return y


def copy(x: Tensor) -> Tensor:
    """A new contiguous tensor with ``x``'s values (no autograd history)."""
    t = _tmp(x)
    x._storage.backend.copy(x._v, t._v)
    return t


def sqrt(x: Tensor) -> Tensor:
    """A new tensor ``sqrt(x)``."""
    t = _tmp(x)
    x._storage.backend.unary("sqrt", x._v, t._v)
    return t


def fill_(y: Tensor, value: Any) -> Tensor:
    y._storage.backend.fill(y._v, value)
    y._vc[0] += 1
    return y


def full_like(x: Tensor, value: Any) -> Tensor:
    """A new contiguous tensor like ``x`` filled with ``value``."""
    t = _tmp(x)
    x._storage.backend.fill(t._v, value)
    return t


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
