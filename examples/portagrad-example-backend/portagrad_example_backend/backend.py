"""``ExampleBackend``: a backend written from scratch that implements only the small core.

Device type ``example``, two virtual devices whose memory is host memory: a buffer is a 1-D
``uint8`` numpy array, and the primitives compute with numpy where a real backend would launch
kernels. It implements the eleven methods of
:data:`portagrad.backends.interface.REQUIRED_METHODS` and nothing else: ``where``, ``gather``,
``sort``, ``random``, memory statistics, ``synchronize``, ``copy_between``... come from the
defaults of :class:`portagrad.backends.interface.Backend`. What it shows:

* devices filtered by ``PORTAGRAD_VISIBLE_DEVICES`` through
  :func:`portagrad.backends.helpers.visible_indices` (logical index -> physical device);
* real per-device memory accounting: ``allocate`` counts each buffer with
  ``self.memory_counter.track`` (the count goes down when the buffer is freed) and raises
  :class:`portagrad.OutOfMemoryError` past the device's capacity;
* views: ``(buffer, offset, shape, strides, dtype)`` with offsets and strides in elements, turned
  into one native array per view and memoised in ``View.cache``;
* the dtype rules every backend follows: bfloat16 computed in float32 and rounded once, narrow
  integer scalars wrapped or checked, integer division by zero raising, NaN rules.
"""
from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from portagrad.backends.helpers import (BINARY_UFUNCS, DTYPES, fit_scalar,
                                        half_scalar_operands, unknown_op, visible_indices)
from portagrad.backends.interface import REDUCE_OPS, Backend, DeviceProperties, View
from portagrad.errors import OutOfMemoryError

__all__ = ["ExampleBackend", "CAPACITY"]

CAPACITY = 1 << 30  # bytes per virtual device
_PHYSICAL = 2  # virtual devices before PORTAGRAD_VISIBLE_DEVICES
_BF16 = DTYPES["bfloat16"].numpy

# numpy's floating-point warnings from this module are IEEE results (inf, nan) that tensors return,
# as in PyTorch. A filter costs nothing per call; entering np.errstate costs microseconds per op.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)

_erf = np.vectorize(math.erf, otypes=[np.float64])


# (element strides, itemsize) -> byte strides: the core passes few distinct strides, and building
# the tuple costs about as much as the ndarray itself
_BYTE_STRIDES: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}


def _nd(v: View) -> np.ndarray:
    """The numpy array a view shows, built once per view (``View.cache`` is the backend's slot)."""
    a = v.cache
    if a is None:
        dt = v.dtype.numpy
        isz = dt.itemsize
        key = (v.strides, isz)
        bs = _BYTE_STRIDES.get(key)
        if bs is None:
            bs = tuple([s * isz for s in v.strides])
            if len(_BYTE_STRIDES) < 4096:
                _BYTE_STRIDES[key] = bs
        if 0 in v.shape:  # no element is touched; numpy would still check the offset's range
            a = np.empty(v.shape, dt)
        else:
            a = np.ndarray(v.shape, dt, v.buffer, v.offset * isz, bs)
        v.cache = a
    return a


def _src(x: Any) -> Any:
    """An operand as numpy computes it: a view's array (bfloat16 as float32) or a scalar."""
    if not isinstance(x, View):
        return x
    a = _nd(x)
    return a.astype(np.float32) if a.dtype == _BF16 else a


def _dst(v: View) -> np.ndarray:
    """Where a result is computed: the view's array, or a float32 scratch for bfloat16."""
    a = _nd(v)
    return np.empty(a.shape, np.float32) if a.dtype == _BF16 else a


def _done(v: View, result: np.ndarray) -> None:
    """Round a float32 scratch result into its bfloat16 view (once, to nearest even)."""
    if result is not v.cache:
        np.copyto(_nd(v), result, casting="unsafe")


def _wrap(s: Any, like: Any) -> Any:
    """A Python int operand wrapped into the narrow integer dtype of the view ``like``
    (``uint8 + 1000`` is ``uint8 + 232``, as in PyTorch)."""
    if s.__class__ is not int or not isinstance(like, View):
        return s
    dt = like.dtype.numpy
    if dt.kind not in "iu" or dt.itemsize >= 8:
        return s
    info = np.iinfo(dt)
    lo, span = int(info.min), int(info.max) - int(info.min) + 1
    return (s - lo) % span + lo


def _scalar_in(s: Any, dt: np.dtype) -> np.ndarray:
    """The Python scalar ``s`` as a 0-d array of ``dt`` (an int wrapped into it first)."""
    if s.__class__ is int and dt.kind in "iu" and dt.itemsize < 8:
        info = np.iinfo(dt)
        lo, span = int(info.min), int(info.max) - int(info.min) + 1
        s = (s - lo) % span + lo
    return np.array(s, dt)


def _sigmoid(x: np.ndarray, out: np.ndarray) -> None:
    if x.dtype == np.float16:  # in float32, rounded once (PyTorch's half kernels)
        x = x.astype(np.float32)
    with np.errstate(over="ignore"):  # PyTorch's formula: 0 where e^-x overflows to inf
        np.divide(1, 1 + np.exp(-x), out=out)


def _sign(x: np.ndarray, out: np.ndarray) -> None:
    if x.dtype == np.bool_:
        out[...] = x
        return
    np.sign(x, out=out)
    if x.dtype.kind == "f":
        np.copyto(out, 0, where=np.isnan(x))  # PyTorch: sign(nan) == 0


def _rsqrt(x: np.ndarray, out: np.ndarray) -> None:
    np.sqrt(x, out=out)
    np.divide(1, out, out=out)


_UNARY: dict[str, Any] = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "expm1": np.expm1, "log": np.log,
    "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc,
    "reciprocal": np.reciprocal, "logical_not": np.logical_not, "isnan": np.isnan,
    "isinf": np.isinf,
    "relu": lambda x, out: np.maximum(x, 0, out=out),  # maximum propagates NaN
    "rsqrt": _rsqrt, "sigmoid": _sigmoid, "sign": _sign,
    "erf": lambda x, out: np.copyto(out, _erf(x), casting="unsafe"),
}
_REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


class ExampleBackend(Backend):
    """Device type ``example``: ``example:0`` and ``example:1`` (fewer, or reordered, under
    ``PORTAGRAD_VISIBLE_DEVICES``); memory is counted per logical index."""

    device_type = "example"

    def __init__(self) -> None:
        # logical index i is physical device self._physical[i]
        self._physical = visible_indices(self.device_type, _PHYSICAL)
        self._lock = threading.Lock()  # makes the capacity check and the count one step

    # ---------------------------------------------------------------- devices
    def device_count(self) -> int:
        return len(self._physical)

    def get_device_properties(self, index: int) -> DeviceProperties:
        return DeviceProperties(name=f"Example virtual device {self._physical[index]}",
                                type="accelerator", total_memory=CAPACITY, fp64=True, fp16=True,
                                compute_units=1)

    # ----------------------------------------------------------------- memory
    def allocate(self, index: int, nbytes: int) -> np.ndarray:
        with self._lock:
            used = self.memory_counter.allocated(index)
            if used + nbytes > CAPACITY:
                raise OutOfMemoryError(
                    f"example:{index}: cannot allocate {nbytes} bytes: {used} of {CAPACITY} "
                    f"bytes are in use")
            buf = np.empty(nbytes, np.uint8)  # numpy aligns it for every dtype
            self.memory_counter.track(index, buf, nbytes)  # released when buf is freed
        return buf

    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        _nd(dst)[...] = src.reshape(dst.shape)

    def to_host(self, src: View) -> np.ndarray:
        return np.array(_nd(src), order="C", copy=True)

    # ------------------------------------------------------------- primitives
    def copy(self, src: View, dst: View) -> None:
        s, d = _src(src), _nd(dst)
        if d.dtype.kind in "iub" and s.dtype.kind == "f":
            if d.dtype == np.bool_:  # float -> bool is != 0; -> int truncates toward zero
                np.not_equal(s, 0, out=d)
            else:
                d[...] = np.trunc(s)
            return
        np.copyto(d, _nd(src), casting="unsafe")

    def fill(self, out: View, value: int | float | bool) -> None:
        _nd(out).fill(fit_scalar(value, out.dtype.name))  # uint8.fill(300) raises, as PyTorch

    def unary(self, op: str, x: View, out: View) -> None:
        f = _UNARY.get(op)
        if f is None:
            raise unknown_op("unary", op, self.device_type)
        o = _dst(out)
        f(_src(x), out=o) if isinstance(f, np.ufunc) else f(_src(x), o)
        _done(out, o)

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        f = BINARY_UFUNCS.get(op)
        if f is None:
            raise unknown_op("binary", op, self.device_type)
        a, b = _wrap(a, b), _wrap(b, a)
        view = a if isinstance(a, View) else b
        if isinstance(view, View):  # a 16-bit float's scalar operand, as PyTorch takes it
            a, b = half_scalar_operands(op, a, b, view.dtype.name)
        o = _dst(out)
        if a.__class__ is int and b.__class__ is int and o.dtype.kind in "iu":
            # two Python ints: numpy would compute them in int64 and refuse to store into uint8
            # (same_kind); as 0-d arrays of out's dtype the result wraps as PyTorch's
            a, b = _scalar_in(a, o.dtype), _scalar_in(b, o.dtype)
        xa, xb = _src(a), _src(b)
        if op in ("floordiv", "remainder", "fmod") and o.dtype.kind in "iu":
            if np.any(np.asarray(xb) == 0):  # PyTorch raises; numpy would write 0
                raise ZeroDivisionError("ZeroDivisionError: integer division or modulo by zero")
        f(xa, xb, out=o)
        _done(out, o)

    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        if op not in REDUCE_OPS:
            raise unknown_op("reduce", op, self.device_type)
        xa, o = _src(x), _dst(out)
        # a bool sum/prod counts in out's dtype (the core asks for int64 there); float16
        # accumulates in float32 and rounds once, as PyTorch
        dt = o.dtype if xa.dtype == np.bool_ and op in ("sum", "prod") else None
        if xa.dtype == np.float16 and op in ("sum", "prod"):
            o[...] = _REDUCE[op].reduce(xa, axis=tuple(axes), dtype=np.float32, keepdims=True)
        else:
            _REDUCE[op].reduce(xa, axis=tuple(axes), dtype=dt, out=o, keepdims=True)
        _done(out, o)

    def matmul(self, a: View, b: View, out: View) -> None:
        o = _dst(out)
        np.matmul(_src(a), _src(b), out=o)  # bfloat16 accumulates in float32
        _done(out, o)
