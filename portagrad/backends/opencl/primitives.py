"""The OpenCL backend's primitives: elementwise, reductions, scans, GEMM, index ops, sort, random.

:class:`PrimitivesMixin` is the part of
:class:`~portagrad.backends.opencl.backend.OpenCLBackend` that computes: each primitive of the
backend contract (:mod:`portagrad.backends.interface`) picks a kernel from :mod:`.kernels` (or
:mod:`.gemm`), built once per signature through the device's kernel cache, and enqueues it;
nothing waits. Elementwise primitives go through cached launch plans (:mod:`.launch`), and
``unary``/``binary`` first offer the op to the fuser (:mod:`.fusion`); every other primitive is
marked :func:`~.fusion.flushes`.

Integer ``floordiv``/``remainder`` by zero: a scalar divisor of 0 raises :class:`ZeroDivisionError`
(checked on the host, like the numpy backend); for a tensor divisor the result is unspecified
(0), as on CUDA, because checking would need a device reduction and a synchronisation per op.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _dtype
from ...errors import DTypeError
from ..interface import (ARG_REDUCE_OPS, BINARY_OPS, COMPARISON_OPS, RANDOM_KINDS, REDUCE_OPS,
                         UNARY_OPS, View, unknown_op)
from ..philox import slots as philox_slots
from ..ufuncs import BINARY_UFUNCS, f16_scalar_is_float32, fit_scalar
from .kernels import (
    BINARY_VALID, KIND, UNARY_VALID, argreduce_source, binary_expr, cast_expr, cast_targets,
    cumsum_source, fill_source, gather_source, out_is_bool, random_source, reduce_source,
    scatter_source, sort_source, unary_expr, unary_out,
)
from .errors import cl_errors
from .fusion import flushes
from .gemm import launch_gemm
from .gemm_complex import launch_complex_gemm
from .reduce_columns import launch_colsum, takes_colsum
from .launch import (
    NP_SCALAR,
    Plan,
    build_plan,
    coalesce,
    HALF16_DTYPES,
    half_bits,
    contig,
    numel,
    remember,
    scalar_arg,
    scalar_conv,
)

if TYPE_CHECKING:
    from .devices import Device
    from .fusion import Fuser

__all__ = ["PrimitivesMixin"]

_I64 = np.int64
_F32 = _dtype.float32
#: the dtype whose C expressions a dtype's elementwise kernels compute in (16-bit floats: float)
_COMPUTE = {"bfloat16": "float32", "float16": "float32"}


def _no_complex(what: str, v: View) -> None:
    """Raise for a complex view reaching an ordering primitive (the core raises first; this keeps
    a complex pair from ever being compared as a vector)."""
    if KIND[v.dtype.name] == "c":
        raise DTypeError(f"{what} is not supported for {v.dtype.name} on the OpenCL backend")


def _line_arg_types(kr: int) -> list[Any]:
    """Scalar argument dtypes of the line kernels (``argreduce``, ``cumsum``): out and x (buffer,
    offset, ``kr`` kept strides and the line stride), then the kept sizes and the line length."""
    return [None, _I64] + [_I64] * (kr + 1) + [None, _I64] + [_I64] * (kr + 1) + [_I64] * (kr + 1)


class PrimitivesMixin:
    """The OpenCL backend's primitives (the contract's required methods that compute).

    Mixed into :class:`~portagrad.backends.opencl.backend.OpenCLBackend`, which creates the state
    below."""

    # set by OpenCLBackend.__init__
    #: launch plans of elementwise signatures, per primitive (see :mod:`.launch`)
    _uplans: dict[tuple, Plan]
    _bplans: dict[tuple, Plan]
    _wplans: dict[tuple, Plan]
    _cplans: dict[tuple, Plan]
    #: a GEMM family (see :data:`.gemm.GEMM_KINDS`) forced on every device: tests run "gpu3" on PoCL
    _force_gemm_kind: str | None
    _fz: Fuser | None
    # provided by RuntimeMixin
    _dev: Any
    _check_dtype: Any
    _empty_like: Any

    # ------------------------------------------------------------ elementwise
    def unary(self, op: str, x: View, out: View) -> None:
        fz = self._fz
        if fz is not None and fz.add(op, x, None, out, True):
            return
        self._unary_eager(op, x, out)

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        fz = self._fz
        if fz is not None and fz.add(op, a, b, out, False):
            return
        self._binary_eager(op, a, b, out)

    def _unary_eager(self, op: str, x: View, out: View) -> None:
        key = (op, x.dtype, out.dtype, out.buffer.device, out.shape, out.strides, x.strides)
        p = self._uplans.get(key)
        if p is None:
            dt, odt = x.dtype.name, out.dtype.name
            et = _COMPUTE.get(dt, dt)
            kind = KIND[et]
            if op not in UNARY_VALID[kind]:
                if op not in UNARY_OPS:
                    raise unknown_op("unary", op, "opencl")
                raise DTypeError(f"{op} is not supported for {dt} on the OpenCL backend")

            def bundle() -> dict[str, str]:
                return {"pg_" + o: unary_expr(o, et) for o in sorted(UNARY_VALID[kind])
                        if unary_out(o, dt) == odt}

            p = build_plan(self._dev(out), ("unary", dt, odt), "pg_" + op, bundle, [(dt, False)],
                           [x], out)
            remember(self._uplans, key, p)
        if p.kern is None:
            return
        # plans are shared by all threads: each launch holds the device's launch lock (see
        # launch.Plan; acquire/release in try/finally: cheaper than ``with`` on the hot paths)
        lock = p.lock
        lock.acquire()
        try:
            p.kern(p.queue, p.gs, p.ls, out.buffer.mem, out.offset, x.buffer.mem, x.offset, *p.const)
            if p.tail is not None:
                p.kern(p.queue, p.tail, (1,), out.buffer.mem, out.offset, x.buffer.mem, x.offset,
                       global_offset=p.toff)
        finally:
            lock.release()

    def _binary_eager(self, op: str, a: Any, b: Any, out: View) -> None:
        av, bv = a.__class__ is View, b.__class__ is View
        if av and bv:  # the common case first: two views
            key = (op, a.dtype, out.dtype, out.buffer.device, out.shape, out.strides, a.strides,
                   b.strides)
            p = self._bplans.get(key)
            if p is not None:
                if p.kern is None:
                    return
                lock = p.lock
                lock.acquire()
                try:
                    p.kern(p.queue, p.gs, p.ls, out.buffer.mem, out.offset, a.buffer.mem, a.offset,
                           b.buffer.mem, b.offset, *p.const)
                    if p.tail is not None:
                        p.kern(p.queue, p.tail, (1,), out.buffer.mem, out.offset, a.buffer.mem,
                               a.offset, b.buffer.mem, b.offset, global_offset=p.toff)
                finally:
                    lock.release()
                return
        elif av and not isinstance(b, View):  # view (op) scalar: y * 2.0
            key = (op, a.dtype, out.dtype, out.buffer.device, out.shape, out.strides, a.strides, None)
            p = self._bplans.get(key)
            if p is not None:
                if p.kern is None:
                    return
                s = p.conv(b)
                lock = p.lock
                lock.acquire()
                try:
                    p.kern(p.queue, p.gs, p.ls, out.buffer.mem, out.offset, a.buffer.mem, a.offset,
                           s, *p.const)
                    if p.tail is not None:
                        p.kern(p.queue, p.tail, (1,), out.buffer.mem, out.offset, a.buffer.mem,
                               a.offset, s, global_offset=p.toff)
                finally:
                    lock.release()
                return
        self._binary_slow(op, a, b, out)

    def _binary_slow(self, op: str, a: Any, b: Any, out: View) -> None:
        a_view, b_view = isinstance(a, View), isinstance(b, View)
        odt = out.dtype.name
        if a_view:
            dt = a.dtype.name
        elif b_view:
            dt = b.dtype.name
        else:  # two scalars: compute on the host, fill on the device
            if op not in BINARY_UFUNCS:
                raise unknown_op("binary", op, "opencl")
            with np.errstate(all="ignore"):
                if out_is_bool(op):  # compare the scalars themselves, not their truth values
                    val = BINARY_UFUNCS[op](np.asarray(a), np.asarray(b))
                else:
                    np_dt = out.dtype.numpy
                    val = BINARY_UFUNCS[op](np.asarray(a).astype(np_dt),
                                            np.asarray(b).astype(np_dt))
            self.fill(out, val.item())
            return
        et = _COMPUTE.get(dt, dt)
        kind = KIND[et]
        if op not in BINARY_VALID[kind]:
            if op not in BINARY_OPS and op not in COMPARISON_OPS:
                raise unknown_op("binary", op, "opencl")
            raise DTypeError(f"{op} is not supported for {dt} on the OpenCL backend")
        zero_check = kind == "i" and op in ("floordiv", "remainder", "fmod") and not b_view
        conv = scalar_conv(dt, f16_scalar_is_float32(op, a, b))
        if zero_check and int(b) == 0:
            raise ZeroDivisionError("ZeroDivisionError: integer division or modulo by zero")

        def bundle() -> dict[str, str]:
            return {"pg_" + o: binary_expr(o, et) for o in sorted(BINARY_VALID[kind])
                    if ("bool" if out_is_bool(o) else dt) == odt}

        p = build_plan(self._dev(out), ("binary", dt, not a_view, not b_view, odt), "pg_" + op,
                       bundle, [(dt, not a_view), (dt, not b_view)],
                       [v for v in (a, b) if isinstance(v, View)], out)
        # cache the view-view and view-scalar signatures the hot path serves (not scalar-view, nor
        # integer division by a scalar, whose zero check depends on the value)
        if a.__class__ is View and (b.__class__ is View or not (b_view or zero_check)):
            p.conv = conv
            remember(self._bplans, (op, a.dtype, out.dtype, out.buffer.device, out.shape,
                                    out.strides, a.strides, b.strides if b_view else None), p)
        if p.kern is None:
            return
        args: list[Any] = [out.buffer.mem, out.offset]
        for v in (a, b):
            if isinstance(v, View):
                args += (v.buffer.mem, v.offset)
            else:
                args.append(conv(v) if dt == "float16" or dt == "bfloat16" else scalar_arg(v, dt))
        p.launch(args)

    @flushes
    def where(self, cond: View, a: Any, b: Any, out: View) -> None:
        dt = out.dtype.name
        a_s, b_s = not isinstance(a, View), not isinstance(b, View)
        key = (dt, out.buffer.device, out.shape, out.strides, cond.strides,
               None if a_s else a.strides, None if b_s else b.strides)
        p = self._wplans.get(key)
        if p is None:
            p = build_plan(self._dev(out), ("where", dt, a_s, b_s), "pg_where",
                           lambda: {"pg_where": "(a ? b : c)"}, [("bool", False), (dt, a_s), (dt, b_s)],
                           [v for v in (cond, a, b) if isinstance(v, View)], out)
            remember(self._wplans, key, p)
        if p.kern is None:
            return
        args: list[Any] = [out.buffer.mem, out.offset, cond.buffer.mem, cond.offset]
        for v, s in ((a, a_s), (b, b_s)):
            if s:
                args.append(scalar_arg(fit_scalar(v, dt), dt))
            else:
                args += (v.buffer.mem, v.offset)
        p.launch(args)

    @flushes
    def copy(self, src: View, dst: View) -> None:
        sdt, ddt = src.dtype.name, dst.dtype.name
        n = numel(dst.shape)
        if n == 0:
            return
        if sdt == ddt and contig(src) and contig(dst):
            import pyopencl as cl

            dev = self._dev(dst)
            isz = dst.dtype.itemsize
            with cl_errors(dev.label, "device copy"):
                cl.enqueue_copy(dev.queue, dst.buffer.mem, src.buffer.mem, byte_count=n * isz,
                                src_offset=src.offset * isz, dst_offset=dst.offset * isz)
            return
        key = (src.dtype, dst.dtype, dst.buffer.device, dst.shape, dst.strides, src.strides)
        p = self._cplans.get(key)
        if p is None:
            dev = self._dev(dst)
            targets = cast_targets(dev.fp64)
            p = build_plan(dev, ("cast", sdt), "pg_cast_" + ddt,
                           lambda: {"pg_cast_" + d: cast_expr(sdt, d) for d in targets},
                           [(sdt, False)], [src], dst, {"pg_cast_" + d: d for d in targets})
            remember(self._cplans, key, p)
        p.launch([dst.buffer.mem, dst.offset, src.buffer.mem, src.offset])

    @flushes
    def fill(self, out: View, value: Any) -> None:
        n = out.numel
        if n == 0:
            return
        dev = self._dev(out)
        dt = out.dtype.name
        v: Any = (half_bits(fit_scalar(value, dt), dt) if out.dtype in HALF16_DTYPES
                  else scalar_arg(fit_scalar(value, dt), dt))
        if contig(out):
            import pyopencl as cl

            isz = out.dtype.itemsize
            self._check_dtype(dev, out)
            with cl_errors(dev.label, "fill"):
                cl.enqueue_fill_buffer(dev.queue, out.buffer.mem, v, out.offset * isz, n * isz)
            return
        sizes, (st,) = coalesce(out.shape, [out.strides])
        r = len(sizes)
        vt = NP_SCALAR[dt] if KIND[dt] == "c" else type(v)  # complex: the bytes of a pair
        kern = dev.kernel(("fill", dt, r), "fill", lambda: fill_source(dt, r), [dt],
                          lambda: [None] + [_I64] * (1 + r) + [vt] + [_I64] * r)
        dev.launch1d(kern, n, [out.buffer.mem, out.offset, *st, v, *sizes])

    # ------------------------------------------------------------- reductions
    @flushes
    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        if op not in REDUCE_OPS:
            raise unknown_op("reduce", op, "opencl")
        if op not in ("sum", "prod"):
            _no_complex(f"reduce {op}", x)
        dev = self._dev(out)
        outer = out.numel
        if outer == 0:
            return
        axes_set = set(axes)
        kept = [d for d in range(len(x.shape)) if d not in axes_set]
        red = [d for d in range(len(x.shape)) if d in axes_set]
        ksz, (ks_o, ks_x) = coalesce([x.shape[d] for d in kept],
                                      [[out.strides[d] for d in kept], [x.strides[d] for d in kept]])
        rsz, (rs_x,) = coalesce([x.shape[d] for d in red], [[x.strides[d] for d in red]])
        total = 1
        for d in red:
            total *= x.shape[d]
        if total == 0:
            rsz, rs_x = [1], [0]
        idt, odt = x.dtype.name, out.dtype.name
        if takes_colsum(dev, op, idt, odt, ksz, ks_x, rsz, total):
            launch_colsum(dev, idt, out.buffer.mem, out.offset, ks_o[0], x, rs_x[0], ksz[0], total)
            return
        wg = dev.reduce_wg
        cus = dev.properties.compute_units
        # one work-item per output when there is enough parallelism or little work per output;
        # otherwise one work-group per output (and per chunk of the reduced range when the
        # outputs are too few to fill the device; the partials are then reduced again)
        # (on CPU devices a work-item's sequential loop is the fast form, and a work-group's
        # barriers are slow: one work-item per output once every core has a few)
        if total <= 2 * wg or outer >= (4 * cus if not dev.is_gpu else 16 * cus * 32):
            self._reduce_launch(dev, op, idt, odt, out.buffer.mem, out.offset, ks_o, 0, x, ks_x,
                                rs_x, ksz, rsz, total, total, 1, serial=True, outer=outer)
            return
        nchunk = 1
        want = 4 * cus * (16 if dev.is_gpu else 1)
        if outer < want:
            nchunk = max(1, min(want // outer, total // (wg * 16)))
        if nchunk == 1:
            self._reduce_launch(dev, op, idt, odt, out.buffer.mem, out.offset, ks_o, 0, x, ks_x,
                                rs_x, ksz, rsz, total, total, 1, serial=False, outer=outer)
            return
        chunk = -(-total // nchunk)
        nchunk = -(-total // chunk)
        # 16-bit float partials stay float32: rounded once, at the end
        part = self._empty_like(dev, (outer, nchunk),
                                _F32 if out.dtype in HALF16_DTYPES else out.dtype)
        pdt = part.dtype.name
        # partials: contiguous (kept..., chunk) with kept strides in C order over ksz
        pst, acc = [], nchunk
        for s in reversed(ksz):
            pst.append(acc)
            acc *= s
        pst.reverse()
        self._reduce_launch(dev, op, idt, pdt, part.buffer.mem, 0, pst, 1, x, ks_x, rs_x, ksz, rsz,
                            total, chunk, nchunk, serial=False, outer=outer)
        op2 = "sum" if op == "sum" else op
        self._reduce_launch(dev, op2, pdt, odt, out.buffer.mem, out.offset, ks_o, 0, part, pst, [1],
                            ksz, [nchunk], nchunk, nchunk, 1, serial=True, outer=outer)

    def _reduce_launch(self, dev: Device, op: str, idt: str, odt: str, omem: Any, oo: int,
                       os_: Sequence[int], ocs: int, x: View, xs: Sequence[int], xr: Sequence[int],
                       ksz: Sequence[int], rsz: Sequence[int], total: int, chunk: int, nchunk: int,
                       serial: bool, outer: int) -> None:
        kr, rr, wg = len(ksz), len(rsz), dev.reduce_wg
        key = ("reduce", idt, odt, kr, rr, wg)
        kern = dev.kernel(key, "pg_" + op + ("_1" if serial else ""),
                          lambda: reduce_source(idt, odt, kr, rr, wg), [idt, odt],
                          lambda: [None, _I64] + [_I64] * kr + [_I64, None, _I64]
                          + [_I64] * (2 * kr + 2 * rr) + [_I64] * 3)
        args = [omem, oo, *os_, ocs, x.buffer.mem, x.offset, *xs, *xr, *ksz, *rsz, total, chunk,
                nchunk]
        if serial:
            dev.launch1d(kern, outer * nchunk, args)
        else:
            kern(dev.queue, (outer * nchunk * wg,), (wg,), *args)

    def _line_setup(self, x: View, axis: int,
                    views: Sequence[View]) -> tuple[list[int], list[list[int]]]:
        """Kept sizes and per-view kept strides for one-work-item-per-line kernels."""
        kept = [d for d in range(len(x.shape)) if d != axis]
        return coalesce([x.shape[d] for d in kept], [[v.strides[d] for d in kept] for v in views])

    @flushes
    def arg_reduce(self, op: str, x: View, axis: int, out: View) -> None:
        if op not in ARG_REDUCE_OPS:
            raise unknown_op("arg_reduce", op, "opencl")
        _no_complex(op, x)
        dev = self._dev(out)
        outer = out.numel
        if outer == 0:
            return
        dt = x.dtype.name
        ksz, (os_, xs) = self._line_setup(x, axis, [out, x])
        kr = len(ksz)
        kern = dev.kernel(("argreduce", dt, kr), "pg_" + op, lambda: argreduce_source(dt, kr),
                          [dt], lambda: _line_arg_types(kr))
        dev.launch1d(kern, outer, [out.buffer.mem, out.offset, *os_, out.strides[axis], x.buffer.mem,
                                   x.offset, *xs, x.strides[axis], *ksz, x.shape[axis]])

    @flushes
    def cumsum(self, x: View, axis: int, out: View) -> None:
        dev = self._dev(out)
        if out.numel == 0:
            return
        idt, odt = x.dtype.name, out.dtype.name
        ksz, (os_, xs) = self._line_setup(x, axis, [out, x])
        kr = len(ksz)
        outer = out.numel // x.shape[axis]
        kern = dev.kernel(("cumsum", idt, odt, kr), "cumsum", lambda: cumsum_source(idt, odt, kr),
                          [idt, odt], lambda: _line_arg_types(kr))
        dev.launch1d(kern, outer, [out.buffer.mem, out.offset, *os_, out.strides[axis], x.buffer.mem,
                                   x.offset, *xs, x.strides[axis], *ksz, x.shape[axis]])

    # ----------------------------------------------------------------- matmul
    @flushes
    def matmul(self, a: View, b: View, out: View) -> None:
        dev = self._dev(out)
        # 16-bit floats: every GEMM family reads them in place and accumulates in float32
        dt = out.dtype.name
        if KIND[dt] == "b" or a.dtype is not out.dtype or b.dtype is not out.dtype:
            raise DTypeError(f"matmul on the OpenCL backend needs inputs of one non-bool dtype, got "
                             f"{a.dtype}, {b.dtype} -> {out.dtype}")
        if out.numel == 0:
            return
        if a.shape[2] == 0:
            self.fill(out, 0)
            return
        if KIND[dt] == "c":
            launch_complex_gemm(self, dev, a, b, out, self._force_gemm_kind)
            return
        launch_gemm(dev, a, b, out, self._force_gemm_kind)

    # ---------------------------------------------------------- index ops
    @flushes
    def gather(self, x: View, axis: int, index: View, out: View) -> None:
        dev = self._dev(out)
        n = out.numel
        if n == 0:
            return
        dt = x.dtype.name
        r = max(len(out.shape), 1)
        shape = list(out.shape) or [1]
        xs = list(x.strides) or [0]
        xa = xs[axis] if out.shape else 0
        xl = x.shape[axis] if x.shape else 1
        if out.shape:
            xs[axis] = 0
        kern = dev.kernel(("gather", dt, r), "gather", lambda: gather_source(dt, r), [dt],
                          lambda: [None, _I64] + [_I64] * r + [None, _I64] + [_I64] * (r + 2) +
                          [None, _I64] + [_I64] * (2 * r))
        dev.launch1d(kern, n, [out.buffer.mem, out.offset, *(out.strides or (0,)), x.buffer.mem,
                               x.offset, *xs, xa, xl, index.buffer.mem, index.offset,
                               *(index.strides or (0,)), *shape])

    @flushes
    def scatter(self, out: View, axis: int, index: View, src: View, reduce: str | None) -> None:
        dev = self._dev(out)
        if index.numel == 0:
            return
        dt = out.dtype.name
        ol = out.shape[axis] if out.shape else 1
        if not index.shape:  # 0-d: one element
            shape, L, os_, oa, is_, ia, ss, sa = [1], 1, [0], 0, [0], 0, [0], 0
        else:
            shape = list(index.shape)
            L = shape[axis]
            shape[axis] = 1
            os_, is_, ss = list(out.strides), list(index.strides), list(src.strides)
            oa, ia, sa = os_[axis], is_[axis], ss[axis]
            os_[axis] = 0
        r = len(shape)
        name = "scatter_add" if reduce == "add" else "scatter"
        kern = dev.kernel(("scatter", dt, r), name, lambda: scatter_source(dt, r), [dt],
                          lambda: [None, _I64] + [_I64] * (r + 2) +
                          ([None, _I64] + [_I64] * (r + 1)) * 2 + [_I64] * (r + 1))
        outer = index.numel // L
        dev.launch1d(kern, outer, [out.buffer.mem, out.offset, *os_, oa, ol, index.buffer.mem, index.offset,
                                   *is_, ia, src.buffer.mem, src.offset, *ss, sa, *shape, L])

    @flushes
    def sort(self, x: View, axis: int, descending: bool, values: View, indices: View) -> None:
        _no_complex("sort", x)
        dev = self._dev(values)
        n = x.numel
        if n == 0:
            return
        dt = x.dtype.name
        if not x.shape:
            self.copy(x, values)
            self.fill(indices, 0)
            return
        L = x.shape[axis]
        ksz, (vs, is_, xs) = self._line_setup(x, axis, [values, indices, x])
        kr = len(ksz)
        outer = n // L
        # the keys of 16-bit floats are floats
        scratch_k = dev.allocator.allocate(
            2 * n * (4 if x.dtype in HALF16_DTYPES else x.dtype.itemsize))
        scratch_p = dev.allocator.allocate(2 * n * 8)
        kern = dev.kernel(("sort", dt, kr), "sort_desc" if descending else "sort_asc",
                          lambda: sort_source(dt, kr), [dt],
                          lambda: ([None, _I64] + [_I64] * (kr + 1)) * 3 + [_I64] * (kr + 1)
                          + [None, None])
        dev.launch1d(kern, outer, [values.buffer.mem, values.offset, *vs, values.strides[axis],
                                   indices.buffer.mem, indices.offset, *is_, indices.strides[axis],
                                   x.buffer.mem, x.offset, *xs, x.strides[axis], *ksz, L,
                                   scratch_k.mem, scratch_p.mem])
        # the scratch buffers return to the cache now; any later user is queued after the sort

    # ----------------------------------------------------------------- random
    @flushes
    def random(self, kind: str, out: View, seed: int, offset: int, a: float, b: float) -> None:
        if kind not in RANDOM_KINDS:
            raise unknown_op("random", kind, "opencl")
        dev = self._dev(out)
        n = out.numel
        if n == 0:
            return
        dt = out.dtype.name
        if KIND[dt] not in "fs":
            raise DTypeError(f"random {kind} needs a floating output, got {out.dtype}")
        if not contig(out):
            tmp = self._empty_like(dev, out.shape, out.dtype)
            self.random(kind, tmp, seed, offset, a, b)
            self.copy(tmp, out)
            return
        st = NP_SCALAR[dt]
        w = np.float64 if dev.fp64 else np.float32
        types = [None, _I64, np.uint64, np.uint64, _I64] + ([st, st] if kind == "uniform" else [w, w])
        kern = dev.kernel(("random", dt, dev.fp64), kind, lambda: random_source(dt, dev.fp64), [dt],
                          types)
        if kind == "uniform":
            # numpy reference: dtype(low) + dtype(high - low) * u, the difference in Python floats
            # (bfloat16: its float32 stream; float16 scalars rounded to float16, as floats)
            p, q = scalar_arg(a, dt), scalar_arg(b - a, dt)
        elif kind == "normal":
            p, q = w(a), w(b)
        else:
            raise ValueError(f"unknown random kind {kind!r}")
        off = offset & 0xFFFFFFFFFFFFFFFF
        # a 32/16-bit uniform: one work-item a Philox block of four slots (see random_source)
        items = ((off & 3) + n + 3) >> 2 if philox_slots(kind, out.dtype.numpy) == 1 else n
        dev.launch1d(kern, items, [out.buffer.mem, out.offset, np.uint64(seed & 0xFFFFFFFFFFFFFFFF),
                                   np.uint64(off), n, p, q])
