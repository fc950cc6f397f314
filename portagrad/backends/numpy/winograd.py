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
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .arrays import scratch
from .jit import build_once
from .layout import from_last, to_last

__all__ = ["available", "conv3x3_winograd", "use_winograd"]

_STATE: list[Any] = []  # [the two transforms, or None] once looked up

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


def _build() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The two transforms as numba functions (numba imported here, so that this module imports
    without it; numba compiles them on their first call, then reads its on-disk cache)."""
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

    return input_transform, output_transform


def available() -> bool:
    """Whether the Winograd path can run: numba importable and the path not turned off by
    ``PORTAGRAD_WINOGRAD=0`` or ``PORTAGRAD_NUMBA=0`` (looked up once, on the first convolution
    that could take it)."""
    return _kernels() is not None


def _kernels() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
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


def conv3x3_winograd(xa: np.ndarray, wa: np.ndarray, o: np.ndarray,
                     padding: Sequence[int], flipped: bool = False) -> None:
    """``o`` (N, O, OH, OW) = the stride-1 convolution of ``xa`` (N, C, H, W), float32, with the
    3x3 kernels ``wa`` (O, C, 3, 3), by Winograd F(2x2, 3x3) (numba must be importable).

    ``flipped``: ``wa`` is (C, O, 3, 3) and the kernels are its transpose over channels with
    rows and columns reversed (a stride-1 input gradient: ``xa`` is then the output gradient)."""
    kernels = _kernels() or _build()  # (called directly, switched off: numba must import)
    N, C, H, W = xa.shape
    O = wa.shape[1] if flipped else wa.shape[0]
    OH, OW = o.shape[2:]
    ph, pw = padding
    th, tw = (OH + 1) // 2, (OW + 1) // 2
    # U[k] (O, C): the transformed kernels, one (16, 9) x (9, O*C) product; flipped, the
    # transposes of the forward kernels' (C, O) ones, permuted (a transposed view: BLAS reads it)
    wk = np.ascontiguousarray(wa).reshape(O * C, 9).T
    if flipped:
        U = np.matmul(_GG_FLIPPED, wk).reshape(16, C, O).transpose(0, 2, 1)
    else:
        U = np.matmul(_GG, wk).reshape(16, O, C)
    # a band of tile rows at a time, so that its transformed input V and products M stay in the
    # cache between the transforms and the GEMMs
    rows = max(1, min(th, _BAND_BYTES // (16 * max(C, O) * tw * N * 4)))
    input_transform, output_transform = kernels
    xl = to_last(xa)  # (C, H, W, N)
    out = scratch((O, OH, OW, N), np.float32)
    A = np.empty((4, 2 * tw + 2, N), np.float32)
    S = np.empty((8, tw * N), np.float32)
    zero = np.zeros((W, N), np.float32)
    for ty0 in range(0, th, rows):
        ty1 = min(th, ty0 + rows)
        T = (ty1 - ty0) * tw * N
        V = scratch((16, C, T), np.float32)
        input_transform(xl, V, ph, pw, ty0, ty1, tw, A, zero)
        M = scratch((16, O, T), np.float32)
        np.matmul(U, V, out=M)
        output_transform(M, out, ty0, ty1, tw, S)
    from_last(out.reshape(O * OH * OW, N), o)
