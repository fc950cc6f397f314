"""The float32 error function shared by the built-in backends: its polynomials and its C source.

``erf`` in float32 (and in the 16-bit floats, computed in float32) is two branches:
``x * P(x^2)`` for ``|x| < 1`` and ``1 - exp(-x^2) * erfcx(|x|)`` for ``|x| >= 1``, with
``|x| * erfcx(|x|)`` a polynomial in ``1/|x|`` (``|x|`` clamped to :data:`END`, past which erf
rounds to 1 in float32). The polynomials are Chebyshev least-squares fits built once, on first
use, from ``math.erf`` / ``math.erfc`` (so no table of magic constants lives here).

The numpy backend evaluates them with whole-array numpy calls (``backends/numpy/special.py``);
the OpenCL backend compiles :func:`opencl_source`, the same operations in the same order (its
programs turn floating-point contraction off), instead of the device library's ``erf``, which
PoCL's CPU devices ran at about 19 ns per element.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.polynomial import chebyshev

__all__ = ["END", "coefficients", "opencl_source"]

#: the large branch's clamp of ``|x|`` (erf rounds to 1 in float32 past it)
END = 4.0
_DEG_SMALL, _DEG_LARGE = 6, 8


def _fit(f: Callable[[float], float], lo: float, hi: float, deg: int) -> tuple[np.float32, ...]:
    """float32 power-basis coefficients (constant first) of a degree-``deg`` Chebyshev
    least-squares fit of ``f`` on ``[lo, hi]``, in the variable ``u = (v - mid) / half``."""
    u = np.cos(np.pi * (np.arange(8 * deg) + 0.5) / (8 * deg))
    v = (lo + hi) / 2 + (hi - lo) / 2 * u
    c = chebyshev.chebfit(u, np.array([f(t) for t in v.tolist()]), deg)
    p = chebyshev.cheb2poly(c)
    return tuple(np.float32(x) for x in p) + (np.float32(0),) * (deg + 1 - len(p))


@functools.cache
def coefficients() -> tuple[tuple[np.float32, ...], tuple[np.float32, ...]]:
    """``(small, large)``: the two branches' float32 coefficients, constant first. ``small`` is
    in ``u = 2 x^2 - 1``; ``large`` in ``v = (t - mid) / half`` for ``t = 1/|x|`` on
    ``[1/END, 1]``."""
    def small(z: float) -> float:  # erf(x)/x as a function of z = x^2 on [0, 1]
        x = math.sqrt(z)
        return math.erf(x) / x if x else 2 / math.sqrt(math.pi)

    def large(t: float) -> float:  # a * erfcx(a) as a function of t = 1/a on [1/4, 1]
        a = 1 / t
        return a * math.erfc(a) * math.exp(a * a)

    return _fit(small, 0.0, 1.0, _DEG_SMALL), _fit(large, 1 / END, 1.0, _DEG_LARGE)


def _lit(v: float | np.floating) -> str:
    """An exact C float literal (hexadecimal) of a float32 value."""
    return float(np.float32(v)).hex() + "f"


def _horner(coefs: tuple[np.float32, ...], var: str, acc: str) -> str:
    steps = [f"float {acc} = {_lit(coefs[-1])};"]
    for c in coefs[-2::-1]:
        steps.append(f"{acc} = {acc} * {var}; {acc} = {acc} + {_lit(c)};")
    return " ".join(steps)


@functools.cache
def opencl_source() -> str:
    """OpenCL C of ``float pg_erf_float(float x)``: the operations of the numpy backend's
    float32 erf, one branch per element (NaN takes the short one and propagates)."""
    small, large = coefficients()
    lo, mid, half = 1 / END, (1 + 1 / END) / 2, (1 - 1 / END) / 2
    # fabs, fmin, fmax and copysign spelled as bit operations and compares (the same values: the
    # clamps see no NaN, since a NaN takes the other branch): PoCL calls those builtins out of line
    return f"""
inline float pg_erf_float(float x) {{
    float a = as_float(as_uint(x) & 0x7FFFFFFFu);
    float r;
    if (a >= 1.0f) {{
        float t = 1.0f / a;
        t = t < {_lit(lo)} ? {_lit(lo)} : t;
        t = t > 1.0f ? 1.0f : t;
        float v = (t - {_lit(mid)}) / {_lit(half)};
        {_horner(large, "v", "g")}
        g = g * t;
        float z = a * a;
        z = z < {_lit(END * END)} ? z : {_lit(END * END)};
        g = g * exp(-z);
        r = 1.0f - g;
    }} else {{
        float u = a * a; u = u * 2.0f; u = u - 1.0f;
        {_horner(small, "u", "s")}
        r = s * a;
    }}
    return as_float((as_uint(r) & 0x7FFFFFFFu) | (as_uint(x) & 0x80000000u));
}}"""
