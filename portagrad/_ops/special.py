"""Elementwise math built from the primitives: inverse trigonometric and hyperbolic functions,
``erfc``/``erfinv``, ``sinc``, ``logit``, ``xlogy``, ``copysign``, ``addcmul`` ...

The backend contract has no ``asin`` or ``sinh`` primitive, so each function here is computed from
ops that every backend has (``atan2``, ``sqrt``, ``expm1``, ``log1p`` ...), in the form that keeps
full precision (``sinh`` from ``expm1``, not ``exp``). Functions whose derivative is simpler than
the derivative of their composition are ``Function`` s with the closed-form derivative; the others
are plain compositions, differentiated through their parts.
"""
from __future__ import annotations

import math
from typing import Any

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _no_grad
from ._common import call, sparse_fallback
from . import complexnum, elementwise
from .elementwise import _float_input
from .indexing import where
from .conversion import write_out
from .shape import sum_to_shape

__all__ = [
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos",
    "arctan", "arcsinh", "arccosh", "arctanh", "arctan2", "deg2rad", "rad2deg", "sinc", "logit",
    "xlogy", "xlog1py", "erfc", "erfinv", "heaviside", "copysign", "addcmul", "addcdiv", "clamp_min",
    "clamp_max", "float_power", "logaddexp2", "fmax", "fmin", "isposinf", "isneginf", "isreal",
    "fix", "angle", "i0", "i1",
]

_LN2 = math.log(2.0)
# above this magnitude x*x overflows float32, and the log(2x) form of asinh/acosh is exact
_BIG = 1e8


def _check_tensor(name: str, x: Any, arg: str = "input", position: int = 1) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(x).__name__}")


def _unary(name: str, node: str, fwd: Any, grad: Any, doc: str,
           saves_output: bool = False) -> Any:
    """A differentiable unary op: ``fwd(x)`` (ops, run unrecorded) and the derivative
    ``grad(g, x, y)`` (ops, recorded for higher-order gradients). The output ``y`` is saved only
    with ``saves_output`` (where PyTorch's derivative saves its result; otherwise ``y`` is None),
    so that an in-place edit of the output is an error exactly where PyTorch's is."""

    class _U(Function):
        _backward_name = node

        @staticmethod
        def forward(ctx: Any, x: Tensor) -> Tensor:
            with _no_grad():
                y = elementwise.in_float32(fwd, x)
            if saves_output:
                ctx.save_for_backward(x, y)
            else:
                ctx.save_for_backward(x)
            return y

        @staticmethod
        def backward(ctx: Any, g: Tensor) -> Any:
            saved = ctx.saved_tensors
            x = saved[0]
            if x.dtype.is_complex:
                # these functions are holomorphic: PyTorch's (conjugate Wirtinger) gradient is
                # g * conj(f'(z)), and grad() is g * f'(z), linear in g
                return complexnum.conj_physical(
                    grad(complexnum.conj_physical(g), x, saved[1] if saves_output else None))
            return grad(g, x, saved[1] if saves_output else None)

    _U.__name__ = _U.__qualname__ = f"_{name.capitalize()}"

    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        try:
            _check_tensor(name, input)
        except TypeError:  # not a Tensor: a sparse one (its values), or re-raised
            return sparse_fallback(name, fn, input, out=out)
        if out is not None:
            return write_out(name, fn(input), out, (input,))
        if _AUTOCAST.on and (_ac_out := _autocast_call(name, fn, input)) is not _SKIP:
            return _ac_out
        return call(_U, _float_input(input))  # integers and bools computed in the default dtype

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _one_minus_sq(x: Tensor) -> Tensor:
    # (1 - x)(1 + x) keeps precision near |x| = 1, where 1 - x*x cancels
    return (1.0 - x) * (x + 1.0)


# ------------------------------------------------- complex inverse functions, from real parts
# PyTorch's complex asin ... atanh are the C library's (C99 Annex G: branch cuts, signed zeros,
# special values). Built here from real ops on the parts, never with a complex product by +-i:
# i * (x + 0i) is exactly -0 + xi, but the product's real part 0*x - 1*0 is +0, which puts the
# result on the other side of a branch cut. Multiplying by +-i is swapping the parts and
# negating one (exact, signed zeros kept).
def _parts(z: Tensor) -> tuple[Tensor, Tensor]:
    return complexnum.real(z), complexnum.imag(z)


def _join(re: Tensor, im: Tensor) -> Tensor:
    return complexnum.complex(re.contiguous(), im.contiguous())


def _signed(mag: Any, like: Tensor) -> Tensor:
    """``mag`` (>= 0, a number or a tensor) with the sign bit of ``like`` (-0.0 counts)."""
    return _times_sign(mag if isinstance(mag, Tensor) else _creation.full_like(like, mag), like)


def _times_sign(v: Tensor, like: Tensor) -> Tensor:
    """``v`` negated where ``like``'s sign bit is set (-0.0 included)."""
    return where(elementwise.signbit(like), -v, v)


def _csqrt(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """The principal square root of finite ``x + iy``, as parts: ``t = sqrt((|x| + |z|) / 2)``,
    then ``(t, y / 2t)`` for ``x >= 0`` and ``(|y| / 2t, t with y's sign)`` else, so the side of
    the cut along the negative reals is the sign of ``y``'s zero (``sqrt(-4 - 0i) = -2i``)."""
    t = elementwise.sqrt(elementwise.abs(x) * 0.5 + elementwise.hypot(x, y) * 0.5)
    two_t = where(elementwise.eq(t, 0), 1.0, t * 2.0)  # (z == 0: y / 1 is the signed zero y)
    right = elementwise.ge(x, 0)
    return where(right, t, elementwise.abs(y) / two_t), where(right, y / two_t, _signed(t, y))


def _any_inf(x: Tensor, y: Tensor) -> Tensor:
    return elementwise.logical_or(elementwise.isinf(x), elementwise.isinf(y))


def _casin(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """asin of finite ``x + iy`` (Kahan, "Branch cuts for complex elementary functions"):
    ``atan2(x, Re(sqrt(1 - z) sqrt(1 + z)))`` and ``asinh(Im(conj(sqrt(1 - z)) sqrt(1 + z)))``,
    accurate for small and large ``|z|`` alike (no cancellation: both terms of each part have
    the same sign)."""
    ar, ai = _csqrt(1.0 - x, -y)
    br, bi = _csqrt(x + 1.0, y)
    return elementwise.atan2(x, ar * br - ai * bi), _asinh_fwd(ar * bi - ai * br)


def _casinh(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """asinh(x + iy) = -i asin(i z) (parts swapped, one negated), with C99's special values."""
    a, b = _casin(-y, x)
    re, im = b, -a
    # an infinite part: |asinh| is infinite, at the angle of z in the right half-plane (odd)
    inf = _any_inf(x, y)
    re = where(inf, _signed(math.inf, x), re)
    im = where(inf, elementwise.atan2(y, elementwise.abs(x)), im)
    # asinh(NaN +- 0i) = NaN +- 0i: the zero imaginary part is kept (the C library's choice)
    keep = elementwise.logical_and(elementwise.isnan(x), elementwise.eq(y, 0))
    return re, where(keep, y, im)


def _cacos(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """acos(x + iy) (Kahan): ``2 atan2(Re sqrt(1 - z), Re sqrt(1 + z))`` and
    ``asinh(Im(conj(sqrt(1 + z)) sqrt(1 - z)))``, with C99's special values."""
    ar, ai = _csqrt(1.0 - x, -y)
    br, bi = _csqrt(x + 1.0, y)
    re = elementwise.atan2(ar, br) * 2.0
    im = _asinh_fwd(br * ai - bi * ar)
    inf = _any_inf(x, y)
    re = where(inf, elementwise.atan2(elementwise.abs(y), x), re)
    im = where(inf, -_signed(math.inf, y), im)
    # acos(+-0 + NaN i) = pi/2 + NaN i
    keep = elementwise.logical_and(elementwise.eq(x, 0), elementwise.isnan(y))
    return where(keep, math.pi / 2, re), im


def _cacosh(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """acosh(x + iy) (Kahan): ``asinh(Re(conj(sqrt(z - 1)) sqrt(z + 1)))`` and
    ``2 atan2(Im sqrt(z - 1), Re sqrt(z + 1))``, with C99's special values."""
    ar, ai = _csqrt(x - 1.0, y)
    br, bi = _csqrt(x + 1.0, y)
    re = _asinh_fwd(ar * br + ai * bi)
    im = elementwise.atan2(ai, br) * 2.0
    inf = _any_inf(x, y)
    re = where(inf, math.inf, re)
    im = where(inf, _signed(elementwise.atan2(elementwise.abs(y), x), y), im)
    # acosh(+-0 + NaN i) = NaN + i pi/2 (the C library's choice)
    keep = elementwise.logical_and(elementwise.eq(x, 0), elementwise.isnan(y))
    return re, where(keep, math.pi / 2, im)


def _catanh(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """atanh(x + iy) (after Kahan): the real part odd in ``x``, ``log1p(4|x| / h^2) / 4`` with
    ``h = |1 - |x| + iy|``, as ``(log(4|x| + h^2) - 2 log h) / 4`` near ``+-1`` (``h < 1/2``:
    ``4|x| / h^2`` would round ``1 + `` away, or overflow); the imaginary part
    ``atan2(2y, (1 - x)(1 + x) - y^2) / 2``. No cancellation near 0 or +-1 (where
    ``(log1p(z) - log1p(-z)) / 2`` loses digits); beyond ``|z| = 1/eps``, where the squares
    could overflow, ``atanh(z) = 1/z +- i pi/2`` to working precision; C99's special values."""
    eps = _dtype.finfo(x.dtype).eps
    r = elementwise.hypot(x, y)
    big = r > 1.0 / eps
    xs, ys = where(big, 0.0, x), where(big, 0.0, y)  # (the small formula, at a safe point)
    ax = elementwise.abs(xs)
    h = elementwise.hypot(1.0 - ax, ys)
    near = h < 0.5
    h_far = where(near, 1.0, h)
    re_far = elementwise.log1p(ax * 4.0 / (h_far * h_far)) * 0.25
    h_near = where(near, h, 1.0)
    re_near = (elementwise.log(ax * 4.0 + h_near * h_near) - elementwise.log(h_near) * 2.0) * 0.25
    re = _signed(where(near, re_near, re_far), xs)
    im = elementwise.atan2(ys * 2.0, (1.0 - xs) * (xs + 1.0) - ys * ys) * 0.5
    # |z| huge or infinite: Re(1/z) = x / |z|^2 (a zero of x's sign once |z| is infinite)
    re_big = where(elementwise.isinf(r), _signed(0.0, x), x / where(big, r, 1.0) / r)
    re = where(big, re_big, re)
    im = where(big, where(elementwise.isnan(y), y, _signed(math.pi / 2, y)), im)
    # atanh(+-0 + NaN i) = +-0 + NaN i
    keep = elementwise.logical_and(elementwise.eq(x, 0), elementwise.isnan(y))
    return where(keep, x, re), im


def _asin_fwd(x: Tensor) -> Tensor:
    if x.dtype.is_complex:  # asin(z) = -i asinh(i z): asinh's parts at (-y, x), swapped
        re, im = _parts(x)
        a, b = _casinh(-im, re)
        # asin(+-inf + NaN i) = NaN + inf i (the C library's sign, not the swap's)
        up = elementwise.logical_and(elementwise.isinf(re), elementwise.isnan(im))
        return _join(b, where(up, math.inf, -a))
    return elementwise.atan2(x, elementwise.sqrt(_one_minus_sq(x)))


def _acos_fwd(x: Tensor) -> Tensor:
    if x.dtype.is_complex:
        return _join(*_cacos(*_parts(x)))
    return elementwise.atan2(elementwise.sqrt(_one_minus_sq(x)), x)


def _atan_fwd(x: Tensor) -> Tensor:
    if x.dtype.is_complex:  # atan(z) = -i atanh(i z): atanh's parts at (-y, x), swapped
        re, im = _parts(x)
        a, b = _catanh(-im, re)
        # atan(+-inf + NaN i) = +-pi/2 + 0i (the C library's sign, not the swap's)
        zero = elementwise.logical_and(elementwise.isinf(re), elementwise.isnan(im))
        return _join(b, where(zero, 0.0, -a))
    return elementwise.atan2(x, _creation.ones_like(x))


def _csinh_cosh(x: Tensor, sinh: bool) -> Tensor:
    """sinh or cosh of a complex ``x + iy`` from the real functions, as the C library:
    ``sinh(x) cos(y) + i cosh(x) sin(y)``, ``cosh(x) cos(y) + i sinh(x) sin(y)``; beyond
    ``|x| = t`` (the largest integer whose ``exp`` fits) both are
    ``+-exp(|x|) / 2``, applied to cos and sin in steps of ``exp(t)`` (``sinh(-100 + 1e-14i)`` in
    complex64 has the finite imaginary part -1.6e29, not inf); C99's values where a product
    would be ``inf * 0`` or take a NaN from ``cos(inf)``."""
    re, im = _parts(x)
    c, s = elementwise.cos(im), elementwise.sin(im)
    a = elementwise.abs(re)
    # an integer (exact in the dtype, so a - t and exp(t) agree): 88 (float32), 709 (float64)
    t = float(math.floor(math.log(_dtype.finfo(re.dtype).max)))
    big = a > t
    a1 = where(big, a - t, 0.0)
    f1 = where(big, _creation.full_like(a, math.exp(t) / 2), 0.5)  # (in a's dtype)
    big2 = a1 > t
    f2 = where(big2, _creation.full_like(a, math.exp(t)), 1.0)
    e = elementwise.exp(where(big2, a1 - t, a1))  # (inf past 3t: the result overflows)

    def half_exp(trig: Tensor) -> Tensor:  # trig * exp(|x|) / 2, for |x| > t
        return trig * f1 * f2 * e

    xs = where(big, 0.0, re)  # (the real functions at a safe point where |x| > t)
    sh, ch = _sinh_fwd(xs), _cosh_fwd(xs)
    if sinh:
        out_re = where(big, _times_sign(half_exp(c), re), sh * c)
        out_im = where(big, half_exp(s), ch * s)
    else:
        out_re = where(big, half_exp(c), ch * c)
        out_im = where(big, _times_sign(half_exp(s), re), sh * s)
    # a real argument (y == +-0): the zero's sign (cosh: y * sign(x)); sinh(1000 + 0i) is
    # inf + 0i, not inf + (inf * 0)i
    real_arg = elementwise.eq(im, 0)
    out_im = where(real_arg, im if sinh else _times_sign(im, re), out_im)
    # y infinite or NaN: the zero stays where x is 0 (sinh's real part, cosh's imaginary
    # part), an infinite x gives +inf + NaN i, anything else NaN + NaN i
    bad_y = elementwise.logical_not(elementwise.isfinite(im))
    zero_x = elementwise.logical_and(bad_y, elementwise.eq(re, 0))
    inf_x = elementwise.logical_and(bad_y, elementwise.isinf(re))
    nan = _creation.full_like(re, math.nan)
    zero = re if sinh else _creation.zeros_like(re)
    out_re = where(inf_x, math.inf, out_re)
    out_re, out_im = (where(zero_x, zero, out_re), where(zero_x, nan, out_im)) if sinh else \
        (where(zero_x, nan, out_re), where(zero_x, zero, out_im))
    return _join(out_re, out_im)


def _sinh_fwd(x: Tensor) -> Tensor:
    if x.dtype.is_complex:
        return _csinh_cosh(x, sinh=True)
    return (elementwise.expm1(x) - elementwise.expm1(-x)) * 0.5


def _cosh_fwd(x: Tensor) -> Tensor:
    if x.dtype.is_complex:
        return _csinh_cosh(x, sinh=False)
    return (elementwise.exp(x) + elementwise.exp(-x)) * 0.5


def _asinh_fwd(x: Tensor) -> Tensor:
    if x.dtype.is_complex:
        return _join(*_casinh(*_parts(x)))
    a = elementwise.abs(x)
    a2 = a * a
    # log1p(a + a^2 / (1 + sqrt(1 + a^2))): accurate near 0; log(2a) where a^2 would overflow
    small = elementwise.log1p(a + a2 / (elementwise.sqrt(a2 + 1.0) + 1.0))
    big = elementwise.log(a) + _LN2
    # odd: the sign of x, -0.0's included (a product with sign(x) gave +0.0 for it)
    return copysign(where(a > _BIG, big, small), x)


def _acosh_slope(x: Tensor) -> Tensor:
    if x.dtype.is_complex:  # 1 / (sqrt(z - 1) sqrt(z + 1)): 1 / sqrt(z^2 - 1) has the wrong sign
        return (elementwise.sqrt(x - 1.0) * elementwise.sqrt(x + 1.0)).reciprocal()
    return ((x - 1.0) * (x + 1.0)).rsqrt()


def _acosh_fwd(x: Tensor) -> Tensor:
    if x.dtype.is_complex:
        return _join(*_cacosh(*_parts(x)))
    t = x - 1.0
    # log1p(t + sqrt(2t + t^2)) with t = x - 1: accurate near 1; log(2x) for large x
    small = elementwise.log1p(t + elementwise.sqrt(t * (t + 2.0)))
    return where(x > _BIG, elementwise.log(x) + _LN2, small)


def _atanh_fwd(x: Tensor) -> Tensor:
    if x.dtype.is_complex:
        return _join(*_catanh(*_parts(x)))
    return elementwise.log1p(x * 2.0 / (1.0 - x)) * 0.5


asin = _unary("asin", "AsinBackward0", _asin_fwd,
              lambda g, x, y: g * (1.0 - x * x).rsqrt(), "Elementwise arcsine (radians).")
acos = _unary("acos", "AcosBackward0", _acos_fwd,
              lambda g, x, y: -g * (1.0 - x * x).rsqrt(), "Elementwise arccosine (radians).")
atan = _unary("atan", "AtanBackward0", _atan_fwd,
              lambda g, x, y: g / (x * x + 1.0), "Elementwise arctangent (radians).")
sinh = _unary("sinh", "SinhBackward0", _sinh_fwd,
              lambda g, x, y: g * _cosh_op(x), "Elementwise hyperbolic sine.")
cosh = _unary("cosh", "CoshBackward0", _cosh_fwd,
              lambda g, x, y: g * sinh(x), "Elementwise hyperbolic cosine.")


def _cosh_op(x: Tensor) -> Tensor:  # cosh, for sinh's derivative (defined after it)
    return cosh(x)
asinh = _unary("asinh", "AsinhBackward0", _asinh_fwd,
               lambda g, x, y: g * (x * x + 1.0).rsqrt(), "Elementwise inverse hyperbolic sine.")
acosh = _unary("acosh", "AcoshBackward0", _acosh_fwd,
               lambda g, x, y: g * _acosh_slope(x), "Elementwise inverse hyperbolic cosine.")
atanh = _unary("atanh", "AtanhBackward0", _atanh_fwd,
               lambda g, x, y: g / (1.0 - x * x), "Elementwise inverse hyperbolic tangent.")

# numpy-style names (PyTorch has both)
arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh
arctan2 = elementwise.atan2


def _erfinv_fwd(y: Tensor) -> Tensor:
    # Giles' single-precision approximation, then two Newton steps on erf(x) = y
    w = -elementwise.log(_one_minus_sq(y))
    wc = w - 2.5
    p1 = _creation.full_like(y, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        p1 = p1 * wc + c
    wt = elementwise.sqrt(w) - 3.0
    p2 = _creation.full_like(y, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        p2 = p2 * wt + c
    x = where(w < 5.0, p1, p2) * y
    k = 2.0 / math.sqrt(math.pi)
    for _ in range(2):
        err = elementwise.erf(x) - y
        step = err / (elementwise.exp(-(x * x)) * k)
        # at |y| = 1 the step is inf - inf: keep the +-inf of the first guess
        x = where(elementwise.isfinite(x), x - step, x)
    # erfinv(+-1) = +-inf (the polynomial's sign is meaningless there)
    return where(elementwise.eq(elementwise.abs(y), 1.0), elementwise.sign(y) * math.inf, x)


erfinv: Any = _unary("erfinv", "ErfinvBackward0", _erfinv_fwd,
                lambda g, x, y: g * (erfinv(x) ** 2).exp() * (math.sqrt(math.pi) / 2.0),
                "Inverse error function on ``(-1, 1)`` (``+-inf`` at ``+-1``, NaN outside).")


def _erfc_fwd(x: Tensor) -> Tensor:
    # 1 - erf(x) loses every digit in the tail (erfc(10) ~ 2e-45 is 0 that way): from x = 2 on,
    # the continued fraction exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / ...))),
    # whose 60 terms reach double precision there
    tail = x >= 2.0
    xs = where(tail, x, 2.0)
    t = xs
    for k in range(60, 0, -1):
        t = xs + (k / 2) / t
    cf = elementwise.exp(-(xs * xs)) / (math.sqrt(math.pi) * t)
    return where(tail, cf, 1.0 - elementwise.erf(x))


erfc = _unary("erfc", "ErfcBackward0", _erfc_fwd,
              lambda g, x, y: g * elementwise.exp(-(x * x)) * (-2.0 / math.sqrt(math.pi)),
              "Complementary error function ``1 - erf(x)``, accurate in the tail (``erfc(10)`` "
              "is 2.1e-45, not 0).")


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians."""
    try:
        _check_tensor("deg2rad", input)
    except TypeError:  # not a Tensor: a sparse one (its values), or re-raised
        return sparse_fallback("deg2rad", deg2rad, input)
    return _float_input(input) * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees."""
    try:
        _check_tensor("rad2deg", input)
    except TypeError:  # not a Tensor: a sparse one (its values), or re-raised
        return sparse_fallback("rad2deg", rad2deg, input)
    return _float_input(input) * (180.0 / math.pi)


def _sinc_value(x: Tensor) -> Tensor:
    zero = elementwise.eq(x, 0)
    # the quotient is taken at a safe point where x == 0
    px = where(zero, 1.0, x) * math.pi
    return where(zero, 1.0, elementwise.sin(px) / px)


class _Sinc(Function):
    """Normalized sinc with PyTorch's derivative ``g * (pi x cos(pi x) - sin(pi x)) / (pi x^2)``,
    0 at 0 (whatever ``g`` is): the slope first, then one product with ``g`` (the quotient's
    chain rule added two products of ``g``, and an infinite ``g`` gave inf - inf = NaN)."""

    _backward_name = "SincBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        with _no_grad():
            return elementwise.in_float32(_sinc_value, x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors

        def slope(t: Tensor) -> Tensor:
            s = where(elementwise.eq(t, 0), 1.0, t)  # (a safe point at 0, masked below)
            ps = s * math.pi
            return (ps * elementwise.cos(ps) - elementwise.sin(ps)) / (ps * s)

        # 0 at 0 after the product, as PyTorch's masked_fill (whatever g is there); sinc is
        # holomorphic: a complex x's gradient is g * conj(sinc'(x)) (conj: no-op for real x)
        d = complexnum.conj(elementwise.in_float32(slope, x))
        return where(elementwise.eq(x, 0), 0.0, g * d)


def sinc(input: Tensor) -> Tensor:
    """Normalized sinc ``sin(pi x) / (pi x)``, 1 at 0."""
    _check_tensor("sinc", input)
    return call(_Sinc, _float_input(input))


class _Logit(Function):
    """``log(p / (1 - p))`` with PyTorch's derivative ``g / (p (1 - p))``: infinite at 0 and 1
    (the chain rule through ``log`` and the quotient gives ``0 * inf = nan`` there), NaN outside
    ``[0, 1]`` and, when ``eps`` clamps the input, 0 outside ``[eps, 1 - eps]``."""

    _backward_name = "LogitBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, eps: float | None) -> Tensor:
        ctx.eps = eps
        ctx.save_for_backward(x)
        def fwd(t: Tensor) -> Tensor:
            # PyTorch's clamp tests the low bound first: with eps > 0.5 (bounds crossed) values
            # below eps become eps, the others 1 - eps (clamp() would give 1 - eps everywhere)
            p = t if eps is None else where(t < eps, eps, where(t > 1.0 - eps, 1.0 - eps, t))
            return elementwise.log(p / (1.0 - p))

        with _no_grad():
            return elementwise.in_float32(fwd, x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        gx = g / (x * (1.0 - x))
        if ctx.eps is None:  # outside [0, 1] the value is NaN, and so is PyTorch's derivative
            outside = elementwise.logical_or(x < 0.0, x > 1.0)
            gx = where(outside, math.nan, gx)
        else:
            outside = elementwise.logical_or(x < ctx.eps, x > 1.0 - ctx.eps)
            gx = where(outside, 0.0, gx)
        return gx, None


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    _check_tensor("logit", input)
    return call(_Logit, _float_input(input), eps)


def xlogy(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is NaN)."""
    if out is not None:
        return write_out("xlogy", xlogy(input, other), out, (input, other))
    return _xlog(input, other, False)


def xlog1py(input: Any, other: Any) -> Tensor:
    """``input * log1p(other)``, 0 where ``input == 0`` (unless ``other`` is NaN)."""
    return _xlog(input, other, True)


def _xlog(input: Any, other: Any, one: bool) -> Tensor:
    name = "xlog1py" if one else "xlogy"
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{name}(): at least one of 'input' and 'other' must be a Tensor")
    ref = input if isinstance(input, Tensor) else other
    dt = _dtype.result_type(input, other)
    if not dt.is_floating_point:
        dt = _dtype.get_default_dtype()
    x = input.to(dt) if isinstance(input, Tensor) else _creation.full_like(ref, input, dtype=dt)
    y = other.to(dt) if isinstance(other, Tensor) else _creation.full_like(ref, other, dtype=dt)
    return call(_Xlog1py if one else _Xlogy, x, y, one)


def _xlog_value(x: Tensor, y: Tensor, one: bool) -> Tensor:
    zero = elementwise.logical_and(elementwise.eq(x, 0), elementwise.logical_not(elementwise.isnan(y)))
    return where(zero, 0.0, x * (elementwise.log1p(y) if one else elementwise.log(y)))


class _Xlogy(Function):
    """``x * log(y)`` (``log1p`` for ``xlog1py``), 0 where ``x == 0`` unless ``y`` is NaN, with
    PyTorch's derivatives: ``xlogy(g, y)`` for ``x`` (the slope ``log(y)`` at ``x == 0`` too, 0
    only where also ``y <= 0``, or ``y <= -1``), ``g * x / y`` (``/ (y + 1)``) for ``y``."""

    _backward_name = "XlogyBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, y: Tensor, one: bool) -> Tensor:
        ctx.one = one
        ctx.save_for_backward(x, y)
        with _no_grad():
            return _xlog_value(x, y, one)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, y = ctx.saved_tensors
        one = ctx.one
        gx = gy = None
        if ctx.needs_input_grad[0]:
            edge = elementwise.logical_and(elementwise.eq(x, 0), y <= (-1.0 if one else 0.0))
            gx = sum_to_shape(where(edge, 0.0, _xlog(g, y, one)), tuple(x.shape))
        if ctx.needs_input_grad[1]:
            gy = sum_to_shape(g * x / (y + 1.0 if one else y), tuple(y.shape))
        return gx, gy, None


class _Xlog1py(_Xlogy):
    _backward_name = "SpecialXlog1PyBackward0"


def heaviside(input: Tensor, values: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Step function: 0 below 0, 1 above, ``values`` at 0 (not differentiable, as PyTorch)."""
    if out is not None:
        res = heaviside(input, values)
        if isinstance(out, Tensor) and out.dtype is not res.dtype:  # (one dtype, as the inputs)
            raise RuntimeError("heaviside is not yet implemented for tensors with different "
                               "dtypes.")
        return write_out("heaviside", res, out, (input, values))
    _check_tensor("heaviside", input)
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not "
                        f"{type(values).__name__}")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    with _no_grad():
        return where(elementwise.eq(input, 0), values, (input > 0).to(input.dtype))


def copysign(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """``|input|`` with the sign of ``other`` (its sign bit: ``-0.0`` counts as negative)."""
    if out is not None:
        return write_out("copysign", copysign(input, other), out, (input, other))
    ref = input if isinstance(input, Tensor) else other
    if not isinstance(ref, Tensor):
        raise TypeError("copysign(): at least one of 'input' and 'other' must be a Tensor")
    dt = _dtype.result_type(input, other)
    if not dt.is_floating_point:
        dt = _dtype.get_default_dtype()
    a = input.to(dt) if isinstance(input, Tensor) else _creation.full_like(ref, input, dtype=dt)
    b = other.to(dt) if isinstance(other, Tensor) else _creation.full_like(ref, other, dtype=dt)
    return call(_Copysign, a, b)


class _Copysign(Function):
    """``|a|`` with the sign of ``b``, with PyTorch's derivatives: ``g * result / a`` (0 where
    ``a`` is 0) for ``a``, and zeros for ``b`` (a tensor of them, where the composition left
    ``b.grad`` None)."""

    _backward_name = "CopysignBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> Tensor:
        with _no_grad():
            out = elementwise.abs(a) * where(elementwise.signbit(b), -1.0, 1.0).to(a.dtype)
        ctx.save_for_backward(a, out)
        ctx.b_shape = tuple(b.shape)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        a, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = gb = None
        if need[0]:
            ratio = where(elementwise.eq(a, 0), 0.0, out / a)
            ga = sum_to_shape(g * ratio, tuple(a.shape))
        if need[1]:
            gb = _creation.zeros(ctx.b_shape, dtype=g.dtype, device=g.device)
        return ga, gb


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "addcmul", addcmul, input, tensor1=tensor1, tensor2=tensor2, value=value)) is not _SKIP:
        return _ac_out
    dt = _dtype.result_type(input, tensor1, tensor2)
    if dt is _dtype.bool:  # PyTorch's kernel has no bool
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    if not dt.is_floating_point and not dt.is_complex:  # PyTorch's checked conversion
        value = _dtype.fit_scalar(value, dt.name)
    elif dt.is_floating_point:
        elementwise.check_float_scalar(value, dt)
    if dt not in _dtype.HALF_FLOATS:  # the product in the result's dtype (int8 factors of an int16
        # input do not wrap at 8 bits); 16-bit floats: in_float32 casts
        tensor1, tensor2 = (t.to(dt) if isinstance(t, Tensor) and t.dtype is not dt else t
                            for t in (tensor1, tensor2))
    # PyTorch's order, input + (value * tensor1) * tensor2, computed in float32 for 16-bit
    # floats and rounded once
    return elementwise.in_float32(lambda i, a, b: i + (a if value == 1 else a * value) * b,
                                  input, tensor1, tensor2, dtype=dt)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "addcdiv", addcdiv, input, tensor1=tensor1, tensor2=tensor2, value=value)) is not _SKIP:
        return _ac_out
    if not (tensor1.dtype.is_floating_point or tensor2.dtype.is_floating_point
            or tensor1.dtype.is_complex or tensor2.dtype.is_complex):
        # (PyTorch's message, its double space included)
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future  "
                           "release addcdiv will perform a true division of tensor1 and tensor2. "
                           "The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float "
                           "inputs. The future addcdiv behavior is just the latter implementation: "
                           "(input + value * tensor1 / tensor2), for all dtypes.")
    dt = _dtype.result_type(input, tensor1, tensor2)
    if dt.is_floating_point:
        elementwise.check_float_scalar(value, dt)
    # PyTorch's order, input + (value * tensor1) / tensor2, rounded once for 16-bit floats
    return elementwise.in_float32(lambda i, a, b: i + (a if value == 1 else a * value) / b,
                                  input, tensor1, tensor2, dtype=dt)


def clamp_min(input: Tensor, min: Any) -> Tensor:  # PyTorch's parameter name
    """``max(input, min)`` (``clamp(input, min=min)``)."""
    return elementwise.clamp(input, min, None)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # PyTorch's parameter name
    """``min(input, max)`` (``clamp(input, max=max)``)."""
    return elementwise.clamp(input, None, max)


def float_power(input: Any, exponent: Any, *, out: Tensor | None = None) -> Tensor:
    """``input ** exponent`` computed in float64."""
    if out is not None:
        res = float_power(input, exponent)
        if isinstance(out, Tensor) and out.dtype is not res.dtype:  # exactly the result's dtype
            names = elementwise._type_name
            raise RuntimeError(f"the output given to float_power has dtype {names(out.dtype)} but "
                               f"the operation's result requires dtype {names(res.dtype)}")
        return write_out("float_power", res, out, (input, exponent))
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): at least one of 'input' and 'exponent' must be a Tensor")
    # complex128 when either operand is complex (a Python complex number too), else float64
    cplx = any(x.dtype.is_complex if isinstance(x, Tensor) else isinstance(x, complex)
               for x in (input, exponent))
    dt, num = (_dtype.complex128, complex) if cplx else (_dtype.float64, float)
    a, b = (x.to(dt) if isinstance(x, Tensor) else num(x) for x in (input, exponent))
    result = a ** b
    assert isinstance(result, Tensor)  # (one operand is a tensor: so is the power)
    return result


def logaddexp2(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``log2(2**input + 2**other)``, computed stably (equal infinities give themselves)."""
    return elementwise.logaddexp2(input, other, out=out)


def _fmaxmin(op: Any, input: Tensor, other: Tensor) -> Tensor:
    name = "fmax" if op is elementwise.maximum else "fmin"
    _check_tensor(name, input)  # PyTorch takes no Python number here
    _check_tensor(name, other, "other", 2)
    dt = _dtype.result_type(input, other)
    if not dt.is_floating_point:
        return op(input, other)
    is_max = op is elementwise.maximum
    return call(_FMax if is_max else _FMin, input.to(dt), other.to(dt), is_max)


class _FMaxMin(Function):
    """``fmax``/``fmin`` of same-dtype floating tensors (broadcast): NaN only where both are NaN.
    PyTorch's derivative gives the whole gradient to ``input`` where it is chosen (ties
    included, and where ``other`` is NaN), else to ``other`` (``maximum`` splits ties)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, o: Tensor, is_max: bool) -> Tensor:
        with _no_grad():
            m = elementwise.maximum(x, o) if is_max else elementwise.minimum(x, o)
            # NaN only where both are NaN: take the other operand where one is NaN
            m = where(elementwise.isnan(x), o, m)
            m = where(elementwise.isnan(o), x, m)
        ctx.is_max = is_max
        ctx.save_for_backward(x, o)
        return m

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, o = ctx.saved_tensors
        pick = (x >= o) if ctx.is_max else (x <= o)
        pick = elementwise.logical_or(pick, elementwise.isnan(o))
        zero = _creation.zeros((), dtype=g.dtype, device=g.device)
        gx = sum_to_shape(where(pick, g, zero), tuple(x.shape)) if ctx.needs_input_grad[0] else None
        go = sum_to_shape(where(pick, zero, g), tuple(o.shape)) if ctx.needs_input_grad[1] else None
        return gx, go, None


class _FMax(_FMaxMin):
    _backward_name = "FmaxBackward0"


class _FMin(_FMaxMin):
    _backward_name = "FminBackward0"


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum that ignores NaN (NaN only if both are NaN)."""
    return _fmaxmin(elementwise.maximum, input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum that ignores NaN (NaN only if both are NaN)."""
    return _fmaxmin(elementwise.minimum, input, other)


def isposinf(input: Tensor) -> Tensor:
    """Whether each element is ``+inf``."""
    return elementwise.logical_and(elementwise.isinf(input), input > 0)


def isneginf(input: Tensor) -> Tensor:
    """Whether each element is ``-inf``."""
    return elementwise.logical_and(elementwise.isinf(input), input < 0)


def isreal(input: Tensor) -> Tensor:
    """Whether each element is real: a zero imaginary part (always true for real dtypes)."""
    _check_tensor("isreal", input)
    if input.dtype.is_complex:
        return complexnum.imag(input) == 0
    return _creation.ones_like(input, dtype=_dtype.bool)


def fix(input: Tensor) -> Tensor:
    """Round toward zero (``trunc``)."""
    return elementwise.trunc(input)


def angle(input: Tensor) -> Tensor:
    """Argument of each element: ``atan2(imag, real)`` for complex tensors; for real ones 0 for
    non-negative, pi for negative, NaN stays NaN."""
    _check_tensor("angle", input)
    if input.dtype.is_complex:
        return complexnum.angle(input)
    return call(_AngleReal, _float_input(input))


class _AngleReal(Function):
    """``angle`` of a real tensor: 0 or pi, NaN kept; PyTorch's gradient is zeros everywhere
    (a NaN input's included, which a select would pass through)."""

    _backward_name = "AngleBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        with _no_grad():
            return where(elementwise.isnan(x), x, (x < 0).to(x.dtype) * math.pi)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return _creation.zeros_like(g)


def _bessel_i(nu: int, x: Tensor, scaled: bool = False) -> Tensor:
    """The modified Bessel function ``I_nu`` (``nu`` 0 or 1): its power series below 15, the
    asymptotic expansion above (both accurate to rounding in float64 there). ``scaled``: times
    ``exp(-|x|)`` (``i0e``, ``i1e``), which the expansion gives without overflowing."""
    a = elementwise.abs(x)
    q = x * x * 0.25
    term = _creation.ones_like(x) if nu == 0 else x * 0.5
    series = term
    for k in range(1, 41):
        term = term * q / float(k * (k + nu))
        series = series + term
    if scaled:
        series = series * elementwise.exp(-where(a < 15.0, a, 0.0))
    big = a >= 15.0
    z = where(big, a, 15.0)  # the expansion is only evaluated where it converges
    t = _creation.ones_like(x)
    asym = t
    for k in range(1, 31):
        t = t * (-(4.0 * nu * nu - (2 * k - 1) ** 2) / (8.0 * k)) / z
        asym = asym + t
    asym = asym / elementwise.sqrt(z * (2 * math.pi))
    if not scaled:
        asym = asym * elementwise.exp(z)
    if nu == 1:
        asym = asym * elementwise.sign(x)
    return where(big, asym, series)


def _i1(x: Tensor) -> Tensor:
    return _bessel_i(1, x)


i0 = _unary("i0", "I0Backward0", lambda x: _bessel_i(0, x), lambda g, x, y: g * _i1(x),
            "Modified Bessel function of the first kind, order 0.")
i1 = _unary("i1", "SpecialI1Backward0", _i1,
            lambda g, x, y: g * (i0(x) - _i1(x) / where(elementwise.eq(x, 0), 1.0, x)),
            "Modified Bessel function of the first kind, order 1.", saves_output=True)
