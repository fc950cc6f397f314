"""Functions whose plain form over- or underflows, computed in a scaled or logarithmic form:
``erfcx`` (``exp(x^2) erfc(x)``), ``log_ndtr`` (the log of the standard normal CDF), ``i0e`` and
``i1e`` (``exp(-|x|) I_0(x)``, ``exp(-|x|) I_1(x)``).

Each is a composition of elementwise ops (so it runs on every backend), differentiable with
PyTorch's closed-form derivative (``SpecialErfcxBackward0`` ...), which uses the result: it is
saved for backward, as PyTorch saves it.
"""
from __future__ import annotations

import math

from .. import _dtype
from .._tensor import Tensor
from ._common import type_name
from . import elementwise
from .indexing import where
from .special import _bessel_i, _check_tensor, _unary

__all__ = ["erfcx", "log_ndtr", "i0e", "i1e"]

_SQRT_PI = math.sqrt(math.pi)
# erfcx(x) = P(x) / Q(x) on [1, 8): the rational approximation of Cephes' ndtr.c (its erfc is
# exp(-x^2) P/Q there), by Stephen L. Moshier, Cephes Math Library 2.8; highest power first
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
_ERFC_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2)


def _polyval(coefs: tuple[float, ...], x: Tensor) -> Tensor:
    acc = x * 0.0 + coefs[0]
    for c in coefs[1:]:
        acc = acc * x + c
    return acc


def _erfcx_pos(x: Tensor) -> Tensor:
    """``erfcx`` for ``x >= 0`` (other elements: anything finite)."""
    small = x < 1.0
    mid = elementwise.logical_and(x >= 1.0, x < 8.0)
    # below 1, erfc = 1 - erf keeps full precision (erfc > 0.15 there)
    xs = where(small, x, 0.0)
    lo = elementwise.exp(xs * xs) * (1.0 - elementwise.erf(xs))
    xm = where(mid, x, 1.0)
    rational = _polyval(_ERFC_P, xm) / _polyval(_ERFC_Q, xm)
    # from 8 on, the continued fraction 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / ...))))
    # reaches double precision in 20 terms (and gives 0 at +inf)
    xb = where(x >= 8.0, x, 8.0)
    t = xb
    for k in range(20, 0, -1):
        t = xb + (k / 2) / t
    tail = 1.0 / (t * _SQRT_PI)
    return where(small, lo, where(mid, rational, tail))


def _exp_sq(x: Tensor, sign: float) -> Tensor:
    """``exp(sign * x^2)`` (``sign`` +-1 or +-1/2) to a few units of rounding: ``x^2`` rounded
    would be off by ``x^2`` units in the exponent (600 at x = 25), so ``x = h + l`` with ``h``
    on a 1/16 grid, whose square is exact, and ``x^2 = h^2 + (x - h)(x + h)`` (Cephes'
    ``expx2``)."""
    # beyond 40, exp(+-x^2) over- or underflows in any float dtype (and (x - h)(x + h) could
    # make inf * 0)
    far = elementwise.abs(x) > 40.0
    xs = where(far, 0.0, x)
    h = elementwise.round(xs * 16.0) * 0.0625
    near = elementwise.exp(h * h * sign) * elementwise.exp((xs - h) * (xs + h) * sign)
    return where(far, math.inf if sign > 0 else 0.0, near)


def _erfcx_fwd(x: Tensor) -> Tensor:
    neg = x < 0
    pos = _erfcx_pos(elementwise.abs(x))
    # erfcx(-x) = 2 exp(x^2) - erfcx(x): no cancellation (the first term is at least 2)
    out = where(neg, _exp_sq(where(neg, x, 0.0), 1.0) * 2.0 - pos, pos)
    return where(elementwise.isnan(x), x, out)


def _log_ndtr_fwd(x: Tensor) -> Tensor:
    # PyTorch's split: below -1, log(erfcx(-t) / 2) - t^2 (erfc(-t) underflows in the tail);
    # above, log1p(-erfc(t) / 2), with erfc(t) = exp(-t^2) erfcx(t) accurate in the upper tail
    t = x * (1.0 / math.sqrt(2.0))
    low = x < -1.0
    tl = where(low, t, 0.0)
    xl = where(low, x, 0.0)
    left = elementwise.log(_erfcx_fwd(-tl) * 0.5) - xl * xl * 0.5
    tr = where(low, 0.0, t)
    # exp(-t^2) from x, not t: the rounding of t = x / sqrt(2) is amplified 2 t^2 times
    erfc = where(tr < 1.0, 1.0 - elementwise.erf(tr),
                 _exp_sq(where(low, 0.0, x), -0.5) * _erfcx_pos(where(tr < 1.0, 1.0, tr)))
    right = elementwise.log1p(erfc * -0.5)
    return where(low, left, right)


def _no_half(name: str, input: Tensor) -> None:
    if input.dtype in (_dtype.float16, _dtype.bfloat16):  # PyTorch has no 16-bit kernel
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{type_name(input.dtype)}\'')


_erfcx = _unary("erfcx", "SpecialErfcxBackward0", _erfcx_fwd,
                lambda g, x, y: g * (x * y * 2.0 - 2.0 / _SQRT_PI), "", saves_output=True)
_log_ndtr = _unary("log_ndtr", "SpecialLogNdtrBackward0", _log_ndtr_fwd,
                   lambda g, x, y: g * (-(y + x * x * 0.5)).exp() * (1.0 / math.sqrt(2 * math.pi)),
                   "", saves_output=True)


def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function ``exp(x^2) erfc(x)``, accurate in both tails
    (``erfcx(30)`` is ``0.0188``; it overflows to ``inf`` only where ``exp(x^2)`` does, for
    negative ``x``)."""
    _check_tensor("special_erfcx", input)
    _no_half("erfcx", input)
    return _erfcx(input)


def log_ndtr(input: Tensor) -> Tensor:
    """The log of the standard normal CDF, accurate in both tails (``log_ndtr(-40)`` is
    ``-804.6``, ``log_ndtr(10)`` is ``-7.6e-24``)."""
    _check_tensor("special_log_ndtr", input)
    _no_half("log_ndtr", input)
    return _log_ndtr(input)


def _i0e_fwd(x: Tensor) -> Tensor:
    return _bessel_i(0, x, scaled=True)


def _i1e_fwd(x: Tensor) -> Tensor:
    return _bessel_i(1, x, scaled=True)


def _i1e_op(x: Tensor) -> Tensor:  # i1e, for i0e's derivative (defined after it)
    return i1e(x)


i0e = _unary("i0e", "SpecialI0EBackward0", _i0e_fwd,
             lambda g, x, y: g * (_i1e_op(x) - elementwise.sign(x) * y),
             "The exponentially scaled modified Bessel function of order 0, ``exp(-|x|) I_0(x)``.",
             saves_output=True)
# i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1/x), 1/2 at 0
i1e = _unary("i1e", "SpecialI1EBackward0", _i1e_fwd,
             lambda g, x, y: g * where(
                 elementwise.eq(x, 0), 0.5,
                 i0e(x) - y * (elementwise.sign(x)
                               + 1.0 / where(elementwise.eq(x, 0), 1.0, x))),
             "The exponentially scaled modified Bessel function of order 1, ``exp(-|x|) I_1(x)``.",
             saves_output=True)
