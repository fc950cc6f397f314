"""Implicit-GEMM convolution kernels: conv2d and its two gradients without a column buffer.

The im2col path (:mod:`.conv`) writes every window of the input as a column, ``kh*kw`` times the
input's size, and the GEMM reads it back. Here each product reads its operand straight from the
tensor it comes from: a work-item owns an ``RM x RN`` block of the result in registers and walks
the reduction as nested loops (no division in the loop), gathering each ``B`` value with its
bounds check (zero padding is a zero, never a load outside the tensor).

Each of the three is a GEMM whose operands are views the index arithmetic builds:

* ``conv2d``: ``out[n, o, l] = sum_{c,u,v} w[o, c, u, v] * x[n, c, ih(l, u), iw(l, v)]``;
  block = ``RM`` output channels x ``RN`` output positions, grid (positions, channels, N*G).
* ``conv2d_grad_input``: ``dx[n, c, h, w] = sum_{o,u,v} w[o, c, u, v] * g[n, o, oh, ow]`` over
  the windows that read ``(h, w)`` (``h + ph - u*dh`` a multiple of the stride, in range); block =
  ``RM`` input channels x ``RN`` input positions, grid (positions, channels, N*G).
* ``conv2d_grad_weight``: ``dw[o, c, u, v] = sum_{n,oh,ow} g[n, o, oh, ow] * x[n, c, ih, iw]``;
  block = ``RM`` output channels x ``RN`` taps ``(c, u, v)``, grid (taps, channels, G * S).
  Its result is small and its reduction long (ResNet-18's first layers: 64 x 576 weights summed
  over 128 * 32 * 32 positions, fewer than ten work-groups of a GEMM tile), so on GPUs the batch
  is split into ``S`` parts (:func:`wgrad_splits`): each writes its partial sums, in the type
  computed in, to a scratch buffer, and ``conv_wgrad_sum`` adds the ``S`` parts in order and
  rounds each weight once (the same sum for every run: no atomics).

Groups are a grid axis, so a block never straddles two. Lanes past the edge compute on clamped
(valid) indices and are not stored. Which of this and im2col is faster depends on the device and
the shape: :class:`~.conv.ConvMixin` times both per shape (see :mod:`.gemm_tune`) unless
``PORTAGRAD_OPENCL_CONV=im2col|implicit`` (or the backend's ``_force_conv_kind``) picks one.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .kernels import CTYPE, HALF16, prelude
from .launch import gpu_parts
from .vectors import vload, vstore

__all__ = ["RM", "RN", "implicit_source", "launch_implicit", "wgrad_splits"]

#: block of a work-item: RM rows (channels) x RN columns (positions or taps)
RM = 8
RN = 8
_I64 = np.int64
_GEOM = ("N", "C", "H", "W", "O", "OH", "OW", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "G")
_GEOM_ARGS = ", ".join(f"long {g}" for g in _GEOM)


def _s4(name: str) -> str:
    return f"__global {{t}}* {name}, long {name}o, long {name}n, long {name}c, long {name}h, long {name}w"


def _acc(t: str) -> str:
    # a row of the block is one RN-vector: the compiler need not find the SIMD itself
    return f"{t}{RN} acc[{RM}];\n    for (int i = 0; i < {RM}; ++i) acc[i] = 0;"


def _fma(t: str) -> str:
    # at most 32-byte vload/vstore calls (see .vectors: PoCL's kernel cache)
    return (f"{t}{RN} bvec = {vload(t, RN, 'bv')};\n"
            f"                for (int i = 0; i < {RM}; ++i) acc[i] += av[i] * bvec;")


def _row(t: str) -> str:
    """Row ``i`` of the block as a private array ``ar`` (for the lane-by-lane stores)."""
    return f"{t} ar[{RN}]; {vstore(t, RN, 'acc[i]', 'ar')}"


def implicit_source(dtype: str) -> str:
    """Kernels ``conv_fwd``, ``conv_dgrad`` (``conv_dgrad_s1`` for unit strides), ``conv_wgrad``
    and ``conv_wgrad_sum`` for ``dtype``.

    Arguments: each tensor as buffer, offset and four (N, C, H, W)-order strides (the weight as
    (O, C/G, kh, kw)), then the geometry :data:`_GEOM` (``G`` the groups).

    A 16-bit float is read as its 16 bits and widened to ``float`` on load, the blocks accumulate
    in ``float`` and each output element is rounded once when stored (no float32 copies of the
    operands, and one rounding per element as PyTorch's)."""
    t = CTYPE[dtype]  # the C type in global memory
    half = HALF16.get(dtype)  # (widen, round) function names of a 16-bit float
    ct = "float" if half else t  # the type computed in

    def ld(ref: str) -> str:
        return f"{half[0]}({ref})" if half else ref

    def st(expr: str) -> str:
        return f"{half[1]}({expr})" if half else expr

    xld = ld("xc[ih * Xh + iw * Xw]")
    X, Wt, O, G = _s4("X"), _s4("Wt"), _s4("Y"), _s4("Gr")
    fwd = f"""
/* out[n, o, l]: rows o of group g, columns l = oh*OW + ow */
__kernel void conv_fwd({X.format(t=f"const {t}")}, {Wt.format(t=f"const {t}")}, {O.format(t=t)},
                       {_GEOM_ARGS})
{{
    long L = OH * OW, Og = O / G, Cg = C / G;
    long l0 = get_global_id(0) * {RN}, ob = get_global_id(1) * {RM}, ng = get_global_id(2);
    long n = ng / G, g = ng % G;
    if (l0 >= L || ob >= Og) return;
    long ih0[{RN}], iw0[{RN}];
    for (int j = 0; j < {RN}; ++j) {{
        long l = min(l0 + j, L - 1), oh = l / OW;
        ih0[j] = oh * sh - ph; iw0[j] = (l - oh * OW) * sw - pw;
    }}
    long orow[{RM}];
    for (int i = 0; i < {RM}; ++i) orow[i] = Wto + (g * Og + min(ob + i, Og - 1)) * Wtn;
    {_acc(ct)}
    for (long c = 0; c < Cg; ++c) {{
        __global const {t}* xc = X + Xo + n * Xn + (g * Cg + c) * Xc;
        for (long u = 0; u < kh; ++u) {{
            for (long v = 0; v < kw; ++v) {{
                {ct} av[{RM}], bv[{RN}];
                long wk = c * Wtc + u * Wth + v * Wtw;
                for (int i = 0; i < {RM}; ++i) av[i] = {ld('Wt[orow[i] + wk]')};
                for (int j = 0; j < {RN}; ++j) {{
                    long ih = ih0[j] + u * dh, iw = iw0[j] + v * dw;
                    bv[j] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? {xld} : ({ct})0;
                }}
                {_fma(ct)}
            }}
        }}
    }}
    for (int i = 0; i < {RM}; ++i) {{
        if (ob + i >= Og) break;
        long yb = Yo + n * Yn + (g * Og + ob + i) * Yc;
        {_row(ct)}
        for (int j = 0; j < {RN}; ++j) {{
            long l = l0 + j;
            if (l < L) Y[yb + (l / OW) * Yh + (l % OW) * Yw] = {st('ar[j]')};
        }}
    }}
}}
"""
    # unit strides (most convolutions) get their own kernel: every tap then reads a position,
    # with no division by the stride in the inner loop (a 64-bit division per tap made the
    # general kernel take 0.57 ms for 256 work-items on an NVIDIA GPU)
    unit = ("long oh = th, ow = tw;\n                    "
            "int ok = th >= 0 && tw >= 0 && oh < OH && ow < OW;")
    general = ("long oh = th / sh, ow = tw / sw;\n                    "
               "int ok = th >= 0 && tw >= 0 && oh * sh == th && ow * sw == tw && oh < OH "
               "&& ow < OW;")
    dgrad = "".join(_dgrad(name, taps, t, ct, ld, st, G, Wt, O)
                    for name, taps in (("conv_dgrad", general), ("conv_dgrad_s1", unit)))
    wgrad = f"""
/* dw[o, q]: rows o of group g, columns q = (c*kh + u)*kw + v; sums over n and the positions.
   With S > 1 parts, part s sums n in [s*NS, (s+1)*NS) into P[s, g*Og + o, q] (unrounded). */
__kernel void conv_wgrad({X.format(t=f"const {t}")}, {G.format(t=f"const {t}")}, {O.format(t=t)},
                         {_GEOM_ARGS}, __global {ct}* P, long S, long NS)
{{
    long Og = O / G, Cg = C / G, kk = kh * kw, CK = Cg * kk;
    long q0 = get_global_id(0) * {RN}, ob = get_global_id(1) * {RM};
    long g = get_global_id(2) / S, s = get_global_id(2) % S;
    if (q0 >= CK || ob >= Og) return;
    long xoff[{RN}], du[{RN}], dv[{RN}];
    for (int j = 0; j < {RN}; ++j) {{
        long q = min(q0 + j, CK - 1), c = q / kk, r = q % kk;
        xoff[j] = (g * Cg + c) * Xc; du[j] = (r / kw) * dh - ph; dv[j] = (r % kw) * dw - pw;
    }}
    long orow[{RM}];
    for (int i = 0; i < {RM}; ++i) orow[i] = (g * Og + min(ob + i, Og - 1)) * Grc;
    {_acc(ct)}
    for (long n = s * NS; n < min(N, (s + 1) * NS); ++n) {{
        __global const {t}* xn = X + Xo + n * Xn;
        __global const {t}* gn = Gr + Gro + n * Grn;
        for (long oh = 0; oh < OH; ++oh) {{
            for (long ow = 0; ow < OW; ++ow) {{
                {ct} av[{RM}], bv[{RN}];
                long gk = oh * Grh + ow * Grw, ih0 = oh * sh, iw0 = ow * sw;
                for (int i = 0; i < {RM}; ++i) av[i] = {ld('gn[orow[i] + gk]')};
                for (int j = 0; j < {RN}; ++j) {{
                    long ih = ih0 + du[j], iw = iw0 + dv[j];
                    int ok = ih >= 0 && ih < H && iw >= 0 && iw < W;
                    bv[j] = ok ? {ld('xn[xoff[j] + ih * Xh + iw * Xw]')} : ({ct})0;
                }}
                {_fma(ct)}
            }}
        }}
    }}
    for (int i = 0; i < {RM}; ++i) {{
        if (ob + i >= Og) break;
        long yb = Yo + (g * Og + ob + i) * Yn, pb = (s * O + g * Og + ob + i) * CK;
        {_row(ct)}
        for (int j = 0; j < {RN}; ++j) {{
            long q = q0 + j;
            if (q >= CK) break;
            if (S > 1) {{
                P[pb + q] = ar[j];
            }} else {{
                long c = q / kk, r = q % kk;
                Y[yb + c * Yc + (r / kw) * Yh + (r % kw) * Yw] = {st('ar[j]')};
            }}
        }}
    }}
}}

/* dw[o, q] = sum over the S parts of P[s, o, q], in order, rounded once */
__kernel void conv_wgrad_sum(__global const {ct}* P, {O.format(t=t)}, long S, long O, long CK,
                             long kh, long kw)
{{
    long q = get_global_id(0), o = get_global_id(1);
    if (q >= CK || o >= O) return;
    {ct} acc = 0;
    for (long s = 0; s < S; ++s) acc += P[(s * O + o) * CK + q];
    long kk = kh * kw, c = q / kk, r = q % kk;
    Y[Yo + o * Yn + c * Yc + (r / kw) * Yh + (r % kw) * Yw] = {st('acc')};
}}
"""
    head = "#pragma OPENCL FP_CONTRACT ON\n"  # a*b+c as one FMA, as in the GEMM kernels
    return prelude([dtype]) + head + fwd + dgrad + wgrad


def _dgrad(name: str, taps: str, t: str, ct: str, ld: Callable[[str], str],
           st: Callable[[str], str], G: str, Wt: str, O: str) -> str:
    """The input-gradient kernel ``name``, ``taps`` the code that finds the output position a
    tap reads (``oh``, ``ow``) and whether it exists (``ok``)."""
    return f"""
/* dx[n, c, p]: rows c of group g, columns p = h*W + w; sums over o of the group and the taps
   whose window reads (h, w) */
__kernel void {name}({G.format(t=f"const {t}")}, {Wt.format(t=f"const {t}")}, {O.format(t=t)},
                         {_GEOM_ARGS})
{{
    long HW = H * W, Og = O / G, Cg = C / G;
    long p0 = get_global_id(0) * {RN}, cb = get_global_id(1) * {RM}, ng = get_global_id(2);
    long n = ng / G, g = ng % G;
    if (p0 >= HW || cb >= Cg) return;
    long hh[{RN}], ww[{RN}];
    for (int j = 0; j < {RN}; ++j) {{
        long p = min(p0 + j, HW - 1);
        hh[j] = p / W + ph; ww[j] = p % W + pw;
    }}
    long crow[{RM}];
    for (int i = 0; i < {RM}; ++i) crow[i] = min(cb + i, Cg - 1) * Wtc;
    {_acc(ct)}
    for (long o = g * Og; o < (g + 1) * Og; ++o) {{
        __global const {t}* go = Gr + Gro + n * Grn + o * Grc;
        for (long u = 0; u < kh; ++u) {{
            for (long v = 0; v < kw; ++v) {{
                {ct} av[{RM}], bv[{RN}];
                long wk = Wto + o * Wtn + u * Wth + v * Wtw;
                for (int i = 0; i < {RM}; ++i) av[i] = {ld('Wt[wk + crow[i]]')};
                for (int j = 0; j < {RN}; ++j) {{
                    long th = hh[j] - u * dh, tw = ww[j] - v * dw;
                    {taps}
                    bv[j] = ok ? {ld('go[oh * Grh + ow * Grw]')} : ({ct})0;
                }}
                {_fma(ct)}
            }}
        }}
    }}
    for (int i = 0; i < {RM}; ++i) {{
        if (cb + i >= Cg) break;
        long yb = Yo + n * Yn + (g * Cg + cb + i) * Yc;
        {_row(ct)}
        for (int j = 0; j < {RN}; ++j) {{
            long p = p0 + j;
            if (p < HW) Y[yb + (p / W) * Yh + (p % W) * Yw] = {st('ar[j]')};
        }}
    }}
}}
"""


_TYPES = ([None] + [_I64] * 5) * 3 + [_I64] * len(_GEOM)
_WGRAD_TYPES = _TYPES + [None, _I64, _I64]
_SUM_TYPES = [None] + [None] + [_I64] * 5 + [_I64] * 5
#: the weight gradient's scratch buffer of partial sums stays under this many bytes
SPLIT_BYTES = 64 << 20


def wgrad_splits(dev: Any, geom: dict[str, int], itemsize: int) -> int:
    """Parts the weight gradient's batch is split into: :func:`~.launch.gpu_parts` for its
    blocks (1 on CPU devices and where the blocks alone fill the GPU), at most one per sample
    and within :data:`SPLIT_BYTES` of partial sums (``itemsize``: the type computed in)."""
    gm = geom
    og, ck = gm["O"] // gm["G"], gm["C"] // gm["G"] * gm["kh"] * gm["kw"]
    want = gpu_parts(dev, -(-ck // RN) * -(-og // RM) * gm["G"])
    if want == 1:
        return 1
    cap = SPLIT_BYTES // max(1, gm["O"] * ck * itemsize)
    return int(max(1, min(want, gm["N"], cap)))


def _args(v: Any) -> list[Any]:
    return [v.buffer.mem, v.offset, *v.strides]


def launch_implicit(dev: Any, which: str, p: Any, q: Any, out: Any, geom: dict[str, int],
                    partial: Any = None) -> None:
    """Enqueue one implicit-GEMM kernel: ``which`` is "fwd" (``p`` = x, ``q`` = w, ``out`` = y),
    "dgrad" (``p`` = g, ``q`` = w, ``out`` = dx) or "wgrad" (``p`` = x, ``q`` = g, ``out`` = dw);
    every view is 4-D and ``geom`` holds the sizes named in :data:`_GEOM`. For "wgrad",
    ``partial`` is a contiguous (S, O, C/G*kh*kw) scratch view in the type computed in (float32
    for 16-bit floats) when the batch is split into S > 1 parts (:func:`wgrad_splits`), else
    None."""
    dt = out.dtype.name

    def src() -> str:
        return implicit_source(dt)
    gm = geom
    og, cg = gm["O"] // gm["G"], gm["C"] // gm["G"]
    if which == "fwd":
        gs = (-(-gm["OH"] * gm["OW"] // RN), -(-og // RM), gm["N"] * gm["G"])
    elif which == "dgrad":
        gs = (-(-gm["H"] * gm["W"] // RN), -(-cg // RM), gm["N"] * gm["G"])
    else:
        ck = cg * gm["kh"] * gm["kw"]
        S = 1 if partial is None else partial.shape[0]
        gs = (-(-ck // RN), -(-og // RM), gm["G"] * S)
        if min(gs) <= 0:
            return
        kern = dev.kernel(("conv_implicit", dt), "conv_wgrad", src, [dt], _WGRAD_TYPES)
        pbuf = out.buffer.mem if partial is None else partial.buffer.mem
        kern(dev.queue, gs, None, *_args(p), *_args(q), *_args(out), *[gm[k] for k in _GEOM],
             pbuf, S, -(-gm["N"] // S))
        if partial is not None:
            ksum = dev.kernel(("conv_implicit", dt), "conv_wgrad_sum", src, [dt], _SUM_TYPES)
            ksum(dev.queue, (ck, gm["O"]), None, partial.buffer.mem, *_args(out), S, gm["O"],
                 ck, gm["kh"], gm["kw"])
        return
    if min(gs) <= 0:
        return
    name = "conv_dgrad_s1" if which == "dgrad" and gm["sh"] == gm["sw"] == 1 else f"conv_{which}"
    kern = dev.kernel(("conv_implicit", dt), name, src, [dt], _TYPES)
    kern(dev.queue, gs, None, *_args(p), *_args(q), *_args(out), *[gm[k] for k in _GEOM])
