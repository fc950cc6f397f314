"""numpy fast paths for convolution and max pooling (the backend contract's optional methods).

Mixed into :class:`~portagrad.backends.numpy.backend.NumpyBackend`; the contract is in
:mod:`portagrad.backends.interface` (``conv2d`` ... ``max_pool2d_grad_input``). bfloat16 computes
in float32 and rounds once, as the other primitives (:func:`.arrays.via_f32`).

Convolution is im2col + GEMM, the layout chosen per shape (float32 convolutions with small output
planes and few weights run the direct kernel of :mod:`.conv_direct` instead, where it compiles):

* batch-innermost (C, H, W, N), the default: every window tap is a run of at least N contiguous
  elements, so im2col is one cheap strided copy and the products are one GEMM each (numpy copies
  with short inner runs, as NCHW im2col has, are much slower). Large ones im2col a band of output
  rows at a time, each band's GEMM straight after its copy, while the columns are in the cache;
* one image at a time in the tensors' own (N, C, H, W) layout when each image has many output
  positions (its GEMM is wide enough, and the two transposing copies are saved);
* positions-major, (N*OH*OW, K) x (K, O) over a channels-last copy, for few output channels.

The stride-1 input gradient is the convolution of ``g`` with the flipped kernel; other strides
scatter-add the column gradients. Max pooling sweeps the window taps with strict comparisons (the
first maximum wins, the last NaN wins, as in PyTorch), over 2x2 pair splits for small planes,
strided NCHW views for wide rows, or a planes-innermost copy otherwise.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..interface import View
from . import conv_direct, jit
from .arrays import BFLOAT16, nd, scratch, via_f32
from .layout import from_last as _from_last
from .layout import padded_extent as _padded_extent
from .layout import to_last as _to_last
from .winograd import (conv3x3_winograd, conv3x3_winograd_grad_weight, use_winograd,
                       use_winograd_grad_weight)

__all__ = ["ConvMixin"]

# IEEE results (inf, nan) are what tensors compute, as in PyTorch: numpy's floating-point warnings
# from this module are noise (as in the backend module)
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


class ConvMixin:
    """conv2d / conv2d_grad_input / conv2d_grad_weight / max_pool2d / max_pool2d_grad_input on
    numpy arrays."""

    def conv2d(self, x: View, w: View, out: View, stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], groups: int) -> None:
        if x.dtype is BFLOAT16:
            via_f32(self.conv2d, (2,), x, w, out, stride, padding, dilation, groups)
            return
        _conv_forward(nd(x), nd(w), nd(out), stride, padding, dilation, groups)

    def conv2d_grad_input(self, g: View, w: View, out: View, stride: Sequence[int],
                          padding: Sequence[int], dilation: Sequence[int], groups: int) -> None:
        if g.dtype is BFLOAT16:
            via_f32(self.conv2d_grad_input, (2,), g, w, out, stride, padding, dilation, groups)
            return
        ga, wa, o = nd(g), nd(w), nd(out)
        N, C, H, W = o.shape
        O, Cg, kh, kw = wa.shape
        OH, OW = ga.shape[2:]
        G = groups
        (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
        if sh == sw == 1 and ph <= dh * (kh - 1) and pw <= dw * (kw - 1):
            # a stride-1 input gradient is the convolution of g, padded by d*(k-1) - p, with the
            # flipped kernel, channels in and out swapped per group: im2col of g and one GEMM,
            # no scatter-add of a (C*kh*kw, OH*OW*N) column matrix
            wf = wa.reshape(G, O // G, Cg, kh, kw).transpose(0, 2, 1, 3, 4)[..., ::-1, ::-1]
            wf = wf.reshape(C, O // G, kh, kw)
            pad = (dh * (kh - 1) - ph, dw * (kw - 1) - pw)
            if use_winograd(ga, wf, (1, 1), pad, (dh, dw), G):
                # Winograd transforms the forward kernels itself (no flipped copy of them)
                conv3x3_winograd(ga, wa, o, pad, flipped=True)
                return
            _conv_forward(ga, wf, o, (1, 1), pad, (dh, dw), G)
            return
        gr = _to_last(ga).reshape(G, O // G, OH * OW * N)
        wt = np.ascontiguousarray(wa).reshape(G, O // G, Cg * kh * kw).transpose(0, 2, 1)
        gc = np.matmul(wt, gr, out=scratch((G, Cg * kh * kw, OH * OW * N), gr.dtype))
        gc = gc.reshape(C, kh, kw, OH, OW, N)
        Hq, Wq = _padded_extent((H, W), (kh, kw), (OH, OW), stride, padding, dilation)
        gxp = scratch((C, Hq, Wq, N), gc.dtype)
        gxp.fill(0)
        for i in range(kh):
            for j in range(kw):
                gxp[:, i * dh:i * dh + (OH - 1) * sh + 1:sh,
                    j * dw:j * dw + (OW - 1) * sw + 1:sw] += gc[:, i, j]
        inner = gxp[:, ph:ph + H, pw:pw + W]
        _from_last(inner.reshape(C * H * W, N) if inner.flags.c_contiguous else
                   np.ascontiguousarray(inner).reshape(C * H * W, N), o)

    def conv2d_grad_weight(self, x: View, g: View, out: View, stride: Sequence[int],
                           padding: Sequence[int], dilation: Sequence[int], groups: int) -> None:
        if x.dtype is BFLOAT16:
            via_f32(self.conv2d_grad_weight, (2,), x, g, out, stride, padding, dilation, groups)
            return
        xa, ga, o = nd(x), nd(g), nd(out)
        N = xa.shape[0]
        O, Cg, kh, kw = o.shape
        OH, OW = ga.shape[2:]
        G = groups
        if use_winograd_grad_weight(xa, ga, (kh, kw), stride, padding, dilation, G):
            conv3x3_winograd_grad_weight(xa, ga, o, padding)
            return
        if G == 1 and xa.dtype == np.float32 and ga.dtype == np.float32 and \
                conv_direct.fits(Cg, kh, kw, O, OH * OW):
            conv_direct.conv2d_grad_weight(xa, ga, o, stride, padding, dilation)
            return
        if G == 1 and o.flags.c_contiguous and _batched_small(N, OH * OW, Cg * kh * kw):
            _conv_grad_weight_batched(xa, ga, o.reshape(O, Cg * kh * kw), (kh, kw), stride,
                                      padding, dilation)
            return
        if G == 1 and o.flags.c_contiguous and _per_sample(N, OH * OW, Cg * kh * kw):
            _conv_grad_weight_per_sample(xa, ga, o.reshape(O, Cg * kh * kw), (kh, kw), stride,
                                         padding, dilation)
            return
        cols = _conv_cols(xa, (kh, kw), (OH, OW), stride, padding, dilation)
        gr = _to_last(ga).reshape(G, O // G, OH * OW * N)
        if G == 1 and o.flags.c_contiguous:
            om = o.reshape(O, Cg * kh * kw)
            if om.size <= _SMALL_TRANSPOSE:
                # computed transposed: BLAS runs this (C*kh*kw, O) product faster than its
                # (O, C*kh*kw) transpose, and a small result is cheap to transpose on the way
                # out (a large one is not: a transposing copy runs at a fraction of memcpy)
                np.copyto(om, np.matmul(cols, gr[0].T).T)
            else:
                np.matmul(gr[0], cols.T, out=om)
            return
        r = np.matmul(gr, cols.reshape(G, Cg * kh * kw, OH * OW * N).transpose(0, 2, 1))  # (G, O/G, CgK)
        o[...] = r.reshape(o.shape)

    def max_pool2d(self, x: View, out: View, indices: View, kernel_size: Sequence[int],
                   stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int]) -> None:
        if x.dtype is BFLOAT16:
            via_f32(self.max_pool2d, (1,), x, out, indices, kernel_size, stride, padding, dilation)
            return
        xa, o, ind = nd(x), nd(out), nd(indices)
        N, C, H, W = xa.shape
        OH, OW = o.shape[2:]
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel_size, stride, padding, dilation
        Hq, Wq = _padded_extent((H, W), (kh, kw), (OH, OW), stride, padding, dilation)
        if (kh, kw, sh, sw, dh, dw, ph, pw) == (2, 2, 2, 2, 1, 1, 0, 0) and \
                (H, W) == (2 * OH, 2 * OW) and W < 16 and xa.flags.c_contiguous:
            # small planes (the strided sweeps below have inner loops of a few elements)
            _max_pool_2x2(xa, o, ind)
            return
        if (Hq, Wq) == (H, W) and ph == 0 and pw == 0 and OW >= 8:
            # wide rows: sweeping strided NCHW views beats the two layout changes below
            _max_pool_unpadded(xa, o, ind, kh, kw, sh, sw, dh, dw)
            return
        # planes innermost, (H, W, N*C): every tap is (OH, OW, N*C) with long contiguous runs
        xl = _to_last(xa.reshape(N * C, H, W))
        if (Hq, Wq) != (H, W):
            xp = np.full((Hq, Wq, N * C), -np.inf, xa.dtype)
            xp[ph:ph + H, pw:pw + W] = xl
        else:
            xp = xl
        best = np.full((OH, OW, N * C), -np.inf, xa.dtype)
        # as in PyTorch, a window of only -inf points at its first position inside the input
        i0 = np.maximum(-(-(ph - np.arange(OH) * sh) // dh), 0)
        j0 = np.maximum(-(-(pw - np.arange(OW) * sw) // dw), 0)
        tap = np.empty((OH, OW, N * C), np.int64)
        tap[...] = (i0[:, None] * kw + j0[None, :])[:, :, None]
        m = np.empty(best.shape, np.bool_)
        tmp = np.empty(best.shape, np.int64)

        def sweep(nan_aware: bool) -> None:
            for i in range(kh):
                for j in range(kw):
                    v = xp[i * dh:i * dh + (OH - 1) * sh + 1:sh,
                           j * dw:j * dw + (OW - 1) * sw + 1:sw]
                    np.greater(v, best, out=m)  # strict: the first maximum wins, never padding
                    if nan_aware:  # max propagates NaN; as in PyTorch's kernel the last NaN wins
                        np.logical_or(m, np.isnan(v), out=m)
                    np.maximum(best, v, out=best)
                    # tap = k where m. Taps come in increasing order and m never holds at a tap
                    # before the initial one (padding reads -inf), so max(tap, m * k) does it
                    # (cheaper than a masked copyto)
                    np.multiply(m, i * kw + j, out=tmp)
                    np.maximum(tap, tmp, out=tap)

        sweep(False)
        if xa.dtype.kind == "f" and np.isnan(best).any():  # rare: redo the positions with NaNs
            best.fill(-np.inf)
            tap[...] = (i0[:, None] * kw + j0[None, :])[:, :, None]
            sweep(True)
        # tap (i, j) of window (oh, ow) reads input position base[oh, ow] + i*dh*W + j*dw
        base = (np.arange(OH) * sh - ph)[:, None] * W + (np.arange(OW) * sw - pw)[None, :]
        off = ((np.arange(kh) * dh * W)[:, None] + (np.arange(kw) * dw)[None, :]).ravel()
        pos = np.take(off, tap)
        pos += base[:, :, None]
        _from_last(best.reshape(OH * OW, N * C), o.reshape(N * C, OH, OW))
        _from_last(pos.reshape(OH * OW, N * C), ind.reshape(N * C, OH, OW))

    def max_pool2d_grad_input(self, g: View, indices: View, out: View,
                              kernel_size: Sequence[int], stride: Sequence[int],
                              padding: Sequence[int], dilation: Sequence[int]) -> None:
        if g.dtype is BFLOAT16:
            via_f32(self.max_pool2d_grad_input, (2,), g, indices, out, kernel_size, stride,
                     padding, dilation)
            return
        ga, ia, o = nd(g), nd(indices), nd(out)
        N, C, H, W = o.shape
        P = H * W
        L = ga.shape[2] * ga.shape[3]
        if (o.dtype == ga.dtype and o.dtype.kind == "f" and o.dtype.itemsize >= 4
                and ia.dtype == np.int64 and o.flags.c_contiguous and ga.flags.c_contiguous
                and ia.flags.c_contiguous and jit.available()):
            # with numba: zero and scatter-add each plane in one pass (overlapping windows
            # add up as below; PyTorch's kernel also adds into zeros)
            jit.plane_scatter_add(ga.reshape(N * C, L), ia.reshape(N * C, L),
                                  o.reshape(N * C, P))
            return
        flat = np.add(ia.reshape(-1), _plane_offsets(N * C, L, P))
        gf = ga.reshape(-1)
        apart = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel_size, stride, dilation))
        if apart and o.flags.c_contiguous:  # no overlap: each input position is hit at most once
            of = o.reshape(-1)  # a view: scatter straight into the output
            of.fill(0)
            of[flat] = gf + 0  # (+ 0: a -0.0 gradient lands as 0 + -0.0 = +0.0, as PyTorch's)
            return
        if apart:
            res = np.zeros(N * C * P, o.dtype)
            res[flat] = gf + 0
        else:
            res = np.bincount(flat, weights=gf, minlength=N * C * P)
        np.copyto(o, res.reshape(o.shape), casting="unsafe")


def _max_pool_unpadded(xa: np.ndarray, o: np.ndarray, ind: np.ndarray, kh: int, kw: int,
                       sh: int, sw: int, dh: int, dw: int) -> None:
    """Max pooling when every window lies inside the input: each tap is a strided (N, C, OH, OW)
    view of the input, swept straight into the output (no layout changes)."""
    OH, OW = o.shape[2:]
    best = np.full(o.shape, -np.inf, o.dtype)
    tap = np.zeros(o.shape, np.int64)
    tmp = np.empty(o.shape, np.int64)
    m = np.empty(o.shape, np.bool_)

    def sweep(nan_aware: bool) -> None:
        for i in range(kh):
            for j in range(kw):
                v = xa[:, :, i * dh:i * dh + (OH - 1) * sh + 1:sh,
                       j * dw:j * dw + (OW - 1) * sw + 1:sw]
                np.greater(v, best, out=m)  # strict: the first maximum wins
                if nan_aware:  # max propagates NaN; as in PyTorch's kernel the last NaN wins
                    np.logical_or(m, np.isnan(v), out=m)
                np.maximum(best, v, out=best)
                if i or j:  # taps come in increasing order: tap = max(tap, m * k) sets k where m
                    np.multiply(m, i * kw + j, out=tmp)
                    np.maximum(tap, tmp, out=tap)

    sweep(False)
    if o.dtype.kind == "f" and np.isnan(best).any():  # rare: redo the positions with NaNs
        best.fill(-np.inf)
        tap.fill(0)
        sweep(True)
    np.copyto(o, best)
    # tap (i, j) of window (oh, ow) reads input position (oh*sh + i*dh) * W + ow*sw + j*dw
    W = xa.shape[3]
    base = (np.arange(OH) * sh)[:, None] * W + (np.arange(OW) * sw)[None, :]
    off = ((np.arange(kh) * dh * W)[:, None] + (np.arange(kw) * dw)[None, :]).ravel()
    np.add(np.take(off, tap), base, out=ind)


def _split_pairs(a: np.ndarray, rows: int, width: int) -> np.ndarray:
    """``a`` read as (rows, 2, width) into a new contiguous (2, rows, width): the even and the odd
    rows apart. A row goes as one opaque item (a void view), which makes this a 1-d strided copy
    where an element-wise one would have inner loops of ``width`` elements."""
    vd = np.dtype((np.void, width * a.itemsize))
    out = np.empty((2, rows, width), a.dtype)
    np.copyto(out.view(vd).reshape(2, rows), a.reshape(rows * 2, width).view(vd).reshape(rows, 2).T)
    return out


def _kept_small(cache: dict[tuple[int, ...], np.ndarray], key: tuple[int, ...],
                build: Any) -> np.ndarray:
    """``cache[key]``, else ``build()``, kept (read-only, 16 entries at most) while at most 1 MiB:
    the index arrays below are the same from one training step to the next."""
    a = cache.get(key)
    if a is None:
        a = build()
        if a.nbytes > 1 << 20:
            return a
        a.flags.writeable = False
        if len(cache) >= 16:
            cache.clear()
        cache[key] = a
    return a


_POOL_BASE: dict[tuple[int, ...], np.ndarray] = {}


def _pool_base(P: int, OH: int, OW: int) -> np.ndarray:
    """The flat input position ``2*oh*W + 2*ow`` of each 2x2 window's first tap, repeated for
    ``P`` planes (contiguous: a broadcast add over planes of a few windows is a slow loop)."""
    def build() -> np.ndarray:
        plane = ((np.arange(OH) * 4 * OW)[:, None] + np.arange(OW) * 2).ravel()
        return np.tile(plane, P)

    return _kept_small(_POOL_BASE, (P, OH, OW), build)


_PLANE_OFFSETS: dict[tuple[int, ...], np.ndarray] = {}


def _plane_offsets(planes: int, per_plane: int, P: int) -> np.ndarray:
    """``p * P`` for each of ``per_plane`` elements of each plane ``p``, flat: what turns
    positions within planes into flat positions by one contiguous add (a broadcast add over planes
    of a few elements is a slow loop)."""
    return _kept_small(_PLANE_OFFSETS, (planes, per_plane, P),
                       lambda: np.repeat(np.arange(planes, dtype=np.int64) * P, per_plane))


def _max_pool_2x2(xa: np.ndarray, o: np.ndarray, ind: np.ndarray) -> None:
    """2x2 max pooling with stride 2 of a contiguous ``xa`` with even H, W (no padding): the
    columns split by parity, then the rows, so every comparison runs on contiguous arrays.

    Each window is reduced in pairs: its two columns within each row, then its two rows. Strict
    comparisons keep the earlier element on ties (row-major window order, as PyTorch); with NaNs
    a later element also wins when it is NaN, so the last NaN is pointed at (PyTorch's rule)."""
    N, C, H, W = xa.shape
    OH, OW = H // 2, W // 2
    R = N * C * OH  # pairs of input rows
    cols = np.empty((2, R * 2 * OW), xa.dtype)
    np.copyto(cols.reshape(2, R * 2, OW), xa.reshape(R * 2, OW, 2).transpose(2, 0, 1))
    left, right = cols[0], cols[1]
    h = np.maximum(left, right)  # the maximum of each row of each window
    hj = np.greater(right, left)  # its column
    rows = _split_pairs(h, R, OW)
    top, bottom = rows[0].reshape(-1), rows[1].reshape(-1)
    o_direct, ind_direct = o.flags.c_contiguous, ind.flags.c_contiguous
    best = o.reshape(-1) if o_direct else np.empty(R * OW, xa.dtype)
    np.maximum(top, bottom, out=best)
    nan = xa.dtype.kind == "f" and bool(np.isnan(best).any())
    if nan:  # rare: a NaN also wins against an earlier element
        np.logical_or(hj, np.isnan(right), out=hj)
    js = _split_pairs(hj, R, OW)
    j, j_bottom = js[0].reshape(-1), js[1].reshape(-1)
    i = np.greater(bottom, top)
    if nan:
        np.logical_or(i, np.isnan(bottom), out=i)
    # j = j_bottom where i, else j: bitwise on bools (a masked copy is far slower)
    d = np.bitwise_xor(j, j_bottom)
    np.bitwise_and(d, i, out=d)
    np.bitwise_xor(j, d, out=j)
    # flat position: window base + i*W + j, the small term in uint8 (W < 16 here)
    k = np.multiply(i.view(np.uint8), np.uint8(W))
    np.add(k, j.view(np.uint8), out=k)
    pos = ind.reshape(-1) if ind_direct else np.empty(R * OW, np.int64)
    np.add(_pool_base(N * C, OH, OW), k, out=pos)
    if not o_direct:
        np.copyto(o, best.reshape(o.shape))
    if not ind_direct:
        np.copyto(ind, pos.reshape(ind.shape))


def _conv_forward(xa: np.ndarray, wa: np.ndarray, o: np.ndarray, stride: Sequence[int],
                  padding: Sequence[int], dilation: Sequence[int], groups: int) -> None:
    """``o`` (N, O, OH, OW) = the convolution of ``xa`` (N, C, H, W) with ``wa``: im2col, then
    one GEMM per group (or Winograd F(2x2, 3x3) for float32 3x3 stride-1 kernels, with numba)."""
    if use_winograd(xa, wa, stride, padding, dilation, groups):
        conv3x3_winograd(xa, wa, o, padding)
        return
    N = xa.shape[0]
    O, Cg, kh, kw = wa.shape
    OH, OW = o.shape[2:]
    g = groups
    if g == 1 and xa.dtype == np.float32 and wa.dtype == np.float32 and \
            conv_direct.fits(Cg, kh, kw, O, OH * OW):
        # small planes: the direct kernel, without im2col's copies around the GEMM
        conv_direct.conv2d(xa, wa, o, stride, padding, dilation)
        return
    wm = np.ascontiguousarray(wa).reshape(g, O // g, Cg * kh * kw)
    if g == 1 and o.flags.c_contiguous and _batched_small(N, OH * OW, Cg * kh * kw):
        _conv_forward_batched(xa, wm[0], o, (kh, kw), stride, padding, dilation)
        return
    if g == 1 and _per_sample(N, OH * OW, Cg * kh * kw):
        _conv_forward_per_sample(xa, wm[0], o, (kh, kw), stride, padding, dilation)
        return
    if g == 1 and o.flags.c_contiguous and _positions_major(N * OH * OW, Cg * kh * kw, O):
        _conv_forward_positions_major(xa, wa, o, stride, padding, dilation)
        return
    r = scratch((g, O // g, OH * OW * N), xa.dtype)
    rows = _chunk_rows(Cg * kh * kw, OH, OW * N, xa.itemsize) if g == 1 else OH
    if rows < OH:
        # im2col a band of output rows at a time, each band's GEMM straight after its copy: the
        # band's columns are still in the cache when the GEMM reads them, where a whole-image
        # column matrix (tens of MiB) is written to memory and read back
        v = _conv_taps(xa, (kh, kw), (OH, OW), stride, padding, dilation)
        K, band = Cg * kh * kw, OW * N
        cols = scratch((Cg, kh, kw, rows, OW, N), xa.dtype)
        for r0 in range(0, OH, rows):
            r1 = min(OH, r0 + rows)
            c = cols if r1 - r0 == rows else scratch((Cg, kh, kw, r1 - r0, OW, N), xa.dtype)
            np.copyto(c, v[:, :, :, r0:r1])
            np.matmul(wm[0], c.reshape(K, (r1 - r0) * band), out=r[0, :, r0 * band:r1 * band])
    else:
        cols = _conv_cols(xa, (kh, kw), (OH, OW), stride, padding, dilation)  # (C*K, L*N)
        if g == 1:
            np.matmul(wm[0], cols, out=r[0])
        else:  # explicit: C may be 0
            np.matmul(wm, cols.reshape(g, Cg * kh * kw, OH * OW * N), out=r)
    _from_last(r.reshape(O * OH * OW, N), o)


# A convolution with few output channels is a GEMM with few rows in the batch-innermost layout
# ((O, K) x (K, positions)), which OpenBLAS runs well below the speed of the same product with the
# output positions as rows ((positions, K) x (K, O), both contiguous): such convolutions im2col
# from a channels-last copy instead (measured at O = 16-64, K = 144-576; from O = 256, as in
# ResNet's later stages, the batch-innermost layout is faster; figures in docs/performance.md)
_POSITIONS_MAJOR_MAX_OUT = 64
_POSITIONS_MAJOR_MIN_K = 64
_POSITIONS_MAJOR_MIN_ROWS = 512


def _positions_major(rows: int, K: int, O: int) -> bool:
    return 0 < O <= _POSITIONS_MAJOR_MAX_OUT and K >= _POSITIONS_MAJOR_MIN_K and \
        rows >= _POSITIONS_MAJOR_MIN_ROWS


def _conv_forward_positions_major(xa: np.ndarray, wa: np.ndarray, o: np.ndarray,
                                  stride: Sequence[int], padding: Sequence[int],
                                  dilation: Sequence[int]) -> None:
    """``o`` (N, O, OH, OW), contiguous = the convolution of ``xa`` (N, C, H, W) with ``wa``
    (groups 1) as one (N*OH*OW, kh*kw*C) x (kh*kw*C, O) GEMM: im2col over a zero-padded
    channels-last (N, Hq, Wq, C) copy of the input, each window tap a run of C elements."""
    N, C, H, W = xa.shape
    O, _, kh, kw = wa.shape
    OH, OW = o.shape[2:]
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    Hq, Wq = _padded_extent((H, W), (kh, kw), (OH, OW), stride, padding, dilation)
    xp = _zero_bordered((N, Hq, Wq, C), xa.dtype, (H, W), padding)
    xp[:, ph:ph + H, pw:pw + W] = xa.transpose(0, 2, 3, 1)
    a, b, c, e = xp.strides
    taps = np.lib.stride_tricks.as_strided(xp, (N, OH, OW, kh, kw, C),
                                           (a, b * sh, c * sw, b * dh, c * dw, e))
    cols = scratch((N, OH, OW, kh, kw, C), xa.dtype)
    np.copyto(cols, taps)
    wt = np.ascontiguousarray(wa.transpose(2, 3, 1, 0)).reshape(kh * kw * C, O)
    r = scratch((N * OH * OW, O), xa.dtype)
    np.matmul(cols.reshape(N * OH * OW, kh * kw * C), wt, out=r)
    np.copyto(o.reshape(N, O, OH * OW), r.reshape(N, OH * OW, O).transpose(0, 2, 1))


def _zero_bordered(shape: tuple[int, ...], dtype: Any, hw: Sequence[int],
                   padding: Sequence[int]) -> np.ndarray:
    """A scratch array of ``shape`` (C or N, Hq, Wq, ...) whose border around the (H, W) interior
    at offset ``padding`` is zero; the interior, overwritten by the caller, is left as it is."""
    (H, W), (ph, pw) = hw, padding
    a = scratch(shape, dtype)
    a[:, :ph] = 0
    a[:, ph + H:] = 0
    a[:, ph:ph + H, :pw] = 0
    a[:, ph:ph + H, pw + W:] = 0
    return a


# Output positions per image from which a convolution runs one image at a time in the tensors'
# own (N, C, H, W) layout: each image's GEMM is then wide enough, and the batch-innermost path's
# two transposing copies per call (input and output, a fraction of memcpy speed) are saved
_PER_SAMPLE_MIN_POSITIONS = 256


def _per_sample(N: int, positions: int, K: int) -> bool:
    return N > 1 and K > 0 and positions >= _PER_SAMPLE_MIN_POSITIONS


def _sample_taps(xn: np.ndarray, k: Sequence[int], osz: Sequence[int], stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], pad: np.ndarray | None
                 ) -> np.ndarray:
    """The (C, kh, kw, OH, OW) strided view of every window tap of one image ``xn`` (C, H, W),
    through ``pad`` (a (C, Hq, Wq) scratch array, its border zero) where the image is padded."""
    C, H, W = xn.shape
    (kh, kw), (OH, OW), (sh, sw), (ph, pw), (dh, dw) = k, osz, stride, padding, dilation
    if pad is not None:
        pad[:, ph:ph + H, pw:pw + W] = xn
        xn = pad
    a, b, c = xn.strides
    return np.lib.stride_tricks.as_strided(xn, (C, kh, kw, OH, OW),
                                           (a, b * dh, c * dw, b * sh, c * sw))


def _sample_pad(xa: np.ndarray, k: Sequence[int], osz: Sequence[int], stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int]) -> np.ndarray | None:
    """A (C, Hq, Wq) scratch array with a zero border for one image of ``xa``, or None when the
    windows stay inside the image."""
    _, C, H, W = xa.shape
    Hq, Wq = _padded_extent((H, W), k, osz, stride, padding, dilation)
    if (Hq, Wq) == (H, W):
        return None
    return _zero_bordered((C, Hq, Wq), xa.dtype, (H, W), padding)


# Few input taps per output (K = C*kh*kw: a first layer on one channel, or three on small
# images): one batched GEMM (O, K) x (N, K, OH*OW) writes every image's output in place, where the
# batch-innermost im2col's GEMM result needs a transposing copy into (N, O, OH, OW) (half the
# call's time for the demo CNN's first layer, 64 images of 8x8) and one image at a time pays a
# GEMM call per image for little work each (figures in docs/performance.md)
_BATCHED_MAX_K = 25  # any image size: one channel up to 5x5
_BATCHED_SMALL_MAX_K = 32  # images below _PER_SAMPLE_MIN_POSITIONS: three channels, 3x3
_BATCHED_MAX_COLS = 1 << 21  # elements of the copied taps (8 MiB of float32)


def _batched_small(N: int, positions: int, K: int) -> bool:
    return N > 1 and 0 < K and N * K * positions <= _BATCHED_MAX_COLS and (
        K <= _BATCHED_MAX_K or (K <= _BATCHED_SMALL_MAX_K and positions < _PER_SAMPLE_MIN_POSITIONS))


def _conv_forward_batched(xa: np.ndarray, wm: np.ndarray, o: np.ndarray, k: Sequence[int],
                          stride: Sequence[int], padding: Sequence[int],
                          dilation: Sequence[int]) -> None:
    """``o`` (N, O, OH, OW), contiguous = the convolution of ``xa`` (N, C, H, W) with the
    (O, C*kh*kw) ``wm``: the window taps of every image copied from a zero-bordered copy of the
    batch into (N, C*kh*kw, OH*OW), then one batched GEMM into ``o``."""
    N = xa.shape[0]
    OH, OW = o.shape[2:]
    cols = _batched_taps(xa, k, (OH, OW), stride, padding, dilation)
    np.matmul(wm, cols, out=o.reshape(N, wm.shape[0], OH * OW))


def _conv_grad_weight_batched(xa: np.ndarray, ga: np.ndarray, om: np.ndarray,
                              k: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                              dilation: Sequence[int]) -> None:
    """``om`` (O, C*kh*kw) = the weight gradient summed over the images: every image's taps
    copied at once (as :func:`_conv_forward_batched`), one batched GEMM (N, O, P) x (N, P, K),
    then the sum over the images (in order, as one image at a time accumulates)."""
    N, O = ga.shape[:2]
    OH, OW = ga.shape[2:]
    cols = _batched_taps(xa, k, (OH, OW), stride, padding, dilation)
    gm = np.ascontiguousarray(ga).reshape(N, O, OH * OW)
    np.add.reduce(np.matmul(gm, cols.transpose(0, 2, 1)), axis=0, out=om)


def _batched_taps(xa: np.ndarray, k: Sequence[int], osz: Sequence[int], stride: Sequence[int],
                  padding: Sequence[int], dilation: Sequence[int]) -> np.ndarray:
    """(N, C*kh*kw, OH*OW): the window taps of every image of ``xa`` (N, C, H, W), copied from
    a zero-bordered copy of the batch where it is padded."""
    N, C, H, W = xa.shape
    (kh, kw), (OH, OW), (sh, sw), (ph, pw), (dh, dw) = k, osz, stride, padding, dilation
    Hq, Wq = _padded_extent((H, W), k, osz, stride, padding, dilation)
    if (Hq, Wq) != (H, W):
        xp = _zero_bordered((N * C, Hq, Wq), xa.dtype, (H, W), padding)
        xp[:, ph:ph + H, pw:pw + W] = xa.reshape(N * C, H, W)
        xa = xp.reshape(N, C, Hq, Wq)
    a, b, c, e = xa.strides
    taps = np.lib.stride_tricks.as_strided(xa, (N, C, kh, kw, OH, OW),
                                           (a, b, c * dh, e * dw, c * sh, e * sw))
    cols = scratch((N, C, kh, kw, OH, OW), xa.dtype)
    np.copyto(cols, taps)
    return cols.reshape(N, C * kh * kw, OH * OW)


def _conv_forward_per_sample(xa: np.ndarray, wm: np.ndarray, o: np.ndarray, k: Sequence[int],
                             stride: Sequence[int], padding: Sequence[int],
                             dilation: Sequence[int]) -> None:
    """``o`` (N, O, OH, OW) = the convolution of ``xa`` with the (O, C*kh*kw) ``wm``, one im2col
    and one GEMM per image, written straight into the image's output."""
    N, C = xa.shape[:2]
    OH, OW = o.shape[2:]
    (kh, kw) = k
    pad = _sample_pad(xa, k, (OH, OW), stride, padding, dilation)
    cols = scratch((C, kh, kw, OH, OW), xa.dtype)
    cm = cols.reshape(C * kh * kw, OH * OW)
    direct = o.flags.c_contiguous
    om = o.reshape(N, wm.shape[0], OH * OW) if direct else None
    for n in range(N):
        np.copyto(cols, _sample_taps(xa[n], k, (OH, OW), stride, padding, dilation, pad))
        if om is not None:
            np.matmul(wm, cm, out=om[n])
        else:
            o[n] = np.matmul(wm, cm).reshape(o.shape[1:])


def _conv_grad_weight_per_sample(xa: np.ndarray, ga: np.ndarray, om: np.ndarray,
                                 k: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                                 dilation: Sequence[int]) -> None:
    """``om`` (O, C*kh*kw) = the weight gradient summed over the images, one im2col and one
    GEMM per image; a small gradient accumulates transposed (see conv2d_grad_weight)."""
    N, C = xa.shape[:2]
    O, (OH, OW), (kh, kw) = om.shape[0], ga.shape[2:], k
    pad = _sample_pad(xa, k, (OH, OW), stride, padding, dilation)
    cols = scratch((C, kh, kw, OH, OW), xa.dtype)
    cm = cols.reshape(C * kh * kw, OH * OW)
    gm = ga.reshape(N, O, OH * OW) if ga.flags.c_contiguous else \
        np.ascontiguousarray(ga).reshape(N, O, OH * OW)
    transposed = om.size <= _SMALL_TRANSPOSE
    acc = np.zeros((C * kh * kw, O) if transposed else (O, C * kh * kw), om.dtype)
    part = np.empty_like(acc)
    for n in range(N):
        np.copyto(cols, _sample_taps(xa[n], k, (OH, OW), stride, padding, dilation, pad))
        if transposed:
            np.matmul(cm, gm[n].T, out=part)
        else:
            np.matmul(gm[n], cm.T, out=part)
        acc += part
    np.copyto(om, acc.T if transposed else acc)


# Elements of a weight gradient small enough to compute transposed (conv2d_grad_weight)
_SMALL_TRANSPOSE = 1 << 18

# Bytes of im2col columns per band of a banded convolution: about a core's L2 cache, with at
# least _BAND_MIN_COLS columns so that each GEMM is still wide enough to run at full speed
_BAND_BYTES = 1 << 21
_BAND_MIN_COLS = 1024


def _chunk_rows(K: int, OH: int, row_cols: int, itemsize: int) -> int:
    """Output rows per im2col band (``OH`` or more: no banding)."""
    if K == 0 or row_cols == 0:
        return OH
    by_cache = _BAND_BYTES // (K * row_cols * itemsize)
    by_width = -(-_BAND_MIN_COLS // row_cols)
    return max(1, by_cache, by_width)


def _conv_cols(xa: np.ndarray, k: Sequence[int], osz: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int]) -> np.ndarray:
    """im2col in batch-innermost layout: (C*kh*kw, OH*OW*N); outside the input reads 0."""
    N, C = xa.shape[:2]
    (kh, kw), (OH, OW) = k, osz
    v = _conv_taps(xa, k, osz, stride, padding, dilation)
    cols = scratch((C, kh, kw, OH, OW, N), xa.dtype)
    np.copyto(cols, v)
    return cols.reshape(C * kh * kw, OH * OW * N)


def _conv_taps(xa: np.ndarray, k: Sequence[int], osz: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int]) -> np.ndarray:
    """The (C, kh, kw, OH, OW, N) strided view of every window tap of ``xa`` (N, C, H, W),
    over a batch-innermost, zero-padded copy of it."""
    N, C, H, W = xa.shape
    (kh, kw), (OH, OW), (sh, sw), (ph, pw), (dh, dw) = k, osz, stride, padding, dilation
    Hq, Wq = _padded_extent((H, W), k, osz, stride, padding, dilation)
    xl = _to_last(xa)  # (C, H, W, N)
    if (Hq, Wq) != (H, W):
        xp = _zero_bordered((C, Hq, Wq, N), xa.dtype, (H, W), padding)
        xp[:, ph:ph + H, pw:pw + W] = xl
    else:
        xp = xl
    a, b, c, e = xp.strides
    return np.lib.stride_tricks.as_strided(xp, (C, kh, kw, OH, OW, N),
                                           (a, b * dh, c * dw, b * sh, c * sw, e))
