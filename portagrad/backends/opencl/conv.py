"""OpenCL fast paths for convolution and max pooling (the backend contract's optional methods).

Mixed into :class:`~portagrad.backends.opencl.backend.OpenCLBackend`, whose ``_dev`` and
``_empty_like`` (:mod:`.runtime`), ``copy`` and ``fill`` (:mod:`.primitives`) it uses. The
contract is in :mod:`portagrad.backends.interface` (``conv2d`` ... ``max_pool2d_grad_input``).

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

Each of the three may instead run as one implicit-GEMM kernel that reads its operands in place
(:mod:`.conv_implicit`, no column buffer), and on GPUs as a local-memory-tiled implicit GEMM
(:mod:`.conv_tiled`). Which one runs is measured per device and shape on first use (timed like
the GEMM tiles, :mod:`.gemm_tune`; "tiled" is a candidate on GPUs only; small convolutions take
im2col on CPU devices and implicit GEMM on GPUs without timing);
``PORTAGRAD_OPENCL_CONV=im2col|implicit|tiled`` or the backend's ``_force_conv_kind`` picks one.

Max pooling is one kernel each way. No kernel uses atomics: every output element has one owner.

The kernels (and how they are laid out on CPU devices and GPUs) are in :mod:`.conv_kernels`.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ... import _dtype
from ...errors import DTypeError
from ..interface import View
from .conv_implicit import launch_implicit, wgrad_splits
from .conv_kernels import arg_types, conv_source, pool_source
from .conv_tiled import launch_tiled, tiled_config, tiled_supports, tiled_wgrad_splits
from .errors import cl_errors
from .fusion import flushes
from .gemm import launch_gemm, tuner
from .launch import HALF16_DTYPES, pow2ceil, via_f32

if TYPE_CHECKING:
    from .devices import Device

__all__ = ["CONV_KINDS", "ConvMixin"]

#: convolution paths: "im2col" (columns + the backend's GEMM), "implicit" (:mod:`.conv_implicit`)
#: and "tiled" (:mod:`.conv_tiled`, local-memory tiles for GPUs)
CONV_KINDS = ("im2col", "implicit", "tiled")
_ENV_CONV = os.environ.get("PORTAGRAD_OPENCL_CONV") or None


def _launch_rows(dev: Device, kern: Any, rows: int, width: int, args: Sequence[Any],
                 cost: int = 1) -> None:
    """Enqueue a row kernel of :mod:`.conv_kernels` over ``rows`` rows of ``width`` elements
    (kernels bounds-check); ``cost``: elements per element of a row (a plane kernel's rows are
    planes of width 1)."""
    if rows <= 0 or width <= 0:
        return
    if dev.ew_style == "loop":
        # CPU devices: like the loop-style elementwise kernels, >= 1024 elements per work-item,
        # else enough work-items for 16 per compute unit; whole rows unless a row is longer
        per = max(1024, -(-rows * width * cost // (16 * dev.properties.compute_units))) // cost
        ch = max(1, min(width, per))
        rpw = max(1, per // width)
        nwi = -(-rows // rpw)
        ly = min(8, pow2ceil(nwi))
        gs, ls = (-(-width // ch), -(-nwi // ly) * ly), (1, ly)
    else:  # one element per work-item, neighbouring work-items on neighbouring elements
        ch = rpw = 1
        lx = min(dev.local_size, pow2ceil(width))
        ly = max(1, min(dev.local_size // lx, pow2ceil(rows)))
        gs, ls = (-(-width // lx) * lx, -(-rows // ly) * ly), (lx, ly)
    kern(dev.queue, gs, ls, *args, rows, width, rpw, ch)


def _geom(C: int, H: int, W: int, OH: int, OW: int, k: Sequence[int], s: Sequence[int],
          p: Sequence[int], d: Sequence[int]) -> list[int]:
    return [C, H, W, OH, OW, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]]


def _gdict(N: int, C: int, H: int, W: int, O: int, OH: int, OW: int, kh: int, kw: int,
           s: Sequence[int], p: Sequence[int], d: Sequence[int], G: int) -> dict[str, int]:
    return {"N": N, "C": C, "H": H, "W": W, "O": O, "OH": OH, "OW": OW, "kh": kh, "kw": kw,
            "sh": s[0], "sw": s[1], "ph": p[0], "pw": p[1], "dh": d[0], "dw": d[1], "G": G}


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
    _force_gemm_kind: str | None
    copy: Any
    fill: Any
    #: forces a convolution path (one of :data:`CONV_KINDS`); None: PORTAGRAD_OPENCL_CONV, else measured
    _force_conv_kind: str | None = None
    #: forces the parts the implicit weight gradient's batch is split into (None: by the device)
    _force_wgrad_splits: int | None = None

    # ------------------------------------------------------------- helpers
    def _conv_dev(self, out: View) -> Device:
        """The device of ``out``, after checking the dtype has a GEMM (float32/float64)."""
        dev = self._dev(out)
        dt = out.dtype.name
        if dt not in ("float32", "float64", "float16", "bfloat16"):
            raise DTypeError(f"convolution on the OpenCL backend needs floating tensors, "
                             f"got {out.dtype}")
        dev.require_dtypes([dt])
        return dev

    def _forced_conv(self) -> str | None:
        """The convolution path forced by ``_force_conv_kind`` or ``PORTAGRAD_OPENCL_CONV``
        (``None``: none); an unknown name raises ``ValueError`` naming the valid ones."""
        forced = self._force_conv_kind if self._force_conv_kind is not None else _ENV_CONV
        if forced is not None and forced not in CONV_KINDS:
            where = "" if self._force_conv_kind is not None else " (from PORTAGRAD_OPENCL_CONV)"
            raise ValueError(f"unknown convolution path {forced!r}{where}; expected one of "
                             f"{', '.join(CONV_KINDS)}")
        return forced

    def _contiguous(self, dev: Device, v: View) -> View:
        """``v`` itself when contiguous, else a contiguous copy."""
        if v.is_contiguous():
            return v
        tmp = self._empty_like(dev, v.shape, v.dtype)
        self.copy(v, tmp)
        return tmp

    def _via_temp(self, dev: Device, out: View, run: Any) -> None:
        """``run(tmp)`` on a contiguous temporary shaped like ``out``, then ``tmp`` copied into
        ``out`` (for outputs the kernels cannot write in place, e.g. strided views)."""
        tmp = self._empty_like(dev, out.shape, out.dtype)
        run(tmp)
        self.copy(tmp, out)

    def _im2col(self, dev: Device, x: View, cols: View, cst: tuple[int, int, int],
                geom: list[int]) -> None:
        """Windows of ``x`` into ``cols`` (a contiguous buffer view) with (n, c, tap) strides
        ``cst``; ``geom`` as :func:`_geom`."""
        dt = x.dtype.name
        N, C = x.shape[:2]
        OH, OW = geom[3], geom[4]
        kern = dev.kernel(("conv", dt), "im2col", lambda: conv_source(dt), [dt],
                          lambda: arg_types(5, 4))
        _launch_rows(dev, kern, N * C * OH, OW,
                     [*_args4(x), cols.buffer.mem, cols.offset, *cst, *geom])

    def _col2im(self, dev: Device, cols: View, cst: tuple[int, int, int], out: View,
                geom: list[int]) -> None:
        """Sum the column gradients ``cols`` (strides ``cst`` as in :meth:`_im2col`) into the
        (N, C, H, W) ``out``: per plane on CPU devices, per element elsewhere."""
        dt = out.dtype.name
        assert out.dtype not in HALF16_DTYPES  # summing 16-bit columns would round twice
        N, C, H, W = out.shape
        planes = dev.ew_style == "loop"
        name = "col2im_planes" if planes else "col2im"
        kern = dev.kernel(("conv", dt), name, lambda: conv_source(dt), [dt],
                          lambda: arg_types(4, 5))
        args = [cols.buffer.mem, cols.offset, *cst, *_args4(out), *geom]
        if planes:
            _launch_rows(dev, kern, N * C, 1, args, cost=H * W)
        else:
            _launch_rows(dev, kern, N * C * H, W, args)

    def _gemm(self, dev: Device, a: View, b: View, c: View) -> None:
        launch_gemm(dev, a, b, c, self._force_gemm_kind)

    def _conv_path(self, dev: Device, which: str, gm: dict[str, int], dt: str,
                   paths: dict[str, Callable[[], None]]) -> None:
        """Run the convolution path (a key of ``paths``, see :data:`CONV_KINDS`) that is forced,
        else the one measured fastest for this device and shape (timed on first use)."""
        forced = self._forced_conv()
        if forced == "tiled" and not tiled_supports(which, gm):
            forced = "implicit"  # the tiled kernels' 32-bit indices do not reach this far
        if forced is not None:
            paths[forced]()
            return
        # the tiled kernels are built for GPUs (local memory, barriers); on CPU devices PoCL
        # keeps what lives across a barrier in per-work-item memory, so only when forced there.
        # Untimed (small) shapes keep the first candidate: implicit GEMM on GPUs.
        order: tuple[str, ...] = ("implicit", "im2col")
        if dev.is_gpu:
            order = ("implicit", "tiled", "im2col") if tiled_supports(which, gm) else order
        else:
            order = ("im2col", "implicit")
        cands = [(k, None) for k in order]
        flops = 2 * gm["N"] * gm["O"] * gm["OH"] * gm["OW"] * (gm["C"] // gm["G"]) * gm["kh"] * gm["kw"]
        cls = f"conv_{which}/{dt}/" + ",".join(str(v) for v in gm.values())
        kind, _ = tuner(dev).choose(cls, cands, flops, 0, 0, lambda c: paths[c[0]](),
                                    dev.queue.finish)
        paths[kind]()

    # --------------------------------------------------------- convolution
    @flushes
    def conv2d(self, x: View, w: View, out: View, stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], groups: int) -> None:
        """Cross-correlation of ``x`` (N, C, H, W) with ``w`` (O, C/groups, kh, kw) into ``out``
        (N, O, OH, OW); see the contract in :mod:`portagrad.backends.interface`. 16-bit floats
        take either path on their 16-bit operands (float32 accumulation, each output rounded
        once)."""
        dev = self._conv_dev(out)
        if out.numel == 0:
            return
        if not out.is_contiguous():
            return self._via_temp(
                dev, out, lambda o: self.conv2d(x, w, o, stride, padding, dilation, groups))
        N, C, H, W = x.shape
        O, Cg, kh, kw = w.shape
        OH, OW = out.shape[2:]
        G = groups
        dt = out.dtype
        if Cg * kh * kw == 0:
            self.fill(out, 0)
            return
        geom = _geom(C, H, W, OH, OW, (kh, kw), stride, padding, dilation)
        gm = _gdict(N, C, H, W, O, OH, OW, kh, kw, stride, padding, dilation, G)
        with cl_errors(dev.label, "conv2d"):
            self._conv_path(dev, "fwd", gm, dt.name, {
                "implicit": lambda: launch_implicit(dev, "fwd", x, w, out, gm),
                "tiled": lambda: launch_tiled(dev, "fwd", x, w, out, gm),
                "im2col": lambda: self._conv2d_im2col(dev, x, w, out, geom, G)})

    def _conv2d_im2col(self, dev: Device, x: View, w: View, out: View, geom: list[int],
                       G: int) -> None:
        N, C = x.shape[:2]
        O, Cg, kh, kw = w.shape
        OH, OW = out.shape[2:]
        L, kk = OH * OW, kh * kw
        Og, ck = O // G, Cg * kk
        dt = out.dtype
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
        """Gradient of ``sum(conv2d(x, w) * g)`` w.r.t. ``x``, into ``out`` (N, C, H, W).

        16-bit floats: the implicit-GEMM kernel reads ``g`` and ``w`` as they are and rounds each
        sum once. The im2col path would sum 16-bit column gradients in col2im, rounding twice, so
        it runs on float32 copies of ``g`` and ``w`` (and a float32 result rounded once). Which of
        the two runs is chosen per shape as for float32: on PoCL im2col ran 5x faster for a
        64-channel 32x32 layer, and its column buffer dwarfs the copies."""
        dev = self._conv_dev(out)
        if out.numel == 0:
            return
        if not out.is_contiguous():
            return self._via_temp(dev, out, lambda o: self.conv2d_grad_input(
                g, w, o, stride, padding, dilation, groups))
        N, C, H, W = out.shape
        O, Cg, kh, kw = w.shape
        OH, OW = g.shape[2:]
        G = groups
        dt = out.dtype
        if O // G == 0 or OH * OW == 0:  # no window, or nothing to sum: the gradient is 0
            self.fill(out, 0)
            return
        geom = _geom(C, H, W, OH, OW, (kh, kw), stride, padding, dilation)
        gm = _gdict(N, C, H, W, O, OH, OW, kh, kw, stride, padding, dilation, G)

        def im2col() -> None:
            if dt in HALF16_DTYPES:  # in float32, rounded once
                via_f32(self, lambda g_, w_, o_: self._grad_input_im2col(dev, g_, w_, o_, geom, G),
                        (2,), g, w, out)
            else:
                self._grad_input_im2col(dev, g, w, out, geom, G)

        with cl_errors(dev.label, "conv2d_grad_input"):
            self._conv_path(dev, "dgrad", gm, dt.name, {
                "implicit": lambda: launch_implicit(dev, "dgrad", g, w, out, gm),
                "tiled": lambda: launch_tiled(dev, "dgrad", g, w, out, gm),
                "im2col": im2col})

    def _grad_input_im2col(self, dev: Device, g: View, w: View, out: View, geom: list[int],
                           G: int) -> None:
        N, C = out.shape[:2]
        O, Cg, kh, kw = w.shape
        OH, OW = g.shape[2:]
        L, kk = OH * OW, kh * kw
        Og, ck, NL = O // G, Cg * kk, N * OH * OW
        dt = out.dtype
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
        (O, C/groups, kh, kw). 16-bit floats take either path on their 16-bit operands, as the
        forward."""
        dev = self._conv_dev(out)
        if out.numel == 0:
            return
        if not out.is_contiguous():
            return self._via_temp(dev, out, lambda o: self.conv2d_grad_weight(
                x, g, o, stride, padding, dilation, groups))
        N, C, H, W = x.shape
        O, Cg, kh, kw = out.shape
        OH, OW = g.shape[2:]
        G = groups
        dt = out.dtype
        if N * OH * OW == 0:  # an empty sum
            self.fill(out, 0)
            return
        geom = _geom(C, H, W, OH, OW, (kh, kw), stride, padding, dilation)
        gm = _gdict(N, C, H, W, O, OH, OW, kh, kw, stride, padding, dilation, G)
        with cl_errors(dev.label, "conv2d_grad_weight"):
            self._conv_path(dev, "wgrad", gm, dt.name, {
                "implicit": lambda: self._grad_weight_implicit(dev, x, g, out, gm),
                "tiled": lambda: self._grad_weight_tiled(dev, x, g, out, gm),
                "im2col": lambda: self._grad_weight_im2col(dev, x, g, out, geom, G)})

    def _grad_weight_implicit(self, dev: Device, x: View, g: View, out: View,
                              gm: dict[str, int]) -> None:
        """The implicit weight gradient, its batch split into parts on GPUs (see
        :func:`~.conv_implicit.wgrad_splits`): partial sums in the type computed in (float32
        for 16-bit floats), added in order by a second kernel."""
        acc = _dtype.float64 if out.dtype is _dtype.float64 else _dtype.float32
        S = self._force_wgrad_splits or wgrad_splits(dev, gm, acc.itemsize)
        S = max(1, min(S, gm["N"]))
        partial = None
        if S > 1:
            ck = gm["C"] // gm["G"] * gm["kh"] * gm["kw"]
            partial = self._empty_like(dev, (S, gm["O"], ck), acc)
        launch_implicit(dev, "wgrad", x, g, out, gm, partial)

    def _grad_weight_tiled(self, dev: Device, x: View, g: View, out: View,
                           gm: dict[str, int]) -> None:
        """The tiled weight gradient, its reduction over the batch and positions split into
        parts on GPUs (:func:`~.conv_tiled.tiled_wgrad_splits`; ``_force_wgrad_splits`` forces
        a count): partial sums in the type computed in, added in order by a second kernel."""
        acc = _dtype.float64 if out.dtype is _dtype.float64 else _dtype.float32
        cfg = tiled_config(out.dtype.name)
        S = tiled_wgrad_splits(dev, gm, cfg, acc.itemsize, self._force_wgrad_splits)
        partial = None
        if S > 1:
            ck = gm["C"] // gm["G"] * gm["kh"] * gm["kw"]
            partial = self._empty_like(dev, (S, gm["O"], ck), acc)
        launch_tiled(dev, "wgrad", x, g, out, gm, partial, cfg)

    def _grad_weight_im2col(self, dev: Device, x: View, g: View, out: View, geom: list[int],
                            G: int) -> None:
        N, C = x.shape[:2]
        O, Cg, kh, kw = out.shape
        OH, OW = g.shape[2:]
        L, kk = OH * OW, kh * kw
        Og, ck, NL = O // G, Cg * kk, N * OH * OW
        dt = out.dtype
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
        if x.dtype in HALF16_DTYPES:  # in float32, rounded once
            via_f32(self, self.max_pool2d, (1,), x, out, indices, kernel_size, stride, padding, dilation)
            return
        dev = self._dev(out)
        if out.numel == 0:
            return
        N, C, H, W = x.shape
        OH, OW = out.shape[2:]
        dt = out.dtype.name
        geom = _geom(C, H, W, OH, OW, kernel_size, stride, padding, dilation)
        with cl_errors(dev.label, "max_pool2d"):
            kern = dev.kernel(("maxpool", dt), "max_pool", lambda: pool_source(dt), [dt],
                              lambda: arg_types(5, 5, 5))
            _launch_rows(dev, kern, N * C * OH, OW,
                         [*_args4(x), *_args4(out), *_args4(indices), *geom])

    @flushes
    def max_pool2d_grad_input(self, g: View, indices: View, out: View,
                              kernel_size: Sequence[int], stride: Sequence[int],
                              padding: Sequence[int], dilation: Sequence[int]) -> None:
        """``out`` (N, C, H, W) = ``g`` summed at the positions ``indices`` of each plane."""
        if g.dtype in HALF16_DTYPES:  # in float32, rounded once
            via_f32(self, self.max_pool2d_grad_input, (2,), g, indices, out, kernel_size, stride, padding,
                    dilation)
            return
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
                              lambda: arg_types(5, 5, 5))
            args = [*_args4(g), *_args4(indices), *_args4(out), *geom]
            if planes:
                _launch_rows(dev, kern, N * C, 1, args, cost=H * W)
            else:
                _launch_rows(dev, kern, N * C * H, W, args)
