"""OpenCL C sources of the FFT kernels (launched by :mod:`.fft`).

One program per real dtype (float32 or float64) holds every kernel; complex values are stored
interleaved, as numpy's complex64/complex128 (``T``: ``float2``/``double2``; ``R``: the real type).
Transforms run along one axis of a contiguous ``(outer, n, inner)`` array: element ``j`` of
line ``(o, q)`` is at ``o * n * inner + j * inner + q``, so every axis of a contiguous tensor is
reached without a transpose. Work-item ``g`` takes ``q = g % inner`` fastest, so for ``inner > 1``
neighbouring work-items touch neighbouring elements.

``fft_r{R}`` (``R`` in :data:`RADICES`) is one pass of a Stockham autosort FFT (out of place,
no bit reversal): with ``p`` the product of the radices of the passes already done and
``m = n / R``, work-item ``(line, i)`` reads ``x[i + j m]`` (``j < R``), multiplies element
``j`` by the twiddle ``w^(j k n / (p R))`` (``k = i % p``; ``w = exp(-2 pi i / n)`` from the table
``W`` of ``n`` entries made on the host in float64), takes the radix-``R`` DFT and writes it to
``y[(i - k) R + k + j p]``. ``inv`` flips the sign of every exponent (backward transform, no
scaling). The Bluestein kernels (``blue_pre``, ``cmul_rows``, ``blue_post``) take a size with a
prime factor above 7 to a power-of-two convolution; the rest reshape for real transforms.

Every kernel has a bounds check against its ``total`` (work-items are rounded up to the
work-group size) and no barrier.
"""
from __future__ import annotations

import math

from .kernels import prelude

__all__ = ["RADICES", "fft_source"]

#: radices with a pass kernel, largest first (the order the planner tries them)
RADICES = (8, 4, 2, 3, 5, 7)

_COMMON = """
typedef R2 T;
inline T cmul(T a, T b) { return (T)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
inline T cconj(T a) { return (T)(a.x, -a.y); }
/* a * (-i) when s < 0 (forward), a * i otherwise */
inline T mul_i(T a, R s) { return s < 0 ? (T)(a.y, -a.x) : (T)(-a.y, a.x); }
"""


def _lit(v: float) -> str:
    """A literal exact to double precision (the compiler rounds it once for float)."""
    return f"(R){v!r}"


def _dft_generic(r: int) -> str:
    """Direct radix-``r`` DFT of ``x0..x{r-1}`` into ``y0..y{r-1}`` (``s``: exponent sign),
    pairing ``j`` with ``r - j`` (``r`` odd): ``y_k = x0 + sum_{j<=r/2} (x_j + x_{r-j}) cos
    + s i (x_j - x_{r-j}) sin``."""
    h = r // 2
    lines = []
    for j in range(1, h + 1):
        lines.append(f"T a{j} = x{j} + x{r - j}; T b{j} = x{j} - x{r - j};")
    lines.append("T y0 = x0" + "".join(f" + a{j}" for j in range(1, h + 1)) + ";")
    for k in range(1, r):
        re = " + ".join(f"{_lit(math.cos(2 * math.pi * j * k / r))} * a{j}" for j in range(1, h + 1))
        im = " + ".join(f"{_lit(math.sin(2 * math.pi * j * k / r))} * b{j}" for j in range(1, h + 1))
        # (s i) * im: multiply by i then by s
        lines.append(f"T y{k}; {{ T c = x0 + {re}; T d = {im}; "
                     f"y{k} = c + (T)(-s * d.y, s * d.x); }}")
    return "\n        ".join(lines)


def _dft(r: int) -> str:
    """The radix-``r`` butterfly as C statements."""
    if r == 2:
        return "T y0 = x0 + x1; T y1 = x0 - x1;"
    if r == 4:
        return """T t0 = x0 + x2, t1 = x0 - x2, t2 = x1 + x3, t3 = mul_i(x1 - x3, s);
        T y0 = t0 + t2, y1 = t1 + t3, y2 = t0 - t2, y3 = t1 - t3;"""
    if r == 8:
        # two radix-4 DFTs of the even and odd elements, then a radix-2 stage whose twiddles
        # are the powers of the eighth root of unity w8 = (1 + s i) / sqrt 2
        h = _lit(math.sqrt(0.5))
        return f"""T e0, e1, e2, e3, o0, o1, o2, o3;
        {{ T t0 = x0 + x4, t1 = x0 - x4, t2 = x2 + x6, t3 = mul_i(x2 - x6, s);
           e0 = t0 + t2; e1 = t1 + t3; e2 = t0 - t2; e3 = t1 - t3; }}
        {{ T t0 = x1 + x5, t1 = x1 - x5, t2 = x3 + x7, t3 = mul_i(x3 - x7, s);
           o0 = t0 + t2; o1 = t1 + t3; o2 = t0 - t2; o3 = t1 - t3; }}
        /* o1 *= w8, o2 *= w8^2 = +-i, o3 *= w8^3, w8 = (1 + s i) / sqrt 2 */
        o1 = {h} * (o1 + mul_i(o1, s));
        o2 = mul_i(o2, s);
        o3 = {h} * (mul_i(o3, s) - o3);
        T y0 = e0 + o0, y4 = e0 - o0, y1 = e1 + o1, y5 = e1 - o1;
        T y2 = e2 + o2, y6 = e2 - o2, y3 = e3 + o3, y7 = e3 - o3;"""
    return _dft_generic(r)


def _butterfly(r: int, load: str, store: str) -> str:
    """Statements of one radix-``r`` butterfly of a Stockham pass: element ``j`` is read from
    ``load.format(j=j)`` (an lvalue of ``i + j m``), twiddled by ``W[j k wstep]`` (conjugated
    when ``inv``), transformed, and output ``j`` stored to ``store.format(j=j)`` (at
    ``o + j p``, ``o = (i - k) r + k``). Needs ``i, m, p, k, wstep, inv, s`` in scope."""
    loads = "\n    ".join(f"T x{j} = {load.format(j=j)};" for j in range(r))
    tw = "\n        ".join(
        f"{{ T w = W[{j} * k * wstep]; x{j} = cmul(x{j}, inv ? cconj(w) : w); }}"
        for j in range(1, r))
    stores = "\n    ".join(f"{store.format(j=j)} = y{j};" for j in range(r))
    return f"""
    {loads}
    if (k != 0) {{
        {tw}
    }}
    {{
        {_dft(r)}
        long o = (i - k) * {r} + k;
        {stores}
    }}"""


def _pass(r: int) -> str:
    body = _butterfly(r, "x[(i + {j} * m) * inner]", "y[(o + {j} * p) * inner]")
    return f"""
__kernel void fft_r{r}(__global const T* X, long xo, __global T* Y, long yo,
                       __global const T* W, long n, long p, long inner, long wstep, int inv,
                       long total)
{{
    long g = get_global_id(0);
    if (g >= total) return;
    long m = n / {r};
    long q = g % inner;
    long t = g / inner;
    long i = t % m;
    long line = t / m;
    long base = line * n * inner + q;
    __global const T* x = X + xo + base;
    __global T* y = Y + yo + base;
    R s = inv ? (R)1 : (R)-1;
    long k = i % p;
    {body}
}}
"""


def _local() -> str:
    """``fft_local``: every pass of one line in local memory, one work-group per line. The
    radices (``npass`` of them, 4 bits each in ``rad``, first pass lowest) and ``n <= NMAX``
    are arguments; work-items stride over the butterflies of each pass, a barrier between
    passes (uniform: every work-item runs every pass).

    Oclgrind 19.10 returns zeros from this kernel for two passes or more when it optimises the
    program, and the right values with ``-cl-opt-disable``, with no access or race report either
    way; PoCL agrees with numpy at every size. Its ``tox -e oclgrind`` selection therefore runs
    the one-launch-per-pass path (``fft_r*``)."""
    funcs = "".join(
        f"""
/* one radix-{r} pass of fft_local: work-item l strides over the butterflies */
void lpass{r}(__local T* buf, long so, long dq, long n, long p, long l, long ls,
              __global const T* W, int inv, R s)
{{
    long m = n / {r}, wstep = n / (p * {r});
    for (long i = l; i < m; i += ls) {{
        long k = i % p;
        {_butterfly(r, "buf[so + i + {j} * m]", "buf[dq + o + {j} * p]")}
    }}
}}
""" for r in RADICES)
    cases = "".join(f"""
            case {r}: lpass{r}(buf, so, dq, n, p, l, ls, W, inv, s); break;""" for r in RADICES)
    return funcs + f"""
__kernel void fft_local(__global const T* X, long xo, __global T* Y, long yo,
                        __global const T* W, long n, long inner, int npass, long rad, int inv)
{{
    __local T buf[2 * NMAX];  /* two halves, ping-pong */
    long line = get_group_id(0);
    long l = get_local_id(0), ls = get_local_size(0);
    long q = line % inner;
    long base = (line / inner) * n * inner + q;
    __global const T* x = X + xo + base;
    __global T* y = Y + yo + base;
    R s = inv ? (R)1 : (R)-1;
    for (long j = l; j < n; j += ls) buf[j] = x[j * inner];
    barrier(CLK_LOCAL_MEM_FENCE);
    long p = 1;
    for (int pass = 0; pass < npass; pass++) {{
        /* offsets of the halves read and written */
        long so = (pass & 1) * NMAX, dq = NMAX - so;
        int r = (int)((rad >> (4 * pass)) & 15);
        switch (r) {{{cases}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        p *= r;
    }}
    long ro = (npass & 1) * NMAX;
    for (long j = l; j < n; j += ls) y[j * inner] = buf[ro + j];
}}
"""


_OTHERS = """
/* Bluestein, step 1: A[r, j] = x[j] c[j] for j < n, 0 up to M; line r = (o, q) of X */
__kernel void blue_pre(__global const T* X, long xo, __global T* A, __global const T* C,
                       long n, long inner, long M, long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    long j = g % M, r = g / M;
    T v = (T)(0, 0);
    if (j < n) {
        long q = r % inner, o = r / inner;
        v = cmul(X[xo + o * n * inner + j * inner + q], C[j]);
    }
    A[g] = v;
}

/* step 2 (between the forward and inverse power-of-two FFTs): A[r, j] *= B[j] */
__kernel void cmul_rows(__global T* A, __global const T* B, long M, long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    A[g] = cmul(A[g], B[g % M]);
}

/* step 3: y[j] = c[j] A[r, j] for j < n */
__kernel void blue_post(__global const T* A, __global T* Y, long yo, __global const T* C,
                        long n, long inner, long M, long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    long q = g % inner, t = g / inner;
    long j = t % n, o = t / n;
    Y[yo + g] = cmul(A[(o * inner + q) * M + j], C[j]);
}

/* real -> complex (imaginary part 0), contiguous */
__kernel void complexify(__global const R* X, long xo, __global T* Y, long yo, long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    Y[yo + g] = (T)(X[xo + g], 0);
}

/* real transforms of an even length n = 2h along a contiguous last axis, by one complex
   transform of length h: z[j] = x[2j] + i x[2j+1] (pack), then X[k] for k <= h from Z[k] and
   conj(Z[h - k]) with the twiddles w^k of the length-n table (r2c_post); backward, the
   reverse (c2r_pre, a backward length-h transform, unpack) */
__kernel void pack_real(__global const R* X, long xo, __global T* Y, long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    Y[g] = (T)(X[xo + 2 * g], X[xo + 2 * g + 1]);
}

__kernel void unpack_real(__global const T* X, __global R* Y, long yo, long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    T v = X[g];
    Y[yo + 2 * g] = v.x;
    Y[yo + 2 * g + 1] = v.y;
}

/* Z: (lines, h) -> Y: (lines, h + 1); X[k] = (Zk + conj Z(h-k)) / 2 - i w^k (Zk - conj Z(h-k)) / 2 */
__kernel void r2c_post(__global const T* Z, __global T* Y, long yo, __global const T* W, long h,
                       long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    long k = g % (h + 1), line = g / (h + 1);
    __global const T* z = Z + line * h;
    T a = z[k == h ? 0 : k], b = cconj(z[k == 0 ? 0 : h - k]);
    T e = (R)0.5 * (a + b), d = (R)0.5 * (a - b);
    T o = cmul(W[k], (T)(d.y, -d.x));  /* w^k * (-i d) */
    Y[yo + g] = e + o;
}

/* X: (lines, h + 1) one-sided -> Z: (lines, h), Z[k] = (Xk + conj X(h-k))
   + i conj(w^k) (Xk - conj X(h-k)), the imaginary parts of X[0] and X[h] ignored */
__kernel void c2r_pre(__global const T* X, long xo, __global T* Z, __global const T* W, long h,
                      long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    long k = g % h, line = g / h;
    __global const T* x = X + xo + line * (h + 1);
    T a = x[k], b = cconj(x[h - k]);
    if (k == 0) { a.y = 0; b.y = 0; }
    T e = a + b, d = cmul(cconj(W[k]), a - b);
    Z[g] = e + (T)(-d.y, d.x);
}

/* real part, contiguous */
__kernel void real_part(__global const T* X, long xo, __global R* Y, long yo, long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    Y[yo + g] = X[xo + g].x;
}

/* (outer, n, inner) -> (outer, h, inner): the first h entries along the axis (h <= n) */
__kernel void crop(__global const T* X, long xo, __global T* Y, long yo, long n, long h,
                   long inner, long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    long q = g % inner, t = g / inner;
    long j = t % h, o = t / h;
    Y[yo + g] = X[xo + (o * n + j) * inner + q];
}

/* (outer, h, inner) one-sided -> (outer, L, inner) Hermitian: y[j] = x[j] for j < h, else
   conj(x[L - j]) */
__kernel void hermitian(__global const T* X, long xo, __global T* Y, long yo, long h, long L,
                        long inner, long total)
{
    long g = get_global_id(0);
    if (g >= total) return;
    long q = g % inner, t = g / inner;
    long j = t % L, o = t / L;
    __global const T* x = X + xo + o * h * inner + q;
    Y[yo + g] = j < h ? x[j * inner] : cconj(x[(L - j) * inner]);
}
"""


def fft_source(dt: str, nmax: int) -> str:
    """The program of every FFT kernel for the real dtype ``dt`` (``"float32"``/``"float64"``),
    ``fft_local`` with lines of at most ``nmax`` entries (any work-group size)."""
    r = {"float32": "float", "float64": "double"}[dt]
    head = (prelude([dt]) + f"\ntypedef {r} R;\ntypedef {r}2 R2;\n#define NMAX {nmax}\n"
            + _COMMON)
    return head + "".join(_pass(k) for k in RADICES) + _local() + _OTHERS
