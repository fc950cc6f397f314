"""Vectorised special functions numpy lacks: :func:`erf` without scipy.

The approximations are polynomials built once, on first use, from ``math.erf`` / ``math.erfc``
(so no table of magic constants lives here), then evaluated in numpy in cache-sized chunks:

- float64: the Taylor polynomial of degree 14 of erf at the centre of the interval of width 1/8
  that holds ``|x|`` (48 intervals up to 6; past 6 erf rounds to 1). Its coefficients are exact
  formulas: ``erf^(n)(c) = 2/sqrt(pi) (-1)^(n-1) H_(n-1)(c) exp(-c^2)`` (Hermite polynomials).
  The first interval is expanded at 0 (``t = x``), which keeps tiny and subnormal inputs accurate.
- float32 (and float16, computed in float32): two branches evaluated in float32 without per-element
  table lookups: ``x * P(x^2)`` for ``|x| < 1`` and ``1 - exp(-x^2) * erfcx(|x|)`` for
  ``|x| >= 1``, with ``|x| * erfcx(|x|)`` a polynomial in ``1/|x|`` (``|x|`` clamped to 4, past which
  erf rounds to 1 in float32). The polynomials are Chebyshev least-squares fits. Each branch is
  evaluated only on the elements that take it (GELU's inputs are mostly below 1).

With numba (``jit.available()``), float32 runs as one vectorised loop instead (``jit.erf32``: the
same polynomials, both branches computed per element, its own exponential; the last bit may
differ from the numpy evaluation's).

The maximum errors against ``math.erf`` are pinned by ``tests/test_numpy_kernels.py``.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..erf32 import END as _END32
from ..erf32 import coefficients as _coefs32
from . import jit

__all__ = ["erf"]

_CHUNK = 32768  # elements per pass: the temporaries of a chunk stay in the L2 cache

# float64 layout: intervals of width 1/_K64 on [0, _END64)
_K64, _END64, _DEG64 = 8, 6.0, 14


@functools.cache
def _table64() -> np.ndarray:
    """(_DEG64 + 1, intervals): row n holds the t^n Taylor coefficient of every interval (a
    contiguous row per degree makes each per-element lookup one ``np.take`` on a small table)."""
    n_int = int(_END64 * _K64)
    tab = np.empty((_DEG64 + 1, n_int))
    k2 = 2 / math.sqrt(math.pi)
    for k in range(n_int):
        c = 0.0 if k == 0 else (k + 0.5) / _K64
        h = [1.0, 2 * c]  # physicists' Hermite polynomials at c
        for n in range(1, _DEG64):
            h.append(2 * c * h[n] - 2 * n * h[n - 1])
        e = k2 * math.exp(-c * c)
        tab[0, k] = math.erf(c)
        for n in range(1, _DEG64 + 1):
            tab[n, k] = e * (-1) ** (n - 1) * h[n - 1] / math.factorial(n)
    return tab


@functools.cache
def _centres64() -> np.ndarray:
    c = (np.arange(int(_END64 * _K64)) + 0.5) / _K64
    c[0] = 0.0
    return c


def _horner(coefs: tuple[np.float32, ...], u: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """``sum_j coefs[j] * u**j`` into ``acc`` (same shape and dtype as ``u``)."""
    # the first step as u * c_n (the product of c_n filled in and u, without the fill pass)
    np.multiply(u, coefs[-1], out=acc)
    np.add(acc, coefs[-2], out=acc)
    for c in coefs[-3::-1]:
        np.multiply(acc, u, out=acc)
        np.add(acc, c, out=acc)
    return acc


def _erf64_chunk(x: np.ndarray, out: np.ndarray) -> None:
    tab = _table64()
    a = np.abs(x)
    # the interval of |x| (fmin: NaN maps to the last one; NaN still propagates through t)
    k = np.fmin(a * _K64, _END64 * _K64 - 1).astype(np.intp)
    t = np.minimum(a, _END64)
    t -= np.take(_centres64(), k)
    acc = np.take(tab[-1], k)
    for n in range(_DEG64 - 1, -1, -1):
        acc *= t
        acc += np.take(tab[n], k)
    np.minimum(acc, 1.0, out=acc)  # past 6 (and at infinity) erf is 1 to float64 precision
    np.copysign(acc, x, out=out)


def _erf32_large(a: np.ndarray) -> np.ndarray:
    """``1 - exp(-a^2) * t * Q(t)``, ``t = 1/a``, for ``a = |x| >= 1`` (``a`` clamped to 4 through
    ``t``; ``np.minimum``/``np.clip`` keep NaN), a new array."""
    _, large = _coefs32()
    one = np.float32(1)
    lo = np.float32(1 / _END32)
    mid, half = np.float32((1 + 1 / _END32) / 2), np.float32((1 - 1 / _END32) / 2)
    t = np.divide(one, a)
    np.clip(t, lo, one, out=t)
    v = t - mid
    v /= half
    g = _horner(large, v, np.empty_like(a))
    g *= t
    z = a * a
    np.minimum(z, np.float32(_END32 * _END32), out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    g *= z
    np.subtract(one, g, out=g)
    return g


def _erf32_small(a: np.ndarray) -> np.ndarray:
    """``a * P(a^2)`` (``P`` in ``u = 2 a^2 - 1``) for ``a = |x| < 1``, a new array."""
    small, _ = _coefs32()
    u = a * a
    u *= np.float32(2)
    u -= np.float32(1)
    s = _horner(small, u, np.empty_like(a))
    s *= a
    return s


def _erf32_chunk(x: np.ndarray, out: np.ndarray) -> None:
    a = np.abs(x)
    # Each branch runs only on its elements (packed together: the ops are elementwise, so the
    # values are the same): the branch of most elements on the whole chunk (cheaper than
    # selecting them), the other on the selected rest. Activations are mostly below 1, where
    # the long branch (a division, an exponential, a longer polynomial) is not needed.
    big = a >= np.float32(1)  # NaN is not: it takes the short branch
    n_big = int(np.count_nonzero(big))
    if 2 * n_big <= a.size:
        s = _erf32_small(a)
        if n_big:
            idx = np.flatnonzero(big)
            s[idx] = _erf32_large(a[idx])
    else:
        s = _erf32_large(a)
        if n_big < a.size:
            idx = np.flatnonzero(~big)
            s[idx] = _erf32_small(a[idx])
    np.copysign(s, x, out=out)


def erf(x: np.ndarray, out: np.ndarray) -> None:
    """Write the error function of the floating array ``x`` into ``out`` (same shape).

    float64 is computed in float64; every other floating dtype in float32 and rounded once.
    """
    if x.dtype == np.float64:
        fn, dt = _erf64_chunk, np.float64
    else:
        fn, dt = _erf32_chunk, np.float32
    flat = np.ascontiguousarray(x, dt).reshape(-1)
    n = flat.size
    direct = out.dtype == dt and out.flags.c_contiguous
    res = out.reshape(-1) if direct else np.empty(n, dt)
    if dt == np.float32 and jit.available():
        jit.erf32(flat, res)
    else:
        # the branch not taken overflows for some inputs (its result is discarded)
        with np.errstate(all="ignore"):
            for i in range(0, n, _CHUNK):
                fn(flat[i:i + _CHUNK], res[i:i + _CHUNK])
    if not direct:
        np.copyto(out, res.reshape(out.shape), casting="unsafe")
