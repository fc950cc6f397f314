"""OpenCL C for complex64/complex128: storage as ``float2``/``double2``, arithmetic in helpers.

A complex element is stored as the pair ``(real, imag)`` (numpy's layout: element ``i`` at byte
``8*i`` or ``16*i``), which is exactly OpenCL's ``float2``/``double2`` (size and alignment 8/16).
So the generic kernels move, add and subtract complex values as vectors with no change (``a + b``
on ``float2`` is the complex sum, ``-a`` the negation, and ``float2 acc = 0`` is ``0 + 0i``); what
vector arithmetic gets wrong (products, quotients, the functions) goes through the helpers below,
written once per real type and included by :func:`.kernels.prelude` for complex dtypes.

The helpers follow numpy, the reference: ``pg_cmul``/``pg_cdiv``/``pg_crecip`` are numpy's loops
(Smith's division), bit-identical; ``pg_cpow`` is numpy's ``npy_cpow`` (exact products for small
integer exponents, else ``exp(b log a)``); the functions follow C99 Annex G (numpy calls the C
library's ``cexp``, ``clog``, ``csqrt``, ...): their branch cuts (``log``/``sqrt`` along the
negative reals, the sign of a zero imaginary part choosing the side), signed zeros on the real
axis, and the special values where they are cheap (``sqrt`` and ``tanh`` of infinities and NaNs,
``sqrt`` of huge magnitudes without overflow, ``log`` near ``|z| = 1`` through ``log1p``). Values
agree with glibc's to a few ulps, not bit for bit.
"""
from __future__ import annotations

__all__ = ["COMPLEX_REAL", "complex_helpers"]

#: complex dtype -> the real dtype of its parts
COMPLEX_REAL = {"complex64": "float32", "complex128": "float64"}

# {T}: the real C type, {V}: its 2-vector; {MAX}: the largest finite {T}; {TANH_BIG}: |x| from
# which tanh(x) is +-1 in {T} (FreeBSD's ctanh thresholds: 22 for double, 9 for float)
_HELPERS = """
inline {V} pg_cmul_{T}({V} a, {V} b) {{
    return ({V})(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}}
/* numpy's complex division (Smith's method; 0 / 0 gives nan, x / 0 inf) */
inline {V} pg_cdiv_{T}({V} a, {V} b) {{
    {T} br = fabs(b.x), bi = fabs(b.y);
    if (br >= bi) {{
        if (br == ({T})0 && bi == ({T})0) return ({V})(a.x / br, a.y / bi);
        {T} rat = b.y / b.x, scl = ({T})1 / (b.x + b.y * rat);
        return ({V})((a.x + a.y * rat) * scl, (a.y - a.x * rat) * scl);
    }}
    {T} rat = b.x / b.y, scl = ({T})1 / (b.y + b.x * rat);
    return ({V})((a.x * rat + a.y) * scl, (a.y * rat - a.x) * scl);
}}
/* numpy's np.reciprocal loop */
inline {V} pg_crecip_{T}({V} a) {{
    if (fabs(a.y) <= fabs(a.x)) {{
        {T} r = a.y / a.x, d = a.x + a.y * r;
        return ({V})(({T})1 / d, -r / d);
    }}
    {T} r = a.x / a.y, d = a.x * r + a.y;
    return ({V})(r / d, ({T})-1 / d);
}}
inline {T} pg_cabs_{T}({V} a) {{ return hypot(a.x, a.y); }}
inline {V} pg_cexp_{T}({V} a) {{
    if (a.y == ({T})0) return ({V})(exp(a.x), a.y);  /* exp of a real: exact imaginary zero */
    if (isinf(a.x) && !isfinite(a.y))  /* C99: +inf + i nan, or a zero, for an infinite x */
        return a.x > ({T})0 ? ({V})(a.x, a.y - a.y) : ({V})(({T})0, ({T})0);
    {T} e = exp(a.x), c = cos(a.y), s = sin(a.y);
    if (isinf(e) && isfinite(a.x)) {{  /* exp(x) overflows but exp(x) * cos(y) may not */
        e = exp(a.x * ({T})0.5);
        return ({V})(e * c * e, e * s * e);
    }}
    return ({V})(e * c, e * s);
}}
inline {V} pg_clog_{T}({V} a) {{
    {T} ax = fabs(a.x), ay = fabs(a.y);
    {T} hi = fmax(ax, ay), lo = fmin(ax, ay), re;
    if (!isnan(a.x) && !isnan(a.y) && hi >= ({T})0.5 && hi <= ({T})2)
        re = ({T})0.5 * log1p((hi - ({T})1) * (hi + ({T})1) + lo * lo);  /* |z| near 1 */
    else
        re = log(hypot(a.x, a.y));  /* C99: log(0) = -inf, an infinite part wins over NaN */
    return ({V})(re, atan2(a.y, a.x));
}}
/* C99 csqrt (FreeBSD's): the principal root, the imaginary part's sign that of a.y */
inline {V} pg_csqrt_{T}({V} z) {{
    {T} a = z.x, b = z.y;
    if (a == ({T})0 && b == ({T})0) return ({V})(({T})0, b);
    if (isinf(b)) return ({V})(INFINITY, b);
    if (isnan(a)) return ({V})(a, (b - b) / (b - b));
    if (isinf(a)) {{
        if (signbit(a)) return ({V})(fabs(b - b), copysign(-a, b));
        return ({V})(a, copysign(b - b, b));
    }}
    int scale = fabs(a) >= ({T})({MAX} / 4) || fabs(b) >= ({T})({MAX} / 4);
    if (scale) {{ a *= ({T})0.25; b *= ({T})0.25; }}
    {V} r;
    if (a >= ({T})0) {{
        {T} t = sqrt((a + hypot(a, b)) * ({T})0.5);
        r = ({V})(t, b / (({T})2 * t));
    }} else {{
        {T} t = sqrt((-a + hypot(a, b)) * ({T})0.5);
        r = ({V})(fabs(b) / (({T})2 * t), copysign(t, b));
    }}
    return scale ? r * ({T})2 : r;
}}
/* a zero real part: the exact zero and sinh(y), not 0 * inf; an infinite or NaN one: C99's
   values (with glibc's signs where C99 leaves them open) */
inline {V} pg_csin_{T}({V} a) {{
    if (a.x == ({T})0) return ({V})(a.x, sinh(a.y));
    if (!isfinite(a.x) && a.y == ({T})0) return ({V})(a.x - a.x, a.y);
    if (!isfinite(a.x) && isinf(a.y)) return ({V})(a.x - a.x, fabs(a.y));
    return ({V})(sin(a.x) * cosh(a.y), cos(a.x) * sinh(a.y));
}}
/* ccos(z) = ccosh(iz): cos(0) = 1 - 0i, as C99 and numpy */
inline {V} pg_ccos_{T}({V} a) {{
    if (a.x == ({T})0) return ({V})(cosh(a.y), copysign(({T})0, -a.y) * a.x);
    if (!isfinite(a.x) && a.y == ({T})0) return ({V})(a.x - a.x, ({T})0);
    if (!isfinite(a.x) && isinf(a.y)) return ({V})(INFINITY, a.x - a.x);
    return ({V})(cosh(-a.y) * cos(a.x), sinh(-a.y) * sin(a.x));
}}
/* C99 ctanh (Kahan's formula, as FreeBSD): no overflow for large |x| */
inline {V} pg_ctanh_{T}({V} z) {{
    {T} x = z.x, y = z.y;
    if (isnan(x)) return ({V})(x, y == ({T})0 ? y : x);
    if (isinf(x))
        return ({V})(copysign(({T})1, x), copysign(({T})0, isinf(y) ? y : sin(y) * cos(y)));
    if (!isfinite(y)) return ({V})(x == ({T})0 ? x : y - y, y - y);
    if (fabs(x) >= ({T}){TANH_BIG}) {{
        {T} e = exp(-fabs(x));
        return ({V})(copysign(({T})1, x), ({T})4 * sin(y) * cos(y) * e * e);
    }}
    {T} t = tan(y), beta = ({T})1 + t * t, s = sinh(x), rho = sqrt(({T})1 + s * s);
    {T} den = ({T})1 + beta * s * s;
    return ({V})((beta * rho * s) / den, t / den);
}}
/* ctan(z) = -i ctanh(iz) */
inline {V} pg_ctan_{T}({V} a) {{
    {V} w = pg_ctanh_{T}(({V})(-a.y, a.x));
    return ({V})(w.y, -w.x);
}}
/* 1 / (1 + exp(-z)), as the numpy backend (and PyTorch) compute the complex sigmoid */
inline {V} pg_csigmoid_{T}({V} a) {{
    return pg_cdiv_{T}(({V})(({T})1, ({T})0), ({V})(({T})1, ({T})0) + pg_cexp_{T}(-a));
}}
/* numpy's complex expm1 and log1p (nc_expm1, nc_log1p) */
inline {V} pg_cexpm1_{T}({V} a) {{
    {T} h = sin(a.y * ({T})0.5);
    return ({V})(expm1(a.x) * cos(a.y) - ({T})2 * h * h, exp(a.x) * sin(a.y));
}}
inline {V} pg_clog1p_{T}({V} a) {{
    return ({V})(log(hypot(a.x + ({T})1, a.y)), atan2(a.y, a.x + ({T})1));
}}
/* numpy's npy_cpow */
inline {V} pg_cpow_{T}({V} a, {V} b) {{
    if (b.x == ({T})0 && b.y == ({T})0) return ({V})(({T})1, ({T})0);
    if (a.x == ({T})0 && a.y == ({T})0) {{
        if (b.x > ({T})0 && b.y == ({T})0) return ({V})(({T})0, ({T})0);
        return ({V})(NAN, NAN);  /* 0 to a negative or complex power: ill-defined */
    }}
    if (b.y == ({T})0 && b.x == trunc(b.x) && fabs(b.x) < ({T})100) {{
        long n = (long)b.x;
        if (n == 1) return a;
        if (n == 2) return pg_cmul_{T}(a, a);
        if (n == 3) return pg_cmul_{T}(pg_cmul_{T}(a, a), a);
        long m = n < 0 ? -n : n, mask = 1;
        {V} acc = ({V})(({T})1, ({T})0), p = a;
        while (1) {{
            if (m & mask) acc = pg_cmul_{T}(acc, p);
            mask <<= 1;
            if (m < mask || mask <= 0) break;
            p = pg_cmul_{T}(p, p);
        }}
        return n < 0 ? pg_cdiv_{T}(({V})(({T})1, ({T})0), acc) : acc;
    }}
    return pg_cexp_{T}(pg_cmul_{T}(b, pg_clog_{T}(a)));
}}
"""

_PARAMS = {"float32": {"T": "float", "V": "float2", "MAX": "FLT_MAX", "TANH_BIG": "9"},
           "float64": {"T": "double", "V": "double2", "MAX": "DBL_MAX", "TANH_BIG": "22"}}


def complex_helpers(dtype: str) -> str:
    """The helper functions of complex ``dtype`` (``pg_cmul_<T>``, ``pg_cdiv_<T>``, ...; ``T``
    the C type of its parts)."""
    return _HELPERS.format(**_PARAMS[COMPLEX_REAL[dtype]])
