"""Shared plumbing of the op layer: the no-grad fast path, device checks, broadcasting, promotion."""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import _flags

__all__ = ["call", "NULL_CTX", "check_same_device", "broadcast_shapes", "to_scalar", "is_scalar",
           "prepare_binary", "wrap_dim", "wrap_dims"]


class _NullCtx:
    """The ``ctx`` of a forward that records nothing: saving is a no-op."""

    __slots__ = ()
    needs_input_grad = (False,) * 8

    def __setattr__(self, key: str, value: Any) -> None:
        pass

    def save_for_backward(self, *tensors: Any) -> None:
        pass

    def mark_dirty(self, *tensors: Any) -> None:
        pass

    def mark_non_differentiable(self, *tensors: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


NULL_CTX = _NullCtx()


def call(fn_cls: Any, *args: Any) -> Any:
    """Run a built-in ``Function``: recorded if an input requires grad, else straight to forward
    (this keeps a one-element op at a few microseconds)."""
    if _flags.grad:
        for a in args:
            if a.__class__ is not Tensor and not isinstance(a, Tensor):
                continue
            if a._requires_grad:
                return fn_cls.apply(*args)
    return fn_cls.forward(NULL_CTX, *args)


def check_same_device(a: Tensor, b: Tensor, op: str = "") -> None:
    if a._storage.device is not b._storage.device and a._storage.device != b._storage.device:
        from ..errors import raise_device_mismatch

        raise_device_mismatch(a.device, b.device, op)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast shape, or a ``RuntimeError`` naming the mismatching sizes."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, n in enumerate(s):
            j = off + i
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                from ..errors import ShapeError

                raise ShapeError(
                    f"The size of tensor a ({out[j]}) must match the size of tensor b ({n}) at "
                    f"non-singleton dimension {j}")
    return tuple(out)


def is_scalar(x: Any) -> bool:
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, complex)


def to_scalar(x: Any, dtype: "_dtype.dtype") -> Any:
    """A Python scalar converted to ``dtype``'s kind."""
    if isinstance(x, np.generic):
        x = x.item()
    if dtype.is_floating_point:
        return float(x)
    if dtype is _dtype.bool:
        return bool(x)
    return int(x)


def prepare_binary(a: Any, b: Any, op: str, float_only: bool = False
                   ) -> tuple[Any, Any, "_dtype.dtype"]:
    """Reconcile two operands: device check, dtype promotion, broadcasting (differentiably).

    Returns ``(a, b, dtype)`` where tensors have the broadcast shape and ``dtype`` and scalars are
    Python numbers of that dtype's kind."""
    from . import conversion, shape as shape_ops

    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        if a._storage.device is not b._storage.device and a.device != b.device:
            # as PyTorch: a zero-dim CPU tensor may meet a tensor on any device
            if a.dim() == 0 and a.device.type == "cpu":
                a = conversion.to(a, b.device)
            elif b.dim() == 0 and b.device.type == "cpu":
                b = conversion.to(b, a.device)
            else:
                check_same_device(a, b, op)
        dt = a._v.dtype if a._v.dtype is b._v.dtype else _dtype.result_type(a, b)
    elif ta:
        if not is_scalar(b):
            raise TypeError(f"{op}(): unsupported operand type {type(b).__name__} (expected a "
                            f"Tensor or a number)")
        dt = _dtype.result_type(a, b)
    elif tb:
        if not is_scalar(a):
            raise TypeError(f"{op}(): unsupported operand type {type(a).__name__} (expected a "
                            f"Tensor or a number)")
        dt = _dtype.result_type(a, b)
    else:
        raise TypeError(f"{op}(): expected at least one Tensor operand")
    if float_only and not dt.is_floating_point:
        dt = _dtype.get_default_dtype()
    if ta:
        if a._v.dtype is not dt:
            a = conversion.to(a, dtype=dt)
    else:
        a = to_scalar(a, dt)
    if tb:
        if b._v.dtype is not dt:
            b = conversion.to(b, dtype=dt)
    else:
        b = to_scalar(b, dt)
    if ta and tb and a._v.shape != b._v.shape:
        shape = broadcast_shapes(a._v.shape, b._v.shape)
        if a._v.shape != shape:
            a = shape_ops.expand(a, shape)
        if b._v.shape != shape:
            b = shape_ops.expand(b, shape)
    return a, b, dt


def wrap_dim(dim: int, ndim: int) -> int:
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if dim < lo or dim > hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {dim})")
    return int(dim) % max(ndim, 1)


def wrap_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """Normalise ``dim`` (None, int or sequence) to a sorted tuple of axes; None means all."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        axes = tuple(wrap_dim(d, ndim) for d in dim)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dim {axes} appears multiple times in the list of dims")
        return tuple(sorted(axes)) if ndim else ()
    return (wrap_dim(dim, ndim),) if ndim else ()
