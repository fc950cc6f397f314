"""Launch plans of the OpenCL backend's elementwise primitives, and the helpers launches share.

Every elementwise primitive (``unary``, ``binary``, ``where``, strided ``copy``) goes through a
*plan* (:class:`Plan`): the kernel, the launch geometry and the constant arguments (strides,
sizes) of one signature (op, dtypes, device, out's shape and strides, each input's strides or
"scalar"), cached in a dict per primitive. A repeated op costs one tuple key, one dict lookup and
the pyopencl enqueue: no contiguity test, no coalescing, no argument-type work. The first call of
a signature takes the slow path, :func:`build_plan`, which chooses the kernel layout (see
:mod:`.kernels`) from the device's ``ew_style`` and the operands' strides.

The helpers (:func:`contig`, :func:`coalesce`, :func:`scalar_arg`, :func:`chunk`, ...) are shared
by the other primitives and by the fuser.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from ... import _dtype
from ..interface import View
from .kernels import elementwise_source

if TYPE_CHECKING:
    from .devices import Device

__all__ = [
    "CONVERT",
    "ITEMS_PER_CU",
    "gpu_parts",
    "NP_SCALAR",
    "Plan",
    "build_plan",
    "chunk",
    "coalesce",
    "contig",
    "numel",
    "pow2ceil",
    "remember",
    "scalar_arg",
    "HALF16_DTYPES",
    "complex_arg",
    "scalar_conv",
    "half_bits",
    "is_half16",
    "via_f32",
]

#: portagrad dtype name -> numpy scalar type of the matching kernel argument
NP_SCALAR: dict[str, Any] = {"bool": np.uint8, "int32": np.int32, "int64": np.int64, "float32": np.float32,
             "float64": np.float64, "float16": np.float16, "uint8": np.uint8, "int8": np.int8,
             "int16": np.int16, "bfloat16": np.float32}  # 16-bit float kernels take float scalars
NP_SCALAR["float16"] = np.float32
# complex scalars travel as the raw bytes of a float2/double2 (numpy's complex layout): pyopencl
# packs a numpy complex argument as a struct, and for complex128 on PoCL as two separate doubles
NP_SCALAR["complex64"] = np.dtype("V8")
NP_SCALAR["complex128"] = np.dtype("V16")
_I64 = np.int64
_BF16 = np.dtype(ml_dtypes.bfloat16)
#: the 16-bit floats this backend stores as bits and computes in float32
HALF16_DTYPES = (_dtype.bfloat16, _dtype.float16)


def contig(v: View) -> bool:
    """``v.is_contiguous()``, memoised in ``View.cache`` (views are immutable)."""
    c = v.cache
    if c is None:
        c = v.cache = v.is_contiguous()
    return c


def coalesce(shape: Sequence[int],
             strides: Sequence[Sequence[int]]) -> tuple[list[int], list[list[int]]]:
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


def scalar_arg(value: Any, dt: str) -> Any:
    """A Python scalar as the numpy scalar matching the kernel argument's C type."""
    if dt == "bool":
        return np.uint8(1 if value else 0)
    if dt == "int32":
        v = int(value) & 0xFFFFFFFF
        return np.int32(v - (1 << 32) if v >= 1 << 31 else v)
    if dt == "int64":
        v = int(value) & 0xFFFFFFFFFFFFFFFF
        return np.int64(v - (1 << 64) if v >= 1 << 63 else v)
    if dt in _NARROW:  # wraps, as PyTorch does with a Python int operand (uint8 + 1000)
        return NP_SCALAR[dt](_NARROW[dt](int(value)))
    if dt == "float16":
        return _f16_scalar(value)
    if dt in _COMPLEX_NP:
        return complex_arg(value, dt)
    return NP_SCALAR[dt](value)


_COMPLEX_NP = {"complex64": np.complex64, "complex128": np.complex128}


def complex_arg(value: Any, dt: str) -> np.void:
    """A Python (or numpy) scalar as the bytes of a ``float2``/``double2`` kernel argument."""
    return np.array(value, _COMPLEX_NP[dt]).view(NP_SCALAR[dt])[()]


def _f16_scalar(value: Any) -> np.float32:
    """A float16 kernel's scalar rounded to float16 (held in a float): a comparison's operand, a
    fill or ``where`` value, a random range, as PyTorch rounds those."""
    with np.errstate(over="ignore"):  # out of range: inf, as numpy's cast
        return np.float32(np.float16(value))


def _bf16_scalar(value: Any) -> np.float32:
    """A bfloat16 kernel's scalar rounded to bfloat16 through float32, as PyTorch converts a
    Python number (held in a float)."""
    with np.errstate(over="ignore"):
        return np.float32(np.float32(value).astype(_BF16))


def numel(shape: Sequence[int]) -> int:
    """Number of elements of ``shape``."""
    n = 1
    for s in shape:
        n *= s
    return n


def chunk(n: int, dev: Device) -> int:
    """Elements per work-item of the loop-style kernels: at least 1024 (so a small op is one or
    a few work-items), else enough chunks for 16 per compute unit; a multiple of 64."""
    per = -(-n // (16 * dev.properties.compute_units))
    return max(1024, -(-per // 64) * 64)


#: a GPU is kept busy by about this many work-items per compute unit
ITEMS_PER_CU = 256


def gpu_parts(dev: Any, items: int) -> int:
    """Parts to split a long reduction into when its outputs give only ``items`` work-items:
    enough for about :data:`ITEMS_PER_CU` per compute unit on a GPU; 1 on CPU devices (a
    work-group per core is already there) and where the items alone fill the GPU. Callers bound
    it by what their reduction can be split into."""
    if not dev.is_gpu or items <= 0:
        return 1
    return int(max(1, -(-dev.properties.compute_units * ITEMS_PER_CU // items)))


def pow2ceil(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``)."""
    return 1 << max(n - 1, 0).bit_length()


def _wrap_int(bits: int) -> Callable[[Any], int]:
    mask, half, full = (1 << bits) - 1, 1 << (bits - 1), 1 << bits

    def conv(value: Any) -> int:
        v = int(value) & mask
        return v - full if v >= half else v

    return conv


def half_bits(value: Any, dt: str) -> np.uint16:
    """The bits of ``value`` rounded to 16-bit float ``dt`` (a fill pattern): bfloat16 through
    float32 (as PyTorch), float16 in one rounding (as numpy)."""
    with np.errstate(over="ignore"):
        if dt == "bfloat16":
            return np.uint16(np.asarray(value, np.float32).astype(_BF16).view(np.uint16)[()])
        return np.uint16(np.asarray(value, np.float64).astype(np.float16).view(np.uint16)[()])


def _wrap_uint8(value: Any) -> int:
    return int(value) & 0xFF


_NARROW = {"uint8": _wrap_uint8, "int8": _wrap_int(8), "int16": _wrap_int(16)}

#: scalar converters for the hot path (what :func:`scalar_arg` does, one function per dtype)
CONVERT: dict[str, Callable[[Any], Any]] = {
    "bool": lambda v: 1 if v else 0, "int32": _wrap_int(32), "int64": _wrap_int(64),
    # float16: a scalar of mul and div as a float32 (others round it to float16: scalar_conv)
    "float32": np.float32, "float64": float, "float16": np.float32,
    # pyopencl packs a Python int by the kernel's declared argument type; narrow ones need numpy
    "uint8": lambda v: np.uint8(_wrap_uint8(v)), "int8": lambda v: np.int8(_NARROW["int8"](v)),
    "int16": lambda v: np.int16(_NARROW["int16"](v)),
    "bfloat16": np.float32,
    "complex64": lambda v: complex_arg(v, "complex64"),
    "complex128": lambda v: complex_arg(v, "complex128"),
}


class Plan:
    """How to launch one elementwise signature: kernel, queue, global/local size, an optional
    tail launch (global size and offset, local size 1) and the constant trailing arguments.

    ``kern`` is the bare ``pyopencl.Kernel`` (``None``: nothing to launch) and ``lock`` its
    device's launch lock: plans are shared by every thread, so each launch (both of a main launch
    and its tail) holds ``lock`` from setting the arguments to the enqueue (see
    :class:`.devices.Kernel`)."""

    __slots__ = ("const", "conv", "gs", "kern", "lock", "ls", "queue", "tail", "toff")

    def __init__(self, kern: Any, queue: Any, gs: tuple, ls: tuple | None, tail: tuple | None,
                 toff: tuple | None, const: tuple, lock: Any = None) -> None:
        self.kern, self.queue, self.gs, self.ls = kern, queue, gs, ls
        self.tail, self.toff, self.const, self.lock = tail, toff, const, lock
        self.conv: Any = None

    def launch(self, args: Sequence[Any]) -> None:
        """Enqueue with the per-call ``args`` (buffers, offsets, scalars), then the constants."""
        if self.kern is None:
            return
        with self.lock:
            self.kern(self.queue, self.gs, self.ls, *args, *self.const)
            if self.tail is not None:
                self.kern(self.queue, self.tail, (1,), *args, *self.const, global_offset=self.toff)


_EMPTY_PLAN = Plan(None, None, (), (), None, None, ())
_PLAN_CACHE_MAX = 8192  # signatures per primitive; the cache is simply cleared when full


def build_plan(dev: Device, family: tuple, kname: str, kernels: Callable[[], dict[str, str]],
               in_types: Sequence[tuple[str, bool]], views: Sequence[View], out: View,
               out_types: dict[str, str] | None = None) -> Plan:
    """The launch plan of kernel ``kname`` of the bundle ``kernels()`` (name -> C expression, see
    :func:`.kernels.elementwise_source`) for ``out`` and the input ``views`` on ``dev``.

    ``family`` keys the program (with the layout chosen here); ``in_types`` gives each input's
    dtype and whether it is a scalar (scalars have no view in ``views``); ``out_types`` gives the
    output dtype of each kernel of a bundle whose kernels write different dtypes."""
    n = numel(out.shape)
    if n == 0:
        return _EMPTY_PLAN
    allv = [out, *views]
    if all(contig(v) for v in allv):
        layout: str | tuple = "c"
        sizes: list[int] = [n]
        strides: list[list[int]] = []
    else:
        sizes, strides = coalesce(out.shape, [v.strides for v in allv])
        layout = "strided"
        if len(sizes) == 1 and all(st[0] == 1 for st in strides):
            layout = "c"
    ls = dev.local_size
    gs: tuple[int, ...]
    lsz: tuple[int, ...] | None  # None: the driver chooses
    tail: tuple[int] | None = None
    toff: tuple[int] | None = None
    const: tuple = ()
    style = dev.ew_style
    if layout == "c":
        if style == "loop":
            layout = "cl"
            ch = chunk(n, dev)
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
        ch = min(sizes[-1], chunk(n, dev))
        lx = min(8, pow2ceil(rows))
        gs, lsz = (-(-rows // lx) * lx, -(-sizes[-1] // ch)), (lx, 1)
        const = tuple(x for st in strides for x in st) + tuple(sizes) + (rows, ch)
    else:
        r = len(sizes)
        layout = ("nd", r)
        lx = min(ls, pow2ceil(sizes[-1]))
        ly = min(ls // lx, pow2ceil(sizes[-2])) if r >= 2 else 1
        gx = -(-sizes[-1] // lx) * lx
        if r == 1:
            gs, lsz = (gx,), (lx,)
        else:
            gy = -(-sizes[-2] // ly) * ly
            if r == 2:
                gs, lsz = (gx, gy), (lx, ly)
            else:
                gs, lsz = (gx, gy, numel(sizes[:-2])), (lx, ly, 1)
        const = tuple(x for st in strides for x in st) + tuple(sizes)
    key = family + (layout,)

    def arg_types() -> list[Any]:
        types: list[Any] = [None, _I64]
        for dt, s in in_types:
            types += [NP_SCALAR[dt]] if s else [None, _I64]
        return types + [_I64] * len(const)

    out_dt = out.dtype.name
    kern = dev.kernel(key, kname, lambda: elementwise_source(kernels(), in_types,
                                                               out_types or out_dt, layout),
                      [dt for dt, _ in in_types] + [out_dt], arg_types)
    return Plan(kern.cl, dev.queue, gs, lsz, tail, toff, const, kern.lock)


def remember(cache: dict, key: tuple, plan: Plan) -> None:
    """Store ``plan`` under ``key``; a full cache is simply cleared first."""
    if len(cache) >= _PLAN_CACHE_MAX:
        cache.clear()
    cache[key] = plan


def scalar_conv(dt: str, as_float32: bool) -> Callable[[Any], Any]:
    """The conversion of a Python scalar operand of a binary op on ``dt`` views: :data:`CONVERT`,
    except that float16 and bfloat16 round the scalar to their type unless ``as_float32`` (see
    :func:`~portagrad.backends.ufuncs.f16_scalar_is_float32`: PyTorch's rule)."""
    if not as_float32:
        if dt == "float16":
            return _f16_scalar
        if dt == "bfloat16":
            return _bf16_scalar
    return CONVERT[dt]


def is_half16(x: Any) -> bool:
    """Whether ``x`` is a bfloat16 or float16 view."""
    return x.__class__ is View and x.dtype in HALF16_DTYPES


def via_f32(backend: Any, fn: Callable[..., None], outs: Sequence[int], *args: Any) -> None:
    """Run primitive ``fn`` of ``backend`` with every 16-bit float view among ``args`` replaced by a
    float32 temporary (loaded unless its position is in ``outs``), then round the temporaries at
    ``outs`` back into their 16-bit views: PyTorch computes 16-bit floats in float32 and rounds once
    per op. The temporaries return to the allocator's cache on the way out; the in-order queue
    runs any later user after these kernels."""
    conv = list(args)
    for i, a in enumerate(args):
        if is_half16(a):
            dev = backend._dev(a)
            conv[i] = backend._empty_like(dev, a.shape, _dtype.float32)
            if i not in outs:
                backend.copy(a, conv[i])
    fn(*conv)
    for i in outs:
        if conv[i] is not args[i]:
            backend.copy(conv[i], args[i])
