"""Elementwise math with broadcasting and type promotion, and its derivatives."""
from __future__ import annotations

import cmath
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype, _raw
from .._shape import broadcast_shapes
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _flags, _no_grad, is_grad_enabled
from ._common import (NULL_CTX, call, check_same_device, is_scalar, prepare_binary, refuse_bool,
                      refuse_complex, sparse_fallback, to_scalar)
from . import complexnum
from .conversion import _TYPE_NAMES, fit_result, inplace, to, write_out
from .shape import sum_to_shape, view_dtype
from .indexing import _index_along, check_index_copy, index_copy, index_fill, masked_fill
from .indexing import where as _where

__all__ = [
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
    "maximum", "minimum", "atan2", "neg", "abs", "sign", "exp", "expm1", "log", "log2", "log10",
    "log1p", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "erf",
    "floor", "ceil", "round", "trunc", "frac", "reciprocal", "clamp", "clip", "lerp",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isnan", "isinf", "isfinite",
    "unary_inplace", "binary_inplace", "index_copy_inplace", "rsub", "positive", "sgn",
    "nan_to_num", "softplus_raw",
    "signbit", "exp2", "logaddexp", "hypot", "gelu_erf", "subtract", "multiply", "divide",
    "negative", "absolute", "greater", "greater_equal", "less", "less_equal", "not_equal", "where",
]


# --------------------------------------------------------------------- binary
class _Binary(Function):
    op = ""

    @staticmethod
    def _save_operands(ctx: Any, a: Any, b: Any, *extra: Tensor, save_a: bool = True,
                       save_b: bool = True) -> None:
        """Save both operands (tensors with their version, Python numbers as they are), then
        ``extra`` tensors (``ctx.saved_tensors[2:]``). ``save_a``/``save_b`` false: that operand
        is not needed by the derivatives asked for, so it is not saved (as PyTorch, which then
        does not check its version: changing it in place afterwards is allowed)."""
        ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
        ctx.save_for_backward(a if ta and save_a else None, b if tb and save_b else None, *extra)
        ctx.scalars = (None if ta else a, None if tb else b)

    @staticmethod
    def _operands(ctx: Any) -> tuple[Any, Any]:
        ta, tb = ctx.saved_tensors[:2]
        return (ta if ta is not None else ctx.scalars[0], tb if tb is not None else ctx.scalars[1])

    @classmethod
    def _run(cls, a: Any, b: Any, dt: Any) -> Tensor:
        return _raw.binary(cls.op, a, b, dt)


def _conj_operands(ctx: Any) -> tuple[Any, Any]:
    """The saved operands, conjugated when complex: a product rule's ``g * f'`` becomes PyTorch's
    ``g * conj(f')`` for complex inputs (real ones come back unchanged)."""
    a, b = _Binary._operands(ctx)
    if isinstance(a, Tensor):
        a = complexnum.conj(a)
    elif isinstance(a, (complex, np.complexfloating)):
        a = a.conjugate()
    if isinstance(b, Tensor):
        b = complexnum.conj(b)
    elif isinstance(b, (complex, np.complexfloating)):
        b = b.conjugate()
    return a, b


class _Add(_Binary):
    _backward_name = "AddBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Tensor:
        t = a if isinstance(a, Tensor) else b
        return _raw.binary("add", a, b, t._v.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return g, g


class _Sub(_Binary):
    _backward_name = "SubBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Tensor:
        t = a if isinstance(a, Tensor) else b
        return _raw.binary("sub", a, b, t._v.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return g, (-g if ctx.needs_input_grad[1] else None)


class _Mul(_Binary):
    _backward_name = "MulBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Tensor:
        # d/da needs b, d/db needs a (PyTorch saves each only when the other's grad is needed)
        need = ctx.needs_input_grad
        _Binary._save_operands(ctx, a, b, save_a=need[1], save_b=need[0])
        t = a if isinstance(a, Tensor) else b
        return _raw.binary("mul", a, b, t._v.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        a, b = _conj_operands(ctx)
        ga = g * b if ctx.needs_input_grad[0] else None
        gb = g * a if ctx.needs_input_grad[1] else None
        return ga, gb


class _Div(_Binary):
    _backward_name = "DivBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Tensor:
        t = a if isinstance(a, Tensor) else b
        out = _raw.binary("div", a, b, t._v.dtype)
        if not isinstance(a, Tensor):
            # number / tensor: PyTorch computes reciprocal(b) * a, which saves the result, not b
            # (b may change in place afterwards); -a/b^2 = -out^2/a
            _Binary._save_operands(ctx, a, b, out, save_b=False)
        else:
            # d/da = 1/b, d/db = -a/b^2: a is needed only for b's gradient (as PyTorch)
            _Binary._save_operands(ctx, a, b, save_a=ctx.needs_input_grad[1])
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        a, b = _conj_operands(ctx)
        if b is None:  # number / tensor
            out = complexnum.conj(ctx.saved_tensors[2])
            return None, (g * 0.0 if a == 0 else -g * (out * out) / a)
        ga = g / b if ctx.needs_input_grad[0] else None
        # -g * (a / b) / b, in PyTorch's order: b * b underflows to 0 from |b| < 1e-154
        # (float64) where a / b / b is still finite
        gb = -g * ((a / b) / b) if ctx.needs_input_grad[1] else None
        return ga, gb


# the dtypes whose number exponent of +-0.5 PyTorch computes as a root (float16 uses pow)
_ROOT_POW = (_dtype.float32, _dtype.float64, _dtype.bfloat16)


class _Pow(_Binary):
    _backward_name = "PowBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Tensor:
        t = a if isinstance(a, Tensor) else b
        if not isinstance(b, Tensor) and b in (0.5, -0.5) and t._v.dtype in _ROOT_POW:
            # PyTorch's kernel takes a number exponent of +-0.5 as sqrt / rsqrt: -0.0 ** -0.5
            # is -inf (and the derivative of -0.0 ** 0.5 too), -inf ** 0.5 is NaN
            out = _raw.unary("sqrt" if b > 0 else "rsqrt", a)
        else:
            out = _raw.binary("pow", a, b, t._v.dtype)
        # the result only for the exponent's gradient (a^b log a); with a scalar exponent only
        # the base is saved, so changing the result in place is allowed (as PyTorch)
        if ctx.needs_input_grad[1]:
            _Binary._save_operands(ctx, a, b, out)
        else:
            _Binary._save_operands(ctx, a, b)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        a, b = _conj_operands(ctx)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            if not isinstance(b, Tensor) and b == 0:
                ga = g * 0.0
            else:
                # b * a^(b-1); where b == 0 the derivative is 0 (torch masks it the same way)
                ga = g * (a ** (b - 1) * b)
                if isinstance(b, Tensor):
                    ga = _where(b == 0, 0.0, ga)
        if ctx.needs_input_grad[1]:
            # d/db a^b = a^b log(a); where a == 0 and b >= 0 the limit is 0
            out = complexnum.conj(ctx.saved_tensors[2])
            if g._v.dtype.is_complex:
                # complex: the principal log (and no limit rule: a^b is not continuous at 0)
                loga = log(a) if isinstance(a, Tensor) else cmath.log(a) if a != 0 else math.nan
                return ga, g * (out * loga)
            loga = log(a) if isinstance(a, Tensor) else math.log(a) if a > 0 else \
                -math.inf if a == 0 else math.nan  # (0 ** -2 * log 0 is -inf, as PyTorch)
            gb = g * (out * loga)
            if isinstance(a, Tensor):
                gb = _where(logical_and(a == 0, b >= 0), 0.0, gb)
            elif a == 0:
                gb = _where(b >= 0, 0.0, gb)
        return ga, gb


def _maxmin_function(op: str, node_name: str) -> type:
    """The Function of ``maximum`` or ``minimum``; ties split the gradient evenly (as PyTorch)."""

    class _MaxMin(Function):
        _backward_name = node_name

        @staticmethod
        def forward(ctx: Any, a: Tensor, b: Any) -> Tensor:
            ctx.save_for_backward(a, b if isinstance(b, Tensor) else None)
            ctx.scalar_b = b
            return _raw.binary(op, a, b, a._v.dtype)

        @staticmethod
        def backward(ctx: Any, g: Tensor) -> Any:
            a, tb = ctx.saved_tensors
            b = tb if tb is not None else ctx.scalar_b
            # PyTorch's rule: each side gets g unless it loses; a NaN pair loses nowhere, so
            # both sides get g (the result is NaN either way)
            # (masked to an exact 0: an infinite g must not become NaN)
            a_loses = a < b if op == "maximum" else a > b
            b_loses = a > b if op == "maximum" else a < b
            gt = g * (1.0 - (a == b).to(g.dtype) * 0.5)
            ga = gt.masked_fill(a_loses, 0.0) if ctx.needs_input_grad[0] else None
            gb = gt.masked_fill(b_loses, 0.0) if ctx.needs_input_grad[1] else None
            return ga, gb

    return _MaxMin


_Maximum = _maxmin_function("maximum", "MaximumBackward0")
_Minimum = _maxmin_function("minimum", "MinimumBackward0")


class _Atan2(_Binary):
    _backward_name = "Atan2Backward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(a, b)
        return _raw.binary("atan2", a, b, a._v.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        a, b = ctx.saved_tensors
        denom = a * a + b * b
        # PyTorch's derivative is 0 at the origin (not 0 / 0)
        recip = _where(denom == 0, 0.0, 1.0 / denom)
        return g * b * recip, g * -a * recip


def add(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input + alpha * other`` with broadcasting."""
    if alpha != 1 or isinstance(alpha, (bool, np.bool_)):
        alpha, other = _alpha(input, other, alpha)
    try:
        a, b, _ = prepare_binary(input, other, "add")
    except TypeError:  # a sparse operand (already times alpha), or a bad one
        return sparse_fallback("add", add, input, other, out=out)
    return _out(call(_Add, a, b), out, "add", (input, other))


def sub(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input - alpha * other``."""
    ba, bb = _is_bool(input), _is_bool(other)
    if ba and bb:  # as PyTorch (a bool scalar counts as a bool tensor)
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    if alpha != 1 or isinstance(alpha, (bool, np.bool_)):
        alpha, other = _alpha(input, other, alpha)
    try:
        a, b, _ = prepare_binary(input, other, "sub")
    except TypeError:  # a sparse operand (already times alpha), or a bad one
        return sparse_fallback("sub", sub, input, other, out=out)
    return _out(call(_Sub, a, b), out, "sub", (input, other))


subtract = sub


def _alpha(input: Any, other: Any, alpha: Any) -> tuple[Any, Any]:
    """``alpha`` of ``add``/``sub`` as PyTorch takes it: no float for an integer result, and
    stored into the result's dtype by the checked conversion (``alpha=2**40`` for int32 raises);
    a bool alpha only for a bool result, and for a bool result any alpha is taken as a bool (the
    sum stays bool: ``True + 2 * True`` is ``True``). Returns ``alpha`` and ``alpha * other``."""
    dt = _dtype.result_type(input, other)
    if isinstance(alpha, (bool, np.bool_)) and dt is not _dtype.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not (dt.is_floating_point or dt.is_complex):
        if isinstance(alpha, (float, np.floating, complex, np.complexfloating)):
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                               "point number.")
        alpha = bool(alpha) if dt is _dtype.bool else _dtype.fit_scalar(alpha, dt.name)
    elif dt.is_floating_point:
        if isinstance(alpha, (complex, np.complexfloating)):
            raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                               "complex number.")
        check_float_scalar(alpha, dt)
    if isinstance(other, Tensor):  # scaled in the result's dtype: int8 * 2 into int16 must not wrap
        return alpha, mul(to(other, dtype=dt) if other.dtype is not dt else other, alpha)
    # a bool number times a bool alpha stays a bool (Python's True * True is the int 1)
    return alpha, (bool(other and alpha) if dt is _dtype.bool else other * alpha)


# the largest finite value of each floating dtype (PyTorch's checked Scalar conversion)
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float32": float(np.finfo(np.float32).max), "float64": math.inf}


def check_float_scalar(value: Any, dt: _dtype.dtype) -> None:
    """PyTorch's checked conversion of a number argument (``alpha=``, ``value=``) into the real
    floating dtype ``dt``: a finite value beyond the dtype's range, or a complex one with an
    imaginary part, cannot be converted (inf and NaN can)."""
    if isinstance(value, (complex, np.complexfloating)):
        bad = value.imag != 0
        value = value.real
    else:
        bad = False
    if not bad:
        v = float(value)  # (OverflowError for a huge int, as PyTorch's argument parser)
        bad = math.isfinite(v) and math.fabs(v) > _FLOAT_MAX.get(dt.name, math.inf)
    if bad:
        raise RuntimeError(f"value cannot be converted to type "
                           f"{_dtype.CPP_TYPE_NAMES.get(dt.name, dt.name)} without overflow")


def _is_bool(x: Any) -> bool:
    """A bool tensor or a bool scalar."""
    if isinstance(x, Tensor):
        return x._v.dtype is _dtype.bool
    return isinstance(x, (bool, np.bool_))


def rsub(input: Any, other: Any, alpha: Any = 1) -> Tensor:
    return sub(other, input, alpha=alpha)


def mul(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """Elementwise product."""
    try:
        a, b, _ = prepare_binary(input, other, "mul")
    except TypeError:  # a sparse operand, or a bad one
        return sparse_fallback("mul", mul, input, other, out=out)
    return _out(call(_Mul, a, b), out, "mul", (input, other))


multiply = mul


def div(input: Any, other: Any, *, rounding_mode: str | None = None, out: Tensor | None = None,
        _differentiable: bool = True) -> Tensor:
    """Division: true (``None``), ``"trunc"`` or ``"floor"`` rounding."""
    if rounding_mode is None:
        try:
            a, b, _ = prepare_binary(input, other, "div", float_only=True)
        except TypeError:  # a sparse operand, or a bad one
            return sparse_fallback("div", div, input, other, out=out)
        return _out(call(_Div, a, b), out, "div", (input, other))
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                         f"found '{rounding_mode}'")
    try:
        a, b, dt = prepare_binary(input, other, "div")
    except TypeError:  # a sparse operand, or a bad one
        return sparse_fallback("div", div, input, other, rounding_mode=rounding_mode, out=out)
    refuse_bool("floor_divide" if rounding_mode == "floor" else "div_trunc", dt)
    if not dt.is_floating_point:
        a, b = _wrap_int(a, dt), _wrap_int(b, dt)
        _check_int_divisor(b)
    elif _differentiable and is_grad_enabled() and any(
            isinstance(t, Tensor) and t.requires_grad for t in (a, b)):
        # PyTorch records it (DivBackward2) with a zero derivative: a loss through it alone
        # backpropagates zeros instead of refusing
        return _out(call(_RoundedDiv, a, b, rounding_mode, dt), out, "div", (input, other))
    return _out(_rounded_div(a, b, rounding_mode, dt), out, "div", (input, other))


class _RoundedDiv(Function):
    """Division rounded to an integral value (``trunc``/``floor``): derivative zeros."""

    _backward_name = "DivBackward2"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, rounding_mode: str, dt: _dtype.dtype) -> Tensor:
        ctx.shapes = [tuple(t.shape) if isinstance(t, Tensor) else None for t in (a, b)]
        return _rounded_div(a, b, rounding_mode, dt)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return tuple(None if s is None else _creation.zeros(s, dtype=g.dtype, device=g.device)
                     for s in ctx.shapes) + (None, None)


def _rounded_div(a: Any, b: Any, rounding_mode: str, dt: _dtype.dtype) -> Tensor:
    if dt.is_floating_point and rounding_mode == "trunc":
        res = _raw.unary("trunc", _raw.binary("div", a, b, dt))
    elif rounding_mode == "floor" and dt in _dtype.HALF_FLOATS and isinstance(b, Tensor):
        # (a scalar numerator is rounded to the type first; a scalar divisor takes the float32
        # path below, as PyTorch's kernel does)
        if not isinstance(a, Tensor):
            a = _creation.full_like(b, float(np.float32(a)) if dt is _dtype.bfloat16 else a,
                                    dtype=dt)
        res = _floor_div_16(a, b, dt)
    elif rounding_mode == "floor":  # floats: PyTorch's div_floor (fmod based: -4 // inf is -1,
        res = _raw.binary("floordiv", a, b, dt)  # -inf // 2 is NaN), as numpy's floor_divide
    else:
        # truncation for integers: floor division corrected where the signs differ
        fl = _raw.binary("floordiv", a, b, dt)
        rem = _raw.binary("remainder", a, b, dt)
        nz = _raw.binary("ne", rem, 0, _dtype.bool)
        sa = _raw.binary("lt", a, 0, _dtype.bool) if isinstance(a, Tensor) else a < 0
        sb = _raw.binary("lt", b, 0, _dtype.bool) if isinstance(b, Tensor) else b < 0
        diff = _raw.binary("logical_xor", sa, sb, _dtype.bool, like=fl)
        fix = _raw.binary("logical_and", nz, diff, _dtype.bool)
        res = _raw.binary("add", fl, _raw.cast(fix, dt), dt)
    return res


def _floor_div_16(a: Tensor, b: Tensor, dt: _dtype.dtype) -> Tensor:
    """Floor division of two 16-bit float tensors as PyTorch's ``div_floor_floating`` computes it
    in that type: every step rounded to it (its Half/BFloat16 arithmetic), which can differ from
    the float32 quotient rounded once (80.5 // -0.0489 in float16: -1648, not -1647)."""
    bin_, bool_ = _raw.binary, _dtype.bool
    mod = bin_("fmod", a, b, dt)
    quo = bin_("div", bin_("sub", a, mod, dt), b, dt)
    # the quotient of a - mod is exact in real numbers; one less where mod and b differ in sign
    wrong_sign = bin_("logical_xor", bin_("lt", b, 0, bool_), bin_("lt", mod, 0, bool_), bool_,
                      like=quo)
    fix = bin_("logical_and", bin_("ne", mod, 0, bool_), wrong_sign, bool_)
    quo = bin_("sub", quo, _raw.cast(fix, dt), dt)
    fl = _raw.unary("floor", quo)
    up = bin_("gt", bin_("sub", quo, fl, dt), 0.5, bool_)  # (rounding error past one half)
    fl = bin_("add", fl, _raw.cast(up, dt), dt)
    q = bin_("div", a, b, dt)
    zero = bin_("mul", q, 0.0, dt)  # a zero quotient takes a / b's sign (finite there)
    res = _raw.where(bin_("eq", quo, 0, bool_), zero, fl, dt, like=fl)
    return _raw.where(bin_("eq", b, 0, bool_), q, res, dt, like=fl)  # x // 0 is x / 0


true_divide = div
divide = div


def floor_divide(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    # no derivative in PyTorch: out= is allowed while an input requires grad
    res = div(input, other, rounding_mode="floor", _differentiable=False)
    return res if out is None else write_out("floor_divide", res, out, (input, other),
                                             differentiable=False)


def _wrap_int(x: Any, dt: _dtype.dtype) -> Any:
    """A Python integer operand wrapped into the integer dtype ``dt`` as PyTorch converts it
    (``int8 // 200`` divides by -56, ``// 256`` by 0), so that signs and zero divisors are judged
    on the number the kernel uses; tensors unchanged."""
    if isinstance(x, Tensor):
        return x
    span = 1 << (8 * dt.itemsize)
    low = -(span >> 1) if dt.is_signed else 0
    return (x - low) % span + low


def _check_int_divisor(b: Any) -> None:
    """Integer division by zero raises on every backend (devices would return garbage): one small
    reduction and a host read, paid only by integer division."""
    if isinstance(b, Tensor):
        if b.numel() and not bool(_raw.reduce("min", _raw.binary("ne", b, 0, _dtype.bool),
                                              range(b.dim()), False).item()):
            raise RuntimeError("ZeroDivisionError")  # PyTorch's whole message
    elif b == 0:
        raise RuntimeError("ZeroDivisionError")


def _modulus(prim: str, node: str, rounding: str, doc: str) -> Any:
    """The op ``prim`` (``remainder`` or ``fmod``): ``a - round(a / b) * b`` computed by the backend
    in one pass, whose gradient for ``b`` is ``-g * round(a / b)`` (``rounding``: ``floor`` or
    ``trunc``, a Tensor method)."""

    class _Mod(_Binary):
        _backward_name = node

        @staticmethod
        def forward(ctx: Any, a: Any, b: Any) -> Tensor:
            _Binary._save_operands(ctx, a, b)
            t = a if isinstance(a, Tensor) else b
            return _raw.binary(prim, a, b, t._v.dtype)

        @staticmethod
        def backward(ctx: Any, g: Tensor) -> Any:
            a, b = _Binary._operands(ctx)
            gb = None
            if ctx.needs_input_grad[1]:
                gb = -g * getattr(a / b, rounding)()
            return g, gb

    def op(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
        a, b, dt = prepare_binary(input, other, prim)
        refuse_bool(prim, dt)
        if not dt.is_floating_point:
            a, b = _wrap_int(a, dt), _wrap_int(b, dt)
            _check_int_divisor(b)
        return _out(call(_Mod, a, b), out, prim, (input, other))

    op.__name__ = op.__qualname__ = prim
    op.__doc__ = doc
    return op


remainder = _modulus("remainder", "RemainderBackward0", "floor",
                     "Python-style modulus (sign of the divisor).")
fmod = _modulus("fmod", "FmodBackward0", "trunc",
                "C-style modulus (sign of the dividend). One backend op, not ``a - trunc(a / b) * b``, "
                "which is NaN for an infinite ``b`` (``fmod(x, inf)`` is ``x``).")


def pow(input: Any, exponent: Any, *, out: Tensor | None = None) -> Tensor:
    """``input ** exponent`` (tensor or scalar on either side)."""
    if out is not None:
        return _out(pow(input, exponent), out, "pow", (input, exponent))
    if _AUTOCAST.on and (_ac_out := _autocast_call("pow", pow, input, exponent=exponent)) is not _SKIP:
        return _ac_out
    try:
        a, b, dt = prepare_binary(input, exponent, "pow")
    except TypeError:  # a sparse operand, or a bad one
        return sparse_fallback("pow", pow, input, exponent)
    if dt is _dtype.bool and isinstance(a, Tensor) and not isinstance(b, Tensor):
        # as PyTorch: a bool tensor to a bool scalar power is x (True) or all True (False)
        return a.clone() if b else _raw.fill(_raw.new_like(a), True)
    refuse_bool("pow", dt)
    if not isinstance(b, Tensor):  # the exponent must fit a narrow integer dtype (PyTorch)
        _dtype.check_storable(np.asarray(b), dt, c_name=True)
    if not (dt.is_floating_point or dt.is_complex):
        if not isinstance(b, Tensor):
            if b < 0:  # PyTorch refuses only a negative number as the exponent
                raise RuntimeError("Integers to negative integer powers are not allowed.")
        elif b.numel() and bool(_raw.reduce("min", b, range(b.dim()), False).item() < 0):
            return _int_pow_negative(a, b, dt)
    return call(_Pow, a, b)


def _int_pow_negative(a: Any, b: Tensor, dt: _dtype.dtype) -> Tensor:
    """Integer ``a ** b`` where some exponents of the tensor ``b`` are negative: PyTorch's integer
    kernel gives ``1 / a**-b`` truncated there (1 for a base of 1, -1 or 1 by the exponent's parity
    for -1, else 0, also for 0), and the usual power elsewhere."""
    neg = lt(b, 0)
    ta = a if isinstance(a, Tensor) else _creation.full_like(b, a, dtype=dt)
    res = call(_Pow, ta, _where(neg, 0, b).to(dt))
    minus_one = _where(ne(remainder(b, 2), 0), -1, 1)
    small = _where(eq(ta, 1), 1, _where(eq(ta, -1), minus_one, 0))
    return _where(neg, small, res).to(dt)


def maximum(input: Tensor, other: Any, *, out: Tensor | None = None) -> Tensor:
    """Elementwise maximum (NaN propagates)."""
    a, b, dt = prepare_binary(input, other, "maximum")
    refuse_complex("maximum", dt)
    operands = (input, other)
    if not isinstance(a, Tensor):
        a, b = b, a
    return _out(call(_Maximum, a, b), out, "maximum", operands)


def minimum(input: Tensor, other: Any, *, out: Tensor | None = None) -> Tensor:
    """Elementwise minimum (NaN propagates)."""
    a, b, dt = prepare_binary(input, other, "minimum")
    refuse_complex("minimum", dt)
    operands = (input, other)
    if not isinstance(a, Tensor):
        a, b = b, a
    return _out(call(_Minimum, a, b), out, "minimum", operands)


def atan2(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return write_out("atan2", atan2(input, other), out, (input, other))
    if _AUTOCAST.on and (_ac_out := _autocast_call("atan2", atan2, input, other=other)) is not _SKIP:
        return _ac_out
    a, b, _ = prepare_binary(input, other, "atan2", float_only=True)
    if not isinstance(a, Tensor):
        a = _creation.full(b.shape, a, dtype=b.dtype, device=b.device)
    if not isinstance(b, Tensor):
        b = _creation.full(a.shape, b, dtype=a.dtype, device=a.device)
    return call(_Atan2, a, b)


def _out(res: Tensor, out: Tensor | None, name: str = "", inputs: tuple = (), **rules: Any) -> Tensor:
    """``res``, or with ``out=`` given ``res`` written into ``out`` (``rules``: write_out's)."""
    return res if out is None else write_out(name, res, out, inputs, **rules)


# ---------------------------------------------------------------- comparisons
def _compare(op: str, input: Any, other: Any, out: Tensor | None = None) -> Tensor:
    a, b, dt = prepare_binary(input, other, op)
    if op not in ("eq", "ne"):
        refuse_complex(f"{op}_cpu", dt)  # complex numbers have no order
    t = a if isinstance(a, Tensor) else b
    # comparisons have no derivative: out= is allowed while an input requires grad (PyTorch)
    res = _raw.binary(op, a, b, _dtype.bool, like=t)
    return res if out is None else write_out(op, res, out, (input, other), differentiable=False)


def eq(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _compare("eq", input, other, out)


def ne(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _compare("ne", input, other, out)


def lt(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _compare("lt", input, other, out)


def le(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _compare("le", input, other, out)


def gt(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _compare("gt", input, other, out)


def ge(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _compare("ge", input, other, out)


greater = gt
greater_equal = ge
less = lt
less_equal = le
not_equal = ne


def _logical(op: str, input: Any, other: Any, out: Tensor | None = None) -> Tensor:
    a, b, dt = prepare_binary(input, other, op)
    if isinstance(a, Tensor) and a.dtype is not _dtype.bool:
        a = _raw.binary("ne", a, 0, _dtype.bool)
    if isinstance(b, Tensor) and b.dtype is not _dtype.bool:
        b = _raw.binary("ne", b, 0, _dtype.bool)
    t = a if isinstance(a, Tensor) else b
    res = _raw.binary(op, bool(a) if not isinstance(a, Tensor) else a,
                      bool(b) if not isinstance(b, Tensor) else b, _dtype.bool, like=t)
    return res if out is None else write_out(op, res, out, (input, other), differentiable=False)


def logical_and(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _logical("logical_and", input, other, out)


def logical_or(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _logical("logical_or", input, other, out)


def logical_xor(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _logical("logical_xor", input, other, out)


def _bitwise(op: str, input: Any, other: Any, out: Tensor | None = None) -> Tensor:
    a, b, dt = prepare_binary(input, other, op)
    if dt.is_floating_point:  # PyTorch's NotImplementedError (a RuntimeError)
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{_type_name(dt)}'")
    t = a if isinstance(a, Tensor) else b
    res = _raw.binary(op, a, b, dt, like=t)
    return res if out is None else write_out(op, res, out, (input, other), differentiable=False)


def bitwise_and(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _bitwise("bitwise_and", input, other, out)


def bitwise_or(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _bitwise("bitwise_or", input, other, out)


def bitwise_xor(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    return _bitwise("bitwise_xor", input, other, out)


def bitwise_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:  # the input's dtype exactly (PyTorch)
        return _out(bitwise_not(input), out, "bitwise_not", (input,), dtype_rule="same",
                    differentiable=False)
    if input.dtype is _dtype.bool:
        return logical_not(input)
    if input.dtype.is_floating_point:  # PyTorch's NotImplementedError (a RuntimeError)
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    return _raw.binary("bitwise_xor", input, -1, input.dtype)


def logical_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    res = _raw.unary("logical_not", input, _dtype.bool)
    return res if out is None else write_out("logical_not", res, out, (input,),
                                             differentiable=False)


def _float_class(op: str, input: Tensor, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """``isnan``/``isinf`` (``op``, the top-level function ``fn``): all False for a tensor that
    is neither floating nor complex."""
    try:
        if not (input.dtype.is_floating_point or input.dtype.is_complex):
            return _raw.fill(_raw.new_like(input, dtype=_dtype.bool), False)
        return _raw.unary(op, input, _dtype.bool)
    except AttributeError:  # not a dense tensor: a sparse one (its values), or re-raised
        return sparse_fallback(op, fn, input)


def isnan(input: Tensor) -> Tensor:
    return _float_class("isnan", input, isnan)


def isinf(input: Tensor) -> Tensor:
    return _float_class("isinf", input, isinf)


def isfinite(input: Tensor) -> Tensor:
    return logical_not(logical_or(isnan(input), isinf(input)))


def signbit(input: Tensor) -> Tensor:
    """Whether the sign bit is set: true for -0.0 and for a NaN with its sign bit set (as
    PyTorch; no comparison sees the sign of a NaN, so the bits are read as an integer)."""
    try:
        if not input._v.dtype.is_floating_point:
            return lt(input, 0)
    except AttributeError:  # not a dense tensor: a sparse one (its values), or re-raised
        return sparse_fallback("signbit", signbit, input)
    bits = {2: _dtype.int16, 4: _dtype.int32, 8: _dtype.int64}[input._v.dtype.itemsize]
    with _no_grad():
        return lt(view_dtype(input.detach().contiguous(), bits), 0)


# ---------------------------------------------------------------------- unary
_HALF = _dtype.HALF_FLOATS


def in_float32(fn: Any, *args: Any, dtype: Any = None) -> Tensor:
    """``fn(*args)``; when the result dtype (``dtype``, else the first argument's) is a 16-bit
    float, computed on float32 copies of the tensor arguments and rounded once, as PyTorch's
    kernels do (a composition in 16 bits rounds every intermediate)."""
    dt = args[0]._v.dtype if dtype is None else dtype
    if dt not in _HALF:
        return fn(*args)
    up = [to(a, dtype=_dtype.float32) if isinstance(a, Tensor) else a for a in args]
    return to(fn(*up), dtype=dt)


def _float_input(x: Tensor) -> Tensor:
    """Integer inputs of floating functions (exp, sin ...) are promoted to the default dtype."""
    if x._v.dtype.is_floating_point or x._v.dtype.is_complex:
        return x
    return to(x, dtype=_dtype.get_default_dtype())


_NO_BOOL = {  # PyTorch's errors for unary ops undefined on bool tensors
    "neg": "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
           "invert a mask, use the `~` or `logical_not()` operator instead.",
    "relu": "Boolean inputs not supported for relu",
}


_NO_COMPLEX = {  # PyTorch's errors for unary ops undefined on complex tensors
    "floor": "floor is not supported for complex inputs",
    "ceil": "ceil is not supported for complex inputs",
    "trunc": "trunc is not supported for complex inputs",
    "round": "round is not supported for complex inputs",
    "relu": "clamp is not supported for complex types",
    "erf": "\"erf_vml_cpu\" not implemented for 'ComplexFloat'",
}


def _make_unary(name: str, op: str, grad: Any, save: str = "input", float_only: bool = True,
                node: str | None = None, takes_out: bool = True,
                complex_fwd: Any = None) -> Any:
    """Build a unary op from a derivative rule ``grad(g, x, y) -> dx`` (``x`` input, ``y`` output).

    ``complex_fwd``: the value for a complex input, computed from ops here instead of the
    backend's primitive (whose complex version is not PyTorch's, as numpy's ``log1p``).

    ``takes_out``: whether PyTorch's function takes ``out=``. Its dtype must then be the result's
    for the ops that keep their input's dtype (not ``float_only``: ``neg``, ``floor`` ...),
    castable from it for the floating ones (``exp`` of an integer tensor into float64 ...)."""

    class _U(Function):
        _backward_name = node or f"{name.capitalize()}Backward0"

        @staticmethod
        def forward(ctx: Any, x: Tensor) -> Tensor:
            if complex_fwd is not None and x._v.dtype.is_complex:
                with _no_grad():
                    y = complex_fwd(x)
            else:
                y = _raw.unary(op, x)
            if save == "input":
                ctx.save_for_backward(x)
            elif save == "output":
                ctx.save_for_backward(y)
            elif save == "both":
                ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx: Any, g: Tensor) -> Any:
            saved = ctx.saved_tensors
            if g._v.dtype.is_complex:
                # PyTorch's convention for holomorphic f: g * conj(f'(z)), which is the real
                # rule evaluated at conj(z) (f has real Taylor coefficients)
                saved = tuple(complexnum.conj(t) for t in saved)
            if save == "input":
                return grad(g, saved[0], None)
            if save == "output":
                return grad(g, None, saved[0])
            if save == "both":
                return grad(g, saved[0], saved[1])
            return grad(g, None, None)

    _U.__name__ = _U.__qualname__ = f"_{name.capitalize()}"

    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            if not takes_out:
                raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
            return _out(fn(input), out, name, (input,),
                        dtype_rule="cast" if float_only else "same")
        if not isinstance(input, Tensor):
            # (a sparse tensor carries its own version: the hook, looked up on this path only)
            hook = getattr(type(input), "_sparse_op", None)
            if hook is not None:
                return hook(name, fn, input)
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        if _AUTOCAST.on and (_ac_out := _autocast_call(name, fn, input)) is not _SKIP:
            return _ac_out
        if input._v.dtype.is_complex and name in _NO_COMPLEX:
            raise NotImplementedError(_NO_COMPLEX[name])
        if input._v.dtype is _dtype.bool:
            if name in _NO_BOOL:
                raise RuntimeError(_NO_BOOL[name])
            if name in ("abs", "floor", "ceil", "trunc", "round"):
                refuse_bool(name, _dtype.bool)
        x = _float_input(input) if float_only else input
        return call(_U, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``."
    fn._fn_cls = _U  # type: ignore[attr-defined]
    return fn


def _zero_grad(g: Tensor, x: Any, y: Any) -> Tensor:
    # zeros, as PyTorch's zeros_like(grad): ``g * 0`` would turn an infinite or NaN g into NaN
    return _creation.zeros_like(g)


neg = _make_unary("neg", "neg", lambda g, x, y: -g, save="none", float_only=False)
_abs_real = _make_unary("abs", "abs", lambda g, x, y: g * x.sign(), float_only=False)
_sign_real = _make_unary("sign", "sign", _zero_grad, save="none", float_only=False)


def abs(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # PyTorch's name
    """Elementwise ``abs``; ``|z|`` in the real dtype for a complex tensor."""
    if out is not None:
        return _out(abs(input), out, "abs", (input,), dtype_rule="same")
    if isinstance(input, Tensor) and input._v.dtype.is_complex:
        return complexnum.abs_complex(input)
    return _abs_real(input)


def sign(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Elementwise ``sign`` (-1, 0, 1; 0 for NaN); complex tensors take :func:`sgn`."""
    if out is not None:
        return _out(sign(input), out, "sign", (input,), dtype_rule="same")
    if isinstance(input, Tensor) and input._v.dtype.is_complex:
        raise RuntimeError("Unlike NumPy, torch.sign is not intended to support complex numbers. "
                           "Please use torch.sgn instead.")
    return _sign_real(input)


def sgn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``sign`` for real tensors; ``z / |z|`` (0 at 0) for complex ones."""
    if out is not None:
        return _out(sgn(input), out, "sgn", (input,), dtype_rule="same")
    if isinstance(input, Tensor) and input._v.dtype.is_complex:
        return complexnum.sgn(input)
    return _sign_real(input)


absolute = abs
negative = neg
exp = _make_unary("exp", "exp", lambda g, x, y: g * y, save="output")
expm1 = _make_unary("expm1", "expm1", lambda g, x, y: g * (y + 1.0), save="output")
log = _make_unary("log", "log", lambda g, x, y: g / x)


def _clog1p(z: Tensor) -> Tensor:
    """Complex log1p from the parts (c10's formula, PyTorch's on CUDA; its CPU kernel agrees to
    rounding): ``atan2(y, 1 + x)`` and, for ``|z| < 0.5``, ``log1p(x (2 + x) + y^2) / 2`` (``x``
    itself where that underflows to 0), else ``log(hypot(1 + x, y))``. (numpy's is
    ``log(1 + z)``: 1e-7 + 1e-7i lost half its digits.)"""
    x, y = complexnum.real(z), complexnum.imag(z)
    theta = atan2(y, add(x, 1.0))
    r = add(mul(x, add(x, 2.0)), mul(y, y))
    small = _where(eq(r, 0), x, mul(log1p(r), 0.5))
    big = log(hypot(add(x, 1.0), y))
    re = _where(lt(hypot(x, y), 0.5), small, big)
    # a NaN part makes both NaN (as PyTorch: log1p(inf + nanj) is nan + nanj, not inf + nanj)
    nan = logical_or(isnan(x), isnan(y))
    return complexnum.complex(_where(nan, math.nan, re).contiguous(),
                              _where(nan, math.nan, theta).contiguous())


log1p = _make_unary("log1p", "log1p", lambda g, x, y: g / (x + 1.0), complex_fwd=_clog1p)
sqrt = _make_unary("sqrt", "sqrt", lambda g, x, y: g / (y * 2.0), save="output")
rsqrt = _make_unary("rsqrt", "rsqrt", lambda g, x, y: g * (y ** 3 * -0.5), save="output")
sin = _make_unary("sin", "sin", lambda g, x, y: g * x.cos())
cos = _make_unary("cos", "cos", lambda g, x, y: g * -x.sin())
tan = _make_unary("tan", "tan", lambda g, x, y: g * (y * y + 1.0), save="output")
tanh = _make_unary("tanh", "tanh", lambda g, x, y: g * (1.0 - y * y), save="output")
sigmoid = _make_unary("sigmoid", "sigmoid", lambda g, x, y: g * (y * (1.0 - y)), save="output")
def _relu_grad(g: Tensor, x: Any, y: Tensor) -> Tensor:
    """PyTorch's threshold_backward: 0 where the result is <= 0, else g (a NaN result passes g).

    ``y`` is relu's output, never negative: ``y != 0`` is ``not (y <= 0)`` (NaN included) in one
    comparison. A select, not ``g * mask``: an infinite or NaN g gives exactly 0 where masked,
    as in PyTorch (a product would give NaN there)."""
    if not _flags.grad:  # nothing records: the same two primitives without the op layer
        keep = _raw.binary("ne", y, to_scalar(0, y._v.dtype), _dtype.bool)
        return _raw.where(keep, g, to_scalar(0, g._v.dtype), g._v.dtype, g)
    return _where(y != 0, g, 0.0)


relu = _make_unary("relu", "relu", _relu_grad, save="output", float_only=False, takes_out=False)
erf = _make_unary("erf", "erf",
                  lambda g, x, y: g * ((-(x * x)).exp() * (2.0 / math.sqrt(math.pi))))
floor = _make_unary("floor", "floor", _zero_grad, save="none", float_only=False)
ceil = _make_unary("ceil", "ceil", _zero_grad, save="none", float_only=False)
trunc = _make_unary("trunc", "trunc", _zero_grad, save="none", float_only=False)
reciprocal = _make_unary("reciprocal", "reciprocal", lambda g, x, y: g * -(y * y),
                         save="output")
_round0 = _make_unary("round", "round", _zero_grad, save="none", float_only=False)


# (PyTorch's name, shadowing the builtin)
def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:
    """Round half to even (``decimals`` digits)."""
    if out is not None:
        return _out(round(input, decimals=decimals), out, "round", (input,), dtype_rule="same")
    refuse_bool("round", input.dtype)
    if input.dtype.is_complex:
        raise NotImplementedError(_NO_COMPLEX["round"])
    if not input.dtype.is_floating_point:
        return input.clone()
    if decimals == 0:
        return _round0(input)
    if input.dtype in _HALF:  # scaled in float32, as PyTorch (1234.5 * 100 overflows float16)
        return in_float32(lambda x: round(x, decimals=decimals), input)
    scale = 10.0 ** decimals
    return div(_round0(mul(input, scale)), scale)


def frac(input: Tensor) -> Tensor:
    if not input.dtype.is_floating_point:  # PyTorch's kernel is floating only
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{_type_name(input.dtype)}'")
    return sub(input, trunc(input))


def positive(input: Tensor) -> Tensor:
    if input.dtype is _dtype.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def square(input: Tensor) -> Tensor:
    # PyTorch's pow(input, 2): the dtype comes from the promotion table (bool -> int64)
    dt = _dtype.result_type(input, 2)
    x = input if dt is input.dtype else to(input, dtype=dt)
    return mul(x, x)


def log2(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return _out(log2(input), out, "log2", (input,))
    if _AUTOCAST.on and (_ac_out := _autocast_call("log2", log2, input)) is not _SKIP:
        return _ac_out
    return _div_real(log(input), math.log(2.0))


def log10(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return _out(log10(input), out, "log10", (input,))
    if _AUTOCAST.on and (_ac_out := _autocast_call("log10", log10, input)) is not _SKIP:
        return _ac_out
    return _div_real(log(input), math.log(10.0))


def _div_real(z: Tensor, c: float) -> Tensor:
    """``z / c`` for a real number ``c``; a complex ``z`` part by part (as PyTorch's complex
    log2/log10): a complex division by ``c + 0i`` makes ``inf * 0`` cross terms, and
    ``log2(0j)`` came out ``-inf + nanj`` instead of ``-inf + 0j``."""
    if not z._v.dtype.is_complex:
        return div(z, c)
    return complexnum.complex(div(complexnum.real(z), c).contiguous(),
                              div(complexnum.imag(z), c).contiguous())


def exp2(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return _out(exp2(input), out, "exp2", (input,))
    if input.dtype.is_complex:
        return exp(mul(input, math.log(2.0)))
    if input.dtype in _HALF:  # in float32, rounded once (as PyTorch)
        return in_float32(exp2, input)
    # 2 ** x, not exp(x ln 2): exact at integers (2 ** 100 was 20 float32 ulps off)
    return pow(2.0, input)


def logaddexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``log(exp(input) + exp(other))``, PyTorch's way: ``max + log1p(exp(-|input - other|))``,
    and equal infinities give themselves (``-inf`` for two ``-inf``: a log-space sum of nothing,
    where the composition gave ``inf - inf = nan``); 16-bit floats in float32, rounded once."""
    if out is not None:
        return write_out("logaddexp", logaddexp(input, other), out, (input, other))
    _tensors_only("logaddexp", input, other)
    dt = _log_add_dtype("logaddexp", input, other)
    if dt in _HALF:
        return in_float32(logaddexp, input, other, dtype=dt)
    return call(_LogAddExp, to(input, dtype=dt), to(other, dtype=dt))


def _tensors_only(name: str, input: Any, other: Any) -> None:
    """PyTorch's TypeError for a Python number given to a binary op that takes tensors only."""
    for arg, position, t in (("input", 1, input), ("other", 2, other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(t).__name__}")


def _log_add_dtype(name: str, input: Tensor, other: Tensor) -> _dtype.dtype:
    """The computation dtype of logaddexp/logaddexp2: the operands' common one, which must be
    floating (PyTorch has no integer kernel; a bool beside a float is promoted)."""
    dt = _dtype.result_type(input, other)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_type_name(dt)}'")
    return dt


def logaddexp2(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``log2(2**input + 2**other)``, PyTorch's way: ``max + log1p(2**-|input - other|) / ln 2``
    (equal infinities give themselves); 16-bit floats in float32, rounded once."""
    if out is not None:
        return write_out("logaddexp2", logaddexp2(input, other), out, (input, other))
    _tensors_only("logaddexp2", input, other)
    dt = _log_add_dtype("logaddexp2", input, other)
    if dt in _HALF:
        return in_float32(logaddexp2, input, other, dtype=dt)
    return call(_LogAddExp2, to(input, dtype=dt), to(other, dtype=dt))


class _LogAddExp(Function):
    """logaddexp with PyTorch's derivatives ``g / (1 + exp(other - input))`` and
    ``g / (1 + exp(input - other))``; :class:`_LogAddExp2` the same in base 2."""

    _backward_name = "LogaddexpBackward0"

    @staticmethod
    def _pow(x: Tensor) -> Tensor:
        return exp(x)

    @staticmethod
    def _log1p(x: Tensor) -> Tensor:
        return log1p(x)

    @classmethod
    def forward(cls, ctx: Any, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(a, b)
        with _no_grad():
            m = maximum(a, b)
            r = add(m, cls._log1p(cls._pow(neg(abs(sub(a, b))))))
            same_inf = isinf(a).logical_and(eq(a, b))
            return _where(same_inf, m, r)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor) -> Any:
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = sum_to_shape(div(g, add(cls._pow(sub(b, a)), 1.0)), tuple(a.shape)) \
            if need[0] else None
        gb = sum_to_shape(div(g, add(cls._pow(sub(a, b)), 1.0)), tuple(b.shape)) \
            if need[1] else None
        return ga, gb


class _LogAddExp2(_LogAddExp):
    _backward_name = "Logaddexp2Backward0"

    @staticmethod
    def _pow(x: Tensor) -> Tensor:
        return exp2(x)

    @staticmethod
    def _log1p(x: Tensor) -> Tensor:
        return mul(log1p(x), 1.0 / math.log(2.0))


def hypot(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow or underflow in the squares (as C's
    ``hypot``, which PyTorch calls: 1e200 and 1e200 give 1.41e200, not inf); an infinite
    operand gives inf even beside a NaN; 16-bit floats in float32, rounded once."""
    if out is not None:
        return write_out("hypot", hypot(input, other), out, (input, other))
    _tensors_only("hypot", input, other)
    dt = _dtype.result_type(input, other)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"hypot_cpu\" not implemented for '{_type_name(dt)}'")
    if dt in _HALF:
        return in_float32(hypot, input, other, dtype=dt)
    return call(_Hypot, to(input, dtype=dt), to(other, dtype=dt))


class _Hypot(Function):
    """:func:`hypot` with PyTorch's derivatives ``g * input / out`` and ``g * other / out``."""

    _backward_name = "HypotBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, y: Tensor) -> Tensor:
        with _no_grad():
            a, b = abs(x), abs(y)
            big, small = maximum(a, b), minimum(a, b)
            safe = _where(eq(big, 0), 1.0, big)  # (0 / 0 where both are 0)
            ratio = div(small, safe)
            out = mul(big, sqrt(add(mul(ratio, ratio), 1.0)))
            out = _where(logical_or(isinf(a), isinf(b)), math.inf, out)
        ctx.save_for_backward(x, y, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, y, out = ctx.saved_tensors
        gx = sum_to_shape(g * x / out, tuple(x.shape)) if ctx.needs_input_grad[0] else None
        gy = sum_to_shape(g * y / out, tuple(y.shape)) if ctx.needs_input_grad[1] else None
        return gx, gy


class _Softplus(Function):
    """``softplus`` as one node whose derivative is PyTorch's ``sigmoid(beta x)`` (1 above the
    threshold): the composed value's kinks (``|bx|`` and ``relu``) had a zero derivative at
    ``x == 0``, where softplus's is 1/2. ``threshold`` None: none (``-log_sigmoid(-x)``)."""

    _backward_name = "SoftplusBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, beta: float, threshold: float | None) -> Tensor:
        ctx.beta = beta
        bx = mul(x, beta) if beta != 1 else x
        # log1p(exp(-|bx|)) + max(bx, 0) never overflows
        y = add(log1p(exp(neg(abs(bx)))), relu(bx))
        if beta != 1:
            y = div(y, beta)
        linear = None
        if threshold is not None:
            linear = gt(bx, threshold)
            y = _where(linear, x, y)
            if ctx is not NULL_CTX:  # recorded: 1 where linear, 0 elsewhere, for backward
                linear = linear.to(y.dtype)
        ctx.save_for_backward(y, linear)
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        y, linear = ctx.saved_tensors
        # sigmoid(bx) = 1 - exp(-log(1 + exp(bx))) from the output, and 1 where softplus is
        # linear: elementwise ops that fuse (no where, no sigmoid kernel), smooth everywhere (so
        # differentiable again)
        s = neg(expm1(mul(y, -ctx.beta)))
        return mul(g, s if linear is None else maximum(s, linear)), None, None


def softplus_raw(x: Tensor, beta: float = 1.0, threshold: float | None = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold`` (numerically stable; no
    threshold when None)."""
    return call(_Softplus, x, beta, threshold)


def gelu_erf(x: Tensor) -> Tensor:
    return mul(mul(x, 0.5), add(erf(mul(x, 1.0 / math.sqrt(2.0))), 1.0))


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (the dtype's finite
    extremes by default); a complex tensor's real and imaginary parts each so (as PyTorch)."""
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if isinstance(v, (complex, np.complexfloating)):
            raise TypeError(f"nan_to_num(): argument '{name}' must be float, not complex")
    if out is not None:
        if out.dtype is not input.dtype:  # (PyTorch's kernel takes no other dtype)
            raise RuntimeError(f"nan_to_num: dtype of out: {_TYPE_NAMES[out.dtype.name]} should "
                               f"be same as input: {_TYPE_NAMES[input.dtype.name]}")
        return _out(nan_to_num(input, nan, posinf, neginf), out, "nan_to_num", (input,))
    if input.dtype.is_complex:
        if is_grad_enabled() and input.requires_grad:
            raise RuntimeError("nan_to_num does not support automatic differentiation for "
                               "outputs with complex dtype.")
        return complexnum.complex(nan_to_num(complexnum.real(input), nan, posinf, neginf),
                                  nan_to_num(complexnum.imag(input), nan, posinf, neginf))
    info = _dtype.finfo(input.dtype) if input.dtype.is_floating_point else None
    if info is None:
        return input.clone()
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    try:
        out = _where(isnan(input), nan, input)
    except TypeError:  # a sparse input (isnan gave a sparse mask: where refuses it), or re-raised
        return sparse_fallback("nan_to_num", nan_to_num, input, nan, posinf, neginf)
    out = _where(logical_and(isinf(out), gt(out, 0)), posinf, out)
    return _where(logical_and(isinf(out), lt(out, 0)), neginf, out)


# ---------------------------------------------------------------------- clamp
class _Clamp(Function):
    _backward_name = "ClampBackward1"

    @staticmethod
    def forward(ctx: Any, x: Tensor, lo: Any, hi: Any) -> Tensor:
        ctx.save_for_backward(x, lo if isinstance(lo, Tensor) else None,
                              hi if isinstance(hi, Tensor) else None)
        ctx.bounds = (lo, hi)
        y = x
        if lo is not None:
            y = _raw.binary("maximum", y, lo, x._v.dtype)
        if hi is not None:
            y = _raw.binary("minimum", y, hi, x._v.dtype)
        return y if y is not x else _raw.cast(x, x._v.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, tlo, thi = ctx.saved_tensors
        lo = tlo if tlo is not None else ctx.bounds[0]
        hi = thi if thi is not None else ctx.bounds[1]
        mask = None
        if lo is not None:
            mask = ge(x, lo)
        if hi is not None:
            m2 = le(x, hi)
            mask = m2 if mask is None else logical_and(mask, m2)
        assert mask is not None  # clamp has at least one bound
        gx = _where(mask, g, 0.0)
        glo = ghi = None
        # min(max(x, lo), hi): where lo > hi the result is hi, so lo gets nothing there
        if isinstance(lo, Tensor) and ctx.needs_input_grad[1]:
            lo_wins = lt(x, lo) if hi is None else logical_and(lt(x, lo), le(lo, hi))
            glo = _where(lo_wins, g, 0.0)
        if isinstance(hi, Tensor) and ctx.needs_input_grad[2]:
            hi_wins = gt(x, hi) if lo is None else logical_or(gt(x, hi), gt(lo, hi))
            ghi = _where(hi_wins, g, 0.0)
        return gx, glo, ghi


def clamp(input: Tensor, min: Any = None, max: Any = None, *,  # PyTorch's parameter names
          out: Tensor | None = None) -> Tensor:
    """Limit values to ``[min, max]`` (either may be ``None``; tensors broadcast)."""
    if out is not None:  # PyTorch's kernel with number bounds keeps the dtype exactly
        rule = "cast" if isinstance(min, Tensor) or isinstance(max, Tensor) else "same"
        return _out(clamp(input, min, max), out, "clamp", (input, min, max), dtype_rule=rule)
    if isinstance(input, Tensor) and input._v.dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    x = input
    lo, hi = min, max
    if isinstance(lo, Tensor) or isinstance(hi, Tensor):
        # the dtype from the operands as given: a 0-d bound does not widen an int8 input, and
        # would once broadcast to the input's shape
        dt = _dtype.result_type(x, *(v for v in (lo, hi) if v is not None))
        shapes = [x.shape] + [t.shape for t in (lo, hi) if isinstance(t, Tensor)]
        shape = broadcast_shapes(*shapes)
        x = x.expand(shape) if x.shape != shape else x
        lo = lo.expand(shape) if isinstance(lo, Tensor) and lo.shape != shape else lo
        hi = hi.expand(shape) if isinstance(hi, Tensor) and hi.shape != shape else hi
        for bound in (lo, hi):
            if isinstance(bound, Tensor):
                check_same_device(x, bound, "clamp")
        x = to(x, dtype=dt) if x.dtype is not dt else x
        lo = to(lo, dtype=dt) if isinstance(lo, Tensor) else to_scalar(lo, dt) if lo is not None \
            else None
        hi = to(hi, dtype=dt) if isinstance(hi, Tensor) else to_scalar(hi, dt) if hi is not None \
            else None
    else:
        dt = _dtype.result_type(x, *(v for v in (lo, hi) if v is not None))
        if dt is not x.dtype:
            x = to(x, dtype=dt)
        for bound in (lo, hi):  # a bound must fit a narrow integer dtype (PyTorch checks it)
            if bound is not None:
                _dtype.check_storable(np.asarray(bound), x.dtype, c_name=True)
        lo = to_scalar(lo, x.dtype) if lo is not None else None
        hi = to_scalar(hi, x.dtype) if hi is not None else None
    return call(_Clamp, x, lo, hi)


clip = clamp


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``, PyTorch's way: ``end - (end - input) * (1 - weight)``
    where ``|weight| >= 0.5`` (exact at ``weight == 1``), in float32 for 16-bit floats, rounded
    once."""
    for what, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and isinstance(input, Tensor) and t.dtype is not input.dtype \
                and not (what == "weight" and t.dim() == 0):
            cpp = _dtype.CPP_TYPE_NAMES  # (PyTorch's lerp takes one dtype)
            raise RuntimeError(f"expected dtype {cpp.get(input.dtype.name, input.dtype.name)} for "
                               f"`{what}` but got dtype {cpp.get(t.dtype.name, t.dtype.name)}")
    if isinstance(weight, Tensor) and weight.dim() == 0 and isinstance(input, Tensor) \
            and weight.dtype is not input.dtype:
        # a 0-dim weight of another dtype takes part in the type promotion, as a 0-dim operand
        # does (PyTorch: a bool input with a float weight gives a float result)
        dt = _dtype.result_type(input, end, weight)
        input, end, weight = (t if t.dtype is dt else to(t, dtype=dt) for t in (input, end, weight))
    dt = _dtype.result_type(input, end, weight) if isinstance(weight, Tensor) else \
        _dtype.result_type(input, end)
    if not (dt.is_floating_point or dt.is_complex):  # PyTorch's kernels are floating only
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(dt)}'")
    if isinstance(weight, (complex, np.complexfloating)) and not dt.is_complex:
        # PyTorch's checked conversion of the Scalar weight into the real dtype
        if weight.imag != 0:
            raise RuntimeError(f"value cannot be converted to type "
                               f"{_dtype.CPP_TYPE_NAMES.get(dt.name, dt.name)} without overflow")
        weight = float(weight.real)
    if dt in _HALF:
        return in_float32(lerp, input, end, weight, dtype=dt)
    if isinstance(weight, Tensor):
        return call(_LerpTensor, input, end, weight)
    return call(_LerpScalar, input, end, weight)


def _lerp_value(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    diff = sub(end, input)
    if isinstance(weight, Tensor):
        near = abs(weight) < 0.5
        return _where(near, add(input, mul(weight, diff)), sub(end, mul(diff, rsub(weight, 1.0))))
    if math.hypot(weight.real, weight.imag) < 0.5:  # |weight|, a complex one's included
        return add(input, mul(weight, diff))
    return sub(end, mul(diff, 1.0 - weight))


class _LerpScalar(Function):
    """``lerp`` as one node with PyTorch's derivatives: ``g * (1 - w)`` for ``input``, ``g * w``
    for ``end`` and ``g * (end - input)`` for a tensor ``w`` (the composition's chain rule gave
    ``g - g * w`` for ``input``: NaN for an infinite ``g``)."""

    _backward_name = "LerpBackward0"

    @staticmethod
    def forward(ctx: Any, input: Tensor, end: Tensor, weight: Any) -> Tensor:
        ctx.save_for_backward(input, end, weight if isinstance(weight, Tensor) else None)
        ctx.weight = weight
        with _no_grad():
            return _lerp_value(input, end, weight)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        input, end, wt = ctx.saved_tensors
        need = ctx.needs_input_grad
        w = ctx.weight if wt is None else wt
        # lerp is linear in each argument: PyTorch's g * conj(d lerp / d arg) for complex ones
        if wt is not None:
            w, one_minus_w = complexnum.conj(w), complexnum.conj(rsub(w, 1.0))
        else:
            one_minus_w = (1.0 - w).conjugate()
            w = w.conjugate()
        gi = sum_to_shape(mul(g, one_minus_w), tuple(input.shape)) if need[0] else None
        ge = sum_to_shape(mul(g, w), tuple(end.shape)) if need[1] else None
        gw = sum_to_shape(mul(g, complexnum.conj(sub(end, input))), tuple(wt.shape)) \
            if wt is not None and len(need) > 2 and need[2] else None
        return gi, ge, gw


class _LerpTensor(_LerpScalar):
    _backward_name = "LerpBackward1"


# ------------------------------------------------------------------- in place
def binary_inplace(fn: Any, x: Tensor, other: Any, **kw: Any) -> Tensor:
    """``x.op_(other)``: the result is computed with ``fn`` and written into ``x``."""
    res_dtype = _dtype.result_type(x, other)
    if not _can_cast(res_dtype, x.dtype):
        raise RuntimeError(f"result type {_type_name(res_dtype)} can't be cast to the desired "
                           f"output type {_type_name(x.dtype)}")
    if isinstance(other, Tensor):
        shape = broadcast_shapes(x.shape, other.shape)
        if shape != x.shape:
            raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast "
                               f"shape {list(shape)}")

    def checked(res: Tensor) -> Tensor:
        # the op may promote beyond result_type (div_ on integers gives floats)
        if not _can_cast(res._v.dtype, x._v.dtype):
            raise RuntimeError(f"result type {_type_name(res.dtype)} can't be cast to the desired "
                               f"output type {_type_name(x.dtype)}")
        return res

    def raw_into(t: Tensor) -> None:
        prim = _DIRECT_INPLACE.get(fn)
        if prim is not None and res_dtype is t._v.dtype and not kw and _direct_operand(t, other) \
                and (prim != "div" or t._v.dtype.is_floating_point) \
                and (prim != "sub" or t._v.dtype is not _dtype.bool):  # sub raises PyTorch's error
            # one pass, straight into t (the contract allows out == an input view)
            b = other
            if isinstance(other, Tensor):
                b = other._v
                if b.shape != t._v.shape:
                    b = _raw.bare_expand(b, t._v.shape)
            else:
                b = to_scalar(other, t._v.dtype)
            _raw.binary_into(prim, t, b)  # (inplace() bumps the version)
            return
        res = checked(fn(t._alias(), other, **kw))
        _raw.copy_into(t, res)

    return inplace(x, lambda old: checked(fn(old, other, **kw)), raw_into, (other,))


def _direct_operand(t: Tensor, other: Any) -> bool:
    if not isinstance(other, Tensor):
        return is_scalar(other)
    return (other._v.dtype is t._v.dtype and other._storage.device is t._storage.device
            and not (other._storage is t._storage and other._v.offset != t._v.offset))


def unary_inplace(fn: Any, x: Tensor, *args: Any, **kw: Any) -> Tensor:
    """``x.op_()`` for a unary ``fn``."""
    def raw_into(t: Tensor) -> None:
        res = fn(t._alias(), *args, **kw)
        if not _can_cast(res._v.dtype, t._v.dtype):
            raise RuntimeError(f"result type {_type_name(res.dtype)} can't be cast to the desired "
                               f"output type {_type_name(t.dtype)}")
        _raw.copy_into(t, fit_result(res, t))

    return inplace(x, lambda old: fn(old, *args, **kw), raw_into,
                   tuple(a for a in args if isinstance(a, Tensor)), fn in _ONE_VALUE_WRITES)


def index_copy_inplace(x: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``x.index_copy_(dim, index, source)``. When autograd does not record it, ``source`` is
    scattered straight into a contiguous ``x`` of its dtype: the general in-place path computes
    the result out of place and copies it back, two passes over all of ``x``, where a KV cache
    written one position per decode step needs only the positions written."""
    def raw_into(t: Tensor) -> None:
        if (t.dim() and isinstance(source, Tensor) and source._v.dtype is t._v.dtype
                and source._storage.device is t._storage.device and t._v.is_contiguous()
                and not _AUTOCAST.on):
            check_index_copy(t, dim, index, source)
            d, idx = _index_along(t, dim, index, tuple(source.shape),  # checks the indices
                                  "index_copy_(): index")
            _raw.scatter(t, d, idx, source, None)  # (inplace() bumps the version)
            return
        _raw.copy_into(t, fit_result(index_copy(t._alias(), dim, index, source), t))

    return inplace(x, lambda old: index_copy(old, dim, index, source), raw_into,
                   tuple(a for a in (index, source) if isinstance(a, Tensor)))


# in-place ops that write one value to every element they touch: PyTorch lets them write into a
# tensor whose elements share memory (an expanded view)
_ONE_VALUE_WRITES = (masked_fill, index_fill)


def _can_cast(res: Any, out: Any) -> bool:
    """PyTorch's rule for writing a result into an existing tensor (``canCast``): any cast within
    a category or to a higher one (float64 into float32, int64 into int32, int into float), never
    floating into integer or bool, nor integer into bool."""
    return res._kind <= out._kind


def where(condition: Tensor, input: Any = None, other: Any = None, *,
          out: Tensor | None = None) -> Any:
    """``input`` where ``condition`` holds, else ``other`` (broadcasting; scalars allowed), or
    ``nonzero(condition, as_tuple=True)`` with neither. ``out=`` takes tensors only, and its dtype
    must be the result's, as PyTorch's overloads."""
    if out is None:
        return _where(condition, input, other)
    if input is None and other is None:
        raise TypeError("where(): out= is taken only with input and other tensors")
    for pos, (arg, v) in enumerate((("input", input), ("other", other)), 2):
        if not isinstance(v, Tensor):
            raise TypeError(f"where(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")
    res = _where(condition, input, other)
    if out.dtype is not res.dtype:
        raise RuntimeError(f"Expected out type to be {_type_name(res.dtype)} but got "
                           f"{_type_name(out.dtype)}")
    return write_out("where", res, out, (condition, input, other), dtype_rule="exact")


def _type_name(d: Any) -> str:
    return _TYPE_NAMES[d.name]


_DIRECT_INPLACE = {add: "add", sub: "sub", mul: "mul", div: "div"}
