"""The numpy backend: the ``cpu`` device. Implements the backend contract and nothing more."""
from __future__ import annotations

import os
import warnings
from typing import Any, Sequence

import numpy as np

from ..._dtype import bool as pg_bool
from ..interface import Backend, DeviceProperties, View
from .. import philox

__all__ = ["NumpyBackend"]

# IEEE results (inf, nan) are what tensors compute, as in PyTorch: numpy's floating-point warnings
# from this module are noise. A filter costs nothing per call, unlike np.errstate (~1 us).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)

try:  # scipy's erf is exact to float64 rounding; numpy has none
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover - depends on the environment
    import math

    _erf = np.vectorize(math.erf, otypes=[np.float64])


def _nd(v: View) -> np.ndarray:
    """The numpy array for a view, memoised in ``View.cache`` (views are immutable)."""
    a = v.cache
    if a is None:
        np_dtype = v.dtype.numpy
        isz = np_dtype.itemsize
        a = np.ndarray(v.shape, np_dtype, v.buffer, v.offset * isz, tuple(s * isz for s in v.strides))
        v.cache = a
    return a


def _arg(x: Any) -> Any:
    return _nd(x) if isinstance(x, View) else x


def _relu(x: np.ndarray, out: np.ndarray) -> None:
    np.maximum(x, 0, out=out)
    if x.dtype.kind == "f":  # NOTE: maximum(nan, 0) is nan already; keep -0.0 -> 0.0 like torch
        pass


def _rsqrt(x: np.ndarray, out: np.ndarray) -> None:
    np.sqrt(x, out=out)
    np.divide(1, out, out=out)


def _sigmoid(x: np.ndarray, out: np.ndarray) -> None:
    # exp(-|x|) never overflows; sigmoid = 1/(1+e^-x) for x>=0, e^x/(1+e^x) for x<0
    e = np.exp(-np.abs(x))
    np.divide(np.where(x >= 0, 1, e), 1 + e, out=out)


def _erf_op(x: np.ndarray, out: np.ndarray) -> None:
    out[...] = _erf(x)


def _sign(x: np.ndarray, out: np.ndarray) -> None:
    if x.dtype == np.bool_:
        out[...] = x
    else:
        np.sign(x, out=out)


_UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "expm1": np.expm1, "log": np.log,
    "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc,
    "reciprocal": np.reciprocal, "logical_not": np.logical_not, "isnan": np.isnan,
    "isinf": np.isinf,
}
_UNARY_FN = {"relu": _relu, "rsqrt": _rsqrt, "sigmoid": _sigmoid, "erf": _erf_op, "sign": _sign}

_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floordiv": np.floor_divide, "remainder": np.remainder, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal,
}
_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


class NumpyBackend(Backend):
    """The ``cpu`` device: buffers are 1-D ``uint8`` numpy arrays; primitives call numpy."""

    device_type = "cpu"

    def __init__(self) -> None:
        pass

    # ---------------------------------------------------------------- devices
    def device_count(self) -> int:
        return 1

    def get_device_properties(self, index: int) -> DeviceProperties:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
            total = 0
        return DeviceProperties(name="numpy " + np.__version__, type="cpu", total_memory=total,
                                fp64=True, fp16=True, compute_units=os.cpu_count() or 1)

    def synchronize(self, index: int) -> None:
        return None

    # ----------------------------------------------------------------- memory
    def allocate(self, index: int, nbytes: int) -> np.ndarray:
        try:
            return np.empty(nbytes, np.uint8)
        except MemoryError:
            from ...errors import OutOfMemoryError

            raise OutOfMemoryError(
                f"cpu: failed to allocate {nbytes} bytes of host memory") from None

    def memory_stats(self, index: int) -> dict[str, int]:
        # numpy memory is owned by Python's allocator; it has no device-side accounting
        return {"allocated": 0, "reserved": 0, "peak_allocated": 0}

    def reset_peak_memory_stats(self, index: int) -> None:
        return None

    def empty_cache(self, index: int) -> None:
        return None

    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        _nd(dst)[...] = src.reshape(dst.shape)

    def to_host(self, src: View) -> np.ndarray:
        return np.array(_nd(src), order="C", copy=True)

    def host_array(self, src: View) -> np.ndarray:
        return _nd(src)

    def wrap_host(self, array: np.ndarray) -> tuple[Any, int] | None:
        if any(s < 0 for s in array.strides):
            return None
        isz = array.itemsize
        if any(s % isz for s in array.strides):
            return None
        if array.size == 0:
            return np.empty(0, np.uint8), 0
        span = sum((n - 1) * s for n, s in zip(array.shape, array.strides)) + isz
        flat = np.lib.stride_tricks.as_strided(array, shape=(span // isz,), strides=(isz,))
        return flat.view(np.uint8), 0

    def copy_between(self, dst: View, src: View) -> None:
        _nd(dst)[...] = _nd(src)

    # ------------------------------------------------------------- primitives
    def unary(self, op: str, x: View, out: View) -> None:
        f = _UNARY.get(op)
        if f is not None:
            f(_nd(x), out=_nd(out))
        else:
            _UNARY_FN[op](_nd(x), _nd(out))

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        o = _nd(out)
        if (op == "floordiv" or op == "remainder") and o.dtype.kind in "iu":
            self._int_div(op, _arg(a), _arg(b), o)
            return
        _BINARY[op](_arg(a), _arg(b), out=o)

    @staticmethod
    def _int_div(op: str, a: Any, b: Any, o: np.ndarray) -> None:
        if np.any(np.asarray(b) == 0):
            raise ZeroDivisionError("ZeroDivisionError: integer division or modulo by zero")
        (np.floor_divide if op == "floordiv" else np.remainder)(a, b, out=o)

    def where(self, cond: View, a: Any, b: Any, out: View) -> None:
        o = _nd(out)
        o[...] = np.where(_nd(cond), _arg(a), _arg(b))

    def copy(self, src: View, dst: View) -> None:
        s, d = _nd(src), _nd(dst)
        if d.dtype.kind in "iub" and s.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                if d.dtype == np.bool_:
                    np.not_equal(s, 0, out=d)
                else:
                    d[...] = np.trunc(s)
            return
        np.copyto(d, s, casting="unsafe")

    def fill(self, out: View, value: Any) -> None:
        _nd(out).fill(value)

    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        xa, o = _nd(x), _nd(out)
        kw: dict[str, Any] = {}
        if op in ("sum", "prod") and xa.dtype == np.bool_:
            kw["dtype"] = o.dtype
        _REDUCE[op](xa, axis=tuple(axes), keepdims=True, out=o, **kw)

    def arg_reduce(self, op: str, x: View, axis: int, out: View) -> None:
        f = np.argmax if op == "argmax" else np.argmin
        _nd(out)[...] = f(_nd(x), axis=axis, keepdims=True)

    def cumsum(self, x: View, axis: int, out: View) -> None:
        np.cumsum(_nd(x), axis=axis, out=_nd(out), dtype=_nd(out).dtype)

    def matmul(self, a: View, b: View, out: View) -> None:
        aa, bb, oo = _nd(a), _nd(b), _nd(out)
        if oo.shape[0] == 1:
            # NOTE: numpy's batched matmul skips BLAS for some transposed operands (a weight
            # gradient x.T @ g took 13 ms instead of 0.07 ms); a single matrix always gets BLAS
            np.matmul(aa[0], bb[0], out=oo[0])
            return
        np.matmul(aa, bb, out=oo)

    def gather(self, x: View, axis: int, index: View, out: View) -> None:
        xa, ia = _nd(x), _nd(index)
        if ia.ndim and all(ia.strides[d] == 0 for d in range(ia.ndim) if d != axis):
            # the index is one row broadcast over the other axes (index_select, im2col): np.take
            # is ~5x faster than take_along_axis's fancy indexing (indices were range-checked)
            row = ia[tuple(slice(None) if d == axis else 0 for d in range(ia.ndim))]
            src = xa[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(ia.shape))]
            np.take(src, row, axis=axis, out=_nd(out), mode="clip")
            return
        _nd(out)[...] = np.take_along_axis(xa, ia, axis=axis)

    def scatter(self, out: View, axis: int, index: View, src: View, reduce: str | None) -> None:
        o, idx, s = _nd(out), _nd(index), _nd(src)
        # build a full index tuple: every axis but `axis` indexes itself
        grids = list(np.indices(idx.shape, sparse=True))
        grids[axis] = idx
        if reduce == "add":
            np.add.at(o, tuple(grids), s)
        else:
            o[tuple(grids)] = s

    def sort(self, x: View, axis: int, descending: bool, values: View, indices: View) -> None:
        xa = _nd(x)
        if descending:
            # stable descending: ascending stable sort of the reversed axis, reversed back, keeps
            # ties in their original order and puts NaN first, as PyTorch does
            n = xa.shape[axis]
            rev = np.flip(np.argsort(np.flip(xa, axis), axis=axis, kind="stable"), axis)
            idx = (n - 1) - rev
        else:
            idx = np.argsort(xa, axis=axis, kind="stable")
        _nd(indices)[...] = idx
        _nd(values)[...] = np.take_along_axis(xa, idx, axis=axis)

    def random(self, kind: str, out: View, seed: int, offset: int, a: float, b: float) -> None:
        o = _nd(out)
        gen = philox.uniform if kind == "uniform" else philox.normal
        o[...] = gen(o.size, seed, offset, a, b, o.dtype).reshape(o.shape)

