"""Integer and floating-point bit arithmetic: ``bitwise_left_shift``/``bitwise_right_shift``,
``gcd``, ``lcm``, ``ldexp``, ``frexp``, ``nextafter``.

Shifts are multiplications and floor divisions by powers of two (the primitives have no shift),
``gcd`` is Euclid's algorithm run on whole tensors until every pair is done, and ``nextafter``
steps the bit pattern of the float by one through a same-size integer view.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

from .. import _creation, _dtype
from .._shape import broadcast_shapes
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _no_grad, is_grad_enabled
from ._common import call
from . import elementwise
from .conversion import write_out
from .shape import sum_to_shape, view_dtype
from .indexing import where

__all__ = ["bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "ldexp", "frexp",
           "nextafter"]

frexp_result = namedtuple("frexp_result", ["mantissa", "exponent"])


def _ints(name: str, a: Any, b: Any) -> tuple[Tensor, Tensor]:
    ref = a if isinstance(a, Tensor) else b
    if not isinstance(ref, Tensor):
        raise TypeError(f"{name}(): at least one argument must be a Tensor")
    dt = _dtype.result_type(a, b)
    if dt.is_floating_point or dt is _dtype.bool:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{elementwise._type_name(dt)}'")
    # a number is wrapped into dt as PyTorch converts it (int8 << 300 shifts by 44: all bits out)
    ta = a.to(dt) if isinstance(a, Tensor) else _creation.full_like(
        ref, elementwise._wrap_int(a, dt), dtype=dt)
    tb = b.to(dt) if isinstance(b, Tensor) else _creation.full_like(
        ref, elementwise._wrap_int(b, dt), dtype=dt)
    return ta, tb


def _pow2(b: Tensor, bits: int) -> Tensor:
    """``2 ** b`` for ``0 <= b < bits`` (other entries: 1; the callers mask them)."""
    ok = elementwise.logical_and(b >= 0, b < bits)
    return _creation.full_like(b, 2) ** where(ok, b, 0)


def bitwise_left_shift(input: Any, other: Any) -> Tensor:
    """``input << other`` (integers; bits shifted out are lost, shifts past the width give 0)."""
    a, b = _ints("lshift", input, other)
    bits = a.dtype.itemsize * 8
    with _no_grad():
        out = a * _pow2(b, bits)  # integer products wrap, as a shift does
        return where(elementwise.logical_and(b >= 0, b < bits), out, 0).to(a.dtype)


def bitwise_right_shift(input: Any, other: Any) -> Tensor:
    """``input >> other`` (arithmetic: negative numbers round toward minus infinity; a count past
    the width or negative fills with the sign bit, as PyTorch's kernel does)."""
    a, b = _ints("rshift", input, other)
    bits = a.dtype.itemsize * 8
    with _no_grad():
        # 2**(bits-1) does not fit: shift by bits-2 then by one more
        big = b >= bits - 1
        part = elementwise.floor_divide(a, _pow2(where(big, bits - 2, b), bits))
        part = where(big, elementwise.floor_divide(part, 2), part)
        out = where(elementwise.logical_or(b >= bits, b < 0), where(a < 0, -1, 0), part)
        return out.to(a.dtype)


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Greatest common divisor (non-negative; ``gcd(0, 0) == 0``). Euclid's steps take C's
    remainder (``fmod``) as PyTorch's kernel does: they differ from the floored one only where
    ``abs`` wrapped (the dtype's minimum), and there PyTorch's result is the one given."""
    a, b = _ints("gcd", input, other)
    shape = broadcast_shapes(a.shape, b.shape)
    with _no_grad():
        a, b = elementwise.abs(a).expand(shape).clone(), elementwise.abs(b).expand(shape).clone()
        while b.numel() and bool(elementwise.ne(b, 0).any().item()):
            nz = elementwise.ne(b, 0)
            r = elementwise.fmod(a, where(nz, b, 1))
            a, b = where(nz, b, a), where(nz, r, 0)
        return a


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Least common multiple (non-negative; 0 when either is 0). PyTorch's ``abs(a / g * b)``:
    for 8 and 16 bit integers C computes it in ``int`` and the result wraps after ``abs``."""
    a, b = _ints("lcm", input, other)
    with _no_grad():
        g = gcd(a, b)
        q = elementwise.div(a, where(elementwise.eq(g, 0), 1, g), rounding_mode="trunc")
        if a.dtype.itemsize < 4:
            q, b = q.to(_dtype.int32), b.to(_dtype.int32)
        return elementwise.abs(q * b).to(a.dtype)


def _check_tensors(name: str, input: Any, other: Any) -> None:
    """PyTorch's TypeError for a Python number where ``name`` takes only tensors."""
    for arg, position, t in (("input", 1, input), ("other", 2, other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(t).__name__}")


def ldexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``input * 2 ** other``."""
    if out is not None:
        return write_out("ldexp", ldexp(input, other), out, (input, other))
    _check_tensors("ldexp", input, other)
    # the operands' common dtype (the default float for two integer tensors), as PyTorch
    dt = _dtype.result_type(input, other)
    if not dt.is_floating_point:
        dt = _dtype.get_default_dtype()
    x = input.to(dt)
    return x * 2.0 ** other.to(dt)


def frexp(input: Tensor) -> Any:
    """``(mantissa, exponent)`` with ``input == mantissa * 2 ** exponent`` and
    ``0.5 <= |mantissa| < 1`` (zero, inf and NaN: exponent 0, mantissa the input)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    with _no_grad():
        a = elementwise.abs(input)
        finite = elementwise.logical_and(elementwise.isfinite(input), elementwise.ne(input, 0))
        safe = where(finite, a, 1.0)
        e = elementwise.floor(elementwise.log2(safe)) + 1.0
        m = _scale_down(safe, e)
        # log2 may round across a power of two: bring the mantissa into [0.5, 1)
        hi, lo = m >= 1.0, m < 0.5
        e = where(hi, e + 1.0, where(lo, e - 1.0, e))
        m = where(hi, m * 0.5, where(lo, m * 2.0, m))
        m = where(finite, m * elementwise.sign(input), input)
        exp = where(finite, e, 0.0).to(_dtype.int32)
    if input.requires_grad and is_grad_enabled():
        m = call(_FrexpMantissa, input, m, exp)
    return frexp_result(m, exp)


def _scale_down(x: Tensor, e: Tensor) -> Tensor:
    """``x / 2**e`` exactly, for ``|x|`` near ``2**e``: in two halves, as ``2**e`` alone overflows
    at the largest exponents (3e38 in float32: 2**128) and ``2**-e`` at the subnormal ones (pow is
    exact for integral exponents, exp2 is not)."""
    half = elementwise.floor(e * 0.5)
    return x / 2.0 ** half / 2.0 ** (e - half)


class _FrexpMantissa(Function):
    """The mantissa ``input / 2**exponent`` (computed already), with PyTorch's derivative
    ``g / 2**exponent``; the exponent has none."""

    _backward_name = "FrexpBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, m: Tensor, exp: Tensor) -> Tensor:
        ctx.save_for_backward(exp)
        return m * 1  # (a new tensor: the node's output)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (exp,) = ctx.saved_tensors
        return g / elementwise.pow(2.0, exp.to(g.dtype)), None, None


def nextafter(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The next representable float after ``input`` towards ``other``; PyTorch's derivative
    passes the gradient to ``input`` and gives ``other`` zeros."""
    if out is not None:
        return write_out("nextafter", nextafter(input, other), out, (input, other))
    _check_tensors("nextafter", input, other)
    dt = _dtype.result_type(input, other)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{elementwise._type_name(dt)}'")
    return call(_NextAfter, input, other, dt)


class _NextAfter(Function):
    _backward_name = "NextafterBackward0"

    @staticmethod
    def forward(ctx: Any, input: Tensor, other: Tensor, dt: Any) -> Tensor:
        ctx.shapes = (tuple(input.shape), tuple(other.shape))
        return _next_after(input, other, dt)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        gi = sum_to_shape(g, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        go = _creation.zeros(ctx.shapes[1], dtype=g.dtype, device=g.device) \
            if ctx.needs_input_grad[1] else None
        return gi, go, None


def _next_after(input: Tensor, other: Tensor, dt: Any) -> Tensor:
    idt = {2: _dtype.int16, 4: _dtype.int32, 8: _dtype.int64}[dt.itemsize]
    with _no_grad():
        x = input.to(dt).expand(broadcast_shapes(input.shape, other.shape)).contiguous()
        y = other.to(dt).expand(x.shape).contiguous()
        bits = view_dtype(x.clone(), idt)
        up = elementwise.eq(x < y, x > 0)  # away from zero when moving further from it
        stepped = view_dtype((bits + where(up, 1, -1)).to(idt), dt)
        tiny = view_dtype(_creation.ones(x.shape, dtype=idt, device=x.device), dt)
        from_zero = where(y > 0, tiny, -tiny)
        out = where(elementwise.eq(x, 0), from_zero, stepped)
        out = where(elementwise.eq(x, y), y, out)
        return where(elementwise.logical_or(elementwise.isnan(x), elementwise.isnan(y)), float("nan"), out)
