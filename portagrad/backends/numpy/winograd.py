"""Winograd F(2x2, 3x3) convolution for the numpy backend, when numba is installed.

A stride-1, 3x3 convolution computes each 2x2 block of outputs from a 4x4 tile of the input with
16 products per (output, input) channel pair instead of 36 (Lavin and Gray, "Fast Algorithms for
Convolutional Neural Networks", 2016): the input tiles and the kernels are transformed
(``V = B^T d B``, ``U = G g G^T``), the 16 transformed positions are 16 independent GEMMs
``M[k] = U[k] @ V[k]`` over the channels, and each output block is ``A^T M A``. The GEMMs are 2.25x
smaller than im2col's; the transforms are loops over tiles that numpy cannot run at speed (one
strided pass per term), so they are compiled with numba, an optional dependency (the ``fast``
extra): without it, or with ``PORTAGRAD_WINOGRAD=0`` (or ``PORTAGRAD_NUMBA=0``, every numba path),
convolutions stay im2col + GEMM.

The transforms work in the batch-innermost layout (C, H, W, N) of the im2col path (every inner
loop runs over the batch, contiguous, which LLVM vectorises), a band of tile rows at a time so
that the transformed band and its products stay in the cache.

Only float32 takes this path (float64 keeps im2col's summation, which gradient checks rely on).
F(2x2, 3x3)'s transforms have entries 0, +-1 and +-1/2, so the rounding stays close to a direct
sum's (measured: largest errors against a float64 reference within 1.7x of im2col's at ResNet
sizes, some smaller); results differ from im2col's in the last bits, not bit for bit.

Where float32 convolutions may compute below float32's precision
(``torch.backends.mkldnn.conv.fp32_precision = "tf32"`` or ``"bf16"``, PyTorch's opt-in) and the
output planes are at least 6x6, the path takes F(4x4, 3x3) instead: 4x4 output blocks from 6x6
input tiles, 36 GEMMs 1.78x smaller in all than F(2x2, 3x3)'s 16, and fewer transform passes per
output. Its interpolation points are 0, 1, -1, 1/2, -2 and infinity (the set with the smallest
errors among those tried: 0, +-1, +-2 gives twice the error), and its errors against a float64
reference are about 10x F(2x2, 3x3)'s (relative 1e-5 at ResNet sizes), which is why it waits for
that opt-in.

A weight gradient is a correlation too, of each 4x4 input tile with the 2x2 block of output
gradient it feeds, giving a 3x3 kernel: Winograd F(3x3, 2x2) on the same points (0, 1, -1,
infinity), whose input transform is F(2x2, 3x3)'s (up to signs carried by the gradient's
transform). The 16 transformed positions are then 16 GEMMs ``(O, T) @ (T, C)`` summed over the
tiles, as deep as the band of tiles is long, and ``A^T m A`` of the sums gives the 3x3 kernels:
2.25x fewer products than im2col's ``(O, N*OH*OW) @ (N*OH*OW, C*9)``, with errors at im2col's
(the transforms' entries are 0, +-1 and +-1/2).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...backend_flags import mkldnn
from .arrays import scratch
from .jit import build_once
from .layout import from_last, to_last

__all__ = ["available", "conv3x3_winograd", "conv3x3_winograd_grad_weight", "use_winograd",
           "use_winograd_grad_weight"]

_STATE: list[Any] = []  # [the transforms, or None] once looked up

# G (4x3): the kernel transform U = G g G^T; U's 16 entries are kron(G, G) @ vec(g)
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
_GG = np.kron(_G, _G).astype(np.float32)  # exact in float32 (entries 0, +-1/4, +-1/2, 1)
# Reversing a kernel's rows (or columns) swaps G's first and last rows (the middle two are
# symmetric), so the transform of the flipped kernel is U with positions 0 and 3 of each axis
# swapped: the input gradient's kernels come from the forward weights by a permutation of the 16
# rows of _GG, without a flipped, channel-transposed copy of the weights
_FLIP = [4 * (3 - i if i in (0, 3) else i) + (3 - j if j in (0, 3) else j)
         for i in range(4) for j in range(4)]
_GG_FLIPPED = np.ascontiguousarray(_GG[_FLIP])

# F(4x4, 3x3) on the points 0, 1, -1, 1/2, -2, infinity: the kernel transform G (6x3). Its input
# transform B^T and output transform A^T are written out in the kernels below. A flipped kernel's
# transform is G with its columns reversed
_G4 = np.array([[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3], [-1 / 3, 1 / 3, -1 / 3],
                [-16 / 15, -8 / 15, -4 / 15], [1 / 15, -2 / 15, 4 / 15], [0.0, 0.0, 1.0]])
_GG4 = np.kron(_G4, _G4).astype(np.float32)
_GG4_FLIPPED = np.kron(_G4[:, ::-1], _G4[:, ::-1]).astype(np.float32)
# F(3x3, 2x2) for weight gradients: its output transform A^T (3x4) on both axes, (9, 16). Its
# gradient transform is G = [[1, 0], [1/2, 1/2], [1/2, -1/2], [0, -1]] (written out in the
# kernel), and its input transform F(2x2, 3x3)'s B^T (G's signs in rows 0 and 3 make it so)
_AT3 = np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, -1.0, 0.0], [0.0, 1.0, 1.0, 1.0]])
_AA3 = np.kron(_AT3, _AT3).astype(np.float32)
# the smallest output planes whose weight gradient takes Winograd: on 4x4 planes (one tile row
# per two output rows, 16 GEMMs over few tiles) im2col measured as fast
_MIN_PLANE_GRAD_WEIGHT = 6

# the smallest output planes F(4x4, 3x3) takes: on 4x4 planes one tile per image leaves the
# kernel transform (36 rows per channel pair) a large share of the work, and it measured slower
_MIN_PLANE_4X4 = 6

# The fewest input and output channels worth the path: the 16 GEMMs have the input channels as
# their depth, and shallow GEMMs run well below BLAS speed (measured, one BLAS thread: 32 -> 32
# channels on 7x7 planes, batch 64, 0.85 ms by im2col against 1.1; 16 -> 32 on 14x14 about even;
# 64 -> 64 on 32x32 even; 128 channels and more 10-30 % faster; docs/performance.md)
_MIN_CHANNELS = 64
_MIN_OUT_CHANNELS = 16

# Bytes of transformed input per band of tile rows: V and M of a band stay in the cache between
# the transforms and the GEMMs (0.5-2 MiB measured alike at ResNet's sizes, and faster than one
# band for the whole batch at its first stage, where V is 17 MiB)
_BAND_BYTES = 1 << 21


def _build() -> tuple[Callable[..., Any], ...]:
    """The transforms (F(2x2, 3x3)'s two, F(4x4, 3x3)'s two, then the weight gradient's) as
    numba functions (numba
    imported here, so that this module imports without it; numba compiles them on their first
    call, then reads its on-disk cache)."""
    import numba  # optional dependency, imported on first use

    def jit(f: Callable[..., Any]) -> Callable[..., Any]:
        try:
            return numba.njit(cache=True, boundscheck=False)(f)
        except RuntimeError:  # no writable cache location (a read-only install): compile each run
            return numba.njit(cache=False, boundscheck=False)(f)

    @jit
    def input_transform(x: Any, V: Any, ph: int, pw: int, ty0: int, ty1: int, tw: int,
                        A: Any, zero: Any) -> None:
        # x: (C, H, W, N), batch innermost. V[4i + j, c, ((ty - ty0) * tw + tx) * N + n] =
        # (B^T d B)[i, j] of the tile (ty, tx) of image n, channel c, for ty in [ty0, ty1). Each
        # row of tiles first combines its four input rows (B^T d) into A (4, Wp, N), zero
        # outside the input; every inner loop runs over the batch, contiguous
        C, H, W, N = x.shape
        Wp = A.shape[1]
        for c in range(C):
            for ty in range(ty0, ty1):
                y = 2 * ty - ph
                r0 = x[c, y] if 0 <= y < H else zero
                r1 = x[c, y + 1] if 0 <= y + 1 < H else zero
                r2 = x[c, y + 2] if 0 <= y + 2 < H else zero
                r3 = x[c, y + 3] if 0 <= y + 3 < H else zero
                for q in range(Wp):
                    xx = q - pw
                    if 0 <= xx < W:
                        for n in range(N):
                            A[0, q, n] = r0[xx, n] - r2[xx, n]
                            A[1, q, n] = r1[xx, n] + r2[xx, n]
                            A[2, q, n] = r2[xx, n] - r1[xx, n]
                            A[3, q, n] = r1[xx, n] - r3[xx, n]
                    else:
                        for i in range(4):
                            for n in range(N):
                                A[i, q, n] = 0.0
                base = (ty - ty0) * tw * N
                for i in range(4):
                    a = A[i]
                    v0 = V[4 * i, c]
                    v1 = V[4 * i + 1, c]
                    v2 = V[4 * i + 2, c]
                    v3 = V[4 * i + 3, c]
                    for tx in range(tw):
                        t = base + tx * N
                        q = 2 * tx
                        for n in range(N):
                            v0[t + n] = a[q, n] - a[q + 2, n]
                            v1[t + n] = a[q + 1, n] + a[q + 2, n]
                            v2[t + n] = a[q + 2, n] - a[q + 1, n]
                            v3[t + n] = a[q + 1, n] - a[q + 3, n]

    @jit
    def output_transform(M: Any, out: Any, ty0: int, ty1: int, tw: int, S: Any) -> None:
        # out: (O, OH, OW, N), batch innermost; its 2x2 block of tile (ty, tx) = A^T m A,
        # A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]: the row combinations into S (8, tw * N), then
        # the columns
        O, OH, OW, N = out.shape
        L = tw * N
        for k in range(O):
            for ty in range(ty0, ty1):
                base = (ty - ty0) * L
                for j in range(4):
                    m0 = M[j, k]
                    m1 = M[4 + j, k]
                    m2 = M[8 + j, k]
                    m3 = M[12 + j, k]
                    s = S[j]
                    d = S[4 + j]
                    for u in range(L):
                        s[u] = m0[base + u] + m1[base + u] + m2[base + u]
                        d[u] = m1[base + u] - m2[base + u] - m3[base + u]
                for r in range(2):
                    y = 2 * ty + r
                    if y >= OH:
                        break
                    a0 = S[4 * r]
                    a1 = S[4 * r + 1]
                    a2 = S[4 * r + 2]
                    a3 = S[4 * r + 3]
                    row = out[k, y]
                    for tx in range(tw):
                        xo = 2 * tx
                        t = tx * N
                        for n in range(N):
                            row[xo, n] = a0[t + n] + a1[t + n] + a2[t + n]
                        if xo + 1 < OW:
                            for n in range(N):
                                row[xo + 1, n] = a1[t + n] - a2[t + n] - a3[t + n]

    @jit
    def input_transform4(x: Any, V: Any, ph: int, pw: int, ty0: int, ty1: int, tw: int,
                         A: Any, zero: Any) -> None:
        # F(4x4, 3x3)'s B^T d B, as input_transform: V[6i + j, c, ((ty - ty0) * tw + tx) * N + n]
        # for the 6x6 tile (ty, tx) whose top-left input is (4 ty - ph, 4 tx - pw); the rows are
        # combined into A (6, Wp, N) first, then the columns
        C, H, W, N = x.shape
        Wp = A.shape[1]
        for c in range(C):
            for ty in range(ty0, ty1):
                y = 4 * ty - ph
                r0 = x[c, y] if 0 <= y < H else zero
                r1 = x[c, y + 1] if 0 <= y + 1 < H else zero
                r2 = x[c, y + 2] if 0 <= y + 2 < H else zero
                r3 = x[c, y + 3] if 0 <= y + 3 < H else zero
                r4 = x[c, y + 4] if 0 <= y + 4 < H else zero
                r5 = x[c, y + 5] if 0 <= y + 5 < H else zero
                for q in range(Wp):
                    xx = q - pw
                    if 0 <= xx < W:
                        for n in range(N):
                            d0 = r0[xx, n]
                            d1 = r1[xx, n]
                            d2 = r2[xx, n]
                            d3 = r3[xx, n]
                            d4 = r4[xx, n]
                            d5 = r5[xx, n]
                            A[0, q, n] = d0 - 1.5 * d1 - 2.0 * d2 + 1.5 * d3 + d4
                            A[1, q, n] = 0.5 * d2 - d1 + 2.5 * d3 + d4
                            A[2, q, n] = d1 - 2.5 * d2 + 0.5 * d3 + d4
                            A[3, q, n] = 2.0 * (d3 - d1) - d2 + d4
                            A[4, q, n] = 0.5 * (d1 - d3) - d2 + d4
                            A[5, q, n] = d1 - 1.5 * d2 - 2.0 * d3 + 1.5 * d4 + d5
                    else:
                        for i in range(6):
                            for n in range(N):
                                A[i, q, n] = 0.0
                base = (ty - ty0) * tw * N
                for i in range(6):
                    a = A[i]
                    v0 = V[6 * i, c]
                    v1 = V[6 * i + 1, c]
                    v2 = V[6 * i + 2, c]
                    v3 = V[6 * i + 3, c]
                    v4 = V[6 * i + 4, c]
                    v5 = V[6 * i + 5, c]
                    for tx in range(tw):
                        t = base + tx * N
                        q = 4 * tx
                        for n in range(N):
                            d0 = a[q, n]
                            d1 = a[q + 1, n]
                            d2 = a[q + 2, n]
                            d3 = a[q + 3, n]
                            d4 = a[q + 4, n]
                            d5 = a[q + 5, n]
                            v0[t + n] = d0 - 1.5 * d1 - 2.0 * d2 + 1.5 * d3 + d4
                            v1[t + n] = 0.5 * d2 - d1 + 2.5 * d3 + d4
                            v2[t + n] = d1 - 2.5 * d2 + 0.5 * d3 + d4
                            v3[t + n] = 2.0 * (d3 - d1) - d2 + d4
                            v4[t + n] = 0.5 * (d1 - d3) - d2 + d4
                            v5[t + n] = d1 - 1.5 * d2 - 2.0 * d3 + 1.5 * d4 + d5

    @jit
    def output_transform4(M: Any, out: Any, ty0: int, ty1: int, tw: int, S: Any) -> None:
        # F(4x4, 3x3)'s A^T m A into the 4x4 block of tile (ty, tx), A^T = [[1, 1, 1, 1, 1, 0],
        # [0, 1, -1, 1/2, -2, 0], [0, 1, 1, 1/4, 4, 0], [0, 1, -1, 1/8, -8, 1]]: the rows into S
        # (24, tw * N), then the columns
        O, OH, OW, N = out.shape
        L = tw * N
        for k in range(O):
            for ty in range(ty0, ty1):
                base = (ty - ty0) * L
                for j in range(6):
                    m0 = M[j, k]
                    m1 = M[6 + j, k]
                    m2 = M[12 + j, k]
                    m3 = M[18 + j, k]
                    m4 = M[24 + j, k]
                    m5 = M[30 + j, k]
                    s0 = S[j]
                    s1 = S[6 + j]
                    s2 = S[12 + j]
                    s3 = S[18 + j]
                    for u in range(L):
                        p = base + u
                        s12 = m1[p] + m2[p]
                        d12 = m1[p] - m2[p]
                        s0[u] = m0[p] + s12 + m3[p] + m4[p]
                        s1[u] = d12 + 0.5 * m3[p] - 2.0 * m4[p]
                        s2[u] = s12 + 0.25 * m3[p] + 4.0 * m4[p]
                        s3[u] = d12 + 0.125 * m3[p] - 8.0 * m4[p] + m5[p]
                for r in range(4):
                    y = 4 * ty + r
                    if y >= OH:
                        break
                    a0 = S[6 * r]
                    a1 = S[6 * r + 1]
                    a2 = S[6 * r + 2]
                    a3 = S[6 * r + 3]
                    a4 = S[6 * r + 4]
                    a5 = S[6 * r + 5]
                    row = out[k, y]
                    for tx in range(tw):
                        xo = 4 * tx
                        t = tx * N
                        if xo + 3 < OW:
                            for n in range(N):
                                s12 = a1[t + n] + a2[t + n]
                                d12 = a1[t + n] - a2[t + n]
                                row[xo, n] = a0[t + n] + s12 + a3[t + n] + a4[t + n]
                                row[xo + 1, n] = d12 + 0.5 * a3[t + n] - 2.0 * a4[t + n]
                                row[xo + 2, n] = s12 + 0.25 * a3[t + n] + 4.0 * a4[t + n]
                                row[xo + 3, n] = (d12 + 0.125 * a3[t + n] - 8.0 * a4[t + n]
                                                  + a5[t + n])
                        else:  # the last, partial block of a row
                            for n in range(N):
                                s12 = a1[t + n] + a2[t + n]
                                d12 = a1[t + n] - a2[t + n]
                                row[xo, n] = a0[t + n] + s12 + a3[t + n] + a4[t + n]
                                if xo + 1 < OW:
                                    row[xo + 1, n] = d12 + 0.5 * a3[t + n] - 2.0 * a4[t + n]
                                if xo + 2 < OW:
                                    row[xo + 2, n] = s12 + 0.25 * a3[t + n] + 4.0 * a4[t + n]

    @jit
    def grad_transform(g: Any, D: Any, ty0: int, ty1: int, tw: int, A: Any, zero: Any) -> None:
        # g: the output gradient (O, OH, OW, N), batch innermost. D[4i + j, o, ((ty - ty0) * tw
        # + tx) * N + n] = (G dy G^T)[i, j] of the 2x2 block (ty, tx), zero past the output's
        # edge; G's rows are (1, 0), (1/2, 1/2), (1/2, -1/2), (0, -1): rows first into A
        # (4, 2 tw, N), then columns
        O, OH, OW, N = g.shape
        for o in range(O):
            for ty in range(ty0, ty1):
                y = 2 * ty
                r0 = g[o, y]
                r1 = g[o, y + 1] if y + 1 < OH else zero
                for q in range(2 * tw):
                    if q < OW:
                        for n in range(N):
                            p0 = r0[q, n]
                            p1 = r1[q, n]
                            A[0, q, n] = p0
                            A[1, q, n] = 0.5 * (p0 + p1)
                            A[2, q, n] = 0.5 * (p0 - p1)
                            A[3, q, n] = -p1
                    else:
                        for i in range(4):
                            for n in range(N):
                                A[i, q, n] = 0.0
                base = (ty - ty0) * tw * N
                for i in range(4):
                    a = A[i]
                    d0 = D[4 * i, o]
                    d1 = D[4 * i + 1, o]
                    d2 = D[4 * i + 2, o]
                    d3 = D[4 * i + 3, o]
                    for tx in range(tw):
                        t = base + tx * N
                        q = 2 * tx
                        for n in range(N):
                            p0 = a[q, n]
                            p1 = a[q + 1, n]
                            d0[t + n] = p0
                            d1[t + n] = 0.5 * (p0 + p1)
                            d2[t + n] = 0.5 * (p0 - p1)
                            d3[t + n] = -p1

    return input_transform, output_transform, input_transform4, output_transform4, grad_transform


def available() -> bool:
    """Whether the Winograd path can run: numba importable and the path not turned off by
    ``PORTAGRAD_WINOGRAD=0`` or ``PORTAGRAD_NUMBA=0`` (looked up once, on the first convolution
    that could take it)."""
    return _kernels() is not None


def _kernels() -> tuple[Callable[..., Any], ...] | None:
    return build_once(_STATE, _build, "PORTAGRAD_WINOGRAD")


def use_winograd(x: np.ndarray, w: np.ndarray, stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], groups: int) -> bool:
    """Whether ``conv2d(x, w)`` with these parameters takes the Winograd path."""
    if x.dtype != np.float32 or w.dtype != np.float32 or groups != 1:
        return False
    O, C, kh, kw = w.shape
    if (kh, kw) != (3, 3) or tuple(stride) != (1, 1) or tuple(dilation) != (1, 1):
        return False
    if not all(0 <= p <= 2 for p in padding):
        return False
    if C < _MIN_CHANNELS or O < _MIN_OUT_CHANNELS or x.shape[0] == 0:
        return False
    OH, OW = x.shape[2] + 2 * padding[0] - 2, x.shape[3] + 2 * padding[1] - 2
    return OH > 0 and OW > 0 and available()


def use_winograd_grad_weight(x: np.ndarray, g: np.ndarray, kernel_size: Sequence[int],
                             stride: Sequence[int], padding: Sequence[int],
                             dilation: Sequence[int], groups: int) -> bool:
    """Whether the weight gradient of ``conv2d(x, w)`` (``g`` the output gradient) takes the
    Winograd path: the forward's conditions, and output planes of 6x6 or more."""
    if x.dtype != np.float32 or g.dtype != np.float32 or groups != 1:
        return False
    if tuple(kernel_size) != (3, 3) or tuple(stride) != (1, 1) or tuple(dilation) != (1, 1):
        return False
    if not all(0 <= p <= 2 for p in padding):
        return False
    if x.shape[1] < _MIN_CHANNELS or g.shape[1] < _MIN_OUT_CHANNELS or x.shape[0] == 0:
        return False
    return min(g.shape[2:]) >= _MIN_PLANE_GRAD_WEIGHT and available()


def conv3x3_winograd_grad_weight(xa: np.ndarray, ga: np.ndarray, o: np.ndarray,
                                 padding: Sequence[int]) -> None:
    """``o`` (O, C, 3, 3) = the weight gradient of the stride-1 3x3 convolution of ``xa``
    (N, C, H, W), float32, whose output gradient is ``ga`` (N, O, OH, OW), by Winograd
    F(3x3, 2x2) (numba must be importable)."""
    kernels = _kernels() or _build()
    input_transform, grad_transform = kernels[0], kernels[4]
    N, C, H, W = xa.shape
    O, OH, OW = ga.shape[1:]
    ph, pw = padding
    th, tw = (OH + 1) // 2, (OW + 1) // 2
    rows = max(1, min(th, _BAND_BYTES // (16 * max(C, O) * tw * N * 4)))
    xl = to_last(xa)  # (C, H, W, N)
    gl = to_last(ga)  # (O, OH, OW, N)
    A = np.empty((4, 2 * tw + 2, N), np.float32)
    Ag = np.empty((4, 2 * tw, N), np.float32)
    zero = np.zeros((W, N), np.float32)
    zero_g = np.zeros((OW, N), np.float32)
    M = np.zeros((16, O, C), np.float32)  # the products summed over every tile
    part = np.empty((16, O, C), np.float32)
    for ty0 in range(0, th, rows):
        ty1 = min(th, ty0 + rows)
        T = (ty1 - ty0) * tw * N
        V = scratch((16, C, T), np.float32)
        input_transform(xl, V, ph, pw, ty0, ty1, tw, A, zero)
        D = scratch((16, O, T), np.float32)
        grad_transform(gl, D, ty0, ty1, tw, Ag, zero_g)
        np.matmul(D, V.transpose(0, 2, 1), out=part)
        M += part
    r = np.matmul(_AA3, M.reshape(16, O * C))  # (9, O*C): A^T m A for every channel pair
    np.copyto(o, r.reshape(3, 3, O, C).transpose(2, 3, 0, 1))


def conv3x3_winograd(xa: np.ndarray, wa: np.ndarray, o: np.ndarray,
                     padding: Sequence[int], flipped: bool = False,
                     tile: int | None = None) -> None:
    """``o`` (N, O, OH, OW) = the stride-1 convolution of ``xa`` (N, C, H, W), float32, with the
    3x3 kernels ``wa`` (O, C, 3, 3), by Winograd F(2x2, 3x3) or F(4x4, 3x3) (numba must be
    importable).

    ``flipped``: ``wa`` is (C, O, 3, 3) and the kernels are its transpose over channels with
    rows and columns reversed (a stride-1 input gradient: ``xa`` is then the output gradient).
    ``tile``: the output block, 2 or 4; by default 4 where float32 convolutions may compute below
    float32's precision (:func:`portagrad.backend_flags.mkldnn.conv_allows_reduced_fp32`) and
    the output planes are at least 6x6, else 2."""
    kernels = _kernels() or _build()  # (called directly, switched off: numba must import)
    N, C, H, W = xa.shape
    O = wa.shape[1] if flipped else wa.shape[0]
    OH, OW = o.shape[2:]
    if tile is None:
        tile = 4 if (min(OH, OW) >= _MIN_PLANE_4X4 and mkldnn.conv_allows_reduced_fp32()) else 2
    if tile == 4:
        gg, input_transform, output_transform = (_GG4_FLIPPED if flipped else _GG4,
                                                 kernels[2], kernels[3])
    elif tile == 2:
        gg, input_transform, output_transform = (_GG_FLIPPED if flipped else _GG,
                                                 kernels[0], kernels[1])
    else:
        raise ValueError(f"tile must be 2 or 4, got {tile}")
    P = (tile + 2) ** 2  # transformed positions: 16 or 36 GEMMs
    ph, pw = padding
    th, tw = -(-OH // tile), -(-OW // tile)
    # U[k] (O, C): the transformed kernels, one (P, 9) x (9, O*C) product; flipped, the
    # transposes of the forward kernels' (C, O) ones (a transposed view: BLAS reads it)
    wk = np.ascontiguousarray(wa).reshape(O * C, 9).T
    if flipped:
        U = np.matmul(gg, wk).reshape(P, C, O).transpose(0, 2, 1)
    else:
        U = np.matmul(gg, wk).reshape(P, O, C)
    # a band of tile rows at a time, so that its transformed input V and products M stay in the
    # cache between the transforms and the GEMMs
    rows = max(1, min(th, _BAND_BYTES // (P * max(C, O) * tw * N * 4)))
    xl = to_last(xa)  # (C, H, W, N)
    out = scratch((O, OH, OW, N), np.float32)
    A = np.empty((tile + 2, tile * tw + 2, N), np.float32)
    S = np.empty((tile * (tile + 2), tw * N), np.float32)
    zero = np.zeros((W, N), np.float32)
    for ty0 in range(0, th, rows):
        ty1 = min(th, ty0 + rows)
        T = (ty1 - ty0) * tw * N
        V = scratch((P, C, T), np.float32)
        input_transform(xl, V, ph, pw, ty0, ty1, tw, A, zero)
        M = scratch((P, O, T), np.float32)
        np.matmul(U, V, out=M)
        output_transform(M, out, ty0, ty1, tw, S)
    from_last(out.reshape(O * OH * OW, N), o)
