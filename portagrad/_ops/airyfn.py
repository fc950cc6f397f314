"""``torch.special.airy_ai``, the Airy function of the first kind ``Ai``, which PyTorch does not
differentiate.

PyTorch's kernel is Cephes' ``airy`` (its ``Ai`` branch), and this follows the same algorithm
step for step, so that the two round alike: for ``x < -2.09`` the oscillatory asymptotic form
``Ai(x) = pi^-1/2 |x|^-1/4 (sin(t) (1 + z^2 F(z^2)) - cos(t) z G(z^2))``, ``t = zeta + pi/4``,
``z = 1/zeta``, ``zeta = 2/3 |x|^3/2``, with the rational approximations F = AFN/AFD and
G = AGN/AGD; for ``x >= 2.09`` the decaying form ``Ai(x) = pi^-1/2 A(1/zeta) / (2 x^1/4
exp(zeta))`` with A = AN/AD (0 beyond ``x = 103.892``, where it underflows); in between the
Maclaurin series ``Ai(x) = c1 f(x) - c2 g(x)`` (Abramowitz & Stegun 10.4.2). As PyTorch, ``Ai``
is NaN at ``+-inf`` (the limits are 0) and for ``x`` so negative that ``|x|^3/2`` overflows.

Composed from elementwise ops (so it runs on every backend) and computed without recording.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from . import elementwise
from .besselfn import _float_checked
from .indexing import where
from .special import _check_tensor

__all__ = ["airy_ai"]

# Cephes' coefficient tables (airy.c), highest power first; AFD and AGD are monic, their
# leading 1 left out
_AN = (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
       1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
       1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AD = (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
       1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
       1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
        -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
        -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AFD = (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
        9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
        4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
        9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
        5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
        8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AGD = (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
        5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
        4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
        4.91834570062930015649e-09)

_INV_SQRT_PI = 5.64189583547756286948e-01
_C1 = 0.355028053887817239260  # Ai(0)
_C2 = 0.258819403792806798405  # -Ai'(0)
_DOMAIN = 2.09  # where the asymptotic forms take over from the series
_ZERO_ABOVE = 103.892  # Ai underflows double precision beyond (Cephes' MAXAIRY)
_SERIES_EPS = 1.11022302462515654042e-16  # the series stops at a term below this (relative)
# the series needs at most 14 terms to get there for |x| < 2.09 (|x^3| < 9.13), in either
# precision; the extra steps are masked, so that every element stops where PyTorch's does
_SERIES_STEPS = 16


def _polevl(coefs: tuple[float, ...], v: Tensor) -> Tensor:
    """``sum_i coefs[i] v^(N-i)`` by Horner's rule (Cephes' ``polevl``)."""
    out = v * coefs[0] + coefs[1]
    for c in coefs[2:]:
        out = out * v + c
    return out


def _p1evl(coefs: tuple[float, ...], v: Tensor) -> Tensor:
    """``v^N + sum_i coefs[i] v^(N-1-i)``: a leading coefficient of 1 that the table leaves out
    (Cephes' ``p1evl``). PyTorch 2.13's kernel drops it, which puts its ``Ai`` off by up to
    ~6e-6 (relative to ``|x|^-1/4``) just below ``x = -2.09``, where ``1/zeta^2`` is largest."""
    out = v + coefs[0]
    for c in coefs[1:]:
        out = out * v + c
    return out


def _oscillating(x: Tensor) -> Tensor:
    """``Ai(x)`` for ``x < -2.09`` (Cephes' order of operations: ``zeta`` is rounded before the
    phase is, as PyTorch's)."""
    zeta = x * -2.0 * elementwise.sqrt(-x) / 3.0
    z = 1.0 / zeta
    zz = z * z
    f = zz * _polevl(_AFN, zz) / _p1evl(_AFD, zz)
    g = z * _polevl(_AGN, zz) / _p1evl(_AGD, zz)
    t = zeta + 0.25 * math.pi
    amp = _INV_SQRT_PI / elementwise.sqrt(elementwise.sqrt(-x))
    return amp * (elementwise.sin(t) * (f + 1.0) - elementwise.cos(t) * g)


def _decaying(x: Tensor) -> Tensor:
    """``Ai(x)`` for ``x >= 2.09``: 0 once the denominator overflows (float32 from x ~ 25.8)."""
    zeta = x * 2.0 * elementwise.sqrt(x) / 3.0
    r = 1.0 / zeta
    ratio = _polevl(_AN, r) / _polevl(_AD, r)
    return ratio * _INV_SQRT_PI / (elementwise.sqrt(elementwise.sqrt(x)) * 2.0 * elementwise.exp(zeta))


def _series(x: Tensor, eps: float) -> Tensor:
    """``Ai(x) = c1 f - c2 g`` for ``|x| < 2.09``, ``f = sum_k 3^k (1/3)_k x^3k / (3k)!``,
    ``g = sum_k 3^k (2/3)_k x^(3k+1) / (3k+1)!``, summed until ``|term / f| <= eps`` per
    element, as Cephes' loop (a NaN stops it after one step)."""
    z = x * x * x
    m = _creation.ones_like(x)  # f's term
    n = x  # g's term
    f = _creation.ones_like(x)
    g = x
    going = _creation.ones_like(x, dtype=_dtype.bool)  # one step always runs
    for step in range(_SERIES_STEPS):
        k = 3.0 * step + 2.0
        m_next = m * z / k / (k + 1.0)
        n_next = n * z / (k + 1.0) / (k + 2.0)
        f_next = f + m_next
        m = where(going, m_next, m)
        n = where(going, n_next, n)
        f = where(going, f_next, f)
        g = where(going, g + n_next, g)
        going = elementwise.logical_and(going, elementwise.abs(m_next / f_next) > eps)
    return f * _C1 - g * _C2


def airy_ai(input: Tensor) -> Tensor:
    """The Airy function of the first kind, ``Ai(x)`` (NaN at ``+-inf``, as PyTorch's; no
    derivative)."""
    _check_tensor("special_airy_ai", input, "x")  # PyTorch's message names its argument x
    x = _float_checked("airy_ai", input)
    # the branch limits and the series' stopping point, in x's precision, as PyTorch's T(...)
    if x.dtype is _dtype.float32:
        lo, hi, top, eps = (float(np.float32(v)) for v in (-_DOMAIN, _DOMAIN, _ZERO_ABOVE,
                                                             _SERIES_EPS))
    else:
        lo, hi, top, eps = -_DOMAIN, _DOMAIN, _ZERO_ABOVE, _SERIES_EPS
    with _no_grad():
        neg = x < lo
        pos = x >= hi
        mid = elementwise.logical_not(elementwise.logical_or(neg, pos))
        # each branch sees a harmless stand-in where another one applies
        osc = _oscillating(where(elementwise.logical_and(neg, elementwise.isfinite(x)), x, -3.0))
        dec = _decaying(where(elementwise.logical_and(pos, x <= top), x, 3.0))
        ser = _series(where(mid, x, 0.0), eps)
        out = where(neg, osc, where(pos, dec, ser))
        out = where(x > top, 0.0, out)
        return where(elementwise.isinf(x), math.nan, out)
