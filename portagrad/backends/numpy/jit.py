"""numba kernels of the numpy backend, for work numpy would do in many passes (optional).

With numba installed (the ``fast`` extra) and ``PORTAGRAD_NUMBA`` not ``0``, these single-threaded
loops replace whole-array numpy compositions on the cpu device:

- :func:`erf32`: the float32 error function of ``backends/erf32.py`` (the same polynomials, in the
  same order) in one pass. Both branches are computed and one is kept per element, so that the
  loop vectorises; the exponential is :func:`_exp_neg` below (Cody-Waite reduction, a degree-5
  polynomial, the power of two built from its bits), within an ulp of numpy's ``exp`` (which
  LLVM cannot vectorise without a vector maths library), so the results may differ from the
  numpy path's in the last bit (both are pinned against ``math.erf`` by the tests).
- :func:`gelu32` / :func:`gelu32_backward`: exact GELU and its gradient, the operations of the
  core's composition in its order, in one pass each.
- :func:`index_add_rows`: ``out[index[i]] += src[i]`` row by row, in the order of ``index`` (as
  ``np.add.at``, so the sums are the same), for embedding gradients.

Without numba each caller keeps its numpy composition: :func:`available` says which.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..erf32 import END as _END
from ..erf32 import coefficients

__all__ = ["available", "erf32", "gelu32", "gelu32_backward", "index_add_rows", "layer_norm_backward_rows",
           "layer_norm_rows", "philox_uniform32", "softmax_backward_rows", "softmax_rows32"]

_STATE: list[Any] = []  # [kernels or None] once looked up

_F = np.float32


def _build() -> dict[str, Callable[..., Any]]:
    """The kernels as numba functions (numba imported here, so that this module imports without
    it; numba compiles them on their first call, then reads its on-disk cache)."""
    import numba  # optional dependency, imported on first use

    def jit(f: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        try:
            return numba.njit(cache=True, boundscheck=False, error_model="numpy", **options)(f)
        except RuntimeError:  # no writable cache location (a read-only install): compile each run
            return numba.njit(cache=False, boundscheck=False, error_model="numpy", **options)(f)

    inline = numba.njit(inline="always", error_model="numpy")
    small, large = coefficients()
    s0, s1, s2, s3, s4, s5, s6 = (_F(c) for c in small)
    l0, l1, l2, l3, l4, l5, l6, l7, l8 = (_F(c) for c in large)
    one, two, half_ = _F(1), _F(2), _F(0.5)
    lo, mid, half = _F(1 / _END), _F((1 + 1 / _END) / 2), _F((1 - 1 / _END) / 2)
    end2 = _F(_END * _END)
    # exp: x = n ln2 + r, |r| <= ln2 / 2, ln2 split in two so that n * ln2_hi is exact (Cephes'
    # expf constants); 1.5 * 2^23 rounds to the nearest integer by addition
    log2e, ln2_hi, ln2_lo = _F(1.44269504088896341), _F(0.693359375), _F(-2.12194440e-4)
    magic = _F(12582912.0)
    e0, e1, e2, e3, e4, e5 = (_F(1.9875691500e-4), _F(1.3981999507e-3), _F(8.3334519073e-3),
                              _F(4.1665795894e-2), _F(1.6666665459e-1), _F(5.0000001201e-1))
    floor_ = _F(-110.0)  # exp is 0 in float32 below about -103.97
    c_sqrt1_2 = _F(1.0 / math.sqrt(2.0))
    c_pdf = _F(1.0 / math.sqrt(2.0 * math.pi))
    c_mhalf = _F(-0.5)

    @inline
    def exp_neg(z: Any) -> Any:
        # exp(z) for float32 z <= 0 (or NaN): -inf gives 0, subnormal results are rounded once
        # (the power of two applied in two halves, each a normal float32)
        z = floor_ if z < floor_ else z  # NaN stays NaN
        n = (z * log2e + magic) - magic
        r = z - n * ln2_hi
        r = r - n * ln2_lo
        p = e0 * r + e1
        p = p * r + e2
        p = p * r + e3
        p = p * r + e4
        p = p * r + e5
        p = p * (r * r) + r + one
        ni = np.int32(n) if n == n else np.int32(0)
        n1 = ni >> 1
        n2 = ni - n1
        return (p * np.int32((n1 + 127) << 23).view(np.float32)) \
            * np.int32((n2 + 127) << 23).view(np.float32)

    @inline
    def erf_one(x: Any) -> Any:
        # the two branches of backends/erf32.py, both computed (a select keeps the loop
        # vectorisable); NaN takes the short one and propagates
        a = abs(x)
        t = one / a
        t = lo if t < lo else t
        t = one if t > one else t
        v = (t - mid) / half
        g = l8 * v + l7
        g = g * v + l6
        g = g * v + l5
        g = g * v + l4
        g = g * v + l3
        g = g * v + l2
        g = g * v + l1
        g = g * v + l0
        g = g * t
        z = a * a
        z = end2 if z > end2 else z
        g = g * exp_neg(-z)
        big = one - g
        u = a * a
        u = u * two
        u = u - one
        s = s6 * u + s5
        s = s * u + s4
        s = s * u + s3
        s = s * u + s2
        s = s * u + s1
        s = s * u + s0
        s = s * a
        return math.copysign(big if a >= one else s, x)

    @jit
    def erf32(x: Any, out: Any) -> None:
        for i in range(x.size):
            out[i] = erf_one(x[i])

    @jit
    def gelu32(x: Any, out: Any) -> None:
        # (x * 0.5) * (erf(x * (1/sqrt 2)) + 1), the core's order
        for i in range(x.size):
            xi = x[i]
            out[i] = (xi * half_) * (erf_one(xi * c_sqrt1_2) + one)

    @jit
    def gelu32_backward(g: Any, x: Any, out: Any) -> None:
        # g * ((erf(x / sqrt 2) + 1) * 0.5 + x * (exp(x * x * -0.5) * pdf)), the core's order
        for i in range(x.size):
            xi = x[i]
            cdf = (erf_one(xi * c_sqrt1_2) + one) * half_
            out[i] = g[i] * (cdf + xi * (exp_neg((xi * xi) * c_mhalf) * c_pdf))

    @jit
    def index_add_rows(out: Any, index: Any, src: Any) -> None:
        for i in range(index.size):
            row = out[index[i]]
            s = src[i]
            for j in range(s.size):
                row[j] += s[j]

    u64 = np.uint64
    m0, m1, mask32, s32, s8 = u64(0xD2511F53), u64(0xCD9E8D57), u64(0xFFFFFFFF), u64(32), u64(8)
    w0, w1, c62, three, two_u = u64(0x9E3779B9), u64(0xBB67AE85), u64((1 << 62) - 1), u64(3), u64(2)
    scale24 = _F(2.0 ** -24)

    @jit
    def philox_uniform32(out: Any, seed: Any, offset: Any, lo: Any, span: Any) -> None:
        # backends/philox.py's uniform for float32, one Philox4x32-10 block per four slots: slot
        # g = offset + e (mod 2**64) is word g & 3 of the block of counter (g >> 2) mod 2**62
        n = out.size
        skip = offset & three
        first = offset >> two_u
        blocks = (skip + u64(n) + three) >> two_u
        ka, kb = seed & mask32, seed >> s32
        for b in range(blocks):
            ctr = (first + u64(b)) & c62
            c0, c1, c2, c3 = ctr & mask32, ctr >> s32, u64(0), u64(0)
            k0, k1 = ka, kb
            for r in range(10):
                if r:
                    k0 = (k0 + w0) & mask32
                    k1 = (k1 + w1) & mask32
                p0 = c0 * m0
                p1 = c2 * m1
                c0, c1, c2, c3 = (p1 >> s32) ^ c1 ^ k0, p1 & mask32, (p0 >> s32) ^ c3 ^ k1, \
                    p0 & mask32
            e = 4 * b - np.int64(skip)
            for j in range(4):
                if 0 <= e + j < n:
                    w = c0 if j == 0 else (c1 if j == 1 else (c2 if j == 2 else c3))
                    out[e + j] = lo + (np.float32(w >> s8) * scale24) * span

    # Row sums of layer norm: the only functions allowed to reassociate (so that they vectorise);
    # NaN and infinities keep their IEEE meaning (no nnan/ninf)
    def sums(f: Callable[..., Any]) -> Callable[..., Any]:
        return jit(f, fastmath={"reassoc"})

    @sums
    def rsum(a: Any) -> Any:  # a.size >= 1
        s = a[0]
        for j in range(1, a.size):
            s += a[j]
        return s

    @sums
    def rdot(a: Any, b: Any) -> Any:
        s = a[0] * b[0]
        for j in range(1, a.size):
            s += a[j] * b[j]
        return s

    @sums
    def rdot3(a: Any, b: Any, c: Any) -> Any:
        s = (a[0] * b[0]) * c[0]
        for j in range(1, a.size):
            s += (a[j] * b[j]) * c[j]
        return s

    @jit
    def layer_norm_rows(x: Any, w: Any, b: Any, eps: Any, n: Any, one: Any, out: Any, mean: Any,
                        rstd: Any, has_w: bool, has_b: bool, stats: bool) -> None:
        # out = (x - mean) * rstd * w + b per row, the numpy path's order (mean and variance as
        # sums divided by n = N); eps, n and one in x's dtype
        M, N = x.shape
        for i in range(M):
            xi = x[i]
            oi = out[i]
            mu = rsum(xi) / n
            for j in range(N):
                oi[j] = xi[j] - mu
            r = one / np.sqrt(rdot(oi, oi) / n + eps)
            for j in range(N):
                v = oi[j] * r
                if has_w:
                    v = v * w[j]
                if has_b:
                    v = v + b[j]
                oi[j] = v
            if stats:
                mean[i] = mu
                rstd[i] = r

    @jit
    def layer_norm_backward_rows(g: Any, x: Any, w: Any, mean: Any, rstd: Any, n: Any, gx: Any,
                                 gw: Any, gb: Any, has_w: bool, want_gw: bool,
                                 want_gb: bool) -> None:
        # gx = r * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w, as
        # (xhat * -c2 + gw - c1) * r (the numpy path's order); gw/gb: column sums over the rows
        # in row order; n = N in x's dtype
        M, N = x.shape
        if want_gw:
            gw[:] = 0
        if want_gb:
            gb[:] = 0
        for i in range(M):
            xi, gi, oi = x[i], g[i], gx[i]
            mu, r = mean[i], rstd[i]
            for j in range(N):
                oi[j] = (xi[j] - mu) * r  # xhat
            if want_gw:
                for j in range(N):
                    gw[j] += gi[j] * oi[j]
            if want_gb:
                for j in range(N):
                    gb[j] += gi[j]
            if has_w:
                c1 = rdot(gi, w) / n
                c2 = rdot3(gi, w, oi) / n
                for j in range(N):
                    oi[j] = ((oi[j] * -c2 + gi[j] * w[j]) - c1) * r
            else:
                c1 = rsum(gi) / n
                c2 = rdot(gi, oi) / n
                for j in range(N):
                    oi[j] = ((oi[j] * -c2 + gi[j]) - c1) * r

    @jit
    def softmax_rows32(x: Any, out: Any) -> None:
        # softmax of each row of x (M, N): exp(x - max) / sum, the numpy path's operations. The
        # maximum skips NaN (a comparison with NaN is false), but a row holding NaN, +inf or
        # only -inf still gives NaN everywhere, as in PyTorch: through the sum, or inf - inf
        M, N = x.shape
        for i in range(M):
            xi, oi = x[i], out[i]
            mi = xi[0]
            for j in range(1, N):
                v = xi[j]
                mi = v if v > mi else mi
            for j in range(N):
                oi[j] = exp_neg(xi[j] - mi)
            t = rsum(oi)
            for j in range(N):
                oi[j] = oi[j] / t

    @jit
    def softmax_backward_rows(g: Any, y: Any, out: Any) -> None:
        # y * (g - sum(g * y)) per row
        M, N = y.shape
        for i in range(M):
            gi, yi, oi = g[i], y[i], out[i]
            t = rdot(gi, yi)
            for j in range(N):
                oi[j] = (gi[j] - t) * yi[j]

    return {"erf32": erf32, "gelu32": gelu32, "gelu32_backward": gelu32_backward,
            "index_add_rows": index_add_rows, "philox_uniform32": philox_uniform32,
            "layer_norm_rows": layer_norm_rows,
            "layer_norm_backward_rows": layer_norm_backward_rows,
            "softmax_rows32": softmax_rows32, "softmax_backward_rows": softmax_backward_rows}


def _kernels() -> dict[str, Callable[..., Any]] | None:
    if not _STATE:
        k = None
        if os.environ.get("PORTAGRAD_NUMBA", "1") != "0":
            try:
                k = _build()  # numba imported here; compiling waits for the first call
            except ImportError:  # not installed, or a numba that refuses this numpy
                k = None
        _STATE.append(k)
    return _STATE[0]


def available() -> bool:
    """Whether the kernels can run: numba importable and ``PORTAGRAD_NUMBA`` not ``0`` (looked
    up once, on first use)."""
    return _kernels() is not None


def _kernel(name: str) -> Callable[..., Any]:
    k = _kernels()
    if k is None:
        raise RuntimeError("the numba kernels are not available (see jit.available())")
    return k[name]


def erf32(x: np.ndarray, out: np.ndarray) -> None:
    """``out = erf(x)``, both 1-D contiguous float32 arrays of one size."""
    _kernel("erf32")(x, out)


def gelu32(x: np.ndarray, out: np.ndarray) -> None:
    """``out = x * Phi(x)`` (exact GELU), both 1-D contiguous float32 arrays of one size."""
    _kernel("gelu32")(x, out)


def gelu32_backward(g: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """``out = g * gelu'(x)``, all 1-D contiguous float32 arrays of one size."""
    _kernel("gelu32_backward")(g, x, out)


def index_add_rows(out: np.ndarray, index: np.ndarray, src: np.ndarray) -> None:
    """``out[index[i]] += src[i]`` for each ``i`` in order: ``out`` (R, C) and ``src`` (N, C) of
    one floating dtype, ``index`` (N,) integers in ``[0, R)``."""
    _kernel("index_add_rows")(out, index, src)


def philox_uniform32(out: np.ndarray, seed: int, offset: int, low: float, high: float) -> None:
    """``out`` (1-D contiguous float32) = the stream's uniform numbers in ``[low, high)`` from slot
    ``offset`` on, bit for bit ``backends/philox.py``'s ``uniform`` (one slot an element)."""
    _kernel("philox_uniform32")(out, np.uint64(seed & 0xFFFFFFFFFFFFFFFF),
                                np.uint64(offset & 0xFFFFFFFFFFFFFFFF), _F(low), _F(high - low))


def layer_norm_rows(x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, eps: float,
                    out: np.ndarray, mean: np.ndarray | None, rstd: np.ndarray | None) -> None:
    """Layer norm of the rows of the C-contiguous (M, N) ``x`` (N >= 1) into ``out``, float32 or
    float64 throughout; ``w``/``b`` (N,) or ``None``; the row statistics into ``mean``/``rstd``
    (M,) when both are given."""
    t = x.dtype.type
    empty = np.empty(0, x.dtype)
    stats = mean is not None and rstd is not None
    _kernel("layer_norm_rows")(x, empty if w is None else w, empty if b is None else b, t(eps),
                               t(x.shape[1]), t(1), out, mean if stats else empty,
                               rstd if stats else empty, w is not None, b is not None, stats)


def layer_norm_backward_rows(g: np.ndarray, x: np.ndarray, w: np.ndarray | None,
                             mean: np.ndarray, rstd: np.ndarray, gx: np.ndarray,
                             gw: np.ndarray | None, gb: np.ndarray | None) -> None:
    """The gradients of :func:`layer_norm_rows` for the (M, N) ``g`` (M, N >= 1): ``gx``, and the
    column sums ``gw`` = sum(g * xhat), ``gb`` = sum(g) when given; all C-contiguous, one dtype."""
    empty = np.empty(0, x.dtype)
    _kernel("layer_norm_backward_rows")(g, x, empty if w is None else w, mean, rstd,
                                        x.dtype.type(x.shape[1]), gx,
                                        empty if gw is None else gw, empty if gb is None else gb,
                                        w is not None, gw is not None, gb is not None)


def softmax_rows32(x: np.ndarray, out: np.ndarray) -> None:
    """Softmax of the rows of the C-contiguous float32 (M, N) ``x`` (N >= 1) into ``out``."""
    _kernel("softmax_rows32")(x, out)


def softmax_backward_rows(g: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """``out = y * (g - sum(g * y))`` per row of the C-contiguous (M, N) arrays (N >= 1), one
    float dtype."""
    _kernel("softmax_backward_rows")(g, y, out)
