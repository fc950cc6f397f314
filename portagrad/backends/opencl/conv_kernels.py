"""OpenCL C sources of the convolution and max-pooling kernels (launched by :mod:`.conv`).

Every kernel takes its operands as buffer, offset and strides, then the geometry arguments
(:data:`GEOM`, in that order) and the launch arguments ``nrows, width, rpw, ch`` (rows, row length,
rows and row elements per work-item) that :func:`.conv._launch_rows` appends.

Kernel layouts, chosen by the device's ``ew_style`` (see :mod:`.devices`):

* CPU devices ("loop"): a work-item takes a range of *rows* (every index but the last one; the
  row index is split with 64-bit divisions once, then stepped) and whole rows, >= 1024 elements
  per work-item, as the backend's loop-style elementwise kernels. The two sums (``col2im``,
  ``max_pool_grad``) go per *plane* (n, c) instead: the work-item zeroes its plane and scatters
  into it in the summation order of the numpy backend (taps in order; windows in order), which
  needs no division at all (the gather form below, with its divisions per element and tap, is
  much slower on PoCL).
* GPUs ("grid", "exact"): one element per work-item on a 2-D range (last index, row); the sums
  gather (each input element finds the windows that read it, in the same order).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .kernels import CTYPE, prelude

__all__ = ["GEOM", "arg_types", "conv_source", "pool_source"]

_I64 = np.int64
#: geometry arguments every kernel here takes, in this order
GEOM = ("C", "H", "W", "OH", "OW", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")
_GEOM_ARGS = "".join(f", long {n}" for n in GEOM)
#: launch arguments :func:`.conv._launch_rows` appends: rows, row length, rows and row elements per
#: work-item
_ROW_ARGS = ", long nrows, long width, long rpw, long ch"


def _rows(inner: str, body: str) -> str:
    """Kernel body running ``body`` for each row (n, c, ``inner``) of the work-item's range of
    rows, on the elements ``[w0, w1)`` of the row. The row index is split (two 64-bit divisions)
    once per work-item, then stepped."""
    return f"""
    long w0 = get_global_id(0) * ch, r0 = get_global_id(1) * rpw;
    if (r0 >= nrows || w0 >= width) return;
    long w1 = min(w0 + ch, width), r1 = min(r0 + rpw, nrows);
    long {inner} = r0 % {inner.upper()}, nc = r0 / {inner.upper()}, c = nc % C, n = nc / C;
    for (long row = r0; row < r1; ++row) {{{body}
        if (++{inner} == {inner.upper()}) {{ {inner} = 0; if (++c == C) {{ c = 0; ++n; }} }}
    }}"""


def _planes(body: str) -> str:
    """Kernel body running ``body`` for each plane (n, c) of the work-item's range of planes
    (launched as rows of width 1)."""
    return f"""
    long p0 = get_global_id(1) * rpw;
    if (p0 >= nrows) return;
    long p1 = min(p0 + rpw, nrows);
    long c = p0 % C, n = p0 / C;
    for (long pl = p0; pl < p1; ++pl) {{{body}
        if (++c == C) {{ c = 0; ++n; }}
    }}"""


# Gather within a row: for the input row ``h`` and the window row ``oh`` (tap ``u``), tap ``v``
# of window ``ow`` reads input column ``w = ow*sw + off`` (``off = v*dw - pw``); the windows whose
# tap ``v`` lands in ``[w0, w1)`` are a range of ``ow``, found with two divisions per (row, tap)
# instead of two per element and tap.
_OW_RANGE = """
                long off = v * dw - pw, lo = w0 - off, hi = w1 - off;
                long owl = lo <= 0 ? 0 : (lo + sw - 1) / sw;
                long owh = hi <= 0 ? 0 : min(OW, (hi + sw - 1) / sw);"""
# the window row ``oh`` whose tap ``u`` reads input row ``h``, if any (``continue`` otherwise)
_OH_OF = """
            long th = h + ph - u * dh;
            if (th < 0) continue;
            long oh = th / sh;
            if (oh * sh != th || oh >= OH) continue;"""


def _strides4(name: str) -> str:
    return f", long {name}o, long {name}sn, long {name}sc, long {name}sh, long {name}sw"


def arg_types(*parts: int) -> list[Any]:
    """Scalar argument dtypes: each part is a buffer followed by that many ``long`` arguments;
    the geometry and launch arguments come last."""
    types: list[Any] = []
    for n in parts:
        types += [None] + [_I64] * n
    return types + [_I64] * (len(GEOM) + 4)


def conv_source(dtype: str) -> str:
    """Kernels ``im2col``, ``col2im`` and ``col2im_planes`` for ``dtype``.

    Columns hold element (n, c, tap, oh, ow) at ``co + n*csn + c*csc + tap*cst + oh*OW + ow``
    (``tap = u*kw + v``): the window positions are contiguous, the other strides are arguments, so
    one kernel writes (or reads) every column layout
    :class:`~portagrad.backends.opencl.conv.ConvMixin` uses."""
    t = CTYPE[dtype]
    cols = "long co, long csn, long csc, long cst"
    im2col = _rows("oh", f"""
        long xb = xo + n * xsn + c * xsc, cb = co + n * csn + c * csc + oh * OW;
        for (long u = 0; u < kh; ++u) {{
            long ih = oh * sh - ph + u * dh;
            int rowin = ih >= 0 && ih < H;
            long xr = xb + ih * xsh;
            for (long v = 0; v < kw; ++v) {{
                long cr = cb + (u * kw + v) * cst, iw0 = v * dw - pw;
                for (long ow = w0; ow < w1; ++ow) {{
                    long iw = ow * sw + iw0;
                    COL[cr + ow] = (rowin && iw >= 0 && iw < W) ? X[xr + iw * xsw] : ({t})0;
                }}
            }}
        }}""")
    col2im = _rows("h", f"""
        long cb = co + n * csn + c * csc, ob = oo + n * osn + c * osc + h * osh;
        for (long w = w0; w < w1; ++w) O[ob + w * osw] = ({t})0;
        for (long u = 0; u < kh; ++u) {{{_OH_OF}
            for (long v = 0; v < kw; ++v) {{{_OW_RANGE}
                long cr = cb + (u * kw + v) * cst + oh * OW;
                for (long ow = owl; ow < owh; ++ow) O[ob + (ow * sw + off) * osw] += COL[cr + ow];
            }}
        }}""")
    col2im_planes = _planes(f"""
        long cb = co + n * csn + c * csc, ob = oo + n * osn + c * osc;
        for (long h = 0; h < H; ++h)
            for (long w = 0; w < W; ++w) O[ob + h * osh + w * osw] = ({t})0;
        for (long u = 0; u < kh; ++u) {{
            for (long v = 0; v < kw; ++v) {{
                long cr = cb + (u * kw + v) * cst, iw0 = v * dw - pw;
                for (long oh = 0; oh < OH; ++oh) {{
                    long ih = oh * sh - ph + u * dh;
                    if (ih < 0 || ih >= H) continue;
                    long orow = ob + ih * osh, crow = cr + oh * OW;
                    for (long ow = 0; ow < OW; ++ow) {{
                        long iw = ow * sw + iw0;
                        if (iw >= 0 && iw < W) O[orow + iw * osw] += COL[crow + ow];
                    }}
                }}
            }}
        }}""")
    return prelude([dtype]) + f"""
/* rows (n, c, oh): every tap of the windows [w0, w1) of the row */
__kernel void im2col(__global const {t}* X{_strides4("x")},
                     __global {t}* COL, {cols}{_GEOM_ARGS}{_ROW_ARGS})
{{{im2col}
}}

/* rows (n, c, h): each input element sums the column entries of the windows that read it, taps
   in increasing order (the numpy backend's order) */
__kernel void col2im(__global const {t}* COL, {cols},
                     __global {t}* O{_strides4("o")}{_GEOM_ARGS}{_ROW_ARGS})
{{{col2im}
}}

/* col2im for CPU devices, per plane (n, c): zero it, then add each column entry where its
   window reads (a scatter inside the work-item's own plane: no divisions, same order) */
__kernel void col2im_planes(__global const {t}* COL, {cols},
                            __global {t}* O{_strides4("o")}{_GEOM_ARGS}{_ROW_ARGS})
{{{col2im_planes}
}}
"""


def pool_source(dtype: str) -> str:
    """Kernels ``max_pool``, ``max_pool_grad`` and ``max_pool_grad_planes`` for ``dtype``
    (PyTorch's rules, see
    :meth:`~portagrad.backends.opencl.conv.ConvMixin.max_pool2d`)."""
    t = CTYPE[dtype]
    # NOTE: selects, and NaN found as ``val != val``: PoCL's isnan() (and any NaN test inside the
    # branch) made this kernel much slower. The last NaN is remembered apart and wins at the end.
    fwd = _rows("oh", f"""
        long xb = xo + n * xsn + c * xsc;
        long ob = oo + n * osn + c * osc + oh * osh, ib = io + n * isn + c * isc + oh * ish;
        for (long ow = w0; ow < w1; ++ow) {{
            {t} best = ({t})(-INFINITY);
            long bi = -1, bnan = -1, xnan = 0;
            for (long u = 0; u < kh; ++u) {{
                long ih = oh * sh - ph + u * dh;
                if (ih < 0 || ih >= H) continue;
                for (long v = 0; v < kw; ++v) {{
                    long iw = ow * sw - pw + v * dw;
                    if (iw < 0 || iw >= W) continue;
                    long xi = xb + ih * xsh + iw * xsw, pos = ih * W + iw;
                    {t} val = X[xi];
                    bi = bi < 0 ? pos : bi;  /* a window of only -inf: its first position */
                    int m = val > best;      /* strict: the first maximum wins */
                    best = m ? val : best;
                    bi = m ? pos : bi;
                    int nan = val != val;
                    bnan = nan ? pos : bnan;
                    xnan = nan ? xi : xnan;
                }}
            }}
            if (bnan >= 0) {{ best = X[xnan]; bi = bnan; }}  /* NaN propagates, the last one wins */
            O[ob + ow * osw] = best;
            I[ib + ow * isw] = bi;
        }}""")
    # windows in decreasing taps = increasing (oh, ow): the order in which the numpy backend sums
    bwd = _rows("h", f"""
        long gb = go + n * gsn + c * gsc, ib = io + n * isn + c * isc;
        long ob = oo + n * osn + c * osc + h * osh, pos0 = h * W;
        for (long w = w0; w < w1; ++w) O[ob + w * osw] = ({t})0;
        for (long u = kh - 1; u >= 0; --u) {{{_OH_OF}
            for (long v = kw - 1; v >= 0; --v) {{{_OW_RANGE}
                for (long ow = owl; ow < owh; ++ow) {{
                    long w = ow * sw + off;
                    if (I[ib + oh * ish + ow * isw] == pos0 + w)
                        O[ob + w * osw] += G[gb + oh * gsh + ow * gsw];
                }}
            }}
        }}""")
    bwd_planes = _planes(f"""
        long gb = go + n * gsn + c * gsc, ib = io + n * isn + c * isc, ob = oo + n * osn + c * osc;
        ulong hw = H * W;
        for (long e = 0; e < H * W; ++e) O[ob + e] = ({t})0;
        for (long oh = 0; oh < OH; ++oh)
            for (long ow = 0; ow < OW; ++ow) {{
                long pos = I[ib + oh * ish + ow * isw];
                if ((ulong)pos < hw) O[ob + pos] += G[gb + oh * gsh + ow * gsw];
            }}""")
    return prelude([dtype]) + f"""
/* rows (n, c, oh) */
__kernel void max_pool(__global const {t}* X{_strides4("x")},
                       __global {t}* O{_strides4("o")},
                       __global long* I{_strides4("i")}{_GEOM_ARGS}{_ROW_ARGS})
{{{fwd}
}}

/* rows (n, c, h): each input element sums g over the windows whose index points at it */
__kernel void max_pool_grad(__global const {t}* G{_strides4("g")},
                            __global const long* I{_strides4("i")},
                            __global {t}* O{_strides4("o")}{_GEOM_ARGS}{_ROW_ARGS})
{{{bwd}
}}

/* max_pool_grad for CPU devices, per plane (n, c) of a contiguous O: zero it, then add g at
   each window's index, windows in increasing order (no divisions); an index outside the plane
   (never written by max_pool) is skipped rather than written out of bounds */
__kernel void max_pool_grad_planes(__global const {t}* G{_strides4("g")},
                                   __global const long* I{_strides4("i")},
                                   __global {t}* O{_strides4("o")}{_GEOM_ARGS}{_ROW_ARGS})
{{{bwd_planes}
}}
"""
