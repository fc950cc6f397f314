"""Shared plumbing of the op layer: the no-grad fast path, device checks, broadcasting, promotion."""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .. import _dtype
from .._shape import broadcast_shapes
from .._tensor import Tensor
from ..autograd._profiling import STATE as _PROF
from ..autograd._profiling import op_name, record
from ..autograd.grad_mode import _flags
from .. import errors

__all__ = ["call", "NULL_CTX", "check_same_device", "broadcast_shapes", "to_scalar", "is_scalar",
           "prepare_binary", "refuse_bool", "type_name", "sparse_fallback"]


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
    if _PROF.on:  # a profiler is recording (the one check on this path)
        return record(op_name(fn_cls), args, fn_cls.forward, NULL_CTX, *args)
    return fn_cls.forward(NULL_CTX, *args)


def check_same_device(a: Tensor, b: Tensor, op: str = "") -> None:
    if a._storage.device is not b._storage.device and a._storage.device != b._storage.device:
        errors.raise_device_mismatch(a.device, b.device, op)


def is_scalar(x: Any) -> bool:
    return isinstance(x, (numbers.Number, np.generic))


def refuse_complex(kernel: str, dt: _dtype.dtype) -> None:
    """PyTorch's ``NotImplementedError`` for an op with no complex kernel (ordering comparisons,
    max/min, ...): ``kernel`` is the kernel name its message gives (``lt_cpu``, ``max_all``)."""
    if dt.is_complex:
        name = "ComplexFloat" if dt is _dtype.complex64 else "ComplexDouble"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")


def to_scalar(x: Any, dtype: _dtype.dtype) -> Any:
    """A Python scalar converted to ``dtype``'s kind (a float into an integer dtype by PyTorch's
    checked conversion: truncated, and ``RuntimeError`` for NaN, infinities and values out of
    range)."""
    if isinstance(x, np.generic):
        x = x.item()
    if dtype.is_complex:
        return complex(x)
    if isinstance(x, complex):
        # as PyTorch (a complex number into a real tensor)
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
    if dtype.is_floating_point:
        return float(x)
    if dtype is _dtype.bool:
        return bool(x)
    if x.__class__ is float:
        return int(_dtype.fit_scalar(x, dtype.name))  # type: ignore[call-overload]
    return int(x)


class SparseOperandError(NotImplementedError, TypeError):
    """A binary op given a sparse operand, which it has no kernel for: to its caller a
    ``NotImplementedError`` naming the op (as PyTorch); a ``TypeError`` (prepare_binary's
    error) to the ops that catch it to hand the sparse operand over (``add``, ``mul`` ...)."""


def _refuse_sparse(op: str, a: Any, b: Any) -> None:
    """The error path of :func:`prepare_binary`: refuse a sparse operand by name."""
    if any(getattr(type(x), "_sparse_op", None) is not None for x in (a, b)):
        raise SparseOperandError(f"{op} is not supported for tensors with "
                                 f"layout=portagrad.sparse_coo")


def prepare_binary(a: Any, b: Any, op: str, float_only: bool = False
                   ) -> tuple[Any, Any, _dtype.dtype]:
    """Reconcile two operands: device check, dtype promotion, broadcasting (differentiably).

    Returns ``(a, b, dtype)`` where tensors have the broadcast shape and ``dtype`` and scalars are
    Python numbers of that dtype's kind."""
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        if a._storage.device is not b._storage.device and a.device != b.device:
            # as PyTorch: a zero-dim CPU tensor may meet a tensor on any device
            if a.dim() == 0 and a.device.type == "cpu":
                a = a.to(b.device)
            elif b.dim() == 0 and b.device.type == "cpu":
                b = b.to(a.device)
            else:
                check_same_device(a, b, op)
        dt = a._v.dtype if a._v.dtype is b._v.dtype else _dtype.result_type(a, b)
    elif ta:
        if not is_scalar(b):
            _refuse_sparse(op, a, b)
            raise TypeError(f"{op}(): unsupported operand type {type(b).__name__} (expected a "
                            f"Tensor or a number)")
        dt = _dtype.result_type(a, b)
    elif tb:
        if not is_scalar(a):
            _refuse_sparse(op, a, b)
            raise TypeError(f"{op}(): unsupported operand type {type(a).__name__} (expected a "
                            f"Tensor or a number)")
        dt = _dtype.result_type(a, b)
    else:
        _refuse_sparse(op, a, b)
        raise TypeError(f"{op}(): expected at least one Tensor operand")
    if float_only and not (dt.is_floating_point or dt.is_complex):
        dt = _dtype.get_default_dtype()
    if ta:
        if a._v.dtype is not dt:
            a = a.to(dtype=dt)
    else:
        a = to_scalar(a, dt)
    if tb:
        if b._v.dtype is not dt:
            b = b.to(dtype=dt)
    else:
        b = to_scalar(b, dt)
    if ta and tb and a._v.shape != b._v.shape:
        shape = broadcast_shapes(a._v.shape, b._v.shape)
        if a._v.shape != shape:
            a = a.expand(shape)
        if b._v.shape != shape:
            b = b.expand(shape)
    return a, b, dt


def sparse_fallback(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """The failure path of top-level op ``name`` (``fn``), called from its ``except``: where an
    operand (the first two arguments, or an element of a first-argument list: ``cat``) is a
    sparse tensor, which carries the ``_sparse_op`` hook, that layout's result (or its error);
    otherwise the exception being handled, re-raised. The dense path never comes here."""
    first = args[0] if args else None
    cands = (*args[:2], *first) if isinstance(first, (list, tuple)) else args[:2]
    for a in cands:
        # (looked up on the type: a proxy's __getattr__ must not answer for it)
        hook = getattr(type(a), "_sparse_op", None)
        if hook is not None:
            return hook(name, fn, *args, **kwargs)
    raise  # (called inside an ``except`` block: re-raises the exception it handles)


def type_name(d: _dtype.dtype) -> str:
    """PyTorch's scalar type name of a dtype, as its error messages spell it (``Float``)."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int32": "Int",
            "int64": "Long", "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short",
            "bfloat16": "BFloat16"}.get(d.name, d.name)


# Ops PyTorch has no bool kernel for, and the kernel its error names ("abs_cpu" not implemented
# for 'Bool'). Checked before any backend runs: numpy would compute something or leak its own
# casting error, OpenCL its DTypeError.
_NO_BOOL_KERNEL = {
    "abs": "abs_cpu", "floor": "floor_vml_cpu", "ceil": "ceil_vml_cpu", "round": "round_vml_cpu",
    "trunc": "trunc_vml_cpu", "remainder": "remainder_cpu", "fmod": "fmod_cpu",
    "floor_divide": "div_floor_cpu", "div_trunc": "div_trunc_cpu", "pow": "pow",
    "softmax": "softmax_lastdim_kernel_impl", "log_softmax": "log_softmax_lastdim_kernel_impl",
    "mse_loss": "mse_cpu", "binary_cross_entropy": "binary_cross_entropy",
}


def refuse_bool(op: str, dt: _dtype.dtype) -> None:
    """Raise PyTorch's error when ``op`` meets a bool tensor (``dt`` bool): a
    ``NotImplementedError`` (a ``RuntimeError``) naming the kernel, as PyTorch's dispatch."""
    if dt is _dtype.bool:
        if op == "topk":
            raise RuntimeError("topk does not support bool dtypes on CPU")
        raise NotImplementedError(f"\"{_NO_BOOL_KERNEL[op]}\" not implemented for 'Bool'")
