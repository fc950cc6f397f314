"""OpenCL fast paths for convolution and max pooling (the backend contract's optional methods).

Mixed into :class:`~portagrad.backends.opencl.backend.OpenCLBackend`, whose ``_dev``,
``_empty_like``, ``copy`` and ``fill`` it uses. The contract is in
:mod:`portagrad.backends.interface` (``conv2d`` ... ``max_pool2d_grad_input``).

Convolution is im2col + the backend's batched GEMM (:func:`.gemm.launch_gemm`, which takes strided
operands, so transposed weights need no copy):

* ``conv2d``: an ``im2col`` kernel writes the windows as columns, then one GEMM. With
  ``groups == 1`` the columns are (N, C*kh*kw, L) (``L = OH*OW``) and the GEMM is batched over N
  with the weight broadcast (batch stride 0), writing straight into ``out``. With groups the
  columns are (G, C/G*kh*kw, N*L), the GEMM is batched over the groups into a (G, O/G, N*L)
  temporary and one strided copy puts it in (N, O, OH, OW) order (a batched GEMM has one batch
  stride per operand, and (n, group) pairs have no common one on the weight's side).
* ``conv2d_grad_input``: the GEMM ``w^T @ g`` gives the column gradients (batched like the
  forward), then ``col2im`` sums them into the input positions they came from.
* ``conv2d_grad_weight``: ``out^T`` (G, C/G*kh*kw, O/G) = columns (G, C/G*kh*kw, N*L) @ ``g``
  copied to (N*L, O) order, so the batch and the positions are the GEMM's reduction dimension.

Max pooling is one kernel each way. No kernel uses atomics: every output element has one owner.

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

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...errors import DTypeError
from ..interface import View
from .errors import cl_errors
from .fusion import flushes
from .gemm import launch_gemm
from .kernels import CTYPE, prelude

if TYPE_CHECKING:
    from .devices import Device

__all__ = ["ConvMixin", "conv_source", "pool_source"]

_I64 = np.int64
#: geometry arguments every kernel here takes, in this order
_GEOM = ("C", "H", "W", "OH", "OW", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")
_GEOM_ARGS = "".join(f", long {n}" for n in _GEOM)
#: launch arguments :func:`_launch_rows` appends: rows, row length, rows and row elements per
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


def _arg_types(*parts: int) -> list[Any]:
    """Scalar argument dtypes: each part is a buffer followed by that many ``long`` arguments;
    the geometry and launch arguments come last."""
    types: list[Any] = []
    for n in parts:
        types += [None] + [_I64] * n
    return types + [_I64] * (len(_GEOM) + 4)


def conv_source(dtype: str) -> str:
    """Kernels ``im2col``, ``col2im`` and ``col2im_planes`` for ``dtype``.

    Columns hold element (n, c, tap, oh, ow) at ``co + n*csn + c*csc + tap*cst + oh*OW + ow``
    (``tap = u*kw + v``): the window positions are contiguous, the other strides are arguments, so
    one kernel writes (or reads) every column layout :class:`ConvMixin` uses."""
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
    (PyTorch's rules, see :meth:`ConvMixin.max_pool2d`)."""
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


def _pow2ceil(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _launch_rows(dev: "Device", kern: Any, rows: int, width: int, args: Sequence[Any],
                 cost: int = 1) -> None:
    """Enqueue a row kernel over ``rows`` rows of ``width`` elements (kernels bounds-check);
    ``cost``: elements per element of a row (a plane kernel's rows are planes of width 1)."""
    if rows <= 0 or width <= 0:
        return
    if dev.ew_style == "loop":
        # CPU devices: like the loop-style elementwise kernels, >= 1024 elements per work-item,
        # else enough work-items for 16 per compute unit; whole rows unless a row is longer
        per = max(1024, -(-rows * width * cost // (16 * dev.properties.compute_units))) // cost
        ch = max(1, min(width, per))
        rpw = max(1, per // width)
        nwi = -(-rows // rpw)
        ly = min(8, _pow2ceil(nwi))
        gs, ls = (-(-width // ch), -(-nwi // ly) * ly), (1, ly)
    else:  # one element per work-item, neighbouring work-items on neighbouring elements
        ch = rpw = 1
        lx = min(dev.local_size, _pow2ceil(width))
        ly = max(1, min(dev.local_size // lx, _pow2ceil(rows)))
        gs, ls = (-(-width // lx) * lx, -(-rows // ly) * ly), (lx, ly)
    kern(dev.queue, gs, ls, *args, rows, width, rpw, ch)


def _geom(C: int, H: int, W: int, OH: int, OW: int, k: Sequence[int], s: Sequence[int],
          p: Sequence[int], d: Sequence[int]) -> list[int]:
    return [C, H, W, OH, OW, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]]


def _args4(v: View) -> list[Any]:
    """Buffer, offset and the four strides of an (N, C, H, W) view."""
    return [v.buffer.mem, v.offset, *v.strides]


class ConvMixin:
    """conv2d / conv2d_grad_input / conv2d_grad_weight / max_pool2d / max_pool2d_grad_input.

    Each method enqueues its kernels and returns (nothing waits). Temporaries come from the
    device's caching allocator; they may go back to the cache as soon as the method returns,
    since every later user is queued after these kernels on the in-order queue."""

    # provided by OpenCLBackend
    _fz: Any
    _dev: Any
    _empty_like: Any
    _force_gemm_kind: "str | None"
    copy: Any
    fill: Any

    # ------------------------------------------------------------- helpers
    def _conv_dev(self, out: View) -> "Device":
        """The device of ``out``, after checking the dtype has a GEMM (float32/float64)."""
        dev = self._dev(out)
        dt = out.dtype.name
        if dt not in ("float32", "float64"):
            raise DTypeError(f"convolution on the OpenCL backend needs float32 or float64 tensors, "
                             f"got {out.dtype}")
        dev.require_dtypes([dt])
        return dev

    def _contiguous(self, dev: "Device", v: View) -> View:
        """``v`` itself when contiguous, else a contiguous copy."""
        if v.is_contiguous():
            return v
        tmp = self._empty_like(dev, v.shape, v.dtype)
        self.copy(v, tmp)
        return tmp

    def _via_temp(self, dev: "Device", out: View, run: Any) -> None:
        """``run(tmp)`` on a contiguous temporary shaped like ``out``, then ``tmp`` copied into
        ``out`` (for outputs the kernels cannot write in place, e.g. strided views)."""
        tmp = self._empty_like(dev, out.shape, out.dtype)
        run(tmp)
        self.copy(tmp, out)

    def _im2col(self, dev: "Device", x: View, cols: View, cst: tuple[int, int, int],
                geom: list[int]) -> None:
        """Windows of ``x`` into ``cols`` (a contiguous buffer view) with (n, c, tap) strides
        ``cst``; ``geom`` as :func:`_geom`."""
        dt = x.dtype.name
        N, C = x.shape[:2]
        OH, OW = geom[3], geom[4]
        kern = dev.kernel(("conv", dt), "im2col", lambda: conv_source(dt), [dt],
                          lambda: _arg_types(5, 4))
        _launch_rows(dev, kern, N * C * OH, OW,
                     [*_args4(x), cols.buffer.mem, cols.offset, *cst, *geom])

    def _col2im(self, dev: "Device", cols: View, cst: tuple[int, int, int], out: View,
                geom: list[int]) -> None:
        """Sum the column gradients ``cols`` (strides ``cst`` as in :meth:`_im2col`) into the
        (N, C, H, W) ``out``: per plane on CPU devices, per element elsewhere."""
        dt = out.dtype.name
        N, C, H, W = out.shape
        planes = dev.ew_style == "loop"
        name = "col2im_planes" if planes else "col2im"
        kern = dev.kernel(("conv", dt), name, lambda: conv_source(dt), [dt],
                          lambda: _arg_types(4, 5))
        args = [cols.buffer.mem, cols.offset, *cst, *_args4(out), *geom]
        if planes:
            _launch_rows(dev, kern, N * C, 1, args, cost=H * W)
        else:
            _launch_rows(dev, kern, N * C * H, W, args)

    def _gemm(self, dev: "Device", a: View, b: View, c: View) -> None:
        launch_gemm(dev, a, b, c, self._force_gemm_kind)

    # --------------------------------------------------------- convolution
    @flushes
    def conv2d(self, x: View, w: View, out: View, stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], groups: int) -> None:
        """Cross-correlation of ``x`` (N, C, H, W) with ``w`` (O, C/groups, kh, kw) into ``out``
        (N, O, OH, OW); see the contract in :mod:`portagrad.backends.interface`."""
        dev = self._conv_dev(out)
        if out.numel == 0:
            return
        if not out.is_contiguous():
            return self._via_temp(
                dev, out, lambda o: self.conv2d(x, w, o, stride, padding, dilation, groups))
        N, C, H, W = x.shape
        O, Cg, kh, kw = w.shape
        OH, OW = out.shape[2:]
        G, L, kk = groups, OH * OW, kh * kw
        Og, ck = O // G, Cg * kk
        dt = out.dtype
        if ck == 0:
            self.fill(out, 0)
            return
        geom = _geom(C, H, W, OH, OW, (kh, kw), stride, padding, dilation)
        with cl_errors(dev.label, "conv2d"):
            wc = self._contiguous(dev, w)
            cols = self._empty_like(dev, (N * C * kk * L,), dt)
            if G == 1:  # (N, ck, L) columns; batched over n, the weight broadcast
                self._im2col(dev, x, cols, (ck * L, kk * L, L), geom)
                a = View(wc.buffer, wc.offset, (N, O, ck), (0, ck, 1), dt)
                b = View(cols.buffer, 0, (N, ck, L), (ck * L, L, 1), dt)
                self._gemm(dev, a, b, View(out.buffer, out.offset, (N, O, L), (O * L, L, 1), dt))
                return
            # (G, ck, N*L) columns; batched over the groups
            NL = N * L
            self._im2col(dev, x, cols, (L, kk * NL, NL), geom)
            a = View(wc.buffer, wc.offset, (G, Og, ck), (Og * ck, ck, 1), dt)
            b = View(cols.buffer, 0, (G, ck, NL), (ck * NL, NL, 1), dt)
            if N == 1:  # (G, Og, L) is out's own layout
                self._gemm(dev, a, b, View(out.buffer, out.offset, (G, Og, L), (Og * L, L, 1), dt))
                return
            tmp = self._empty_like(dev, (G * Og * NL,), dt)
            self._gemm(dev, a, b, View(tmp.buffer, 0, (G, Og, NL), (Og * NL, NL, 1), dt))
            # tmp[(g, o), n, l] -> out[n, (g, o), l]
            self.copy(View(tmp.buffer, 0, (N, O, OH, OW), (L, NL, OW, 1), dt), out)

    @flushes
    def conv2d_grad_input(self, g: View, w: View, out: View, stride: Sequence[int],
                          padding: Sequence[int], dilation: Sequence[int], groups: int) -> None:
        """Gradient of ``sum(conv2d(x, w) * g)`` w.r.t. ``x``, into ``out`` (N, C, H, W)."""
        dev = self._conv_dev(out)
        if out.numel == 0:
            return
        if not out.is_contiguous():
            return self._via_temp(dev, out, lambda o: self.conv2d_grad_input(
                g, w, o, stride, padding, dilation, groups))
        N, C, H, W = out.shape
        O, Cg, kh, kw = w.shape
        OH, OW = g.shape[2:]
        G, L, kk = groups, OH * OW, kh * kw
        Og, ck, NL = O // G, Cg * kk, N * OH * OW
        dt = out.dtype
        if Og == 0 or L == 0:  # no window, or nothing to sum: the gradient is 0
            self.fill(out, 0)
            return
        geom = _geom(C, H, W, OH, OW, (kh, kw), stride, padding, dilation)
        with cl_errors(dev.label, "conv2d_grad_input"):
            wc = self._contiguous(dev, w)
            gc = self._contiguous(dev, g)
            cols = self._empty_like(dev, (N * C * kk * L,), dt)
            if G == 1:  # (N, ck, L) = w^T @ g[n], batched over n
                a = View(wc.buffer, wc.offset, (N, ck, O), (0, 1, ck), dt)
                b = View(gc.buffer, gc.offset, (N, O, L), (O * L, L, 1), dt)
                self._gemm(dev, a, b, View(cols.buffer, 0, (N, ck, L), (ck * L, L, 1), dt))
                cst = (ck * L, kk * L, L)
            else:  # (G, ck, N*L) = w_g^T @ g_g, with g in (O, N, L) order
                if N == 1:
                    gp = gc
                else:
                    gp = self._empty_like(dev, (O, N, OH, OW), dt)
                    self.copy(View(gc.buffer, gc.offset, (O, N, OH, OW), (L, O * L, OW, 1), dt), gp)
                a = View(wc.buffer, wc.offset, (G, ck, Og), (Og * ck, 1, ck), dt)
                b = View(gp.buffer, gp.offset, (G, Og, NL), (Og * NL, NL, 1), dt)
                self._gemm(dev, a, b, View(cols.buffer, 0, (G, ck, NL), (ck * NL, NL, 1), dt))
                cst = (L, kk * NL, NL)
            self._col2im(dev, cols, cst, out, geom)

    @flushes
    def conv2d_grad_weight(self, x: View, g: View, out: View, stride: Sequence[int],
                           padding: Sequence[int], dilation: Sequence[int], groups: int) -> None:
        """Gradient of ``sum(conv2d(x, w) * g)`` w.r.t. ``w``, into ``out``
        (O, C/groups, kh, kw)."""
        dev = self._conv_dev(out)
        if out.numel == 0:
            return
        if not out.is_contiguous():
            return self._via_temp(dev, out, lambda o: self.conv2d_grad_weight(
                x, g, o, stride, padding, dilation, groups))
        N, C, H, W = x.shape
        O, Cg, kh, kw = out.shape
        OH, OW = g.shape[2:]
        G, L, kk = groups, OH * OW, kh * kw
        Og, ck, NL = O // G, Cg * kk, N * OH * OW
        dt = out.dtype
        if NL == 0:  # an empty sum
            self.fill(out, 0)
            return
        geom = _geom(C, H, W, OH, OW, (kh, kw), stride, padding, dilation)
        with cl_errors(dev.label, "conv2d_grad_weight"):
            cols = self._empty_like(dev, (N * C * kk * L,), dt)
            self._im2col(dev, x, cols, (L, kk * NL, NL), geom)  # (G, ck, N*L)
            # g in (N, OH, OW, O) order: (N*L, Og) per group with unit column stride, the layout
            # the CPU GEMM loads as vectors
            gt = View(g.buffer, g.offset, (N, OH, OW, O), (g.strides[0], g.strides[2],
                                                           g.strides[3], g.strides[1]), dt)
            gt = self._contiguous(dev, gt)
            a = View(cols.buffer, 0, (G, ck, NL), (ck * NL, NL, 1), dt)
            b = View(gt.buffer, gt.offset, (G, NL, Og), (Og, O, 1), dt)
            # out^T, (G, ck, Og), as a view of the contiguous (G, Og, ck) out
            self._gemm(dev, a, b, View(out.buffer, out.offset, (G, ck, Og), (Og * ck, 1, ck), dt))

    # --------------------------------------------------------- max pooling
    @flushes
    def max_pool2d(self, x: View, out: View, indices: View, kernel_size: Sequence[int],
                   stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int]) -> None:
        """Window maxima of ``x`` (N, C, H, W) into ``out`` and their int64 flat positions
        ``h * W + w`` into ``indices`` (PyTorch's rules for ties, NaN and ``-inf``)."""
        dev = self._dev(out)
        if out.numel == 0:
            return
        N, C, H, W = x.shape
        OH, OW = out.shape[2:]
        dt = out.dtype.name
        geom = _geom(C, H, W, OH, OW, kernel_size, stride, padding, dilation)
        with cl_errors(dev.label, "max_pool2d"):
            kern = dev.kernel(("maxpool", dt), "max_pool", lambda: pool_source(dt), [dt],
                              lambda: _arg_types(5, 5, 5))
            _launch_rows(dev, kern, N * C * OH, OW,
                         [*_args4(x), *_args4(out), *_args4(indices), *geom])

    @flushes
    def max_pool2d_grad_input(self, g: View, indices: View, out: View,
                              kernel_size: Sequence[int], stride: Sequence[int],
                              padding: Sequence[int], dilation: Sequence[int]) -> None:
        """``out`` (N, C, H, W) = ``g`` summed at the positions ``indices`` of each plane."""
        dev = self._dev(out)
        if out.numel == 0:
            return
        planes = dev.ew_style == "loop"
        if planes and not out.is_contiguous():  # the plane kernel writes at offset + index
            return self._via_temp(dev, out, lambda o: self.max_pool2d_grad_input(
                g, indices, o, kernel_size, stride, padding, dilation))
        N, C, H, W = out.shape
        OH, OW = g.shape[2:]
        dt = out.dtype.name
        geom = _geom(C, H, W, OH, OW, kernel_size, stride, padding, dilation)
        name = "max_pool_grad_planes" if planes else "max_pool_grad"
        with cl_errors(dev.label, "max_pool2d_grad_input"):
            kern = dev.kernel(("maxpool", dt), name, lambda: pool_source(dt), [dt],
                              lambda: _arg_types(5, 5, 5))
            args = [*_args4(g), *_args4(indices), *_args4(out), *geom]
            if planes:
                _launch_rows(dev, kern, N * C, 1, args, cost=H * W)
            else:
                _launch_rows(dev, kern, N * C * H, W, args)
