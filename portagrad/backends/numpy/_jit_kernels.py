"""The numba kernels behind :mod:`.jit` (this module imports numba: :mod:`.jit` imports it only
when numba is installed). Module-level functions, so that numba's on-disk cache finds them again
in the next process (a closure's free variables would make a new cache entry every time)."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from ..erf32 import END as _END
from ..erf32 import coefficients

__all__ = ["erf32", "gelu32", "gelu32_backward", "index_add_rows", "philox_uniform32",
           "layer_norm_rows", "layer_norm_backward_rows", "softmax_rows32",
           "softmax_backward_rows", "cross_entropy_rows", "cross_entropy_backward_rows",
           "keep_or_zero", "plane_scatter_add", "batch_norm_backward_planes",
           "bf16_rows_nt", "bf16_rows_nn", "bf16_binary_rows", "bf16_scalar_op", "bf16_gelu",
           "bf16_gelu_backward", "bf16_softmax_rows", "bf16_softmax_backward_rows", "bf16_round",
           "bf16_widen", "attention_rows", "bf16_layer_norm_rows"]

_F = np.float32


def _jit(**options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        try:
            return numba.njit(cache=True, boundscheck=False, error_model="numpy", **options)(f)
        except RuntimeError:  # no writable cache location (a read-only install): compile each run
            return numba.njit(cache=False, boundscheck=False, error_model="numpy", **options)(f)
    return deco

# the constants, frozen into the kernels when numba compiles them (float32 throughout)
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


def _bits_as_f32_typing(typingctx: Any, bits: Any) -> Any:
    # the float32 whose bit pattern is the uint32 ``bits`` (a bfloat16 shifted into the top
    # half is its float32): one LLVM bitcast, which vectorises with the loads around it
    from llvmlite import ir

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.FloatType())
    return numba.types.float32(numba.types.uint32), codegen


_bits_as_f32: Any = numba.extending.intrinsic(_bits_as_f32_typing)


def wide(x: Any) -> Any:
    """A float element as itself, a bfloat16 bit pattern (uint16) as its float32 (numba only)."""
    return x


@numba.extending.overload(wide, inline="always")
def _wide_overload(x):  # type: ignore[no-untyped-def]  # numba matches its signature
    if x == numba.types.uint16:
        return lambda x: _bits_as_f32(np.uint32(x) << 16)
    return lambda x: x


@numba.njit(inline="always", error_model="numpy")
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


@numba.njit(inline="always", error_model="numpy")
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


@_jit()
def erf32(x: Any, out: Any) -> None:
    for i in range(x.size):
        out[i] = erf_one(x[i])


@_jit()
def gelu32(x: Any, out: Any) -> None:
    # (x * 0.5) * (erf(x * (1/sqrt 2)) + 1), the core's order
    for i in range(x.size):
        xi = x[i]
        out[i] = (xi * half_) * (erf_one(xi * c_sqrt1_2) + one)


@_jit()
def gelu32_backward(g: Any, x: Any, out: Any) -> None:
    # g * ((erf(x / sqrt 2) + 1) * 0.5 + x * (exp(x * x * -0.5) * pdf)), the core's order
    for i in range(x.size):
        xi = x[i]
        cdf = (erf_one(xi * c_sqrt1_2) + one) * half_
        out[i] = g[i] * (cdf + xi * (exp_neg((xi * xi) * c_mhalf) * c_pdf))


@_jit()
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


@_jit()
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


@_jit(fastmath={"reassoc"})
def rsum(a: Any) -> Any:  # a.size >= 1
    s = a[0]
    for j in range(1, a.size):
        s += a[j]
    return s


@_jit()
def rmax(a: Any) -> Any:  # a.size >= 1
    # the largest element, NaN skipped (a comparison with NaN is false) unless a[0] is NaN
    m = a[0]
    for j in range(1, a.size):
        v = a[j]
        m = v if v > m else m
    return m


@_jit(fastmath={"reassoc"})
def rdot(a: Any, b: Any) -> Any:
    s = a[0] * b[0]
    for j in range(1, a.size):
        s += a[j] * b[j]
    return s


@_jit(fastmath={"reassoc"})
def rdot3(a: Any, b: Any, c: Any) -> Any:
    s = (a[0] * b[0]) * c[0]
    for j in range(1, a.size):
        s += (a[j] * b[j]) * c[j]
    return s


@_jit(fastmath={"reassoc"})
def rdot_centred(a: Any, b: Any, m: Any) -> Any:
    s = a[0] * (b[0] - m)
    for j in range(1, a.size):
        s += a[j] * (b[j] - m)
    return s


@_jit()
def batch_norm_backward_planes(g: Any, x: Any, w: Any, weighted: Any, mu: Any, r: Any, n: Any,
                               o: Any, sg: Any, sgx: Any) -> None:
    # training-mode batch norm's gradients of (N, C, L) g and x (L >= 1): per channel c,
    # sg = sum(g), sgx = sum(g * (x - mu)) * r over its N planes (each plane's sum vectorised,
    # then the planes in order), then o = (((x - mu) * -(sgx * r / n) + g) - sg / n) * k with
    # k = r * w[c] (r unweighted): the numpy path's operations in its order
    N, C, L = x.shape
    for c in range(C):
        m = mu[c]
        rc = r[c]
        s1 = rsum(g[0, c])
        s2 = rdot_centred(g[0, c], x[0, c], m)
        for i in range(1, N):
            s1 += rsum(g[i, c])
            s2 += rdot_centred(g[i, c], x[i, c], m)
        s2 = s2 * rc
        sg[c] = s1
        sgx[c] = s2
        a = -(s2 * rc) / n
        b = s1 / n
        k = rc * w[c] if weighted else rc
        for i in range(N):
            gi, xi, oi = g[i, c], x[i, c], o[i, c]
            for j in range(L):
                oi[j] = (((xi[j] - m) * a + gi[j]) - b) * k

@_jit()
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


@_jit()
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


@_jit()
def softmax_rows32(x: Any, out: Any) -> None:
    # softmax of each row of x (M, N): exp(x - max) / sum, the numpy path's operations. The
    # maximum skips NaN (a comparison with NaN is false), but a row holding NaN, +inf or
    # only -inf still gives NaN everywhere, as in PyTorch: through the sum, or inf - inf
    M, N = x.shape
    for i in range(M):
        xi, oi = x[i], out[i]
        mi = rmax(xi)
        for j in range(N):
            oi[j] = exp_neg(xi[j] - mi)
        t = rsum(oi)
        for j in range(N):
            oi[j] = oi[j] / t


@_jit()
def softmax_backward_rows(g: Any, y: Any, out: Any) -> None:
    # y * (g - sum(g * y)) per row
    M, N = y.shape
    for i in range(M):
        gi, yi, oi = g[i], y[i], out[i]
        t = rdot(gi, yi)
        for j in range(N):
            oi[j] = (gi[j] - t) * yi[j]



def exp_le0(z: Any) -> Any:
    """exp of a non-positive float (or NaN): :func:`exp_neg` for float32, ``math.exp`` else."""
    return math.exp(z)


@numba.extending.overload(exp_le0)
def _exp_le0_overload(z):  # type: ignore[no-untyped-def]  # numba matches its signature
    # to the implementations' (unannotated lambdas)
    if z == numba.types.float32:
        return lambda z: exp_neg(z)
    return lambda z: math.exp(z)


@_jit()
def cross_entropy_rows(x: Any, t: Any, w: Any, weighted: Any, ignore: Any, loss: Any, lse: Any,
                       rw: Any, tmp: Any) -> None:
    # per row of x (N, C), C >= 1: lse = log(sum(exp(x - max))) + max, and against the class
    # index t: row weight w[t] (1 unless weighted), loss = weight * (lse - x[t]) (unweighted:
    # lse - x[t], the same bits); an ignored row 0 and 0; a target that is not a class NaN and
    # 0, with no read outside the row (the core raises for it). tmp: C scratch
    N, C = x.shape
    for i in range(N):
        xi = x[i]
        m = rmax(xi)
        for j in range(C):
            tmp[j] = exp_le0(xi[j] - m)
        s = math.log(rsum(tmp))
        s += m
        lse[i] = s
        ti = t[i]
        if ti == ignore:
            rw[i] = 0
            loss[i] = 0
        elif 0 <= ti < C:
            if weighted:
                wi = w[ti]
                rw[i] = wi
                loss[i] = wi * (s - xi[ti])
            else:
                rw[i] = 1
                loss[i] = s - xi[ti]
        else:
            rw[i] = 0
            loss[i] = math.nan


@_jit()
def cross_entropy_backward_rows(x: Any, t: Any, lse: Any, k: Any, out: Any) -> None:
    # out[i, j] = (exp(x[i, j] - lse[i]) - [j == t[i]]) * k[i]; a row whose target is not a
    # class (an ignored one) subtracts nothing
    N, C = x.shape
    for i in range(N):
        xi, oi = x[i], out[i]
        s, ki = lse[i], k[i]
        for j in range(C):
            oi[j] = exp_le0(xi[j] - s) * ki
        ti = t[i]
        if 0 <= ti < C:
            oi[ti] = (exp_le0(xi[ti] - s) - 1) * ki


@_jit()
def keep_or_zero(cond: Any, a: Any, out: Any) -> None:
    # out = cond ? a : 0 over 1-D arrays of one size (a select: a's NaN and infinities where
    # masked give 0, as PyTorch's threshold_backward)
    zero = a.dtype.type(0)
    for i in range(a.size):
        out[i] = a[i] if cond[i] else zero


@numba.njit(inline="always", error_model="numpy")
def _rne16(u: Any) -> Any:
    # the float32 bit pattern u rounded to the nearest even bfloat16 (adding 0x7FFF plus the kept
    # part's lowest bit: a carry into the exponent is the right rounding, up to infinity); a NaN
    # stays a quiet NaN
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    quiet = (u >> np.uint32(16)) | np.uint32(0x40)
    return np.uint16(quiet if (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000) else rounded)


# Elements per block of the bfloat16 kernels below: each block widened into float32 buffers in
# the L1 cache, computed there by the float32 kernels' own arithmetic, and rounded once into the
# output (bit for bit the float32 copies' result, in one pass over memory instead of three)
_BF16_BLOCK = 4096


@_jit()
def bf16_binary_rows(op: int, a: Any, b: Any, out: Any) -> None:
    # out (R, N) = a op b over bfloat16 bit patterns (uint16, C-contiguous), a and b of R rows or
    # of one row (broadcast): each element computed in float32 from the widened operands and
    # rounded once to the nearest even bfloat16 (ml_dtypes' rule); op 0 add, 1 sub, 2 mul, 3 div
    R, N = out.shape
    buf = np.empty(N, np.float32)
    bits = buf.view(np.uint32)
    one_a, one_b = a.shape[0] == 1, b.shape[0] == 1
    for r in range(R):
        ar = a[0] if one_a else a[r]
        br = b[0] if one_b else b[r]
        if op == 0:
            for j in range(N):
                buf[j] = wide(ar[j]) + wide(br[j])
        elif op == 1:
            for j in range(N):
                buf[j] = wide(ar[j]) - wide(br[j])
        elif op == 2:
            for j in range(N):
                buf[j] = wide(ar[j]) * wide(br[j])
        else:
            for j in range(N):
                buf[j] = wide(ar[j]) / wide(br[j])
        o = out[r]
        for j in range(N):
            o[j] = _rne16(bits[j])


@_jit()
def bf16_scalar_op(op: int, a: Any, s: Any, scalar_first: bool, out: Any) -> None:
    # out = a op s (or s op a) over 1-D bfloat16 bit patterns (uint16) of one size, s a float32:
    # each element computed in float32 and rounded once to the nearest even bfloat16, as
    # bf16_binary_rows; op 0 add, 1 sub, 2 mul, 3 div. Each block's operands sliced (indexing
    # at an offset did not vectorise: 5x slower)
    n = a.size
    buf = np.empty(_BF16_BLOCK, np.float32)
    bits = buf.view(np.uint32)
    for j0 in range(0, n, _BF16_BLOCK):
        m = min(_BF16_BLOCK, n - j0)
        ar = a[j0:j0 + m]
        o = out[j0:j0 + m]
        if op == 0:
            for j in range(m):
                buf[j] = wide(ar[j]) + s
        elif op == 1 and scalar_first:
            for j in range(m):
                buf[j] = s - wide(ar[j])
        elif op == 1:
            for j in range(m):
                buf[j] = wide(ar[j]) - s
        elif op == 2:
            for j in range(m):
                buf[j] = wide(ar[j]) * s
        elif scalar_first:
            for j in range(m):
                buf[j] = s / wide(ar[j])
        else:
            for j in range(m):
                buf[j] = wide(ar[j]) / s
        for j in range(m):
            o[j] = _rne16(bits[j])


@_jit()
def bf16_round(x: Any, out: Any) -> None:
    # float32 x (1-D, C-contiguous) rounded to the nearest even bfloat16 bit patterns out (uint16)
    bits = x.view(np.uint32)
    for i in range(x.size):
        out[i] = _rne16(bits[i])


@_jit()
def bf16_widen(x: Any, out: Any) -> None:
    # bfloat16 bit patterns x (uint16, 1-D) as float32 out (exact: a bfloat16 is the top half)
    for i in range(x.size):
        out[i] = wide(x[i])


@_jit()
def bf16_gelu(x: Any, out: Any) -> None:
    # gelu32 over 1-D bfloat16 bit patterns (uint16) of one size
    n = x.size
    xb = np.empty(_BF16_BLOCK, np.float32)
    yb = np.empty(_BF16_BLOCK, np.float32)
    ybits = yb.view(np.uint32)
    for j0 in range(0, n, _BF16_BLOCK):
        m = min(_BF16_BLOCK, n - j0)
        xs, os = x[j0:j0 + m], out[j0:j0 + m]
        bf16_widen(xs, xb[:m])
        gelu32(xb[:m], yb[:m])
        for j in range(m):
            os[j] = _rne16(ybits[j])


@_jit()
def bf16_gelu_backward(g: Any, x: Any, out: Any) -> None:
    # gelu32_backward over 1-D bfloat16 bit patterns (uint16) of one size
    n = x.size
    xb = np.empty(_BF16_BLOCK, np.float32)
    gb = np.empty(_BF16_BLOCK, np.float32)
    yb = np.empty(_BF16_BLOCK, np.float32)
    ybits = yb.view(np.uint32)
    for j0 in range(0, n, _BF16_BLOCK):
        m = min(_BF16_BLOCK, n - j0)
        xs, gs, os = x[j0:j0 + m], g[j0:j0 + m], out[j0:j0 + m]
        bf16_widen(xs, xb[:m])
        bf16_widen(gs, gb[:m])
        gelu32_backward(gb[:m], xb[:m], yb[:m])
        for j in range(m):
            os[j] = _rne16(ybits[j])


@_jit()
def bf16_softmax_rows(x: Any, out: Any) -> None:
    # softmax_rows32 over the rows of (M, N) bfloat16 bit patterns (uint16), a row at a time
    M, N = x.shape
    xb = np.empty((1, N), np.float32)
    yb = np.empty((1, N), np.float32)
    ybits = yb.view(np.uint32)
    for i in range(M):
        xi, oi = x[i], out[i]
        bf16_widen(xi, xb[0])
        softmax_rows32(xb, yb)
        yr = ybits[0]
        for j in range(N):
            oi[j] = _rne16(yr[j])


@_jit()
def bf16_layer_norm_rows(x: Any, w: Any, b: Any, eps: Any, out: Any, has_w: bool,
                         has_b: bool) -> None:
    # layer_norm_rows over the rows of (M, N) bfloat16 bit patterns x (uint16), weight and bias
    # (N,) bfloat16 bit patterns or float32 (widened once), a row at a time: the float32
    # kernel's arithmetic on each widened row, the result rounded once into out (uint16)
    M, N = x.shape
    wf = np.empty(N if has_w else 0, np.float32)
    bf = np.empty(N if has_b else 0, np.float32)
    for j in range(wf.size):
        wf[j] = wide(w[j])
    for j in range(bf.size):
        bf[j] = wide(b[j])
    xb = np.empty((1, N), np.float32)
    yb = np.empty((1, N), np.float32)
    ybits = yb.view(np.uint32)
    none = np.empty(0, np.float32)
    n, one = np.float32(N), np.float32(1)
    for i in range(M):
        bf16_widen(x[i], xb[0])
        layer_norm_rows(xb, wf, bf, eps, n, one, yb, none, none, has_w, has_b, False)
        oi, yr = out[i], ybits[0]
        for j in range(N):
            oi[j] = _rne16(yr[j])


@_jit()
def bf16_softmax_backward_rows(g: Any, y: Any, out: Any) -> None:
    # softmax_backward_rows over the rows of (M, N) bfloat16 bit patterns (uint16)
    M, N = y.shape
    gb = np.empty((1, N), np.float32)
    yb = np.empty((1, N), np.float32)
    ob = np.empty((1, N), np.float32)
    obits = ob.view(np.uint32)
    for i in range(M):
        gi, yi, oi = g[i], y[i], out[i]
        bf16_widen(gi, gb[0])
        bf16_widen(yi, yb[0])
        softmax_backward_rows(gb, yb, ob)
        orow = obits[0]
        for j in range(N):
            oi[j] = _rne16(orow[j])


@_jit(fastmath={"reassoc"})
def _qk_row(qf: Any, kn: Any, c: int, scale: Any, s: Any) -> None:
    # s[j] = sum(qf * wide(kn[j])) * scale for the first c keys of kn (S, D): each dot
    # reassociated so that it vectorises, and summed from 0 over all D terms (a head size is a
    # multiple of the vector width; starting from the first product left a scalar remainder of
    # D - 1 terms per key)
    D = qf.size
    zero = s.dtype.type(0)
    for j in range(c):
        kj = kn[j]
        t = zero
        for d in range(D):
            t += qf[d] * wide(kj[d])
        s[j] = t * scale


@_jit()
def _pv_row(p: Any, vn: Any, c: int, o: Any) -> None:
    # o = sum over the first c keys of p[j] * wide(vn[j]) (vn (S, E)), in key order
    o[:] = 0
    E = o.size
    for j in range(c):
        pj, vj = p[j], vn[j]
        for e in range(E):
            o[e] += pj * wide(vj[e])


@_jit()
def attention_rows(q: Any, k: Any, v: Any, mask: Any, mask_kind: int, causal: bool, scale: Any,
                   out: Any, lse: Any, qf: Any, s: Any) -> None:
    # softmax(q k^T * scale + mask) v for each of the N (L, D) query blocks of q against the
    # (S, D) keys k and (S, E) values v: one query row at a time, its scores in s (S,) (no
    # (L, S) matrix), its output accumulated in out (N, L, E), the log-sum-exp into lse (N, L).
    # q/k/v float32/float64, or bfloat16 bit patterns (uint16) computed in float32; out, lse,
    # the scratch qf (D,) and s of the computing type. mask (N, L, S): mask_kind 0 none, 1 bool
    # (False: masked), 2 additive. causal: row i takes keys 0..i. The numpy path's arithmetic in
    # its order (the product scaled after the dot, exp(s - max), the sum divided at the end); a
    # row with nothing to attend to gives 0 and lse -inf; a NaN score gives NaN through the sum.
    N, L, D = q.shape
    S = k.shape[1]
    ninf = s.dtype.type(-np.inf)
    zero = s.dtype.type(0)
    for n in range(N):
        for i in range(L):
            for d in range(D):
                qf[d] = wide(q[n, i, d])
            c = min(i + 1, S) if causal else S
            if c == 0:
                out[n, i, :] = 0
                lse[n, i] = ninf
                continue
            sc = s[:c]
            _qk_row(qf, k[n], c, scale, sc)
            if mask_kind == 1:
                mi = mask[n, i]
                for j in range(c):
                    sc[j] = sc[j] if mi[j] else ninf
            elif mask_kind == 2:
                mi = mask[n, i]
                for j in range(c):
                    sc[j] += wide(mi[j])
            # (separate passes, so that each vectorises: the sums below may be reassociated)
            m = rmax(sc)
            if m == ninf:
                m = zero  # nothing to attend to: exp(-inf - 0) = 0
            for j in range(c):
                sc[j] = exp_le0(sc[j] - m)
            t = rsum(sc)
            o = out[n, i]
            _pv_row(s, v[n], c, o)
            if t == 0:  # nothing attended (a NaN score leaves t NaN: NaN outputs)
                o[:] = 0
            else:
                for e in range(o.size):
                    o[e] = o[e] / t
            lse[n, i] = m + np.log(t)


@_jit()
def plane_scatter_add(g: Any, ind: Any, out: Any) -> None:
    # out (R, P) = 0, then out[r, ind[r, l]] += g[r, l] for each plane r in order (a max
    # pooling's input gradient: ind holds positions within each plane); an index outside
    # [0, P) is skipped (never written out of bounds)
    R, L = g.shape
    P = out.shape[1]
    for r in range(R):
        o = out[r]
        for p in range(P):
            o[p] = 0
        gr, ir = g[r], ind[r]
        for k in range(L):
            j = ir[k]
            if 0 <= j < P:
                o[j] += gr[k]


# bfloat16 weights of a product with few rows (a decoder's step): widened into a small float32
# block in the cache (a bfloat16 is the top half of its float32), never whole in memory
_BF16_ROWS = 12  # rows of w (N, K) widened at a time: (12, K) float32 stays in L1/L2
# from at most this many rows of a, the weights are widened in registers as they are loaded
# (each row of a then streams w once: cheaper than a widened block up to 4 rows, measured)
_BF16_STREAM_ROWS_MAX = 4
_BF16_COLS = 1024  # columns of b (K, N) per block of the n-fast kernel: out's block stays in L1


@_jit(fastmath={"reassoc"})
def bf16_rows_nt(a: Any, w: Any, out: Any) -> None:
    # out (M, N) float32 = a (M, K) float32 @ w.T, w (N, K) the bfloat16 bit patterns (uint16),
    # every array C-contiguous: each output one float32 dot product over all of K (reassociated
    # so that it vectorises). Register blocks: four rows of a times three rows of w (twelve
    # accumulators sharing seven loads per step), the rows of a left over one at a time times
    # four rows of w; a block of w's rows (a multiple of 3 and of 4) widened once for all of a
    M, K = a.shape
    N = w.shape[0]
    if M <= _BF16_STREAM_ROWS_MAX:
        _bf16_rows_nt_streamed(a, w, out)
        return
    buf = np.empty((_BF16_ROWS, K), np.uint32)
    fb = buf.view(np.float32)
    zero = _F(0)
    for j0 in range(0, N, _BF16_ROWS):
        nb = min(_BF16_ROWS, N - j0)
        for r in range(nb):
            for k in range(K):
                buf[r, k] = np.uint32(w[j0 + r, k]) << 16
        m = 0
        while m + 4 <= M:
            r = 0
            while r + 3 <= nb:
                s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = s30 = s31 = s32 = zero
                for k in range(K):
                    f0 = fb[r, k]
                    f1 = fb[r + 1, k]
                    f2 = fb[r + 2, k]
                    x = a[m, k]
                    s00 += x * f0
                    s01 += x * f1
                    s02 += x * f2
                    x = a[m + 1, k]
                    s10 += x * f0
                    s11 += x * f1
                    s12 += x * f2
                    x = a[m + 2, k]
                    s20 += x * f0
                    s21 += x * f1
                    s22 += x * f2
                    x = a[m + 3, k]
                    s30 += x * f0
                    s31 += x * f1
                    s32 += x * f2
                j = j0 + r
                out[m, j] = s00
                out[m, j + 1] = s01
                out[m, j + 2] = s02
                out[m + 1, j] = s10
                out[m + 1, j + 1] = s11
                out[m + 1, j + 2] = s12
                out[m + 2, j] = s20
                out[m + 2, j + 1] = s21
                out[m + 2, j + 2] = s22
                out[m + 3, j] = s30
                out[m + 3, j + 1] = s31
                out[m + 3, j + 2] = s32
                r += 3
            while r < nb:
                s00 = s10 = s20 = s30 = zero
                for k in range(K):
                    f0 = fb[r, k]
                    s00 += a[m, k] * f0
                    s10 += a[m + 1, k] * f0
                    s20 += a[m + 2, k] * f0
                    s30 += a[m + 3, k] * f0
                out[m, j0 + r] = s00
                out[m + 1, j0 + r] = s10
                out[m + 2, j0 + r] = s20
                out[m + 3, j0 + r] = s30
                r += 1
            m += 4
        while m < M:
            r = 0
            while r + 4 <= nb:
                s00 = s01 = s02 = s03 = zero
                for k in range(K):
                    x = a[m, k]
                    s00 += x * fb[r, k]
                    s01 += x * fb[r + 1, k]
                    s02 += x * fb[r + 2, k]
                    s03 += x * fb[r + 3, k]
                out[m, j0 + r] = s00
                out[m, j0 + r + 1] = s01
                out[m, j0 + r + 2] = s02
                out[m, j0 + r + 3] = s03
                r += 4
            while r < nb:
                acc = zero
                for k in range(K):
                    acc += a[m, k] * fb[r, k]
                out[m, j0 + r] = acc
                r += 1
            m += 1


@_jit(fastmath={"reassoc"})
def _bf16_rows_nt_streamed(a: Any, w: Any, out: Any) -> None:
    # bf16_rows_nt for at most _BF16_STREAM_ROWS_MAX rows: each weight widened in registers as
    # it is loaded, no widened block written and read back (a block of four rows of a times
    # three rows of w, else one row of a times four rows of w: every row of a streams w once)
    M, K = a.shape
    N = w.shape[0]
    zero = _F(0)
    if M == 4:
        r = 0
        while r + 3 <= N:
            s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = s30 = s31 = s32 = zero
            for k in range(K):
                f0 = wide(w[r, k])
                f1 = wide(w[r + 1, k])
                f2 = wide(w[r + 2, k])
                x = a[0, k]
                s00 += x * f0
                s01 += x * f1
                s02 += x * f2
                x = a[1, k]
                s10 += x * f0
                s11 += x * f1
                s12 += x * f2
                x = a[2, k]
                s20 += x * f0
                s21 += x * f1
                s22 += x * f2
                x = a[3, k]
                s30 += x * f0
                s31 += x * f1
                s32 += x * f2
            out[0, r] = s00
            out[0, r + 1] = s01
            out[0, r + 2] = s02
            out[1, r] = s10
            out[1, r + 1] = s11
            out[1, r + 2] = s12
            out[2, r] = s20
            out[2, r + 1] = s21
            out[2, r + 2] = s22
            out[3, r] = s30
            out[3, r + 1] = s31
            out[3, r + 2] = s32
            r += 3
        first = r  # the last rows of w (fewer than 3): one row of a at a time below
    else:
        first = 0
    for m in range(M):
        r = first
        while r + 4 <= N:
            s00 = s01 = s02 = s03 = zero
            for k in range(K):
                x = a[m, k]
                s00 += x * wide(w[r, k])
                s01 += x * wide(w[r + 1, k])
                s02 += x * wide(w[r + 2, k])
                s03 += x * wide(w[r + 3, k])
            out[m, r] = s00
            out[m, r + 1] = s01
            out[m, r + 2] = s02
            out[m, r + 3] = s03
            r += 4
        while r < N:
            acc = zero
            for k in range(K):
                acc += a[m, k] * wide(w[r, k])
            out[m, r] = acc
            r += 1


@_jit()
def bf16_rows_nn(a: Any, b: Any, out: Any) -> None:
    # out (M, N) float32 = a (M, K) float32 @ b, b (K, N) the bfloat16 bit patterns (uint16), every
    # array C-contiguous: a block of columns at a time, each of b's rows widened once and added
    # into the block of every output row (k in order: each output a float32 sum in order of k)
    M, K = a.shape
    N = b.shape[1]
    row = np.empty(_BF16_COLS, np.uint32)
    fr = row.view(np.float32)
    for n0 in range(0, N, _BF16_COLS):
        nb = min(_BF16_COLS, N - n0)
        for m in range(M):
            for n in range(nb):
                out[m, n0 + n] = 0
        for k in range(K):
            for n in range(nb):
                row[n] = np.uint32(b[k, n0 + n]) << 16
            for m in range(M):
                x = a[m, k]
                for n in range(nb):
                    out[m, n0 + n] += x * fr[n]
