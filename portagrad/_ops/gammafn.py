"""The gamma function family: ``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma`` (and the
Hurwitz ``zeta``, polygamma's generalization: ``polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x)``).

No backend has these as primitives, so they are computed with elementwise ops: ``lgamma`` with
Lanczos' approximation (g = 7, 9 terms), ``digamma``/``polygamma`` by shifting the argument up
with the recurrence ``psi(x) = psi(x + 1) - 1/x`` and then the asymptotic series; negative
arguments go through the reflection formulas. Each is a ``Function`` whose derivative is the next
member of the family (``lgamma' = digamma``, ``digamma' = polygamma(1)``, ...).
"""
from __future__ import annotations

import math
from typing import Any

from .. import _creation, _dtype
from .._shape import broadcast_shapes
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _no_grad
from ..errors import DTypeError
from ._common import call, prepare_binary, type_name
from . import elementwise
from .elementwise import _float_input
from .indexing import where

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "igamma", "igammac", "zeta"]

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Taylor coefficients of lgamma(2 + w) about w = 0: 1 - Euler's gamma, then (-1)^k (zeta(k) - 1) / k
# (k = 2 .. 26; computed to 30 digits with mpmath). Near 1 and 2 Lanczos' sum cancels to a few
# correct digits (float32 lgamma(0.999999) was 18% off); this series is accurate to 1 ulp for
# |w| <= 0.5, its terms falling like 4^-k there
_LGAMMA2_TAYLOR = (
    0.42278433509846714, 0.32246703342411322, -0.067352301053198095, 0.020580808427784548,
    -0.0073855510286739853, 0.0028905103307415233, -0.001192753911703261,
    0.00050966952474304242, -0.00022315475845357938, 9.9457512781808534e-5,
    -4.4926236738133142e-5, 2.0507212775670692e-5, -9.4394882752683959e-6,
    4.3748667899074878e-6, -2.0392157538013662e-6, 9.5514121304074198e-7,
    -4.492469198764566e-7, 2.1207184805554666e-7, -1.00432248239681e-7,
    4.7698101693639806e-8, -2.2711094608943165e-8, 1.0838659214896954e-8,
    -5.1834750419700467e-9, 2.4836745438024783e-9, -1.1921401405860912e-9,
    5.731367241678862e-10)
# Bernoulli numbers B2, B4, ..., B14 for the asymptotic series
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
_SHIFT = 10  # psi and its derivatives are evaluated at x + _SHIFT, where the series is accurate


def _check(name: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return _float_input(x)


def _nonpos_int(x: Tensor) -> Tensor:
    return elementwise.logical_and(x <= 0, elementwise.eq(x, elementwise.floor(x)))


def _sinpi(x: Tensor) -> Tensor:
    """``sin(pi x)``, with the argument reduced exactly first (``x - round(x)``)."""
    r = elementwise.round(x)
    s = elementwise.sin((x - r) * math.pi)
    # (-1)^round(x): odd multiples flip the sign
    odd = elementwise.ne(elementwise.remainder(r, 2.0), 0)
    return where(odd, -s, s)


def _lgamma_pos(x: Tensor) -> Tensor:
    """lgamma for ``x >= 0.5``: Lanczos' approximation, or on ``[0.5, 4.5]`` the Taylor series
    about 2 (shifted there by ``lgamma(x) = lgamma(x - 1) + log(x - 1)``, and below 1.5 by
    ``lgamma(x) = lgamma(x + 1) - log(x)``), which does not cancel where lgamma vanishes and
    is good to an ulp or two where Lanczos' sum leaves tens."""
    z = x - 1.0
    a = _creation.full_like(x, _LANCZOS[0])
    for k, c in enumerate(_LANCZOS[1:], start=1):
        a = a + c / (z + float(k))
    t = z + 7.5
    lanczos = (z + 0.5) * elementwise.log(t) + _HALF_LOG_2PI - t + elementwise.log(a)
    near = elementwise.logical_and(x >= 0.5, x <= 4.5)
    xs = where(near, x, 2.0)  # (elsewhere unused: kept finite)
    # the shift j = -1, 0, 1 or 2 that brings w = x - 2 - j into [-0.5, 0.5]
    j = elementwise.clamp(elementwise.floor(xs - 1.5), -1.0, 2.0)
    w = xs - (j + 2.0)  # exact (Sterbenz); x - 2 - j was not, below 1
    series = _creation.full_like(x, _LGAMMA2_TAYLOR[-1])
    for c in reversed(_LGAMMA2_TAYLOR[:-1]):
        series = series * w + c
    series = series * w
    # lgamma(x) = S(w) + log(prod_{i=1..j} (x - i)); for j = -1, S(w) - log(x)
    prod = where(j >= 1.0, xs - 1.0, 1.0) * where(j >= 2.0, xs - 2.0, 1.0)
    shift = where(j < 0.0, -elementwise.log1p(w), elementwise.log(prod))
    return where(near, series + shift, lanczos)


def _lgamma_fwd(x: Tensor) -> Tensor:
    small = x < 0.5
    pos = _lgamma_pos(where(small, 1.0 - x, x))
    # reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    refl = math.log(math.pi) - elementwise.log(elementwise.abs(_sinpi(x))) - pos
    out = where(small, refl, pos)
    out = where(elementwise.isinf(x), math.inf, out)
    # lgamma(1) = lgamma(2) = 0 exactly (Lanczos' sum leaves a few ulp there, as PyTorch does not)
    out = where(elementwise.logical_or(elementwise.eq(x, 1.0), elementwise.eq(x, 2.0)), 0.0, out)
    return where(_nonpos_int(x), math.inf, out)


def _psi_n(n: int, x: Tensor) -> Tensor:
    """``polygamma(n, x)`` (``n = 0``: digamma) for ``x >= 0``: the recurrence moves the
    argument to ``x + _SHIFT``, where the asymptotic series is accurate."""
    acc = _creation.zeros_like(x)
    for k in range(_SHIFT):
        xk = x + float(k)
        acc = acc + (elementwise.reciprocal(xk) if n == 0 else xk ** -(n + 1.0))
    y = x + float(_SHIFT)
    if n == 0:
        # psi(y) ~ log y - 1/(2y) - sum B2k / (2k y^2k)
        series = elementwise.log(y) - 0.5 / y
        inv2 = elementwise.reciprocal(y * y)
        p = inv2
        for k, b in enumerate(_BERNOULLI, start=1):
            series = series - p * (b / (2 * k))
            p = p * inv2
        return series - acc
    # psi^(n)(y) ~ (-1)^(n+1) [(n-1)!/y^n + n!/(2 y^(n+1)) + sum B2k (2k+n-1)!/((2k)! y^(2k+n))]
    series = y ** -float(n) * float(math.factorial(n - 1)) + y ** -(n + 1.0) * (math.factorial(n) / 2)
    for k, b in enumerate(_BERNOULLI, start=1):
        coef = b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
        series = series + y ** -float(2 * k + n) * coef
    sign = 1.0 if n % 2 else -1.0
    return (series + acc * float(math.factorial(n))) * sign


def _digamma_fwd(x: Tensor) -> Tensor:
    small = x < 0.5
    pos = _psi_n(0, where(small, 1.0 - x, x))
    # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
    r = x - elementwise.round(x)
    refl = pos - math.pi / elementwise.tan(r * math.pi)
    out = where(small, refl, pos)
    # PyTorch: digamma(+0) = -inf and digamma(-0) = +inf (the limits from each side), other poles NaN
    pole = where(elementwise.signbit(x), math.inf, -math.inf).to(x.dtype)
    out = where(elementwise.eq(x, 0), pole, out)
    out = where(elementwise.logical_and(_nonpos_int(x), elementwise.ne(x, 0)), math.nan, out)
    return where(elementwise.eq(x, math.inf), math.inf, out)


def _polygamma_fwd(n: int, x: Tensor) -> Tensor:
    lo = float(x.min().item()) if x.numel() else 0.0
    if lo < 0 and math.isfinite(lo):
        # the upward recurrence holds for any non-pole x: shift far enough first
        m = int(math.ceil(-lo)) + 1
        acc = _creation.zeros_like(x)
        for k in range(m):
            acc = acc + (x + float(k)) ** -(n + 1.0)
        sign = 1.0 if n % 2 else -1.0
        out = _psi_n(n, x + float(m)) + acc * (sign * math.factorial(n))
    else:
        out = _psi_n(n, x)
    # at the poles PyTorch gives inf for odd n and -inf for even n (the limit from the right)
    out = where(_nonpos_int(x), math.inf if n % 2 else -math.inf, out)
    # PyTorch: for n = 1 NaN at -inf; for n >= 2 (its zeta being NaN at q = inf) NaN at +inf
    if n == 1:
        return where(elementwise.eq(x, -math.inf), math.nan, out)
    return where(elementwise.eq(x, math.inf), math.nan, out)


class _Lgamma(Function):
    _backward_name = "LgammaBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        with _no_grad():
            y = elementwise.in_float32(_lgamma_fwd, x)
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
            y = elementwise.in_float32(
                _digamma_fwd if n == 0 else (lambda t: _polygamma_fwd(n, t)), x)
        ctx.save_for_backward(x)
        ctx.n = n
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        return g * polygamma(ctx.n + 1, x), None


def lgamma(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``log |Gamma(x)|`` (``inf`` at the poles, the non-positive integers)."""
    return elementwise._out(call(_Lgamma, _check("lgamma", input)), out, "lgamma", (input,))


def digamma(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``psi(x) = d/dx lgamma(x)`` (``-inf`` at 0, NaN at the negative integers, as PyTorch)."""
    res = call(_Polygamma, _check("digamma", input), 0)
    return elementwise._out(res, out, "digamma", (input,))


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The ``n``-th derivative of ``digamma``."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    res = call(_Polygamma, _check("polygamma", input), n)
    return elementwise._out(res, out, "polygamma", (input,))


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma of dimension ``p``: ``p(p-1)/4 log(pi) + sum_j
    lgamma(x - j/2)``. As PyTorch 2.13, elements at or below ``(p - 1) / 2`` are not refused:
    the sum of the log-gammas there (``inf`` at their poles, NaN stays NaN)."""
    x = _check("mvlgamma", input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return call(_Mvlgamma, x, p)


class _Mvlgamma(Function):
    """mvlgamma with PyTorch's derivative ``g * sum_j digamma(x - j/2)``: the sum first, then one
    product with ``g`` (a sum of ``p`` products of ``g`` gave inf - inf = NaN for an infinite
    ``g`` where the digammas differ in sign)."""

    _backward_name = "MvlgammaBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, p: int) -> Tensor:
        ctx.p = p
        ctx.save_for_backward(x)
        with _no_grad():
            out = lgamma(x)
            for j in range(1, p):
                out = out + lgamma(x - j / 2)
            return out + p * (p - 1) / 4 * math.log(math.pi)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        s = digamma(x)
        for j in range(1, ctx.p):
            s = s + digamma(x - j / 2)
        return g * s, None



def _igamma_terms(a: Tensor) -> int:
    """Series terms / continued-fraction steps enough for the largest finite ``a``: both converge
    in ``O(sqrt(a))`` steps where ``x`` is near ``a`` (the slowest case: the series' terms fall
    like ``exp(-n^2 / 2a)``, so ``10 sqrt(a)`` reach 1e-22). An infinite ``a`` does not count (it
    set the count to 40 for every element, and P(1e4, 1e4) came out 0.155, not 0.501)."""
    finite = where(elementwise.isfinite(a), a, 0.0)
    top = float(finite.max().item()) if a.numel() else 0.0
    return int(min(12000, 40 + 10 * math.sqrt(max(top, 0.0))))


# Stirling's series of lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2): B_2k / (2k (2k - 1))
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


def _igamma_log_front(a: Tensor, x: Tensor) -> Tensor:
    """``log(x^a e^-x / Gamma(a))`` (``a``, ``x`` > 0). For ``a >= 10`` through Stirling's series,
    as ``a log1p((x - a) / a) - (x - a) + log(a) / 2 - log(2 pi) / 2 - stirling(a)``: the direct
    ``a log x - x - lgamma(a)`` cancels (float32 P(1e4, 1e4) was 0.5020, not 0.5013)."""
    direct = a * elementwise.log(x) - x - _lgamma_fwd(a)
    big = a >= 10.0
    ab = where(big, a, 10.0)
    inv = elementwise.reciprocal(ab)
    inv2 = inv * inv
    corr = _creation.full_like(ab, _STIRLING[-1])
    for c in reversed(_STIRLING[:-1]):
        corr = corr * inv2 + c
    corr = corr * inv
    d = x - ab
    stirling = (ab * elementwise.log1p(d / ab) - d + 0.5 * elementwise.log(ab) - _HALF_LOG_2PI
                - corr)
    return where(big, stirling, direct)


def _igamma_fwd(a: Tensor, x: Tensor, upper: bool) -> Tensor:
    """The regularized lower incomplete gamma ``P(a, x)`` (``upper``: ``Q = 1 - P``): the power
    series of ``P`` where ``x < a + 1``, Lentz's continued fraction for ``Q`` elsewhere
    (Numerical Recipes 6.2); each computed directly where it is the small one (``Q(0.5, 50)`` as
    ``1 - P`` was 0, not 1.5e-23)."""
    tiny = 1e-300 if a.dtype is _dtype.float64 else 1e-30
    steps = _igamma_terms(a)
    use_series = x < a + 1.0
    pos_x = x > 0
    xs = where(pos_x, x, 1.0)
    a_s = where(a > 0, a, 1.0)
    log_front = _igamma_log_front(a_s, xs)
    # series: sum_n x^n / (a (a+1) ... (a+n))
    term = elementwise.reciprocal(a_s)
    total = term
    for n in range(1, steps):
        term = term * (xs / (a_s + float(n)))
        total = total + term
    p_series = elementwise.exp(log_front) * total
    # continued fraction for Q(a, x)
    b = xs + 1.0 - a_s
    c = _creation.full_like(xs, 1.0 / tiny)
    d = elementwise.reciprocal(where(elementwise.eq(b, 0), tiny, b))
    h = d
    for i in range(1, steps):
        an = (a_s - float(i)) * float(i)  # -i (i - a)
        b = b + 2.0
        d = d * an + b
        d = elementwise.reciprocal(where(elementwise.abs(d) < tiny, tiny, d))
        c = b + an / c
        c = where(elementwise.abs(c) < tiny, tiny, c)
        h = h * (d * c)
    q_cf = elementwise.exp(log_front) * h
    if upper:
        p = where(use_series, 1.0 - p_series, q_cf)
    else:
        p = where(use_series, p_series, 1.0 - q_cf)
    zero, one = (1.0, 0.0) if upper else (0.0, 1.0)  # P's 0 and 1 (Q's 1 and 0)
    p = where(pos_x, p, zero)  # P(a, 0) = 0
    p = where(elementwise.eq(a, 0), where(pos_x, one, math.nan), p)  # P(0, x > 0) = 1, as PyTorch
    p = where(elementwise.isinf(x), one, p)
    bad = elementwise.logical_or(a < 0, x < 0)
    bad = elementwise.logical_or(bad, elementwise.logical_or(elementwise.isnan(a), elementwise.isnan(x)))
    p = where(bad, math.nan, p)
    # PyTorch's values where a is infinite or NaN: P(inf, finite x >= 0) = 0 (and at x = NaN),
    # P(inf, inf) = NaN, P(NaN, 0) = 0, P(NaN, inf) = 1
    inf_a = elementwise.eq(a, math.inf)
    p = where(elementwise.logical_and(inf_a, elementwise.logical_not(x < 0)), zero, p)
    p = where(elementwise.logical_and(inf_a, elementwise.eq(x, math.inf)), math.nan, p)
    nan_a = elementwise.isnan(a)
    p = where(elementwise.logical_and(nan_a, elementwise.eq(x, 0)), zero, p)
    return where(elementwise.logical_and(nan_a, elementwise.eq(x, math.inf)), one, p)


def _widened(a: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """``a`` and ``x`` in float64 where the device has it (else float32): the series and the
    continued fraction accumulate rounding over hundreds of steps, which left float32 results
    1e-4 off, and 16-bit ones could not even hold their constants."""
    if a.dtype is _dtype.float64:
        return a, x
    try:
        return a.to(_dtype.float64), x.to(_dtype.float64)
    except DTypeError:  # (an OpenCL device without cl_khr_fp64)
        return a.to(_dtype.float32), x.to(_dtype.float32)


class _Igamma(Function):
    _backward_name = "IgammaBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, x: Tensor, upper: bool) -> Tensor:
        with _no_grad():
            out = _igamma_fwd(*_widened(a, x), upper).to(a.dtype)
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative of igamma/igammac with respect to the "
                                      "input (a) is not implemented (as in PyTorch)")
        # dP/dx = x^(a-1) e^-x / Gamma(a)
        dx = ((a - 1.0) * x.log() - x - lgamma(a)).exp()
        return None, (-g * dx if ctx.upper else g * dx), None


def _igamma_args(name: str, input: Any, other: Any) -> tuple[Tensor, Tensor]:
    ref = input if isinstance(input, Tensor) else other
    if not isinstance(ref, Tensor):
        raise TypeError(f"{name}(): at least one argument must be a Tensor")
    dt = _dtype.result_type(input, other)
    if not dt.is_floating_point:
        dt = _dtype.get_default_dtype()
    a = input.to(dt) if isinstance(input, Tensor) else _creation.full_like(ref, input, dtype=dt)
    x = other.to(dt) if isinstance(other, Tensor) else _creation.full_like(ref, other, dtype=dt)
    shape = broadcast_shapes(a.shape, x.shape)
    return a.expand(shape), x.expand(shape)


def igamma(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """The regularized lower incomplete gamma function ``P(input, other)``."""
    a, x = _igamma_args("igamma", input, other)
    return elementwise._out(call(_Igamma, a, x, False), out, "igamma", (input, other))


def igammac(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P``."""
    a, x = _igamma_args("igammac", input, other)
    return elementwise._out(call(_Igamma, a, x, True), out, "igammac", (input, other))


# Euler-Maclaurin's remainder coefficients (2k)! / B_2k, k = 1..12, of Cephes' zeta.c (Stephen L.
# Moshier, Cephes Math Library 2.8), which PyTorch's zeta also uses
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta_fwd(x: Tensor, q: Tensor) -> Tensor:
    """The Hurwitz zeta ``sum_k (q + k)^-x``: the first ``n`` terms summed directly (``n`` at least
    9, and enough that ``q + n >= 9``, read once on the host from ``min(q)``), then the
    Euler-Maclaurin tail at ``w = q + n``, as Cephes' algorithm."""
    lo = float(where(elementwise.isfinite(q), q, 1.0).min().item()) if q.numel() else 1.0
    n = max(9, int(math.ceil(9.0 - lo)))
    s = _creation.zeros_like(x)
    for k in range(n + 1):
        s = s + (q + float(k)) ** -x
    w = q + float(n)
    b = w ** -x
    # x = inf: every term past q^-x is 0 and the tail's x * b would be inf * 0
    fin = elementwise.isfinite(x)
    xs = where(fin, x, 2.0)
    # the tail: b w / (x - 1) - b / 2 + sum_i b x (x + 1) ... (x + 2i) / (w^(2i+1) A_i); the
    # products kept as one running ratio r (x^24 / w^24 separately would overflow float32)
    # w^(1-x), not b w: b underflows to a subnormal first for large w (float32, w = 1e8, x = 5)
    tail = w ** (1.0 - xs) / (xs - 1.0) - b * 0.5
    r = b * xs / w
    for i, a in enumerate(_ZETA_A):
        tail = tail + r / a
        r = r * (xs + float(2 * i + 1)) * (xs + float(2 * i + 2)) / (w * w)
    out = s + where(fin, tail, 0.0)
    # PyTorch's domain: inf at x = 1, NaN below; at q <= 0 an integer q is a pole (inf) and a
    # non-integer x makes (q + k)^-x non-real (NaN)
    q_le0 = q <= 0
    out = where(elementwise.logical_and(q_le0, elementwise.ne(x, elementwise.floor(x))),
                math.nan, out)
    out = where(elementwise.logical_and(q_le0, elementwise.eq(q, elementwise.floor(q))),
                math.inf, out)
    # at x = inf PyTorch's loop divides 0 by 0 for q > 1, and its tail is 0 * inf at q = inf
    out = where(elementwise.logical_and(elementwise.logical_not(fin), q > 1.0), math.nan, out)
    out = where(elementwise.eq(q, math.inf), math.nan, out)
    out = where(x < 1.0, math.nan, out)
    return where(elementwise.eq(x, 1.0), math.inf, out)


class _Zeta(Function):
    """PyTorch differentiates zeta in ``q`` only: ``d/dq zeta(x, q) = -x zeta(x + 1, q)``."""

    _backward_name = "SpecialZetaBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, q: Tensor) -> Tensor:
        with _no_grad():
            y = _zeta_fwd(x, q)
        ctx.save_for_backward(x, q)
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        x, q = ctx.saved_tensors
        return None, g * -x * zeta(x + 1.0, q)


def zeta(input: Any, other: Any) -> Tensor:
    """The Hurwitz zeta function ``sum_{k >= 0} (other + k)^-input`` (Riemann's at ``other = 1``;
    ``inf`` at ``input = 1``, NaN below it)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"zeta(): expected at least one of 'input' and 'other' to be a Tensor, "
                        f"got {type(input).__name__} and {type(other).__name__}")
    x, q, dt = prepare_binary(input, other, "zeta", float_only=True)
    if dt in (_dtype.float16, _dtype.bfloat16):  # PyTorch has no 16-bit kernel
        raise NotImplementedError(f'"zeta" not implemented for \'{type_name(dt)}\'')
    x = x if isinstance(x, Tensor) else _creation.full_like(q, x)
    q = q if isinstance(q, Tensor) else _creation.full_like(x, q)
    return call(_Zeta, x, q)
