"""Bessel functions of ``torch.special`` that PyTorch does not differentiate:
``bessel_j0/j1``, ``spherical_bessel_j0``, ``modified_bessel_i0/i1/k0/k1``,
``scaled_modified_bessel_k0/k1``.

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

__all__ = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "spherical_bessel_j0", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]

# sin(x)/x = sum (-1)^k x^2k / (2k+1)!, to x^12: PyTorch's series below |x| = 1/2, where
# sin(x)/x would lose the last bits to the division
_J0_SERIES = (1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
              1.0 / 120.0, -1.0 / 6.0, 1.0)


def _float_checked(name: str, input: Tensor) -> Tensor:
    # PyTorch's messages name the ATen function (special_*) and the CPU kernel (*_cpu)
    _check_tensor(f"special_{name}", input, "x" if name == "spherical_bessel_j0" else "input")
    x = _float_input(input)
    if x.dtype in (_dtype.float16, _dtype.bfloat16):  # PyTorch has no 16-bit kernel
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{type_name(x.dtype)}\'')
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


def _jy_miller(x: Tensor, top: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``J_0``, ``J_1``, ``Y_0``, ``Y_1`` for ``0 < x < 25`` by Miller's backward recurrence
    ``J_{k-1} = (2k / x) J_k - J_{k+1}`` from order ``top`` (far above ``x``, where ``J_top`` is
    negligible), normalized by ``J_0 + 2 (J_2 + J_4 + ...) = 1`` (Abramowitz & Stegun 9.1.46,
    9.12); every step rescales, as the unnormalized values grow without bound. ``Y_0`` is
    Neumann's series ``(2/pi) (log(x/2) + gamma) J_0 - (4/pi) sum_k (-1)^k J_2k / k`` (A&S
    9.1.88) and ``Y_1 = -Y_0'``, the same series differentiated term by term."""
    inv = 2.0 / x
    hi = _creation.zeros_like(x)  # J_{k+1}
    cur = _creation.ones_like(x)  # J_k, k = top
    norm = _creation.zeros_like(x)
    y0sum = _creation.zeros_like(x)
    y1sum = _creation.zeros_like(x)
    j1 = _creation.zeros_like(x)
    for k in range(top, 0, -1):
        if k % 2 == 0:
            norm = norm + cur * 2.0
            y0sum = y0sum + cur * ((-1.0) ** (k // 2) / (k // 2))
        else:
            j = (k - 1) // 2
            # J_k's weight in sum_m (-1)^m (J_{2m-1} - J_{2m+1}) / m (from m = j + 1 and m = j)
            y1sum = y1sum + cur * ((-1.0) ** (j + 1) * (1.0 / (j + 1) + (1.0 / j if j else 0.0)))
        if k == 1:
            j1 = cur
        hi, cur = cur, cur * (inv * float(k)) - hi  # cur becomes J_{k-1}
        scale = 1.0 / (elementwise.abs(cur) + elementwise.abs(hi))
        hi, cur, norm, j1 = hi * scale, cur * scale, norm * scale, j1 * scale
        y0sum, y1sum = y0sum * scale, y1sum * scale
    norm = norm + cur
    j0, j1 = cur / norm, j1 / norm
    lg = (elementwise.log(x * 0.5) + _EULER_GAMMA) * (2.0 / math.pi)
    y0 = lg * j0 - y0sum / norm * (4.0 / math.pi)
    y1 = lg * j1 - j0 * (2.0 / math.pi) / x + y1sum / norm * (2.0 / math.pi)
    return j0, j1, y0, y1


def _hankel(order: int, x: Tensor, second: bool) -> Tensor:
    """``J_nu(x) = sqrt(2 / (pi x)) (P cos(chi) - Q sin(chi))`` and ``Y_nu(x) = sqrt(2 / (pi x))
    (P sin(chi) + Q cos(chi))``, ``chi = x - (2 nu + 1) pi / 4``, with Hankel's asymptotic series
    P and Q (Abramowitz & Stegun 9.2.5, 9.2.6, 9.2.9, 9.2.10), for ``x >= 25``; ``cos(chi)`` and
    ``sin(chi)`` from ``cos(x)`` and ``sin(x)`` so that the phase is not rounded by subtracting
    ``pi / 4``."""
    mu = 4.0 * order * order
    p = _creation.ones_like(x)
    q = _creation.zeros_like(x)
    t = _creation.ones_like(x)
    for k in range(1, 31):
        t = t * ((mu - (2 * k - 1) ** 2) / (8.0 * k)) / x
        if k % 2:
            q = q + t * (1.0 if k % 4 == 1 else -1.0)
        else:
            p = p + t * (1.0 if k % 4 == 0 else -1.0)
    c, s = elementwise.cos(x), elementwise.sin(x)
    r = 1.0 / math.sqrt(2.0)
    if order == 0:
        cc, ss = (c + s) * r, (s - c) * r
    else:
        cc, ss = (s - c) * r, -(s + c) * r
    amp = elementwise.sqrt(2.0 / math.pi / x)
    return amp * (p * ss + q * cc) if second else amp * (p * cc - q * ss)


def _bessel_j(order: int, input: Tensor) -> Tensor:
    a = elementwise.abs(input)
    far = a >= 25.0
    near = where(elementwise.logical_or(far, elementwise.eq(a, 0)), 1.0, a)
    j0, j1, _, _ = _jy_miller(near, 70)
    jn = j0 if order == 0 else j1
    af = where(elementwise.logical_and(far, elementwise.isfinite(a)), a, 25.0)
    out = where(far, _hankel(order, af, False), jn)
    out = where(elementwise.eq(a, 0), 1.0 if order == 0 else 0.0, out)
    out = where(elementwise.isinf(a), math.nan, out)  # PyTorch's value (the limit is 0)
    if order == 1:  # J_1 is odd
        out = out * where(input < 0, -1.0, 1.0)
    return where(elementwise.isnan(input), input, out)


def _bessel_y(order: int, x: Tensor) -> Tensor:
    far = x >= 25.0
    near = where(elementwise.logical_or(far, x <= 0), 1.0, x)
    _, _, y0, y1 = _jy_miller(near, 70)
    xf = where(elementwise.logical_and(far, elementwise.isfinite(x)), x, 25.0)
    out = where(far, _hankel(order, xf, True), y0 if order == 0 else y1)
    out = where(elementwise.eq(x, 0), -math.inf, out)  # the logarithmic (Y_0), 1/x (Y_1) pole
    # NaN below 0 and at +inf, as PyTorch (the limit there is 0)
    return where(elementwise.logical_or(x < 0, elementwise.eq(x, math.inf)), math.nan, out)


def bessel_j0(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 0, ``J_0`` (NaN at +-inf, as PyTorch).

    Accurate to a few units of rounding in float64; PyTorch 2.13's CPU kernel is off by up to
    ~4e-7 around x = 5 (measured against mpmath), so the two differ there."""
    x = _float_checked("bessel_j0", input)
    with _no_grad():
        return _bessel_j(0, x)


def bessel_j1(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 1, ``J_1`` (NaN at +-inf, as PyTorch).

    Accurate to a few units of rounding in float64, where PyTorch 2.13's CPU kernel is off by
    up to ~1e-6 around x = 5 (measured against mpmath)."""
    x = _float_checked("bessel_j1", input)
    with _no_grad():
        return _bessel_j(1, x)


def bessel_y0(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 0, ``Y_0`` (``-inf`` at 0, NaN below 0
    and at inf, as PyTorch)."""
    x = _float_checked("bessel_y0", input)
    with _no_grad():
        return _bessel_y(0, x)


def bessel_y1(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 1, ``Y_1`` (``-inf`` at 0, NaN below 0
    and at inf, as PyTorch)."""
    x = _float_checked("bessel_y1", input)
    with _no_grad():
        return _bessel_y(1, x)
