"""Bessel functions of ``torch.special`` that PyTorch does not differentiate:
``spherical_bessel_j0``, ``modified_bessel_i0/i1/k0/k1``, ``scaled_modified_bessel_k0/k1``.

Composed from elementwise ops (so they run on every backend) and computed without recording:
PyTorch defines no derivative for them, and their results never require grad.
"""
from __future__ import annotations

import math

from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from ._common import type_name
from . import elementwise
from .elementwise import _float_input
from .indexing import where
from .special import _bessel_i, _check_tensor

__all__ = ["spherical_bessel_j0", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
           "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]

# sin(x)/x = sum (-1)^k x^2k / (2k+1)!, to x^12: PyTorch's series below |x| = 1/2, where
# sin(x)/x would lose the last bits to the division
_J0_SERIES = (1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
              1.0 / 120.0, -1.0 / 6.0, 1.0)


def _float_checked(name: str, input: Tensor) -> Tensor:
    _check_tensor(name, input)
    x = _float_input(input)
    if x.dtype in (_dtype.float16, _dtype.bfloat16):  # PyTorch has no 16-bit kernel
        raise NotImplementedError(f'"{name}" not implemented for \'{type_name(x.dtype)}\'')
    return x


def spherical_bessel_j0(input: Tensor) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x`` (1 at 0, 0 at
    +-inf)."""
    x = _float_checked("spherical_bessel_j0", input)
    with _no_grad():
        small = elementwise.abs(x) < 0.5
        xs = where(small, x, 0.0)
        x2 = xs * xs
        series = x2 * 0.0 + _J0_SERIES[0]
        for c in _J0_SERIES[1:]:
            series = series * x2 + c
        xb = where(small, 1.0, x)
        out = where(small, series, elementwise.sin(xb) / xb)
        return where(elementwise.isinf(x), 0.0, out)


def modified_bessel_i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0, ``I_0`` (``i0`` without a
    derivative, as PyTorch's)."""
    x = _float_checked("modified_bessel_i0", input)
    with _no_grad():
        return _bessel_i(0, x)


def modified_bessel_i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1, ``I_1`` (``special.i1``
    without a derivative, as PyTorch's)."""
    x = _float_checked("modified_bessel_i1", input)
    with _no_grad():
        return _bessel_i(1, x)


_EULER_GAMMA = 0.57721566490153286061


def _k_small(x: Tensor) -> tuple[Tensor, Tensor]:
    """``K_0`` and ``K_1`` for ``0 < x < 1.5`` by their series (Abramowitz & Stegun 9.6.13 and
    9.6.11): ``K_0 = -(log(x/2) + gamma) I_0 + sum_k (x^2/4)^k / k!^2 H_k``,
    ``K_1 = 1/x + log(x/2) I_1 - (x/4) sum_k (x^2/4)^k / (k! (k+1)!) (psi(k+1) + psi(k+2))``."""
    q = x * x * 0.25
    lg = elementwise.log(x * 0.5)
    i0 = _bessel_i(0, x)
    i1 = _bessel_i(1, x)
    term = _creation.ones_like(x)  # (x^2/4)^k / k!^2
    term1 = _creation.ones_like(x)  # (x^2/4)^k / (k! (k+1)!)
    s0 = _creation.zeros_like(x)
    harmonic = 0.0
    s1 = term1 * (2.0 * -_EULER_GAMMA + 1.0)  # k = 0: psi(1) + psi(2) = 1 - 2 gamma
    for k in range(1, 30):
        harmonic += 1.0 / k
        term = term * q / float(k * k)
        term1 = term1 * q / float(k * (k + 1))
        s0 = s0 + term * harmonic
        # psi(k+1) + psi(k+2) = 2 H_k + 1/(k+1) - 2 gamma
        s1 = s1 + term1 * (2.0 * harmonic + 1.0 / (k + 1) - 2.0 * _EULER_GAMMA)
    k0 = -(lg + _EULER_GAMMA) * i0 + s0
    k1 = 1.0 / x + lg * i1 - x * 0.25 * s1
    return k0, k1


def _k_large_scaled(x: Tensor, steps: int) -> tuple[Tensor, Tensor]:
    """``exp(x) K_0`` and ``exp(x) K_1`` for ``1.5 <= x < 30`` by Steed's continued fraction CF2
    with Temme's normalization (Press et al., Numerical Recipes, ``bessik``, order 0), run a
    fixed number of steps (110 reach double precision from x = 1.5 on)."""
    b = (x + 1.0) * 2.0
    d = 1.0 / b
    h = d
    delh = d
    q1 = _creation.zeros_like(x)
    q2 = _creation.ones_like(x)
    a1 = 0.25
    q = x * 0.0 + a1
    c = a1
    a = -a1
    s = q * delh + 1.0
    for i in range(2, steps):
        a -= 2.0 * (i - 1)
        c = -a * c / i
        qnew = (q1 - b * q2) / a
        q1, q2 = q2, qnew
        q = q + qnew * c
        b = b + 2.0
        d = 1.0 / (b + d * a)
        delh = (b * d - 1.0) * delh
        h = h + delh
        s = s + q * delh
    h = h * a1
    k0 = elementwise.sqrt(math.pi / 2.0 / x) / s
    k1 = k0 * (x + 0.5 - h) / x
    return k0, k1


def _k_asymptotic_scaled(order: int, x: Tensor) -> Tensor:
    """``exp(x) K_nu(x) ~ sqrt(pi / 2x) sum_k prod_j (4 nu^2 - (2j-1)^2) / (8 j x)`` (Abramowitz
    & Stegun 9.7.2): 30 terms reach double precision from x = 30 on, where the continued
    fraction's recurrence would overflow."""
    mu = 4.0 * order * order
    t = _creation.ones_like(x)
    total = t
    for k in range(1, 31):
        t = t * ((mu - (2 * k - 1) ** 2) / (8.0 * k)) / x
        total = total + t
    return elementwise.sqrt(math.pi / 2.0 / x) * total


def _bessel_k(order: int, x: Tensor, scaled: bool) -> Tensor:
    small = x < 1.5
    xs = where(small, x, 1.0)
    k0s, k1s = _k_small(where(xs > 0, xs, 1.0))
    ks = k0s if order == 0 else k1s
    if scaled:
        ks = ks * elementwise.exp(xs)
    far = x >= 30.0
    mid = where(elementwise.logical_or(small, far), 2.0, x)
    # float32 reaches its precision in 24 steps (before the recurrence's terms overflow)
    k0m, k1m = _k_large_scaled(mid, 110 if x.dtype is _dtype.float64 else 24)
    xf = where(far, x, 30.0)
    xf = where(elementwise.isinf(xf), 30.0, xf)
    kb = where(far, _k_asymptotic_scaled(order, xf), k0m if order == 0 else k1m)
    if not scaled:
        kb = kb * elementwise.exp(-where(far, xf, mid))
    out = where(small, ks, kb)
    out = where(elementwise.eq(x, 0), math.inf, out)  # the pole at 0
    out = where(elementwise.eq(x, math.inf), 0.0, out)
    return where(x < 0, math.nan, out)  # NaN for x < 0, as PyTorch (and NaN stays NaN)


def modified_bessel_k0(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 0, ``K_0`` (``inf`` at 0, NaN
    below)."""
    x = _float_checked("modified_bessel_k0", input)
    with _no_grad():
        return _bessel_k(0, x, False)


def modified_bessel_k1(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 1, ``K_1`` (``inf`` at 0, NaN
    below)."""
    x = _float_checked("modified_bessel_k1", input)
    with _no_grad():
        return _bessel_k(1, x, False)


def scaled_modified_bessel_k0(input: Tensor) -> Tensor:
    """``exp(x) K_0(x)``, which does not underflow for large ``x``."""
    x = _float_checked("scaled_modified_bessel_k0", input)
    with _no_grad():
        return _bessel_k(0, x, True)


def scaled_modified_bessel_k1(input: Tensor) -> Tensor:
    """``exp(x) K_1(x)``, which does not underflow for large ``x``."""
    x = _float_checked("scaled_modified_bessel_k1", input)
    with _no_grad():
        return _bessel_k(1, x, True)
