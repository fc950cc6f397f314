"""The gamma function family: ``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma``.

No backend has these as primitives, so they are computed with elementwise ops: ``lgamma`` with
Lanczos' approximation (g = 7, 9 terms), ``digamma``/``polygamma`` by shifting the argument up
with the recurrence ``psi(x) = psi(x + 1) - 1/x`` and then the asymptotic series; negative
arguments go through the reflection formulas. Each is a ``Function`` whose derivative is the next
member of the family (``lgamma' = digamma``, ``digamma' = polygamma(1)``, ...).
"""
from __future__ import annotations

import math
from typing import Any

from .. import _creation
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _no_grad
from ._common import call
from . import elementwise as E
from .elementwise import _float_input
from .indexing import where

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma"]

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Bernoulli numbers B2, B4, ..., B14 for the asymptotic series
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
_SHIFT = 10  # psi and its derivatives are evaluated at x + _SHIFT, where the series is accurate


def _check(name: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return _float_input(x)


def _nonpos_int(x: Tensor) -> Tensor:
    return E.logical_and(E.le(x, 0), E.eq(x, E.floor(x)))


def _sinpi(x: Tensor) -> Tensor:
    """``sin(pi x)``, with the argument reduced exactly first (``x - round(x)``)."""
    r = E.round(x)
    s = E.sin(E.mul(E.sub(x, r), math.pi))
    # (-1)^round(x): odd multiples flip the sign
    odd = E.ne(E.remainder(r, 2.0), 0)
    return where(odd, E.neg(s), s)


def _lgamma_pos(x: Tensor) -> Tensor:
    """Lanczos' lgamma for ``x >= 0.5``."""
    z = E.sub(x, 1.0)
    a = _creation.full_like(x, _LANCZOS[0])
    for k, c in enumerate(_LANCZOS[1:], start=1):
        a = E.add(a, E.div(c, E.add(z, float(k))))
    t = E.add(z, 7.5)
    return E.add(E.sub(E.add(E.mul(E.add(z, 0.5), E.log(t)), _HALF_LOG_2PI), t), E.log(a))


def _lgamma_fwd(x: Tensor) -> Tensor:
    small = E.lt(x, 0.5)
    pos = _lgamma_pos(where(small, E.rsub(x, 1.0), x))
    # reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    refl = E.sub(E.sub(math.log(math.pi), E.log(E.abs(_sinpi(x)))), pos)
    out = where(small, refl, pos)
    out = where(E.isinf(x), math.inf, out)
    return where(_nonpos_int(x), math.inf, out)


def _psi_n(n: int, x: Tensor) -> Tensor:
    """``polygamma(n, x)`` (``n = 0``: digamma) for ``x >= 0``: the recurrence moves the
    argument to ``x + _SHIFT``, where the asymptotic series is accurate."""
    acc = _creation.zeros_like(x)
    for k in range(_SHIFT):
        xk = E.add(x, float(k))
        acc = E.add(acc, E.reciprocal(xk) if n == 0 else E.pow(xk, -(n + 1.0)))
    y = E.add(x, float(_SHIFT))
    if n == 0:
        # psi(y) ~ log y - 1/(2y) - sum B2k / (2k y^2k)
        series = E.sub(E.log(y), E.div(0.5, y))
        inv2 = E.reciprocal(E.mul(y, y))
        p = inv2
        for k, b in enumerate(_BERNOULLI, start=1):
            series = E.sub(series, E.mul(p, b / (2 * k)))
            p = E.mul(p, inv2)
        return E.sub(series, acc)
    # psi^(n)(y) ~ (-1)^(n+1) [(n-1)!/y^n + n!/(2 y^(n+1)) + sum B2k (2k+n-1)!/((2k)! y^(2k+n))]
    series = E.add(E.mul(E.pow(y, -float(n)), float(math.factorial(n - 1))),
                   E.mul(E.pow(y, -(n + 1.0)), math.factorial(n) / 2))
    for k, b in enumerate(_BERNOULLI, start=1):
        coef = b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
        series = E.add(series, E.mul(E.pow(y, -float(2 * k + n)), coef))
    sign = 1.0 if n % 2 else -1.0
    return E.mul(E.add(series, E.mul(acc, float(math.factorial(n)))), sign)


def _digamma_fwd(x: Tensor) -> Tensor:
    small = E.lt(x, 0.5)
    pos = _psi_n(0, where(small, E.rsub(x, 1.0), x))
    # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
    r = E.sub(x, E.round(x))
    refl = E.sub(pos, E.div(math.pi, E.tan(E.mul(r, math.pi))))
    out = where(small, refl, pos)
    out = where(E.eq(x, 0), -math.inf, out)  # PyTorch: digamma(0) = -inf, other poles NaN
    out = where(E.logical_and(_nonpos_int(x), E.ne(x, 0)), math.nan, out)
    return where(E.eq(x, math.inf), math.inf, out)


def _polygamma_fwd(n: int, x: Tensor) -> Tensor:
    lo = float(x.min().item()) if x.numel() else 0.0
    if lo < 0 and math.isfinite(lo):
        # the upward recurrence holds for any non-pole x: shift far enough first
        m = int(math.ceil(-lo)) + 1
        acc = _creation.zeros_like(x)
        for k in range(m):
            acc = E.add(acc, E.pow(E.add(x, float(k)), -(n + 1.0)))
        sign = 1.0 if n % 2 else -1.0
        out = E.add(_psi_n(n, E.add(x, float(m))), E.mul(acc, sign * math.factorial(n)))
    else:
        out = _psi_n(n, x)
    return where(_nonpos_int(x), math.inf if n % 2 else math.nan, out)


class _Lgamma(Function):
    _backward_name = "LgammaBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        with _no_grad():
            y = _lgamma_fwd(x)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        return g * digamma(x)


class _Polygamma(Function):
    _backward_name = "PolygammaBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, n: int) -> Tensor:
        with _no_grad():
            y = _digamma_fwd(x) if n == 0 else _polygamma_fwd(n, x)
        ctx.save_for_backward(x)
        ctx.n = n
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        return g * polygamma(ctx.n + 1, x), None


def lgamma(input: Tensor) -> Tensor:
    """``log |Gamma(x)|`` (``inf`` at the poles, the non-positive integers)."""
    return call(_Lgamma, _check("lgamma", input))


def digamma(input: Tensor) -> Tensor:
    """``psi(x) = d/dx lgamma(x)`` (``-inf`` at 0, NaN at the negative integers, as PyTorch)."""
    return call(_Polygamma, _check("digamma", input), 0)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of ``digamma``."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return call(_Polygamma, _check("polygamma", input), n)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma of dimension ``p``: ``p(p-1)/4 log(pi) + sum_j
    lgamma(x - j/2)``; every element must exceed ``(p - 1) / 2``."""
    x = _check("mvlgamma", input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if x.numel() and not bool(E.gt(x, (p - 1) / 2).all().item()):
        raise RuntimeError("All elements must be greater than (p-1)/2")
    out = lgamma(x)
    for j in range(1, p):
        out = E.add(out, lgamma(E.sub(x, j / 2)))
    return E.add(out, p * (p - 1) / 4 * math.log(math.pi))

