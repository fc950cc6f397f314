"""Elementwise functions the Array API standard lacks, composed from the functions it has.

Used only when the library has no native version (see :class:`~.namespace.Namespace`).
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["erf", "fmod_float", "fmod_int"]

_SERIES_TERMS = 100  # the series below, at |x| < 3, has converged by then
_CF_TERMS = 60  # the continued fraction, at |x| >= 3, likewise


def erf(xp: Any, x: Any) -> Any:
    """``erf(x)`` within a few float64 ulps, from ``exp`` and arithmetic (computed in float64 when the
    namespace has it, then rounded to ``x``'s dtype).

    For ``|x| < 3`` the series ``erf(x) = 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x / (2n+1)!!`` has
    only positive terms (no cancellation); beyond, ``erfc`` from Laplace's continued fraction
    ``erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))`` and
    ``erf = 1 - erfc`` (erfc is below 2.3e-5 there, so its error does not show). NaN propagates,
    ``erf(+-inf) = +-1``.
    """
    wide = getattr(xp, "float64", None) or x.dtype
    a = xp.astype(x, wide)
    ax = xp.abs(a)
    small = ax < 3.0
    s = xp.where(small, a, xp.zeros_like(a))  # the series on clamped inputs: no overflow
    s2 = s * s
    term = s
    total = s
    for n in range(1, _SERIES_TERMS):
        term = term * (2.0 * s2) / (2 * n + 1)
        total = total + term
    series = total * xp.exp(-s2) * (2.0 / math.sqrt(math.pi))
    big = xp.where(small, xp.full_like(a, 3.0), ax)  # the fraction on |x| >= 3 only
    big = xp.where(xp.isnan(big), xp.full_like(a, 3.0), big)
    f = big
    for k in range(_CF_TERMS, 0, -1):
        f = big + (k / 2.0) / f
    erfc = xp.exp(-big * big) / (math.sqrt(math.pi) * f)
    tail = xp.where(a < 0, -(1.0 - erfc), 1.0 - erfc)
    out = xp.where(small, series, tail)
    out = xp.where(xp.isnan(a), a, out)
    return xp.astype(out, x.dtype)


def fmod_float(xp: Any, a: Any, b: Any) -> Any:
    """C's ``fmod`` on floats (the sign of the dividend; ``fmod(x, inf) == x``), exactly:
    ``remainder`` of two non-negative numbers is ``fmod``, then the dividend's sign."""
    return xp.copysign(xp.remainder(xp.abs(a), xp.abs(b)), a)


def fmod_int(xp: Any, a: Any, b: Any) -> Any:
    """C's ``%`` on integers from Python's (``remainder``, the sign of the divisor): where the
    two differ (a nonzero remainder and operands of opposite signs) C's is ``r - b``. No
    intermediate overflows, unlike ``sign(a) * (|a| % |b|)`` at the most negative integer."""
    r = xp.remainder(a, b)
    differs = (r != 0) & ((a < 0) != (b < 0))
    return xp.where(differs, r - b, r)
