"""``XpBackend``: the portagrad backend contract on the Python Array API standard.

Buffers are :class:`Storage` objects: a small mutable holder owning one 1-D array of the chosen
library (the flat storage, created on first use in the dtype of the first view that touches it).
A view is read by the plan :func:`~portagrad_xp_backend.layout.plan` makes for it (a slice, a
transpose of a slice, or a ``take`` of host-computed flat indices) and written back by slice
assignment, by integer-array assignment where the library has it, or by rebuilding the flat
array with ``where`` over a mask (the standard has no scatter).

``Tensor.view(dtype)`` (one buffer read as another dtype) has no Array API equivalent: the
storage is converted through its host bytes when a view of another dtype touches it, so both
dtypes see the same bytes (slow, but exact).

Random numbers are generated on the host by portagrad's Philox reference and transferred, so
``xp`` streams are bit-identical to every other backend's.
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from portagrad.backends.helpers import (DTYPES, NUMPY_DTYPES, fit_scalar, half_scalar_operands,
                                        philox_normal, philox_uniform, unknown_op,
                                        visible_indices)
from portagrad.backends.interface import (ARG_REDUCE_OPS, RANDOM_KINDS, REDUCE_OPS, Backend,
                                          DeviceProperties, View)
from portagrad.errors import DTypeError, OutOfMemoryError

from . import special
from .layout import CONTIG, EMPTY, PERM, Layout, plan
from .namespace import Namespace, load_namespace

__all__ = ["XpBackend", "Storage", "HostStaging", "DEFAULT_CAPACITY"]

# IEEE results (inf, nan, wrapped casts) are what tensors compute, as in PyTorch; numpy-based
# namespaces warn about them
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"array_api_strict\..*")
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"array_api_compat\..*")
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"portagrad_xp_backend\..*")

DEFAULT_CAPACITY = 16 << 30
"""Bytes the ``xp`` device may hold at once unless ``PORTAGRAD_XP_MEMORY_LIMIT`` says otherwise."""

_BF16, _F16, _F32, _F64 = DTYPES["bfloat16"], DTYPES["float16"], DTYPES["float32"], DTYPES["float64"]
_BOOL, _I64 = DTYPES["bool"], DTYPES["int64"]
_NARROW_FLOAT = (_BF16, _F16)  # computed in float32 and rounded once per primitive, as PyTorch
_INT_RANGE = {name: (int(np.iinfo(name).min), int(np.iinfo(name).max))
              for name in ("uint8", "int8", "int16", "int32", "int64")}


class Storage:
    """One buffer of the ``xp`` device: ``nbytes`` of storage, held as the 1-D array ``arr`` of
    the portagrad dtype ``dtype`` (both None until a view first touches it; a first write that
    covers the whole buffer adopts its result instead of filling zeros first)."""

    __slots__ = ("nbytes", "index", "arr", "dtype", "release", "__weakref__")

    def __init__(self, index: int, nbytes: int, release: Any) -> None:
        self.nbytes = nbytes
        self.index = index
        self.arr: Any = None
        self.dtype: Any = None
        self.release = release

    def __del__(self) -> None:
        # the memory statistics drop when the last reference goes (cheaper per allocation than a
        # weakref.finalize, which would do the same)
        self.release(self.index, self.nbytes)

    def length(self, d: Any) -> int:
        """Elements of dtype ``d`` the buffer holds."""
        return -(-self.nbytes // d.itemsize)

    def __repr__(self) -> str:
        return f"Storage(xp:{self.index}, {self.nbytes} bytes, {self.dtype})"


class HostStaging:
    """Host memory handed out by :meth:`XpBackend.pin_memory` (ordinary, not page-locked); the
    numpy arrays over it have it as their ``base``."""

    __slots__ = ("array", "__array_interface__")

    def __init__(self, nbytes: int) -> None:
        self.array = np.empty(nbytes, np.uint8)
        self.__array_interface__ = self.array.__array_interface__


def _wrap_int(s: int, dtype_name: str) -> int:
    """A Python int wrapped into an integer dtype's range (PyTorch: ``uint8 + 1000``)."""
    r = _INT_RANGE.get(dtype_name)
    if r is None or r[0] <= s <= r[1]:
        return s
    return (s - r[0]) % (r[1] - r[0] + 1) + r[0]


class XpBackend(Backend):
    """Device type ``xp``: one device, ``xp:0``, whose arrays belong to the configured Array API
    library (see :mod:`portagrad_xp_backend.namespace`)."""

    device_type = "xp"

    def __init__(self, namespace: Namespace | None = None) -> None:
        self.ns = namespace or load_namespace()
        self.xp = self.ns.xp
        self._physical = visible_indices(self.device_type, 1)
        self._lock = threading.Lock()
        self._allocated = [0] * len(self._physical)
        self._peak = [0] * len(self._physical)
        limit = os.environ.get("PORTAGRAD_XP_MEMORY_LIMIT", "").strip()
        try:
            self.capacity = int(limit) if limit else DEFAULT_CAPACITY
        except ValueError:
            raise ValueError(f"PORTAGRAD_XP_MEMORY_LIMIT={limit!r} is not a number of bytes"
                             ) from None
        self._conv_cache: dict[tuple, Any] = {}  # im2col positions per convolution geometry
        # portagrad dtype -> the namespace's dtype (only the dtypes the library has)
        self._dt: dict[Any, Any] = {}
        for name, d in DTYPES.items():
            x = self.ns.dtype(name)
            if x is not None:
                self._dt[d] = x

    # ---------------------------------------------------------------- devices
    def device_count(self) -> int:
        return len(self._physical)

    def get_device_properties(self, index: int) -> DeviceProperties:
        ns = self.ns
        return DeviceProperties(
            name=f"{ns.name} {ns.version} (Array API {ns.api_version})",
            type="cpu" if ns.name in ("numpy", "array_api_strict") else "accelerator",
            total_memory=self.capacity, fp64=_F64 in self._dt, fp16=_F16 in self._dt,
            compute_units=1,
            extra={"namespace": ns.name, "array_api_version": ns.api_version,
                   "dtypes": [d.name for d in self._dt]})

    def synchronize(self, index: int) -> None:
        return None  # every call below has returned its result (libraries order their work)

    # ----------------------------------------------------------------- memory
    def allocate(self, index: int, nbytes: int) -> Storage:
        with self._lock:
            used = self._allocated[index]
            if used + nbytes > self.capacity:
                raise OutOfMemoryError(
                    f"xp:{index}: tried to allocate {nbytes} bytes with {used} of "
                    f"{self.capacity} bytes in use (PORTAGRAD_XP_MEMORY_LIMIT)")
            self._allocated[index] = used + nbytes
            if used + nbytes > self._peak[index]:
                self._peak[index] = used + nbytes
        return Storage(index, nbytes, self._release)

    def _release(self, index: int, nbytes: int) -> None:
        with self._lock:
            self._allocated[index] -= nbytes

    def memory_stats(self, index: int) -> dict[str, int]:
        a = self._allocated[index]
        return {"allocated": a, "reserved": a, "peak_allocated": self._peak[index]}

    def reset_peak_memory_stats(self, index: int) -> None:
        with self._lock:
            self._peak[index] = self._allocated[index]

    def empty_cache(self, index: int) -> None:
        return None  # no cache: a buffer's array goes when its last view does

    # ------------------------------------------------------------- storage
    def _xdt(self, d: Any) -> Any:
        x = self._dt.get(d)
        if x is None:
            raise DTypeError(f"the xp backend on {self.ns.name} has no {d.name} dtype (it has "
                             f"{', '.join(t.name for t in self._dt)})")
        return x

    def _flat(self, v: View) -> Any:
        """The storage of ``v``'s buffer as a 1-D array of ``v.dtype``."""
        st: Storage = v.buffer
        d = v.dtype
        if st.dtype is d:
            return st.arr
        if st.arr is None:
            xd = self._xdt(d)
            try:
                st.arr = self.xp.zeros(st.length(d), dtype=xd, device=self.ns.device)
            except MemoryError:
                raise OutOfMemoryError(f"xp:{st.index}: {self.ns.name} could not allocate "
                                       f"{st.nbytes} bytes") from None
        else:  # Tensor.view(dtype): reinterpret the bytes (through the host: no standard way)
            raw = np.ascontiguousarray(self._to_numpy(st.arr, st.dtype)).view(np.uint8)
            n = st.length(d) * d.itemsize
            if raw.shape[0] != n:  # element sizes differ: the buffer's bytes, zero padded
                raw = np.concatenate([raw, np.zeros(max(n - raw.shape[0], 0), np.uint8)])[:n]
            st.arr = self._from_numpy(raw.view(NUMPY_DTYPES[d.name]), d)
        st.dtype = d
        return st.arr

    def _to_numpy(self, a: Any, d: Any) -> np.ndarray:
        if d is _BF16:  # numpy has no bfloat16 of its own: through float32 (exact)
            return self.ns.to_numpy(self.xp.astype(a, self._xdt(_F32))).astype(NUMPY_DTYPES["bfloat16"])
        return self.ns.to_numpy(a)

    def _from_numpy(self, a: np.ndarray, d: Any) -> Any:
        if d is _BF16:
            f = self.ns.from_numpy(a.astype(np.float32), self._xdt(_F32))
            return self.xp.astype(f, self._xdt(_BF16))
        return self.ns.from_numpy(a, self._xdt(d))

    def _device_index(self, lay: Layout) -> Any:
        if lay.index is None:
            lay.index = self.xp.asarray(lay.host_index, dtype=self._xdt(_I64),
                                        device=self.ns.device)
        return lay.index

    def _read(self, v: View) -> Any:
        """An array of ``v``'s shape and dtype with its contents (may share memory with the
        storage: never write into it)."""
        lay = v.cache
        if lay is None:
            lay = v.cache = plan(v.offset, v.shape, v.strides)
        st: Storage = v.buffer
        flat = st.arr if st.dtype is v.dtype else self._flat(v)
        kind = lay.kind
        if kind == CONTIG:
            if lay.start == 0 and lay.n == flat.shape[0]:
                a = flat
            else:
                a = flat[lay.start:lay.start + lay.n]
            return a if lay.ndim == 1 else self.xp.reshape(a, lay.shape)
        xp = self.xp
        if kind == EMPTY:
            return xp.empty(v.shape, dtype=flat.dtype, device=self.ns.device)
        if kind == PERM:
            a = xp.reshape(flat[lay.start:lay.start + lay.n], lay.sorted_shape)
            if lay.perm is not None:
                a = xp.permute_dims(a, lay.perm)
        else:
            a = xp.take(flat, self._device_index(lay))
        a = xp.reshape(a, lay.inner_shape)
        return xp.broadcast_to(a, lay.shape) if lay.broadcast else a

    def _write(self, out: View, value: Any, fresh: bool = True) -> None:
        """Store ``value`` (an array broadcastable to ``out.shape``, any dtype) into ``out``.

        ``fresh``: ``value`` is a new array nobody else holds, so a write covering the whole
        storage may adopt it instead of copying."""
        lay = out.cache
        if lay is None:
            lay = out.cache = plan(out.offset, out.shape, out.strides)
        kind = lay.kind
        if kind == EMPTY:
            return
        xp = self.xp
        st: Storage = out.buffer
        d = out.dtype
        xd = self._dt.get(d)
        if xd is None:
            xd = self._xdt(d)
        if value.dtype != xd:
            value = xp.astype(value, xd)
            fresh = True
        if value.shape != lay.shape:
            if _numel(value.shape) == _numel(lay.shape):  # a flat result (from_host, random)
                value = xp.reshape(value, lay.shape)
            else:
                value = xp.broadcast_to(value, lay.shape)
                fresh = False
        if kind == CONTIG:
            n = lay.n
            v1 = value if lay.ndim == 1 else xp.reshape(value, (n,))
            lo, hi = lay.start, lay.start + n
            if lo == 0 and n == st.length(d):  # the whole buffer: adopt the result
                st.arr = v1 if fresh else xp.asarray(v1, copy=True)
                st.dtype = d
                return
            flat = st.arr if st.dtype is d else self._flat(out)
            if self.ns.slice_assign:
                flat[lo:hi] = v1
            else:
                st.arr = xp.concat([flat[:lo], v1, flat[hi:]])
            return
        flat = self._flat(out)
        if lay.broadcast:
            # several positions share one element (``x.expand(3, 3).fill_(1)``): the last write
            # in C order wins, as in numpy and PyTorch's CPU kernels
            value = value[tuple(slice(n - 1, n) if m == 1 and n != 1 else slice(None)
                                for n, m in zip(out.shape, lay.inner_shape))]
            fresh = False
        if lay.kind == PERM:
            if lay.perm is not None:  # back to the storage's order: the inverse permutation
                value = xp.permute_dims(xp.reshape(value, lay.dims_shape), lay.inverse_perm)
            v1 = xp.reshape(value, (lay.n,))
            lo, hi = lay.start, lay.start + lay.n
            if lo == 0 and hi == flat.shape[0] and fresh:
                st.arr = v1
            elif self.ns.slice_assign:
                flat[lo:hi] = v1
            else:
                st.arr = xp.concat([flat[:lo], v1, flat[hi:]])
            return
        v1 = xp.reshape(value, (lay.n,))
        if self.ns.int_assign:
            flat[self._device_index(lay)] = v1
            return
        # no scatter in the standard: rebuild the storage, taking the view's positions from
        # the value (mask and inverse index computed once per view on the host)
        if lay.scatter is None:
            size = flat.shape[0]
            mask = np.zeros(size, np.bool_)
            inv = np.zeros(size, np.int64)
            assert lay.host_index is not None
            mask[lay.host_index] = True
            inv[lay.host_index] = np.arange(lay.n, dtype=np.int64)
            lay.scatter = (xp.asarray(mask, device=self.ns.device),
                           xp.asarray(inv, device=self.ns.device))
        mask_x, inv_x = lay.scatter
        st.arr = xp.where(mask_x, xp.take(v1, inv_x), flat)

    # ------------------------------------------------------------ pinned memory
    # ``pin_memory()`` must work wherever an accelerator is available (PyTorch's rule, which the
    # core follows). The Array API has no page-locked memory: the libraries here keep their arrays
    # in host memory or stage transfers themselves, so "pinned" buffers are ordinary host memory,
    # marked so that ``is_pinned`` recognises them.
    def pin_memory(self, nbytes: int) -> np.ndarray:
        return np.asarray(HostStaging(nbytes))

    def is_pinned(self, array: np.ndarray) -> bool:
        a: Any = array
        for _ in range(64):  # base chains are short; the bound guards against cycles
            if a is None:
                return False
            if isinstance(a, HostStaging):
                return True
            a = getattr(a, "base", None)
        return False

    # ----------------------------------------------------------------- events
    # Every primitive has finished when it returns (the libraries run eagerly, or order their
    # work on one stream), so an event is the host time at which it was recorded.
    def record_event(self, index: int) -> float:
        return time.perf_counter()

    def event_wait(self, event: float) -> None:
        return None

    def event_query(self, event: float) -> bool:
        return True

    def event_elapsed_ms(self, start: float, end: float) -> float:
        return (end - start) * 1000.0

    # --------------------------------------------------------------- transfers
    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        if dst.numel == 0:
            return
        self._write(dst, self._from_numpy(np.ascontiguousarray(src).reshape(-1), dst.dtype))

    def to_host(self, src: View) -> np.ndarray:
        a = self._to_numpy(self._read(src), src.dtype)
        return np.array(a, dtype=NUMPY_DTYPES[src.dtype.name], order="C", copy=True).reshape(src.shape)

    def copy_between(self, dst: View, src: View) -> None:
        self._write(dst, self._read(src), fresh=False)

    # ------------------------------------------------------------- helpers
    def _compute_dtype(self, d: Any) -> Any:
        """bfloat16 and float16 compute in float32 (rounded once when written), as PyTorch."""
        return self._xdt(_F32) if d in _NARROW_FLOAT else self._xdt(d)

    def _in(self, v: View) -> Any:
        """``v``'s contents in its computation dtype."""
        a = self._read(v)
        if v.dtype in _NARROW_FLOAT:
            a = self.xp.astype(a, self._xdt(_F32))
        return a

    def _scalar(self, s: Any, d: Any) -> Any:
        """A Python scalar as a 0-d array of the computation dtype of portagrad dtype ``d``."""
        if s.__class__ is int and d.name in _INT_RANGE:
            s = _wrap_int(s, d.name)
        return self.xp.asarray(s, dtype=self._compute_dtype(d), device=self.ns.device)

    def _operands(self, a: Any, b: Any) -> tuple[Any, Any, Any]:
        """Both operands as arrays (a scalar becomes a 0-d array of the other's dtype), and the
        portagrad dtype they have."""
        if isinstance(a, View):
            d = a.dtype
            x = self._in(a)
            y = self._in(b) if isinstance(b, View) else self._scalar(b, d)
        else:
            d = b.dtype
            y = self._in(b)
            x = self._scalar(a, d)
        return x, y, d

    # ------------------------------------------------------------- primitives
    def unary(self, op: str, x: View, out: View) -> None:
        xp = self.xp
        a = self._in(x)
        d = x.dtype
        is_float = d.is_floating_point
        fresh = True
        if op == "neg":
            r = xp.logical_not(a) if d is _BOOL else xp.negative(a)
        elif op == "abs":
            r, fresh = (a, False) if d is _BOOL else (xp.abs(a), True)
        elif op == "sign":
            if d is _BOOL:
                r, fresh = a, False
            else:
                r = xp.sign(a)
                if is_float:  # PyTorch: sign(nan) == 0
                    r = xp.where(xp.isnan(a), xp.zeros_like(r), r)
        elif op in ("exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh"):
            r = getattr(xp, op)(a)
        elif op == "rsqrt":
            r = 1.0 / xp.sqrt(a)
        elif op == "reciprocal":
            r = 1.0 / a
        elif op == "sigmoid":
            # PyTorch's formula: 0 where e^-x overflows to inf (not the subnormal of the
            # exp(-|x|) form)
            r = 1.0 / (1.0 + xp.exp(-a))
        elif op == "relu":
            if d is _BOOL:
                r, fresh = a, False
            else:  # maximum(nan, 0) is nan; maximum(-0.0, +0.0) is +0.0 with zeros second
                r = xp.maximum(a, xp.zeros_like(a))
        elif op == "erf":
            r = self.ns.erf(a) if self.ns.erf is not None else special.erf(xp, a)
            if not hasattr(r, "dtype") or r.dtype != a.dtype:
                r = xp.astype(xp.asarray(r), a.dtype)
        elif op in ("floor", "ceil", "trunc", "round"):
            if is_float:
                r = getattr(xp, op)(a)  # round: half to even, as the standard says
            else:
                r, fresh = a, False
        elif op == "logical_not":
            r = xp.logical_not(a) if d is _BOOL else (a == 0)
        elif op in ("isnan", "isinf"):
            r = getattr(xp, op)(a) if is_float else xp.zeros(a.shape, dtype=xp.bool)
        else:
            raise unknown_op("unary", op, self.device_type)
        self._write(out, r, fresh)

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        xp = self.xp
        if not isinstance(a, View) and not isinstance(b, View):
            # two scalars: compute once on 0-d arrays, then fill
            d = out.dtype if op not in _BOOL_RESULT else _operand_dtype(a, b)
            r = self._binary(op, self._scalar(a, d), self._scalar(b, d), d)
            self._write(out, xp.broadcast_to(r, out.shape), fresh=False)
            return
        view = a if isinstance(a, View) else b
        # a 16-bit float's scalar operand as PyTorch takes it (float32 or rounded first)
        a, b = half_scalar_operands(op, a, b, view.dtype.name)
        x, y, d = self._operands(a, b)
        self._write(out, self._binary(op, x, y, d))

    def _binary(self, op: str, x: Any, y: Any, d: Any) -> Any:
        xp = self.xp
        is_bool = d is _BOOL
        is_int = not is_bool and not d.is_floating_point
        if op == "add":
            return xp.logical_or(x, y) if is_bool else x + y
        if op == "sub":
            return x - y
        if op == "mul":
            return xp.logical_and(x, y) if is_bool else x * y
        if op == "div":
            return x / y
        if op in ("floordiv", "remainder", "fmod"):
            if is_int and bool(xp.any(y == 0)):
                raise ZeroDivisionError("ZeroDivisionError: integer division or modulo by zero")
            if op == "floordiv":
                return xp.floor_divide(x, y)
            if op == "remainder":
                return xp.remainder(x, y)
            if self.ns.fmod is not None:
                return self.ns.fmod(x, y)
            return special.fmod_int(xp, x, y) if is_int else special.fmod_float(xp, x, y)
        if op == "pow":
            return xp.pow(x, y)
        if op in ("maximum", "minimum"):
            if is_bool:  # logical or/and: True > False
                return xp.logical_or(x, y) if op == "maximum" else xp.logical_and(x, y)
            return getattr(xp, op)(x, y)
        if op == "atan2":
            return xp.atan2(x, y)
        if op in ("logical_and", "logical_or", "logical_xor"):
            if not is_bool:
                x, y = x != 0, y != 0
            return getattr(xp, op)(x, y)
        if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            return getattr(xp, op)(x, y)
        if op in _COMPARE:
            if is_bool and op not in ("eq", "ne"):  # the standard orders numbers only
                x, y = xp.astype(x, xp.int8), xp.astype(y, xp.int8)
            return getattr(xp, _COMPARE[op])(x, y)
        raise unknown_op("binary", op, self.device_type)

    def where(self, cond: View, a: Any, b: Any, out: View) -> None:
        xp = self.xp
        d = out.dtype
        c = self._read(cond)

        def operand(s: Any) -> Any:
            if isinstance(s, View):
                return self._read(s)
            if s.__class__ is int or s.__class__ is float:  # PyTorch's checked conversion
                s = fit_scalar(s, d.name)
            return xp.asarray(s, dtype=self._xdt(d), device=self.ns.device)

        self._write(out, xp.where(c, operand(a), operand(b)))

    def copy(self, src: View, dst: View) -> None:
        xp = self.xp
        s, d = src.dtype, dst.dtype
        if s is d:
            self._write(dst, self._read(src), fresh=False)
            return
        a = self._in(src)
        if d is _BOOL:
            r = a != 0
        elif s.is_floating_point and not d.is_floating_point:
            # float to int truncates toward zero (NaN and out-of-range values are undefined, as
            # in C and PyTorch)
            r = xp.astype(xp.trunc(a), self._xdt(d))
        else:
            r = xp.astype(a, self._xdt(d))
        self._write(dst, r)

    def fill(self, out: View, value: Any) -> None:
        if out.numel == 0:
            return
        v = fit_scalar(value, out.dtype.name)
        r = self.xp.full(out.shape, v, dtype=self._xdt(out.dtype), device=self.ns.device)
        self._write(out, r)

    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        xp = self.xp
        if op not in REDUCE_OPS:
            raise unknown_op("reduce", op, self.device_type)
        a = self._in(x)
        axes = tuple(axes)
        if not axes:
            self._write(out, a, fresh=False)
            return
        d = x.dtype
        if op in ("sum", "prod"):
            if d is _BOOL:
                a = xp.astype(a, self._xdt(out.dtype))
            f = xp.sum if op == "sum" else xp.prod
            r = f(a, axis=axes, keepdims=True, dtype=a.dtype)
        elif d is _BOOL:
            r = (xp.any if op == "max" else xp.all)(a, axis=axes, keepdims=True)
        else:
            r = (xp.max if op == "max" else xp.min)(a, axis=axes, keepdims=True)
        self._write(out, r)

    def arg_reduce(self, op: str, x: View, axis: int, out: View) -> None:
        xp = self.xp
        if op not in ARG_REDUCE_OPS:
            raise unknown_op("arg_reduce", op, self.device_type)
        a = self._in(x)
        if x.dtype is _BOOL:
            a = xp.astype(a, xp.int8)
        f = xp.argmax if op == "argmax" else xp.argmin
        self._write(out, f(a, axis=axis, keepdims=True))

    def cumsum(self, x: View, axis: int, out: View) -> None:
        xp = self.xp
        a = self._in(x)
        cd = self._compute_dtype(out.dtype)
        if a.dtype != cd:
            a = xp.astype(a, cd)
        if x.numel == 0:
            self._write(out, a, fresh=False)
            return
        self._write(out, xp.cumulative_sum(a, axis=axis, dtype=cd))

    def matmul(self, a: View, b: View, out: View) -> None:
        xp = self.xp
        x, y = self._in(a), self._in(b)
        if a.shape[2] == 0:  # K == 0: zeros
            r = xp.zeros(out.shape, dtype=self._compute_dtype(out.dtype), device=self.ns.device)
        elif out.shape[0] == 1:  # one matrix: the library's plain GEMM, not its batched path
            r = xp.matmul(x[0, ...], y[0, ...])
        else:
            r = xp.matmul(x, y)
        self._write(out, r)

    # ---------------------------------------------------------- indexing
    def _sliced(self, a: Any, axis: int, shape: Sequence[int]) -> Any:
        """``a`` cut to ``shape`` on every axis but ``axis`` (the index may be smaller than the
        input along the other axes, PyTorch's rule)."""
        if tuple(a.shape[d] for d in range(a.ndim) if d != axis) == \
                tuple(shape[d] for d in range(len(shape)) if d != axis):
            return a
        return a[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(shape))]

    def _take_along(self, a: Any, idx: Any, axis: int) -> Any:
        xp = self.xp
        f = getattr(xp, "take_along_axis", None)
        if f is not None:
            return f(a, idx, axis=axis)
        # before Array API 2024.12: flat positions of a contiguous copy, then take
        lin = self._linear(idx, axis, tuple(a.shape))
        return xp.reshape(xp.take(xp.reshape(a, (-1,)), xp.reshape(lin, (-1,))), idx.shape)

    def _linear(self, idx: Any, axis: int, shape: tuple[int, ...]) -> Any:
        """Flat C-order positions in an array of ``shape`` of the elements an index along
        ``axis`` selects (``idx`` has the rank of ``shape`` and fits in it)."""
        xp = self.xp
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        lin = idx * strides[axis]
        i64 = self._xdt(_I64)
        for d, n in enumerate(idx.shape):
            if d != axis and n > 1:
                r = xp.arange(n, dtype=i64, device=self.ns.device) * strides[d]
                lin = lin + xp.reshape(r, tuple(n if k == d else 1 for k in range(idx.ndim)))
        return lin

    def gather(self, x: View, axis: int, index: View, out: View) -> None:
        if out.numel == 0:
            return
        a = self._sliced(self._read(x), axis, index.shape)
        self._write(out, self._take_along(a, self._read(index), axis))

    def scatter(self, out: View, axis: int, index: View, src: View, reduce: str | None) -> None:
        xp = self.xp
        if index.numel == 0:
            return
        # positions in out's C order, computed on the device; their pattern (which positions,
        # and how often each) is read on the host to plan the writes
        lin = xp.reshape(self._linear(self._read(index), axis, out.shape), (-1,))
        # in the tensors' own dtype: a bfloat16 scatter-add rounds every sum, as PyTorch's
        s = xp.reshape(self._read(src), (-1,))
        cur = xp.reshape(self._read(out), (-1,))
        size = out.numel
        pos = self.ns.to_numpy(lin).astype(np.int64, copy=False)
        n = pos.shape[0]
        # occurrence rank of each element among those hitting the same position, in order
        order = np.argsort(pos, kind="stable")
        sp = pos[order]
        starts = np.flatnonzero(np.r_[True, sp[1:] != sp[:-1]])
        run = np.repeat(starts, np.diff(np.r_[starts, n]))
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n) - run
        i64 = self._xdt(_I64)
        if reduce is None:
            # the last write to a position wins, as numpy's and PyTorch's CPU kernels do
            inv = np.zeros(size, np.int64)
            mask = np.zeros(size, np.bool_)
            inv[pos] = np.arange(n)
            mask[pos] = True
            new = xp.where(xp.asarray(mask, device=self.ns.device),
                           xp.take(s, xp.asarray(inv, dtype=i64, device=self.ns.device)), cur)
        elif int(rank.max()) >= _MAX_ADD_PASSES:
            # many duplicates (an embedding's padding row...): one pass per occurrence rank would
            # cost more than the round trip, so accumulate on the host, in index order as below
            h = np.array(self._to_numpy(cur, out.dtype), copy=True)
            np.add.at(h, pos, self._to_numpy(s, out.dtype))
            new = self._from_numpy(h, out.dtype)
        else:
            # duplicates accumulate in index order: one pass per occurrence rank
            new = cur
            for r in range(int(rank.max()) + 1):
                sel = rank == r
                inv = np.zeros(size, np.int64)
                mask = np.zeros(size, np.bool_)
                inv[pos[sel]] = np.flatnonzero(sel)
                mask[pos[sel]] = True
                add = xp.take(s, xp.asarray(inv, dtype=i64, device=self.ns.device))
                new = xp.where(xp.asarray(mask, device=self.ns.device), new + add, new)
        self._write(out, xp.reshape(new, out.shape), fresh=new is not cur)

    def sort(self, x: View, axis: int, descending: bool, values: View, indices: View) -> None:
        xp = self.xp
        a = self._in(x)
        k = xp.astype(a, xp.int8) if x.dtype is _BOOL else a
        if descending:
            # a stable ascending sort of the reversed axis, reversed back: ties keep their order
            # and NaN (sorted last ascending) comes first, as in PyTorch
            n = a.shape[axis]
            rev = xp.flip(xp.argsort(xp.flip(k, axis=axis), axis=axis, stable=True), axis=axis)
            idx = (n - 1) - rev
        else:
            idx = xp.argsort(k, axis=axis, stable=True)
        idx = xp.astype(idx, self._xdt(_I64))
        self._write(indices, idx)
        self._write(values, self._take_along(a, idx, axis))

    def random(self, kind: str, out: View, seed: int, offset: int, a: float, b: float) -> None:
        # generated on the host by portagrad's Philox reference, then transferred: the xp
        # streams are bit-identical to the cpu backend's
        if kind not in RANDOM_KINDS:
            raise unknown_op("random", kind, self.device_type)
        n = out.numel
        if n == 0:
            return
        gen = philox_uniform if kind == "uniform" else philox_normal
        if out.dtype is _BF16:
            h = gen(n, seed, offset, a, b, np.dtype(np.float32)).astype(NUMPY_DTYPES["bfloat16"])
        else:
            h = gen(n, seed, offset, a, b, NUMPY_DTYPES[out.dtype.name])
        self._write(out, self._from_numpy(np.ascontiguousarray(h).reshape(-1), out.dtype))


    # ------------------------------------------------------- optional fast paths
    # Convolution as im2col by ``take`` (flat positions computed on the host once per geometry,
    # out-of-input positions pointing at an appended zero) and one batched matmul; the input
    # gradient gathers, for every input position, the (at most kh*kw) columns that read it, so
    # no scatter is needed. Without these the core composes convolutions from gather and
    # matmul for groups == 1 only.
    def _conv_index(self, key: tuple, make: Any) -> Any:
        idx = self._conv_cache.get(key)
        if idx is None:
            if len(self._conv_cache) > 256:
                self._conv_cache.clear()
            idx = self._conv_cache[key] = self.xp.asarray(make(), dtype=self._xdt(_I64),
                                                           device=self.ns.device)
        return idx

    def _im2col(self, x: View, ksize: tuple[int, int], osize: tuple[int, int], stride: Any,
                padding: Any, dilation: Any, groups: int) -> Any:
        """(N, G, C/G*kh*kw, OH*OW) columns of ``x`` (N, C, H, W); outside the input reads 0."""
        xp = self.xp
        N, C, H, W = x.shape
        geom = (C, H, W) + tuple(ksize) + tuple(osize) + tuple(stride) + tuple(padding) + \
            tuple(dilation)
        idx = self._conv_index(("cols",) + geom, lambda: _cols_index(*geom))
        a = xp.reshape(self._in(x), (N, C * H * W))
        a = xp.concat([a, xp.zeros((N, 1), dtype=a.dtype, device=self.ns.device)], axis=1)
        cols = xp.take(a, idx, axis=1)
        K = ksize[0] * ksize[1]
        return xp.reshape(cols, (N, groups, C // groups * K, osize[0] * osize[1]))

    def conv2d(self, x: View, w: View, out: View, stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], groups: int) -> None:
        xp = self.xp
        O, Cg, kh, kw = w.shape
        N, _, OH, OW = out.shape
        cols = self._im2col(x, (kh, kw), (OH, OW), stride, padding, dilation, groups)
        wm = xp.reshape(self._in(w), (1, groups, O // groups, Cg * kh * kw))
        r = xp.matmul(wm, cols)  # (N, G, O/G, L)
        self._write(out, xp.reshape(r, out.shape))

    def conv2d_grad_weight(self, x: View, g: View, out: View, stride: Sequence[int],
                           padding: Sequence[int], dilation: Sequence[int], groups: int) -> None:
        xp = self.xp
        O, Cg, kh, kw = out.shape
        N, _, OH, OW = g.shape
        G, L = groups, OH * OW
        cols = self._im2col(x, (kh, kw), (OH, OW), stride, padding, dilation, groups)
        cols = xp.reshape(xp.permute_dims(cols, (1, 0, 3, 2)), (G, N * L, Cg * kh * kw))
        gm = xp.reshape(self._in(g), (N, G, O // G, L))
        gm = xp.reshape(xp.permute_dims(gm, (1, 2, 0, 3)), (G, O // G, N * L))
        self._write(out, xp.reshape(xp.matmul(gm, cols), out.shape))

    def conv2d_grad_input(self, g: View, w: View, out: View, stride: Sequence[int],
                          padding: Sequence[int], dilation: Sequence[int], groups: int) -> None:
        xp = self.xp
        N, C, H, W = out.shape
        O, Cg, kh, kw = w.shape
        OH, OW = g.shape[2:]
        G, K, L = groups, kh * kw, OH * OW
        wm = xp.permute_dims(xp.reshape(self._in(w), (G, O // G, Cg * K)), (0, 2, 1))
        gm = xp.reshape(self._in(g), (N, G, O // G, L))
        gc = xp.reshape(xp.matmul(wm, gm), (N, C * K * L))  # the columns' gradient
        gc = xp.concat([gc, xp.zeros((N, 1), dtype=gc.dtype, device=self.ns.device)], axis=1)
        geom = (C, H, W, kh, kw, OH, OW) + tuple(stride) + tuple(padding) + tuple(dilation)
        inv = self._conv_index(("inv",) + geom, lambda: _inverse_cols_index(*geom))
        gx = xp.sum(xp.reshape(xp.take(gc, inv, axis=1), (N, C * H * W, K)), axis=2)
        self._write(out, xp.reshape(gx, out.shape))


def _cols_index(C: int, H: int, W: int, kh: int, kw: int, OH: int, OW: int, sh: int, sw: int,
                ph: int, pw: int, dh: int, dw: int) -> np.ndarray:
    """Flat positions in a (C, H, W) input of im2col's (C, kh, kw, OH, OW) columns; positions
    outside the input are ``C*H*W`` (an appended zero)."""
    hs = (np.arange(OH) * sh - ph)[None, :] + (np.arange(kh) * dh)[:, None]  # (kh, OH)
    ws = (np.arange(OW) * sw - pw)[None, :] + (np.arange(kw) * dw)[:, None]  # (kw, OW)
    hv = (hs >= 0) & (hs < H)
    wv = (ws >= 0) & (ws < W)
    pos = hs[:, None, :, None] * W + ws[None, :, None, :]  # (kh, kw, OH, OW)
    ok = hv[:, None, :, None] & wv[None, :, None, :]
    full = (np.arange(C) * (H * W))[:, None, None, None, None] + pos[None]
    full = np.where(ok[None], full, C * H * W)
    return full.reshape(-1).astype(np.int64)


def _inverse_cols_index(C: int, H: int, W: int, kh: int, kw: int, OH: int, OW: int, sh: int,
                        sw: int, ph: int, pw: int, dh: int, dw: int) -> np.ndarray:
    """For every input position (C, H, W) and tap (kh, kw): the flat position in the (C, kh, kw,
    OH, OW) columns that read it, or ``C*kh*kw*OH*OW`` (an appended zero) when none does."""
    K, L = kh * kw, OH * OW
    q_h = np.arange(H)[:, None] + ph - (np.arange(kh) * dh)[None, :]  # (H, kh) = oh * sh
    q_w = np.arange(W)[:, None] + pw - (np.arange(kw) * dw)[None, :]  # (W, kw)
    oh, ow = q_h // sh, q_w // sw
    okh = (q_h % sh == 0) & (oh >= 0) & (oh < OH)
    okw = (q_w % sw == 0) & (ow >= 0) & (ow < OW)
    tap = (np.arange(kh) * kw)[:, None] + np.arange(kw)[None, :]  # (kh, kw)
    # (H, W, kh, kw) position within one channel's columns
    pos = tap[None, None] * L + oh[:, None, :, None] * OW + ow[None, :, None, :]
    ok = okh[:, None, :, None] & okw[None, :, None, :]
    full = (np.arange(C) * (K * L))[:, None, None, None, None] + pos[None]
    full = np.where(ok[None], full, C * K * L)
    return full.reshape(-1).astype(np.int64)


_MAX_ADD_PASSES = 8  # scatter-add passes on the device before the host does it (see scatter)
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
            "ge": "greater_equal"}
_BOOL_RESULT = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                          "logical_xor"))


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _operand_dtype(a: Any, b: Any) -> Any:
    """The dtype two Python scalars of one category stand for (the core passes matching types)."""
    for s in (a, b):
        if s.__class__ is float:
            return _F64
    for s in (a, b):
        if s.__class__ is int:
            return _I64
    return _BOOL
