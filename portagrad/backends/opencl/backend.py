"""The OpenCL backend: every OpenCL device (GPUs first) through pyopencl.

Per device: one context, one in-order queue (profiling on, for events), a caching allocator and a
cache of built kernels. Primitives only *enqueue*; :meth:`OpenCLBackend.to_host` and
:meth:`OpenCLBackend.synchronize` wait. Kernel sources live in :mod:`.kernels` and :mod:`.gemm`,
errors are translated in :mod:`.errors`.

Integer ``floordiv``/``remainder`` by zero: a scalar divisor of 0 raises :class:`ZeroDivisionError`
(checked on the host, like the numpy backend); for a tensor divisor the result is unspecified
(0), as on CUDA, because checking would need a device reduction and a synchronisation per op.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...errors import DTypeError
from ..interface import Backend, DeviceProperties, View
from ..ufuncs import BINARY_UFUNCS
from . import kernels as K
from .allocator import DeviceBuffer
from .conv import ConvMixin
from .devices import Device, make_devices
from .errors import cl_errors
from .fusion import Fuser, flushes, fusion_enabled
from .gemm import launch_gemm
from .pinned import is_pinned as _is_pinned, pin_memory as _pin_memory

__all__ = ["OpenCLBackend"]

_NP_SCALAR = {"bool": np.uint8, "int32": np.int32, "int64": np.int64, "float32": np.float32,
              "float64": np.float64, "float16": np.float16}
_I64 = np.int64


def _contig(v: View) -> bool:
    """``v.is_contiguous()``, memoised in ``View.cache`` (views are immutable)."""
    c = v.cache
    if c is None:
        c = v.cache = v.is_contiguous()
    return c


def _coalesce(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dimensions and merge dimensions that are contiguous in *every* operand.

    Returns sizes and per-operand strides of rank >= 1 (a single element gives ``[1]``)."""
    dims = [d for d, n in enumerate(shape) if n != 1]
    if not dims:
        return [1], [[0] for _ in strides]
    sizes = [shape[dims[0]]]
    strs = [[s[dims[0]]] for s in strides]
    for d in dims[1:]:
        n = shape[d]
        if all(st[-1] == s[d] * n for st, s in zip(strs, strides)):
            sizes[-1] *= n
            for st, s in zip(strs, strides):
                st[-1] = s[d]
        else:
            sizes.append(n)
            for st, s in zip(strs, strides):
                st.append(s[d])
    return sizes, strs


def _scalar(value: Any, dt: str) -> Any:
    """A Python scalar as the numpy scalar matching the kernel argument's C type."""
    if dt == "bool":
        return np.uint8(1 if value else 0)
    if dt == "int32":
        v = int(value) & 0xFFFFFFFF
        return np.int32(v - (1 << 32) if v >= 1 << 31 else v)
    if dt == "int64":
        v = int(value) & 0xFFFFFFFFFFFFFFFF
        return np.int64(v - (1 << 64) if v >= 1 << 63 else v)
    return _NP_SCALAR[dt](value)


_STAGE_BYTES = 8 << 20  # each of the two pinned staging buffers of a device
_STAGE_MIN = 8 << 20  # smaller reads go straight: one driver copy costs less than the pipeline
_PLAN_CACHE_MAX = 8192  # signatures per primitive; the cache is simply cleared when full


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _chunk(n: int, dev: Any) -> int:
    """Elements per work-item of the loop-style kernels: at least 1024 (so a small op is one or
    a few work-items), else enough chunks for 16 per compute unit; a multiple of 64."""
    per = -(-n // (16 * dev.properties.compute_units))
    return max(1024, -(-per // 64) * 64)


def _pow2ceil(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _wrap_int(bits: int) -> Callable[[Any], int]:
    mask, half, full = (1 << bits) - 1, 1 << (bits - 1), 1 << bits

    def conv(value: Any) -> int:
        v = int(value) & mask
        return v - full if v >= half else v

    return conv


#: scalar converters for the hot path (what :func:`_scalar` does, one function per dtype)
_CONVERT: dict[str, Callable[[Any], Any]] = {
    "bool": lambda v: 1 if v else 0, "int32": _wrap_int(32), "int64": _wrap_int(64),
    "float32": np.float32, "float64": float, "float16": np.float16,
}


class _Plan:
    """How to launch one elementwise signature: kernel, queue, global/local size, an optional
    tail launch (global size and offset, local size 1) and the constant trailing arguments."""

    __slots__ = ("kern", "queue", "gs", "ls", "tail", "toff", "const", "conv")

    def __init__(self, kern: Any, queue: Any, gs: tuple, ls: tuple, tail: "tuple | None",
                 toff: "tuple | None", const: tuple) -> None:
        self.kern, self.queue, self.gs, self.ls = kern, queue, gs, ls
        self.tail, self.toff, self.const = tail, toff, const
        self.conv: Any = None

    def launch(self, args: Sequence[Any]) -> None:
        """Enqueue with the per-call ``args`` (buffers, offsets, scalars) followed by the constants."""
        if self.kern is None:
            return
        self.kern(self.queue, self.gs, self.ls, *args, *self.const)
        if self.tail is not None:
            self.kern(self.queue, self.tail, (1,), *args, *self.const, global_offset=self.toff)


_EMPTY_PLAN = _Plan(None, None, (), (), None, None, ())


class OpenCLBackend(ConvMixin, Backend):
    """Backend for the ``opencl`` device type."""

    device_type = "opencl"

    def __init__(self) -> None:
        self._devices: list[Device] = make_devices()
        # host arrays that non-blocking copies still read, per device: (event, array)
        self._pending: list[list[tuple[Any, Any]]] = [[] for _ in self._devices]
        # pinned staging buffers for large device->host reads, per device (see _staged_read);
        # _staged_reads: None = on GPUs only, True/False forces (tests run it on PoCL)
        self._stages: dict[int, list[np.ndarray]] = {}
        self._staged_reads: "bool | None" = None
        # launch plans of elementwise signatures, per primitive (see "elementwise" below)
        self._uplans: dict[tuple, _Plan] = {}
        self._bplans: dict[tuple, _Plan] = {}
        self._wplans: dict[tuple, _Plan] = {}
        self._cplans: dict[tuple, _Plan] = {}
        # a GEMM family (see .gemm.GEMM_KINDS) forced on every device: tests run "gpu3" on PoCL
        self._force_gemm_kind: "str | None" = None
        # elementwise fusion (see .fusion): unary/binary record, the methods marked @flushes
        # flush the pending group first
        self._fz: "Fuser | None" = None
        if fusion_enabled():
            self._fz = Fuser(self, self._unary_eager, self._binary_eager, _chunk)
        else:  # straight to the kernels, without the fuser test per call
            self.unary, self.binary = self._unary_eager, self._binary_eager  # type: ignore[method-assign]

    # ---------------------------------------------------------------- devices
    def device_count(self) -> int:
        return len(self._devices)

    def device(self, index: int) -> Device:
        """The :class:`Device` object of logical index ``index`` (context, queue, allocator)."""
        try:
            return self._devices[index]
        except IndexError:
            raise RuntimeError(f"opencl:{index} does not exist: {len(self._devices)} OpenCL "
                               "device(s) visible") from None

    def get_device_properties(self, index: int) -> DeviceProperties:
        return self.device(index).properties

    @flushes
    def synchronize(self, index: int) -> None:
        self.device(index).finish()
        self._pending[index].clear()

    @flushes
    def record_event(self, index: int) -> Any:
        """Enqueue a marker on device ``index``'s queue and return its ``pyopencl.Event``."""
        import pyopencl as cl

        dev = self.device(index)
        with cl_errors(dev.label, "recording an event"):
            return cl.enqueue_marker(dev.queue)

    @flushes
    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two events of one device (waits for both)."""
        start.wait()
        end.wait()
        return (end.profile.end - start.profile.end) * 1e-6

    event_elapsed_ms = elapsed_ms

    @flushes
    def event_wait(self, event: Any) -> None:
        """Block until the marker ``event`` has completed."""
        event.wait()

    @flushes
    def event_query(self, event: Any) -> bool:
        """Whether the marker ``event`` has completed (never blocks)."""
        import pyopencl as cl

        return event.command_execution_status == cl.command_execution_status.COMPLETE

    # ----------------------------------------------------------------- memory
    def allocate(self, index: int, nbytes: int) -> DeviceBuffer:
        return self.device(index).allocator.allocate(nbytes)

    def memory_stats(self, index: int) -> dict[str, int]:
        return self.device(index).allocator.stats()

    @flushes
    def reset_peak_memory_stats(self, index: int) -> None:
        self.device(index).allocator.reset_peak()

    @flushes
    def empty_cache(self, index: int) -> None:
        self.device(index).allocator.empty_cache()

    def _dev(self, v: View) -> Device:
        return self._devices[v.buffer.device]

    def _check_dtype(self, dev: Device, *views: Any) -> None:
        for v in views:
            if isinstance(v, View) and v.dtype.name in ("float64", "float16"):
                dev.require_dtypes([v.dtype.name])

    @flushes
    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        import pyopencl as cl

        dev = self._dev(dst)
        self._check_dtype(dev, dst)
        if src.nbytes == 0:
            return
        if not src.flags.c_contiguous:
            src = np.ascontiguousarray(src)
        off = dst.offset * dst.dtype.itemsize
        with cl_errors(dev.label, f"copying {src.nbytes} bytes host->device"):
            if non_blocking and _is_pinned(src):
                ev = cl.enqueue_copy(dev.queue, dst.buffer.mem, src, dst_offset=off, is_blocking=False)
                pend = self._pending[dev.index]
                if len(pend) > 64:  # forget copies that are done
                    pend[:] = [p for p in pend if p[0].command_execution_status != 0]
                pend.append((ev, src))
            else:
                cl.enqueue_copy(dev.queue, dst.buffer.mem, src, dst_offset=off, is_blocking=True)

    @flushes
    def to_host(self, src: View) -> np.ndarray:
        import pyopencl as cl

        dev = self._dev(src)
        self._check_dtype(dev, src)
        out = np.empty(src.shape, src.dtype.numpy)
        if out.size == 0:
            return out
        if not _contig(src):
            tmp = self._empty_like(dev, src.shape, src.dtype)
            self.copy(src, tmp)
            src = tmp
        with cl_errors(dev.label, f"copying {out.nbytes} bytes device->host"):
            off = src.offset * src.dtype.itemsize
            staged = dev.is_gpu if self._staged_reads is None else self._staged_reads
            if staged and out.nbytes >= _STAGE_MIN:
                self._staged_read(dev, src.buffer.mem, off, out.reshape(-1).view(np.uint8))
            else:
                cl.enqueue_copy(dev.queue, out, src.buffer.mem, src_offset=off, is_blocking=True)
        return out

    def _staged_read(self, dev: Device, mem: Any, offset: int, out: np.ndarray) -> None:
        """Device->host copy of ``out.nbytes`` bytes at ``offset`` of ``mem`` through two pinned
        staging buffers: the DMA of chunk ``i + 1`` runs while chunk ``i`` is copied into ``out``.

        Why: GPU drivers read into pageable memory through their own small bounce buffer, so a
        large read is faster when the DMA into pinned memory overlaps the host-side copy. A small
        read is faster as one direct copy (the pipeline's extra steps cost more than they save),
        hence :data:`_STAGE_MIN`."""
        import pyopencl as cl

        stages = self._stages.get(dev.index)
        if stages is None:
            stages = self._stages[dev.index] = [
                _pin_memory(dev.context, dev.queue, _STAGE_BYTES) for _ in range(2)]
        n = out.nbytes
        chunks = [(o, min(_STAGE_BYTES, n - o)) for o in range(0, n, _STAGE_BYTES)]

        def enqueue(i: int) -> Any:
            o, m = chunks[i]
            return cl.enqueue_copy(dev.queue, stages[i % 2][:m], mem, src_offset=offset + o,
                                   is_blocking=False)

        ev = enqueue(0)
        for i, (o, m) in enumerate(chunks):
            # the other stage was emptied into ``out`` in the previous iteration: refill it
            nxt = enqueue(i + 1) if i + 1 < len(chunks) else None
            ev.wait()
            out[o:o + m] = stages[i % 2][:m]
            ev = nxt

    @flushes
    def copy_between(self, dst: View, src: View) -> None:
        if dst.buffer.device == src.buffer.device:
            self.copy(src, dst)
            return
        # one context per device: buffers cannot cross, so stage through the host
        self.from_host(dst, self.to_host(src))

    # the contract's defaults (device memory is never shared with the host), flushing like every
    # method that is handed a view or a host array
    host_array = flushes(Backend.host_array)
    wrap_host = flushes(Backend.wrap_host)

    def pin_memory(self, nbytes: int) -> "np.ndarray | None":
        if not self._devices:
            return None
        dev = self._devices[0]
        with cl_errors(dev.label, f"allocating {nbytes} bytes of pinned host memory"):
            return _pin_memory(dev.context, dev.queue, nbytes)

    def is_pinned(self, array: np.ndarray) -> bool:
        return _is_pinned(array)

    def _empty_like(self, dev: Device, shape: Sequence[int], dtype: Any) -> View:
        n = 1
        for s in shape:
            n *= s
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        return View(dev.allocator.allocate(n * dtype.itemsize), 0, tuple(shape),
                    tuple(reversed(strides)), dtype)

    # ------------------------------------------------------------ elementwise
    # Every elementwise primitive goes through a *plan*: the kernel, the launch geometry and the
    # constant arguments (strides, sizes) of one signature (op, dtypes, device, out's shape and
    # strides, each input's strides or "scalar"), cached in a dict. A repeated op costs one tuple
    # key, one dict lookup and the pyopencl enqueue: no contiguity test, no coalescing, no
    # argument-type work. The first call of a signature takes the slow path that builds the plan.

    def _plan(self, family: tuple, kname: str, kernels: Callable[[], dict[str, str]],
              in_types: Sequence[tuple[str, bool]], views: Sequence[View], out: View) -> "_Plan":
        """Build the launch plan of ``kernels()[kname]`` for ``out`` and the input ``views``."""
        dev = self._devices[out.buffer.device]
        n = _numel(out.shape)
        if n == 0:
            return _EMPTY_PLAN
        allv = [out, *views]
        if all(_contig(v) for v in allv):
            layout: "str | tuple" = "c"
            sizes: list[int] = [n]
            strides: list[list[int]] = []
        else:
            sizes, strides = _coalesce(out.shape, [v.strides for v in allv])
            layout = "strided"
            if len(sizes) == 1 and all(st[0] == 1 for st in strides):
                layout = "c"
        ls = dev.local_size
        tail = toff = None
        const: tuple = ()
        style = dev.ew_style
        if layout == "c":
            if style == "loop":
                layout = "cl"
                ch = _chunk(n, dev)
                gs, lsz, const = (-(-n // ch),), None, (n, ch)
            elif n % ls and n < (dev.guard_below if style == "grid" else 0):
                layout = "g"  # one guarded launch instead of main + tail
                gs, lsz, const = (-(-n // ls) * ls,), (ls,), (n,)
            else:  # "exact": exact main launch + a tail at a global offset (no bounds check)
                main = n - n % ls
                gs, lsz = (main,), (ls,)
                if main != n:
                    tail, toff = (n - main,), (main,)
                if not main:
                    gs, lsz, tail, toff = (n,), (1,), None, None
        elif style == "loop":
            r = len(sizes)
            layout = ("loop", r)
            rows = n // sizes[-1]
            ch = min(sizes[-1], _chunk(n, dev))
            lx = min(8, _pow2ceil(rows))
            gs, lsz = (-(-rows // lx) * lx, -(-sizes[-1] // ch)), (lx, 1)
            const = tuple(x for st in strides for x in st) + tuple(sizes) + (rows, ch)
        else:
            r = len(sizes)
            layout = ("nd", r)
            lx = min(ls, _pow2ceil(sizes[-1]))
            ly = min(ls // lx, _pow2ceil(sizes[-2])) if r >= 2 else 1
            gx = -(-sizes[-1] // lx) * lx
            if r == 1:
                gs, lsz = (gx,), (lx,)
            else:
                gy = -(-sizes[-2] // ly) * ly
                if r == 2:
                    gs, lsz = (gx, gy), (lx, ly)
                else:
                    gs, lsz = (gx, gy, _numel(sizes[:-2])), (lx, ly, 1)
            const = tuple(x for st in strides for x in st) + tuple(sizes)
        key = family + (layout,)

        def arg_types() -> list[Any]:
            types: list[Any] = [None, _I64]
            for dt, s in in_types:
                types += [_NP_SCALAR[dt]] if s else [None, _I64]
            return types + [_I64] * len(const)

        out_dt = out.dtype.name
        kern = dev.kernel(key, kname, lambda: K.elementwise_source(kernels(), in_types, out_dt, layout),
                          [dt for dt, _ in in_types] + [out_dt], arg_types)
        return _Plan(kern, dev.queue, gs, lsz, tail, toff, const)

    def _remember(self, cache: dict, key: tuple, plan: "_Plan") -> None:
        if len(cache) >= _PLAN_CACHE_MAX:
            cache.clear()
        cache[key] = plan

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
            kind = K.KIND[dt]
            if op not in K.UNARY_VALID[kind]:
                raise DTypeError(f"{op} is not supported for {dt} on the OpenCL backend")

            def bundle() -> dict[str, str]:
                return {"pg_" + o: K.unary_expr(o, dt) for o in sorted(K.UNARY_VALID[kind])
                        if ("bool" if K.out_is_bool(o) else dt) == odt}

            p = self._plan(("unary", dt, odt), "pg_" + op, bundle, [(dt, False)], [x], out)
            self._remember(self._uplans, key, p)
        if p.kern is None:
            return
        p.kern(p.queue, p.gs, p.ls, out.buffer.mem, out.offset, x.buffer.mem, x.offset, *p.const)
        if p.tail is not None:
            p.kern(p.queue, p.tail, (1,), out.buffer.mem, out.offset, x.buffer.mem, x.offset,
                   global_offset=p.toff)

    def _binary_eager(self, op: str, a: Any, b: Any, out: View) -> None:
        av, bv = a.__class__ is View, b.__class__ is View
        if av and bv:  # the common case first: two views
            key = (op, a.dtype, out.dtype, out.buffer.device, out.shape, out.strides, a.strides,
                   b.strides)
            p = self._bplans.get(key)
            if p is not None:
                if p.kern is None:
                    return
                p.kern(p.queue, p.gs, p.ls, out.buffer.mem, out.offset, a.buffer.mem, a.offset,
                       b.buffer.mem, b.offset, *p.const)
                if p.tail is not None:
                    p.kern(p.queue, p.tail, (1,), out.buffer.mem, out.offset, a.buffer.mem, a.offset,
                           b.buffer.mem, b.offset, global_offset=p.toff)
                return
        elif av and not isinstance(b, View):  # view (op) scalar: y * 2.0
            key = (op, a.dtype, out.dtype, out.buffer.device, out.shape, out.strides, a.strides, None)
            p = self._bplans.get(key)
            if p is not None:
                if p.kern is None:
                    return
                s = p.conv(b)
                p.kern(p.queue, p.gs, p.ls, out.buffer.mem, out.offset, a.buffer.mem, a.offset, s,
                       *p.const)
                if p.tail is not None:
                    p.kern(p.queue, p.tail, (1,), out.buffer.mem, out.offset, a.buffer.mem, a.offset,
                           s, global_offset=p.toff)
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
            dt = "bool" if K.out_is_bool(op) else odt
            np_dt = out.dtype.numpy if dt == odt else np.bool_
            with np.errstate(all="ignore"):
                val = BINARY_UFUNCS[op](np.asarray(a).astype(np_dt), np.asarray(b).astype(np_dt))
            self.fill(out, val.item())
            return
        kind = K.KIND[dt]
        if op not in K.BINARY_VALID[kind]:
            raise DTypeError(f"{op} is not supported for {dt} on the OpenCL backend")
        zero_check = kind == "i" and op in ("floordiv", "remainder") and not b_view
        if zero_check and int(b) == 0:
            raise ZeroDivisionError("ZeroDivisionError: integer division or modulo by zero")

        def bundle() -> dict[str, str]:
            return {"pg_" + o: K.binary_expr(o, dt) for o in sorted(K.BINARY_VALID[kind])
                    if ("bool" if K.out_is_bool(o) else dt) == odt}

        p = self._plan(("binary", dt, not a_view, not b_view, odt), "pg_" + op, bundle,
                       [(dt, not a_view), (dt, not b_view)], [v for v in (a, b) if isinstance(v, View)],
                       out)
        # cache the view-view and view-scalar signatures the hot path serves (not scalar-view, nor
        # integer division by a scalar, whose zero check depends on the value)
        if a.__class__ is View and (b.__class__ is View or not (b_view or zero_check)):
            p.conv = _CONVERT[dt]
            self._remember(self._bplans, (op, a.dtype, out.dtype, out.buffer.device, out.shape,
                                          out.strides, a.strides, b.strides if b_view else None), p)
        if p.kern is None:
            return
        args: list[Any] = [out.buffer.mem, out.offset]
        for v in (a, b):
            if isinstance(v, View):
                args += (v.buffer.mem, v.offset)
            else:
                args.append(_scalar(v, dt))
        p.launch(args)

    @flushes
    def where(self, cond: View, a: Any, b: Any, out: View) -> None:
        dt = out.dtype.name
        a_s, b_s = not isinstance(a, View), not isinstance(b, View)
        key = (dt, out.buffer.device, out.shape, out.strides, cond.strides,
               None if a_s else a.strides, None if b_s else b.strides)
        p = self._wplans.get(key)
        if p is None:
            p = self._plan(("where", dt, a_s, b_s), "pg_where", lambda: {"pg_where": "(a ? b : c)"},
                           [("bool", False), (dt, a_s), (dt, b_s)],
                           [v for v in (cond, a, b) if isinstance(v, View)], out)
            self._remember(self._wplans, key, p)
        if p.kern is None:
            return
        args: list[Any] = [out.buffer.mem, out.offset, cond.buffer.mem, cond.offset]
        for v, s in ((a, a_s), (b, b_s)):
            if s:
                args.append(_scalar(v, dt))
            else:
                args += (v.buffer.mem, v.offset)
        p.launch(args)

    @flushes
    def copy(self, src: View, dst: View) -> None:
        sdt, ddt = src.dtype.name, dst.dtype.name
        n = _numel(dst.shape)
        if n == 0:
            return
        if sdt == ddt and _contig(src) and _contig(dst):
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
            p = self._plan(("cast", sdt, ddt), "pg_cast", lambda: {"pg_cast": K.cast_expr(sdt, ddt)},
                           [(sdt, False)], [src], dst)
            self._remember(self._cplans, key, p)
        p.launch([dst.buffer.mem, dst.offset, src.buffer.mem, src.offset])

    @flushes
    def fill(self, out: View, value: Any) -> None:
        n = out.numel
        if n == 0:
            return
        dev = self._dev(out)
        dt = out.dtype.name
        v = _scalar(value, dt)
        if _contig(out):
            import pyopencl as cl

            isz = out.dtype.itemsize
            self._check_dtype(dev, out)
            with cl_errors(dev.label, "fill"):
                cl.enqueue_fill_buffer(dev.queue, out.buffer.mem, v, out.offset * isz, n * isz)
            return
        sizes, (st,) = _coalesce(out.shape, [out.strides])
        r = len(sizes)
        kern = dev.kernel(("fill", dt, r), "fill", lambda: K.fill_source(dt, r), [dt],
                          lambda: [None] + [_I64] * (1 + r) + [_NP_SCALAR[dt]] + [_I64] * r)
        dev.launch1d(kern, n, [out.buffer.mem, out.offset, *st, v, *sizes])

    # ------------------------------------------------------------- reductions
    @flushes
    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        dev = self._dev(out)
        outer = out.numel
        if outer == 0:
            return
        axes_set = set(axes)
        kept = [d for d in range(len(x.shape)) if d not in axes_set]
        red = [d for d in range(len(x.shape)) if d in axes_set]
        ksz, (ks_o, ks_x) = _coalesce([x.shape[d] for d in kept],
                                      [[out.strides[d] for d in kept], [x.strides[d] for d in kept]])
        rsz, (rs_x,) = _coalesce([x.shape[d] for d in red], [[x.strides[d] for d in red]])
        total = 1
        for d in red:
            total *= x.shape[d]
        if total == 0:
            rsz, rs_x = [1], [0]
        idt, odt = x.dtype.name, out.dtype.name
        wg = dev.reduce_wg
        cus = dev.properties.compute_units
        # one work-item per output when there is enough parallelism or little work per output;
        # otherwise one work-group per output (and per chunk of the reduced range when the
        # outputs are too few to fill the device; the partials are then reduced again)
        if total <= 2 * wg or outer >= 16 * cus * (1 if not dev.is_gpu else 32):
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
        part = self._empty_like(dev, (outer, nchunk), out.dtype)
        # partials: contiguous (kept..., chunk) with kept strides in C order over ksz
        pst, acc = [], nchunk
        for s in reversed(ksz):
            pst.append(acc)
            acc *= s
        pst.reverse()
        self._reduce_launch(dev, op, idt, odt, part.buffer.mem, 0, pst, 1, x, ks_x, rs_x, ksz, rsz,
                            total, chunk, nchunk, serial=False, outer=outer)
        op2 = "sum" if op == "sum" else op
        self._reduce_launch(dev, op2, odt, odt, out.buffer.mem, out.offset, ks_o, 0, part, pst, [1],
                            ksz, [nchunk], nchunk, nchunk, 1, serial=True, outer=outer)

    def _reduce_launch(self, dev: Device, op: str, idt: str, odt: str, omem: Any, oo: int,
                       os_: Sequence[int], ocs: int, x: View, xs: Sequence[int], xr: Sequence[int],
                       ksz: Sequence[int], rsz: Sequence[int], total: int, chunk: int, nchunk: int,
                       serial: bool, outer: int) -> None:
        kr, rr, wg = len(ksz), len(rsz), dev.reduce_wg
        key = ("reduce", idt, odt, kr, rr, wg)
        types = lambda: [None, _I64] + [_I64] * kr + [_I64, None, _I64] + [_I64] * (2 * kr + 2 * rr) \
            + [_I64] * 3  # noqa: E731
        kern = dev.kernel(key, "pg_" + op + ("_1" if serial else ""),
                          lambda: K.reduce_source(idt, odt, kr, rr, wg), [idt, odt], types)
        args = [omem, oo, *os_, ocs, x.buffer.mem, x.offset, *xs, *xr, *ksz, *rsz, total, chunk, nchunk]
        if serial:
            dev.launch1d(kern, outer * nchunk, args)
        else:
            kern(dev.queue, (outer * nchunk * wg,), (wg,), *args)

    def _line_setup(self, x: View, axis: int, views: Sequence[View]) -> tuple[list[int], list[list[int]]]:
        """Kept sizes and per-view kept strides for one-work-item-per-line kernels."""
        kept = [d for d in range(len(x.shape)) if d != axis]
        return _coalesce([x.shape[d] for d in kept], [[v.strides[d] for d in kept] for v in views])

    @flushes
    def arg_reduce(self, op: str, x: View, axis: int, out: View) -> None:
        dev = self._dev(out)
        outer = out.numel
        if outer == 0:
            return
        dt = x.dtype.name
        ksz, (os_, xs) = self._line_setup(x, axis, [out, x])
        kr = len(ksz)
        types = lambda: [None, _I64] + [_I64] * (kr + 1) + [None, _I64] + [_I64] * (kr + 1) + \
            [_I64] * (kr + 1)  # noqa: E731
        kern = dev.kernel(("argreduce", dt, kr), "pg_" + op, lambda: K.argreduce_source(dt, kr), [dt], types)
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
        types = lambda: [None, _I64] + [_I64] * (kr + 1) + [None, _I64] + [_I64] * (kr + 1) + \
            [_I64] * (kr + 1)  # noqa: E731
        kern = dev.kernel(("cumsum", idt, odt, kr), "cumsum", lambda: K.cumsum_source(idt, odt, kr),
                          [idt, odt], types)
        dev.launch1d(kern, outer, [out.buffer.mem, out.offset, *os_, out.strides[axis], x.buffer.mem,
                                   x.offset, *xs, x.strides[axis], *ksz, x.shape[axis]])

    # ----------------------------------------------------------------- matmul
    @flushes
    def matmul(self, a: View, b: View, out: View) -> None:
        dev = self._dev(out)
        dt = out.dtype.name
        if K.KIND[dt] != "f" or a.dtype is not out.dtype or b.dtype is not out.dtype:
            raise DTypeError(f"matmul on the OpenCL backend needs floating inputs of one dtype, got "
                             f"{a.dtype}, {b.dtype} -> {out.dtype}")
        if out.numel == 0:
            return
        if a.shape[2] == 0:
            self.fill(out, 0)
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
        if out.shape:
            xs[axis] = 0
        kern = dev.kernel(("gather", dt, r), "gather", lambda: K.gather_source(dt, r), [dt],
                          lambda: [None, _I64] + [_I64] * r + [None, _I64] + [_I64] * (r + 1) +
                          [None, _I64] + [_I64] * (2 * r))
        dev.launch1d(kern, n, [out.buffer.mem, out.offset, *(out.strides or (0,)), x.buffer.mem,
                               x.offset, *xs, xa, index.buffer.mem, index.offset,
                               *(index.strides or (0,)), *shape])

    @flushes
    def scatter(self, out: View, axis: int, index: View, src: View, reduce: "str | None") -> None:
        dev = self._dev(out)
        if index.numel == 0:
            return
        dt = out.dtype.name
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
        kern = dev.kernel(("scatter", dt, r), name, lambda: K.scatter_source(dt, r), [dt],
                          lambda: ([None, _I64] + [_I64] * (r + 1)) * 3 + [_I64] * (r + 1))
        outer = index.numel // L
        dev.launch1d(kern, outer, [out.buffer.mem, out.offset, *os_, oa, index.buffer.mem, index.offset,
                                   *is_, ia, src.buffer.mem, src.offset, *ss, sa, *shape, L])

    @flushes
    def sort(self, x: View, axis: int, descending: bool, values: View, indices: View) -> None:
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
        scratch_k = dev.allocator.allocate(2 * n * x.dtype.itemsize)
        scratch_p = dev.allocator.allocate(2 * n * 8)
        types = lambda: ([None, _I64] + [_I64] * (kr + 1)) * 3 + [_I64] * (kr + 1) + [None, None]  # noqa: E731
        kern = dev.kernel(("sort", dt, kr), "sort_desc" if descending else "sort_asc",
                          lambda: K.sort_source(dt, kr), [dt], types)
        dev.launch1d(kern, outer, [values.buffer.mem, values.offset, *vs, values.strides[axis],
                                   indices.buffer.mem, indices.offset, *is_, indices.strides[axis],
                                   x.buffer.mem, x.offset, *xs, x.strides[axis], *ksz, L,
                                   scratch_k.mem, scratch_p.mem])
        # the scratch buffers return to the cache now; any later user is queued after the sort

    # ----------------------------------------------------------------- random
    @flushes
    def random(self, kind: str, out: View, seed: int, offset: int, a: float, b: float) -> None:
        dev = self._dev(out)
        n = out.numel
        if n == 0:
            return
        dt = out.dtype.name
        if K.KIND[dt] != "f":
            raise DTypeError(f"random {kind} needs a floating output, got {out.dtype}")
        if not _contig(out):
            tmp = self._empty_like(dev, out.shape, out.dtype)
            self.random(kind, tmp, seed, offset, a, b)
            self.copy(tmp, out)
            return
        st = _NP_SCALAR[dt]
        w = np.float64 if dev.fp64 else np.float32
        types = [None, _I64, np.uint64, np.uint64] + ([st, st] if kind == "uniform" else [w, w])
        kern = dev.kernel(("random", dt, dev.fp64), kind, lambda: K.random_source(dt, dev.fp64), [dt],
                          types)
        if kind == "uniform":
            # numpy reference: dtype(low) + dtype(high - low) * u, the difference in Python floats
            p, q = st(a), st(b - a)
        elif kind == "normal":
            p, q = w(a), w(b)
        else:
            raise ValueError(f"unknown random kind {kind!r}")
        dev.launch1d(kern, n, [out.buffer.mem, out.offset, np.uint64(seed & 0xFFFFFFFFFFFFFFFF),
                               np.uint64(offset & 0xFFFFFFFFFFFFFFFF), p, q])
