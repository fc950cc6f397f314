"""Orthogonal polynomials of ``torch.special``: Chebyshev T/U/V/W (and their shifted forms on
``[0, 1]``), Hermite (physicists' ``H`` and probabilists' ``He``), Laguerre and Legendre.

Each evaluates PyTorch's algorithm elementwise with tensor ops, so it runs on every backend and
gives PyTorch's values: the degree ``n`` is truncated to an integer (NaN and infinite degrees
count as negative, as the C++ cast gives there), a negative degree gives 0, the points where the
polynomial's value is known in closed form (``|x| == 1``, or ``x`` in ``{0, 1}`` for the shifted
ones) are special-cased, the Chebyshev polynomials of high degree inside ``(-1, 1)`` use their
trigonometric form, and everything else runs the three-term recurrence. The recurrence runs once
for all elements, up to the largest degree (read once on the host); each element keeps the value
of its own degree. PyTorch defines no derivative for these: the result never requires grad.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from ._common import prepare_binary, type_name
from . import elementwise, special
from .indexing import where

__all__ = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
]

_Step = Callable[[int, Tensor, Tensor, Tensor], Tensor]


def _operands(name: str, x: Any, n: Any) -> tuple[Tensor, Tensor]:
    """``x`` and the integer degree (as ``x``'s float dtype), broadcast together."""
    if not isinstance(x, Tensor) and not isinstance(n, Tensor):
        raise TypeError(f"{name}(): expected at least one of 'x' and 'n' to be a Tensor, got "
                        f"{type(x).__name__} and {type(n).__name__}")
    xt, nt, dt = prepare_binary(x, n, name, float_only=True)
    if dt in (_dtype.float16, _dtype.bfloat16):  # PyTorch has no 16-bit kernel
        raise NotImplementedError(f'"{name}" not implemented for \'{type_name(dt)}\'')
    if not isinstance(xt, Tensor):
        xt = _creation.full_like(nt, xt)
    if not isinstance(nt, Tensor):
        nt = _creation.full_like(xt, nt)
    ni = elementwise.trunc(nt)
    # PyTorch casts n to int64: NaN, infinities and out-of-range values become INT64_MIN
    # (x86's cvttsd2si), which the n < 0 test turns into 0
    ni = where(elementwise.logical_and(elementwise.isfinite(ni),
                                       elementwise.abs(ni) < 2.0 ** 63), ni, -1.0)
    return xt, ni


def _odd(ni: Tensor) -> Tensor:
    return elementwise.ne(elementwise.remainder(ni, 2.0), 0)


def _run(x: Tensor, ni: Tensor, p0: Tensor, p1: Tensor, step: _Step,
         closed: Tensor | None = None) -> Tensor:
    """The recurrence from degrees 0 and 1: ``step(m, x, p, q)`` is degree ``m`` from degrees
    ``m - 2`` (``p``) and ``m - 1`` (``q``); each element keeps its own degree's value. It runs
    to the largest degree among the elements not ``closed`` (those a closed form answers, whose
    recurrence value is discarded: a high degree there costs nothing)."""
    out = where(elementwise.eq(ni, 0), p0, where(elementwise.eq(ni, 1), p1, 0.0))
    if ni.numel() == 0:
        return out
    top = int((ni if closed is None else where(closed, 0.0, ni)).max().item())
    p, q = p0, p1
    for m in range(2, top + 1):
        r = step(m, x, p, q)
        out = where(elementwise.eq(ni, float(m)), r, out)
        p, q = q, r
    return out


def _poly(name: str, x: Any, n: Any, body: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    xt, ni = _operands(name, x, n)
    with _no_grad():
        out = body(xt, ni)
        return where(ni < 0, 0.0, out)


def _ones(x: Tensor) -> Tensor:
    return _creation.ones_like(x)


def _acos(x: Tensor) -> Tensor:
    return special.acos(x)


# ------------------------------------------------------------------------ Chebyshev, on [-1, 1]

def _closed(x: Tensor, ni: Tensor, inside: Tensor, trig_above: int) -> Tensor:
    """Where a Chebyshev polynomial has a closed form: ``|x| == 1``, or the trigonometric form."""
    return elementwise.logical_or(elementwise.eq(elementwise.abs(x), 1.0),
                                  elementwise.logical_and(ni > trig_above, inside))


def _cheb_t(x: Tensor, ni: Tensor, trig_above: int) -> Tensor:
    inside = elementwise.abs(x) < 1.0
    rec = _run(x, ni, _ones(x), x, lambda m, x, p, q: (x + x) * q - p,
               _closed(x, ni, inside, trig_above))
    trig = elementwise.cos(ni * _acos(where(inside, x, 0.0)))
    out = where(elementwise.logical_and(ni > trig_above, inside), trig, rec)
    # T_n(1) = 1, T_n(-1) = (-1)^n
    edge = where(elementwise.logical_and(x < 0, _odd(ni)), -1.0, 1.0)
    return where(elementwise.eq(elementwise.abs(x), 1.0), edge, out)


def _cheb_u(x: Tensor, ni: Tensor, trig_above: int) -> Tensor:
    inside = elementwise.abs(x) < 1.0
    rec = _run(x, ni, _ones(x), x + x, lambda m, x, p, q: (x + x) * q - p,
               _closed(x, ni, inside, trig_above))
    a = _acos(where(inside, x, 0.0))
    s = elementwise.sin(a)
    n1 = ni + 1.0
    safe_s = where(elementwise.eq(s, 0), 1.0, s)
    safe_x = where(elementwise.eq(x, 0), 1.0, x)
    trig = where(elementwise.ne(s, 0), elementwise.sin(n1 * a) / safe_s,
                 n1 * elementwise.cos(n1 * a) / safe_x)
    out = where(elementwise.logical_and(ni > trig_above, inside), trig, rec)
    # U_n(1) = n + 1, U_n(-1) = (-1)^n (n + 1)
    edge = where(elementwise.logical_and(x < 0, _odd(ni)), -n1, n1)
    return where(elementwise.eq(elementwise.abs(x), 1.0), edge, out)


def _cheb_v(x: Tensor, ni: Tensor, trig_above: int) -> Tensor:
    inside = elementwise.abs(x) < 1.0
    rec = _run(x, ni, _ones(x), x + x - 1.0, lambda m, x, p, q: (x + x) * q - p,
               _closed(x, ni, inside, trig_above))
    a = _acos(where(inside, x, 0.0))
    h = elementwise.cos(a / 2.0)
    odd_edge = where(_odd(ni), -(ni + ni + 1.0), ni + ni + 1.0)
    trig = where(elementwise.ne(elementwise.sin(a / 2.0), 1.0),
                 elementwise.cos((ni + 0.5) * a) / where(elementwise.eq(h, 0), 1.0, h), odd_edge)
    out = where(elementwise.logical_and(ni > trig_above, inside), trig, rec)
    # V_n(1) = 1, V_n(-1) = (-1)^n (2n + 1)
    edge = where(x > 0, 1.0, odd_edge)
    return where(elementwise.eq(elementwise.abs(x), 1.0), edge, out)


def _cheb_w(x: Tensor, ni: Tensor, trig_above: int) -> Tensor:
    inside = elementwise.abs(x) < 1.0
    rec = _run(x, ni, _ones(x), x + x + 1.0, lambda m, x, p, q: (x + x) * q - p,
               _closed(x, ni, inside, trig_above))
    a = _acos(where(inside, x, 0.0))
    h = elementwise.sin(a / 2.0)
    # W_n(1) = 2n + 1, W_n(-1) = (-1)^n
    edge = where(x > 0, ni + ni + 1.0, where(_odd(ni), -1.0, 1.0))
    trig = where(elementwise.ne(elementwise.cos(a / 2.0), 1.0),
                 elementwise.sin((ni + 0.5) * a) / where(elementwise.eq(h, 0), 1.0, h), edge)
    out = where(elementwise.logical_and(ni > trig_above, inside), trig, rec)
    return where(elementwise.eq(elementwise.abs(x), 1.0), edge, out)


def chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:
    """Chebyshev polynomial of the first kind ``T_n(input)``."""
    return _poly("chebyshev_polynomial_t", input, n, lambda x, ni: _cheb_t(x, ni, 6))


def chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:
    """Chebyshev polynomial of the second kind ``U_n(input)``."""
    return _poly("chebyshev_polynomial_u", input, n, lambda x, ni: _cheb_u(x, ni, 8))


def chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:
    """Chebyshev polynomial of the third kind ``V_n(input)``."""
    return _poly("chebyshev_polynomial_v", input, n, lambda x, ni: _cheb_v(x, ni, 8))


def chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:
    """Chebyshev polynomial of the fourth kind ``W_n(input)``."""
    return _poly("chebyshev_polynomial_w", input, n, lambda x, ni: _cheb_w(x, ni, 8))


# ---------------------------------------------------------------- shifted Chebyshev, on [0, 1]

def _shifted(body: Callable[[Tensor, Tensor, int], Tensor], trig_above: int,
             at_one: Callable[[Tensor], Tensor], at_zero: Callable[[Tensor], Tensor]
             ) -> Callable[[Tensor, Tensor], Tensor]:
    """``P*_n(x) = P_n(2x - 1)``, with PyTorch's special cases at ``x`` = 1 and 0 (where
    ``2x - 1`` is exactly +-1)."""
    def fn(x: Tensor, ni: Tensor) -> Tensor:
        out = body(x + x - 1.0, ni, trig_above)
        out = where(elementwise.eq(x, 0.0), at_zero(ni), out)
        return where(elementwise.eq(x, 1.0), at_one(ni), out)
    return fn


def _sign_n(ni: Tensor, v: Any) -> Tensor:
    return where(_odd(ni), -v, v)


def shifted_chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:
    """Shifted Chebyshev polynomial of the first kind ``T*_n(input) = T_n(2 input - 1)``."""
    body = _shifted(_cheb_t, 6, lambda ni: _ones(ni), lambda ni: _sign_n(ni, _ones(ni)))
    return _poly("shifted_chebyshev_polynomial_t", input, n, body)


def shifted_chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:
    """Shifted Chebyshev polynomial of the second kind ``U*_n(input) = U_n(2 input - 1)``."""
    body = _shifted(_cheb_u, 6, lambda ni: ni + 1.0, lambda ni: _sign_n(ni, ni + 1.0))
    return _poly("shifted_chebyshev_polynomial_u", input, n, body)


def shifted_chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:
    """Shifted Chebyshev polynomial of the third kind ``V*_n(input) = V_n(2 input - 1)``."""
    body = _shifted(_cheb_v, 6, lambda ni: _ones(ni), lambda ni: _sign_n(ni, ni + ni + 1.0))
    return _poly("shifted_chebyshev_polynomial_v", input, n, body)


def shifted_chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:
    """Shifted Chebyshev polynomial of the fourth kind ``W*_n(input) = W_n(2 input - 1)``."""
    body = _shifted(_cheb_w, 4, lambda ni: ni + ni + 1.0, lambda ni: _sign_n(ni, _ones(ni)))
    return _poly("shifted_chebyshev_polynomial_w", input, n, body)


# ------------------------------------------------------------- Hermite, Laguerre, Legendre

def hermite_polynomial_h(input: Any, n: Any) -> Tensor:
    """Physicists' Hermite polynomial ``H_n(input)``."""
    return _poly("hermite_polynomial_h", input, n, lambda x, ni: _run(
        x, ni, _ones(x), x + x, lambda m, x, p, q: (x + x) * q - p * float(2 * (m - 1))))


def hermite_polynomial_he(input: Any, n: Any) -> Tensor:
    """Probabilists' Hermite polynomial ``He_n(input)``."""
    return _poly("hermite_polynomial_he", input, n, lambda x, ni: _run(
        x, ni, _ones(x), x, lambda m, x, p, q: x * q - p * float(m - 1)))


def _laguerre(x: Tensor, ni: Tensor) -> Tensor:
    def step(m: int, x: Tensor, p: Tensor, q: Tensor) -> Tensor:
        k = float(m - 1)
        return (((k + k) + (1.0 - x)) * q - p * k) / (k + 1.0)
    out = _run(x, ni, _ones(x), 1.0 - x, step)
    return where(elementwise.eq(x, 0.0), 1.0, out)  # L_n(0) = 1


def laguerre_polynomial_l(input: Any, n: Any) -> Tensor:
    """Laguerre polynomial ``L_n(input)``."""
    return _poly("laguerre_polynomial_l", input, n, _laguerre)


def _legendre(x: Tensor, ni: Tensor) -> Tensor:
    def step(m: int, x: Tensor, p: Tensor, q: Tensor) -> Tensor:
        k = float(m - 1)
        return (x * (k + k + 1.0) * q - p * k) / (k + 1.0)
    out = _run(x, ni, _ones(x), x, step)
    # P_n(1) = 1, P_n(-1) = (-1)^n
    edge = where(elementwise.logical_and(x < 0, _odd(ni)), -1.0, 1.0)
    return where(elementwise.eq(elementwise.abs(x), 1.0), edge, out)


def legendre_polynomial_p(input: Any, n: Any) -> Tensor:
    """Legendre polynomial ``P_n(input)``."""
    return _poly("legendre_polynomial_p", input, n, _legendre)
