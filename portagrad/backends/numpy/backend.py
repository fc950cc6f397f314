"""The numpy backend: the ``cpu`` device.

:class:`NumpyBackend` implements the backend contract here: devices, memory (buffers reused through
a :class:`~.pool.BufferPool`), host transfers and the primitives, each one numpy call or a few;
``where``, ``arg_reduce``, ``cumsum``, ``gather``, ``scatter``, ``sort`` and ``random`` call
:mod:`portagrad.backends._host_ops`, the reference the interface's host defaults use too. The
optional fast paths are mixed in from their own modules: normalisation and softmax from
:mod:`.norms`, convolution and max pooling from :mod:`.conv`. What the three share (views as
numpy arrays, scratch buffers, bfloat16 computed in float32) is in :mod:`.arrays`.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import _blas_env, _dtype
from ...errors import OutOfMemoryError
from .. import _host_ops
from ..interface import (ARG_REDUCE_OPS, RANDOM_KINDS, REDUCE_OPS, Backend, DeviceProperties, View,
                         unknown_op)
from ..ufuncs import (BINARY_UFUNCS, f16_scalar_is_float32, fit_scalar, half_scalar_operands,
                      is_scalar)
from . import bf16_dot, f32_dot, host_malloc, jit, special
from .arrays import BFLOAT16, BFLOAT16_NP, SCRATCH_POOL, is_bf16, nd, scratch, via_f32, widen
from .activations import ActivationsMixin
from .attention import AttentionMixin
from .conv import ConvMixin
from .norms import NormsMixin
from .pool import BufferPool

__all__ = ["NumpyBackend"]

# IEEE results (inf, nan) are what tensors compute, as in PyTorch: numpy's floating-point warnings
# from this module are noise. A filter costs nothing per call, unlike entering np.errstate.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)

# Buffers of the cpu device come from a pool (the kernels' temporaries from another one,
# arrays.scratch): the pool keeps a freed buffer for the next request of its size
_POOL = BufferPool()


def _arg(x: Any) -> Any:
    return nd(x) if isinstance(x, View) else x


_F32_F64 = (np.dtype(np.float32), np.dtype(np.float64))


def _keep_or_zero(c: np.ndarray, a: np.ndarray, o: np.ndarray) -> bool:
    """``o = c ? a : 0`` by the numba kernel (one pass) for contiguous float32/float64 operands
    of one shape; False (nothing done) otherwise or without numba."""
    if not (o.dtype in _F32_F64 and a.dtype == o.dtype and c.dtype == np.bool_
            and a.shape == o.shape == c.shape and jit.available() and o.flags.c_contiguous
            and a.flags.c_contiguous and c.flags.c_contiguous):
        return False
    jit.keep_or_zero(c.reshape(-1), a.reshape(-1), o.reshape(-1))
    return True


_ZEROS: dict[Any, np.ndarray] = {}


def _zeros_for(x: np.ndarray) -> Any:
    """A read-only array of zeros shaped like ``x`` (shared; 0 for large or tiny arrays)."""
    n = x.size
    if n < 256 or n > 1 << 22:
        return 0
    z = _ZEROS.get(x.dtype)
    if z is None or z.size < n:
        z = np.zeros(max(n, 4096), x.dtype)
        z.flags.writeable = False
        _ZEROS[x.dtype] = z
    return z[:n].reshape(x.shape)


def _relu(x: np.ndarray, out: np.ndarray) -> None:
    # maximum(nan, 0) is nan; maximum(-0.0, 0) is 0.0 (zeros second). numpy's maximum against a
    # scalar misses its SIMD loop, which an array of zeros takes
    np.maximum(x, _zeros_for(x), out=out)


def _in_float32(fn: Callable[[np.ndarray, np.ndarray], None], x: np.ndarray,
                out: np.ndarray) -> None:
    """``fn`` of a float16 ``x`` computed in float32 and rounded once into ``out`` (PyTorch's CPU
    kernels; numpy's float16 ufuncs would round each intermediate of a composite)."""
    t = x.astype(np.float32)
    fn(t, t)
    np.copyto(out, t, casting="unsafe")


def _rsqrt(x: np.ndarray, out: np.ndarray) -> None:
    if x.dtype == _F16:
        _in_float32(_rsqrt, x, out)
        return
    np.sqrt(x, out=out)
    np.divide(1, out, out=out)


def _sigmoid(x: np.ndarray, out: np.ndarray) -> None:
    # PyTorch's formula, 1 / (1 + e^-x): below about -88 (float32) e^-x overflows to inf and the
    # result is 0, as PyTorch's (the |x| form gave the subnormal there, and a different rounding
    # for a third of the elements); in place, with no select, 5x faster
    if x.dtype == _F16:
        _in_float32(_sigmoid, x, out)
        return
    with np.errstate(over="ignore"):
        np.negative(x, out=out)
        np.exp(out, out=out)
    np.add(out, 1, out=out)
    np.divide(1, out, out=out)


def _sign(x: np.ndarray, out: np.ndarray) -> None:
    if x.dtype == np.bool_:
        out[...] = x
    else:
        np.sign(x, out=out)
        if x.dtype.kind == "f":
            np.copyto(out, 0, where=np.isnan(x))  # PyTorch: sign(nan) == 0


_UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "expm1": np.expm1, "log": np.log,
    "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc,
    "reciprocal": np.reciprocal, "logical_not": np.logical_not, "isnan": np.isnan,
    "isinf": np.isinf,
}
_UNARY_FN = {"relu": _relu, "rsqrt": _rsqrt, "sigmoid": _sigmoid, "erf": special.erf, "sign": _sign}

_REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}

_F16 = np.dtype(np.float16)
_F32, _F64 = _dtype.float32, _dtype.float64
# the operators' ops (binary_array): operands of one float dtype give a result of that dtype,
# and so does a Python float with one, unless numpy promotes by value (numpy 1.x: float32 and
# 1e300 give float64): there binary_array declines scalars
_ARITH = {op: BINARY_UFUNCS[op] for op in ("add", "sub", "mul", "div")}
_VALUE_BASED = np.result_type(np.float32, 1e300) != np.float32
_MAXIMUM, _MINIMUM = np.maximum, np.minimum
_U8 = np.dtype(np.uint8)  # a dtype object: np.empty converts a scalar type on every call
_BOOLD = _dtype.bool  # a module constant: cheaper than an attribute lookup (bfloat16: arrays.py)
# read for every small result: an attribute of the numpy module is not a cached read
_empty = np.empty

# PyTorch wraps a Python int operand into the tensor's integer dtype (uint8 + 1000 == uint8 + 232);
# numpy refuses one that does not fit
_INT_RANGE = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
              for t in (np.uint8, np.int8, np.int16, np.int32)}


def _wrap_int(s: int, x: Any) -> Any:
    """The Python int ``s`` wrapped into the integer dtype of the view ``x`` if it falls outside."""
    if x.__class__ is not View:
        return s
    return _wrap_to(s, x.dtype.numpy)


def _wrap_to(s: int, np_dtype: Any) -> int:
    """The Python int ``s`` wrapped into the numpy integer dtype ``np_dtype``."""
    r = _INT_RANGE.get(np_dtype)
    if r is None or r[0] <= s <= r[1]:
        return s
    return (s - r[0]) % (r[1] - r[0] + 1) + r[0]


# A product with few rows and many more columns (a batch of 8-64 through a Linear layer:
# x @ W.T, and its input gradient g @ W) runs faster in OpenBLAS as its transpose (B.T @ A.T, the
# many columns becoming rows), written to a scratch matrix and copied back transposed: measured
# for M = 8-64 rows against N = 128-2304 columns with OpenBLAS's SkylakeX kernels (up to 2x);
# from M = 128 on the direct product is as fast or faster. With its Zen kernels, which portagrad
# selects on a Zen 4 CPU when it loads numpy itself, the direct product is as fast from 64 rows
# (20 % faster at 64 x 128 x 512): the rule stops at 48 there (figures in docs/performance.md)
_FEW_ROWS_MAX = 48 if _blas_env.chosen() == _blas_env.ZEN4_CORETYPE else 64
_FEW_ROWS_MIN_FLOPS = 1 << 20
_F32_NP = np.dtype(np.float32)


def _few_rows(M: int, K: int, N: int, dtype: np.dtype) -> bool:
    return (M <= _FEW_ROWS_MAX and N >= 2 * M and M * K * N >= _FEW_ROWS_MIN_FLOPS
            and dtype in (np.float32, np.float64))


#: a bfloat16 product of at most this many rows widens its large operand block by block
_BF16_BLOCK_ROWS_MAX = 16
#: ... when that operand has at least this many elements
_BF16_BLOCK_MIN = 1 << 20
#: ... and with numba, from at most this many rows the product loops over bfloat16 weights itself
#: (its n-fast loop, ``x @ b``; from 16 rows BLAS on the widened blocks is as fast)
_BF16_JIT_ROWS_MAX = 8
#: ... and its k-fast loop (``x @ W.T``, register-blocked) up to this many rows (a short prompt's
#: prefill): faster than BLAS on widened weights up to 64 rows, even at 256 (docs/performance.md)
_BF16_JIT_NT_ROWS_MAX = 64
#: ... for a large operand of at least this many elements (smaller ones widen it whole)
_BF16_JIT_MIN = 1 << 16
#: float32 elements of one widened block (1 MiB: stays in cache until the product reads it)
_BF16_BLOCK = 1 << 18


#: from this many elements bfloat16 add/sub/mul/div of two tensors take numba's loop (below it
#: ml_dtypes' per-element loop costs less than numba's call: 4.0 against 5.2 µs at 1024
#: elements, 7.1 against 4.1 at 4096)
_BF16_JIT_BINARY_MIN = 4096

# bfloat16 ops whose ml_dtypes loop computes in float32 and rounds once (bit for bit the result
# of float32 copies, measured faster from one element to millions)
_BF16_UFUNCS = {op: BINARY_UFUNCS[op] for op in ("add", "sub", "mul", "div", "maximum", "minimum")}


def _bf16_exact(x: Any) -> bool:
    """Whether the operand ``x`` is a bfloat16 view, or a Python number that is exactly a
    bfloat16 (a loop on bfloat16 arrays rounds a scalar operand to bfloat16 first)."""
    if x.__class__ is View:
        return x.dtype is BFLOAT16
    if x.__class__ is float or x.__class__ is int:
        try:
            return float(BFLOAT16_NP.type(x)) == x
        except OverflowError:  # an int too large for a float
            return False
    return False


#: float32 products of 2 to this many rows, with K and the work at least these, run f32_dot's
#: kernel when ``b`` is a weight's transpose (a linear layer's ``x @ W.T``): it reads each block
#: of the weight once, where OpenBLAS packs it first (1.2-1.9x faster on a decoder's layers at
#: 2-16 rows, level at 64; slower on short K, where its per-tile sums and the call dominate)
_F32_NT_MAX_ROWS = 64
_F32_NT_MIN_K = 512
_F32_NT_MIN_MACS = 1 << 20


def _f32_nt(am: np.ndarray, bm: np.ndarray, om: np.ndarray) -> bool:
    """``om = am @ bm`` by ``f32_dot.matmul_nt`` where it pays (see ``_F32_NT_MAX_ROWS``): float32
    throughout, ``am`` and ``om`` with contiguous rows, ``bm`` the transpose of such a matrix.
    False (nothing done) otherwise."""
    M, K = am.shape
    N = om.shape[1]
    if not (2 <= M <= _F32_NT_MAX_ROWS and K >= _F32_NT_MIN_K and M * K * N >= _F32_NT_MIN_MACS
            and om.dtype == _F32_NP and am.dtype == _F32_NP and bm.dtype == _F32_NP
            and am.strides[1] == 4 and bm.strides[0] == 4 and om.strides[1] == 4
            and f32_dot.available()):
        return False
    f32_dot.matmul_nt(am, bm.T, om)
    return True


def _product(am: np.ndarray, bm: np.ndarray, om: np.ndarray) -> None:
    """``om = am @ bm`` for 2-D arrays, few rows computed transposed (see :func:`_few_rows`)."""
    if _f32_nt(am, bm, om):
        return
    M, N = om.shape
    if _few_rows(M, am.shape[1], N, om.dtype):
        t = scratch((N, M), om.dtype)
        np.matmul(bm.T, am.T, out=t)
        np.copyto(om, t.T)
        return
    np.matmul(am, bm, out=om)


def _one_batch(v: View) -> View:
    """The 2-D ``v`` as a batch of one (1, M, N)."""
    return View(v.buffer, v.offset, (1,) + v.shape, (0,) + v.strides, v.dtype)


def _along_one_axis(o: np.ndarray, axis: int, idx: np.ndarray) -> bool:
    """Whether ``idx`` (of ``o``'s rank) varies along ``axis`` only (stride 0 elsewhere) and
    spans every other dimension of ``o``: then a scatter by it writes whole slices."""
    return o.ndim > 0 and all(st == 0 and n == m for k, (st, n, m) in
                              enumerate(zip(idx.strides, idx.shape, o.shape)) if k != axis)


#: a batched bfloat16 product runs matrix by matrix on bf16_dot from this many multiply-adds per
#: matrix (below, one batched float32 product of widened copies costs less than the calls)
_BF16_DOT_BATCHED_MIN = 1 << 18
#: ... and from this many rows: fewer keep numba's float32 loops, which read the weights once
#: too (a decoder at batch 1 is bound by that read) and keep subnormal operands, as PyTorch's
#: one-row products do (its bfloat16 GEMMs, as this instruction, count them as zero)
_BF16_DOT_MIN_ROWS = 5
#: (largest K, fewest rows M) of products that take bf16_dot.matmul_nn even when b's columns are
#: runs of K (x @ W.T, attention's q @ k.T): short dot products, which matmul_nt's tiles sum
#: horizontally at a cost per output, run 10-45 % faster there; deeper or with fewer rows the
#: nt tiles are as fast or faster (docs/performance.md)
_BF16_NN_SHALLOW = ((128, 64), (512, 512))


def _bf16_dot(a: View, b: View, out: View) -> bool:
    """bfloat16 ``out = a @ b`` on the CPU's bfloat16 dot-product instruction
    (:mod:`.bf16_dot`, where it runs): both operands read in place as bfloat16 (no float32
    copies): ``b`` as the ``W.T`` of a linear layer by :func:`.bf16_dot.matmul_nt`, any other
    ``b`` by :func:`.bf16_dot.matmul_nn` (pairs of K packed). With numba, products of fewer
    than ``_BF16_DOT_MIN_ROWS`` rows, and those of up to ``_BF16_JIT_ROWS_MAX`` rows whose ``b``
    would need the copy, are left to :func:`_bf16_few_rows`. False (nothing done) there, where
    the kernel does not run, or where ``b`` is not bfloat16."""
    if b.dtype is not BFLOAT16 or not bf16_dot.available():
        return False
    aa, bb, oo = nd(a), nd(b), nd(out)
    batch, M, N = oo.shape
    K = aa.shape[2]
    if batch > 1 and M * K * N < _BF16_DOT_BATCHED_MIN:
        return False
    if jit.available() and (M < _BF16_DOT_MIN_ROWS
                            or (bb.strides[1] != 2 and M <= _BF16_JIT_ROWS_MAX)):
        return False
    a16, b16, o16 = aa.view(np.uint16), bb.view(np.uint16), oo.view(np.uint16)
    scratch_out = o16.strides[2] != 2 and N > 1  # the kernels write rows of contiguous columns
    if scratch_out:
        o16 = np.empty((batch, M, N), np.uint16)
    if (bb.strides[1] != 2 and K > 1) or any(K <= k and M >= m for k, m in _BF16_NN_SHALLOW):
        # b's columns are not runs of K (an input gradient g @ W, a weight gradient g.T @ x):
        # the kernel on pairs of K, packed by a streaming copy (a transposed copy of b, and of
        # a weight gradient's a, cost more than the product); and a shallow product of many
        # rows, whose dot products are too short for matmul_nt's tiles (docs/performance.md)
        bf16_dot.matmul_nn(a16, b16, o16)
    else:
        if a16.strides[2] != 2 and K > 1:
            a16 = np.ascontiguousarray(a16)
        bf16_dot.matmul_nt(a16, b16.transpose(0, 2, 1), o16)
    if scratch_out:
        oo.view(np.uint16)[...] = o16
    return True


def _bf16_few_rows(a: View, b: View, out: View) -> bool:
    """``out = a @ b`` for bfloat16 ``(1, M, K) @ (1, K, N)`` with few rows ``M`` and a large
    ``b`` (a decoder's weights, one token at a time): ``b`` is widened to float32 a block of
    columns at a time and each block's product is rounded into ``out``, so the float32 copy of
    the weights is never written to memory whole (it was 2 bytes read and 8 moved per weight,
    against 4 for a float32 model). Every output element is still one float32 dot product over
    all of ``K``, rounded once. False (nothing done) for other shapes."""
    if a.shape[0] != 1 or b.shape[0] != 1:
        return False
    M, K, N = a.shape[1], b.shape[1], b.shape[2]
    kfast = b.strides[1] == 1 and b.strides[2] == K  # W.T of a C-contiguous W
    jitted = (M <= (_BF16_JIT_NT_ROWS_MAX if kfast else _BF16_JIT_ROWS_MAX)
              and K * N >= _BF16_JIT_MIN and jit.available())
    if K == 0 or not (jitted or (M <= _BF16_BLOCK_ROWS_MAX and K * N >= _BF16_BLOCK_MIN)):
        return False
    am = widen(nd(a)[0])
    bm, om = nd(b)[0], nd(out)[0]
    if jitted:
        # numba: the weights widened a cache-sized block at a time inside the product loop
        o32 = np.empty(om.shape, np.float32)
        if jit.bf16_matmul_rows(np.ascontiguousarray(am), bm.view(np.uint16), o32):
            np.copyto(om, o32, casting="unsafe")  # round to nearest even
            return True
    nb = max(16, _BF16_BLOCK // K)
    o32 = np.empty((om.shape[0], min(nb, N)), np.float32)
    for n0 in range(0, N, nb):
        blk = widen(bm[:, n0:n0 + nb])
        w = blk.shape[1]
        np.matmul(am, blk, out=o32[:, :w])
        np.copyto(om[:, n0:n0 + w], o32[:, :w], casting="unsafe")  # round to nearest even
    return True


class NumpyBackend(NormsMixin, ActivationsMixin, ConvMixin, AttentionMixin, Backend):
    """The ``cpu`` device: buffers are numpy arrays (1-D ``uint8`` from ``allocate``, an op's
    result of its own shape and dtype from ``allocate_array``); primitives call numpy (seven of
    them through :mod:`portagrad.backends._host_ops`, writing into the arrays over the buffers)."""

    device_type = "cpu"
    supports_complex = True  # numpy's complex64/complex128: the reference semantics

    def __init__(self) -> None:
        self._pool = _POOL  # large buffers are reused: no page faults on each first write
        self._small = _POOL.min_bytes  # (below it: plain arrays, read for every allocation)
        host_malloc.tune()  # and so are numpy's own temporaries (freed heap memory, not munmap)

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
            if nbytes < self._pool.min_bytes:  # small: a plain array (the pool would return one)
                return np.empty(nbytes, _U8)
            return self._pool.allocate(nbytes)
        except (MemoryError, ValueError, OverflowError):  # (numpy: "Maximum allowed dimension
            # exceeded" past its index type)
            self._pool.release_free()
            try:
                return np.empty(nbytes, np.uint8)
            except (MemoryError, ValueError, OverflowError):
                pass
            raise OutOfMemoryError(
                f"cpu: failed to allocate {nbytes} bytes of host memory") from None

    def allocate_array(self, index: int, nbytes: int, shape: tuple[int, ...], dtype: Any
                       ) -> np.ndarray:
        # the result's array itself (the contract's optional typed allocation): the core also
        # takes it as the View's cache, so no primitive views the bytes as the dtype again
        if nbytes < self._small:
            try:
                return _empty(shape, dtype.numpy)
            except (MemoryError, ValueError, OverflowError):
                pass  # allocate's errors and retry after releasing the pool
        return self.allocate(index, nbytes).view(dtype.numpy).reshape(shape)

    def binary_array(self, index: int, nbytes: int, shape: tuple[int, ...], dtype: Any, op: str,
                     a: Any, b: Any) -> np.ndarray | None:
        # allocate_array and binary in one call (the contract's optional fused result), for the
        # arithmetic operators' small float32/float64 results: one frame instead of two per op.
        # None for everything else (the core then allocates and calls binary), large results
        # included (allocate_array's pool)
        if (dtype is _F32 or dtype is _F64) and nbytes < self._small:
            f = _ARITH.get(op)
            if f is not None:
                if a.__class__ is View:
                    c = a.cache
                    a = c if c is not None else nd(a)
                elif a.__class__ is not float or _VALUE_BASED:
                    return None
                if b.__class__ is View:
                    c = b.cache
                    b = c if c is not None else nd(b)
                elif b.__class__ is not float or _VALUE_BASED:
                    return None
                try:
                    # numpy's own result where it is an array (not 0-d): operands of the result's
                    # dtype (or Python floats) give it that dtype, and it is C-contiguous (a new
                    # 1-D array always is); no np.empty, no check that the output overlaps an
                    # operand. Past the size of binary's dense copies they need the output first.
                    if len(shape) == 1:
                        return f(a, b)
                    if shape and nbytes < (_DENSE_F32 if dtype is _F32 else _DENSE_F64):
                        return f(a, b, order="C")
                    o = _empty(shape, dtype.numpy)
                except MemoryError:
                    return None  # allocate_array's errors and retry
                if shape:  # (not 0-d here: past binary's size for dense copies)
                    a, b = _dense_inner(a, o), _dense_inner(b, o)
                f(a, b, o)
                return o
        return None

    def memory_stats(self, index: int) -> dict[str, int]:
        # numpy memory is owned by Python's allocator; it has no device-side accounting
        return {"allocated": 0, "reserved": 0, "peak_allocated": 0}

    def reset_peak_memory_stats(self, index: int) -> None:
        return None

    def empty_cache(self, index: int) -> None:
        self._pool.release_free()
        SCRATCH_POOL.release_free()

    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        nd(dst)[...] = src.reshape(dst.shape)

    def to_host(self, src: View) -> np.ndarray:
        return np.array(nd(src), order="C", copy=True)

    def host_array(self, src: View) -> np.ndarray:
        return nd(src)

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
        nd(dst)[...] = nd(src)

    # ------------------------------------------------------------- primitives
    def unary(self, op: str, x: View, out: View) -> None:
        if x.dtype is BFLOAT16:
            via_f32(self.unary, (2,), op, x, out)
            return
        f: Any = _UNARY.get(op)  # a ufunc, called with out=; else fn(x, out)
        fn: Any = None
        if f is None:
            fn = _UNARY_FN.get(op)
            if fn is None:
                raise unknown_op("unary", op, self.device_type)
        o = nd(out)
        if o.ndim and not o.flags.c_contiguous and o.size > 1:
            # numpy's SIMD loops of some unary ufuncs write wrong values through a strided out
            # (measured on AVX-512: negative with some input strides, isnan/isinf/isfinite/
            # signbit from 16 elements; numpy 2.3 and 2.4): a strided result is computed into
            # a contiguous array first, then copied
            t = np.empty(o.shape, o.dtype)
            if fn is None:
                f(nd(x), out=t)
            else:
                fn(nd(x), t)
            np.copyto(o, t)
            return
        if fn is None:
            f(nd(x), out=o)
        else:
            fn(nd(x), o)

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        od = out.dtype  # bfloat16 operands write bfloat16, or bool (comparisons, logical ops)
        if od is _F32 or od is _F64:
            # a float32/float64 result (the common case) needs none of the rules below: no
            # bfloat16/float16 rounding, no integer wrapping or division; on a one-element op
            # they cost as much as numpy's call itself
            f = BINARY_UFUNCS.get(op)
            if f is not None:
                o = out.cache  # a fresh result's array (allocate_array), or an earlier nd()
                if o is None:
                    o = nd(out)
                if a.__class__ is View:
                    c = a.cache
                    a = c if c is not None else nd(a)
                if b.__class__ is View:
                    c = b.cache
                    b = c if c is not None else nd(b)
                if o.size >= _DENSE_MIN:
                    a, b = _dense_inner(a, o), _dense_inner(b, o)
                if f is _MAXIMUM or f is _MINIMUM:  # (a positional out is deprecated for them)
                    f(a, b, out=o)
                else:
                    f(a, b, o)  # out as the third argument: no keyword for numpy to parse
                return
        if od is BFLOAT16 or (od is _BOOLD and (is_bf16(a) or is_bf16(b))):
            # a scalar operand as PyTorch takes it: rounded to bfloat16 first (comparisons too),
            # except as the second operand of mul, div and floordiv (float32)
            if a.__class__ is not View or b.__class__ is not View:
                a, b = half_scalar_operands(op, a, b, "bfloat16")
            f = _BF16_UFUNCS.get(op)
            if (f is not None and a.__class__ is View and b.__class__ is View and od is BFLOAT16
                    and a.dtype is BFLOAT16 and b.dtype is BFLOAT16
                    and out.numel >= _BF16_JIT_BINARY_MIN and jit.available()
                    and jit.bf16_binary_rows(op, nd(a), nd(b), nd(out))):
                return  # (numba: the same float32 sums, rounded once, in one vectorised pass)
            if (f is not None and od is BFLOAT16 and out.numel >= _BF16_JIT_BINARY_MIN
                    and (a.__class__ is View) is not (b.__class__ is View)
                    and (a if a.__class__ is View else b).dtype is BFLOAT16 and jit.available()
                    and jit.bf16_scalar_op(op, _arg(a), _arg(b), nd(out))):
                return  # (a scalar operand: attention's scale, dropout's 1 / (1 - p))
            if f is not None and od is BFLOAT16 and _bf16_exact(a) and _bf16_exact(b):
                # ml_dtypes' own loops: each element computed in float32 and rounded once, as
                # the float32 copies below would, without the copies
                f(_arg(a), _arg(b), out=nd(out))
                return
            via_f32(self.binary, (3,), op, a, b, out)
            return
        if b.__class__ is int:
            b = _wrap_int(b, a)
        elif a.__class__ is int:
            a = _wrap_int(a, b)
        o = nd(out)
        if o.dtype == _F16:
            # PyTorch multiplies (and divides by) a scalar as a float32, and rounds it to
            # float16 for the other ops (numpy's rule for a Python scalar, not for a numpy one)
            to = np.float32 if f16_scalar_is_float32(op, a, b) else np.float16
            with np.errstate(over="ignore"):
                if is_scalar(b):
                    b = to(b)
                elif is_scalar(a):
                    a = to(a)
        if a.__class__ is int and b.__class__ is int and o.dtype.kind in "iu":
            # two Python ints: numpy computes them in int64, which it refuses to store into uint8;
            # as 0-d arrays of out's dtype (wrapped into it) the result wraps as PyTorch's does
            a = np.array(_wrap_to(a, o.dtype), o.dtype)
            b = np.array(_wrap_to(b, o.dtype), o.dtype)
        if (op == "floordiv" or op == "remainder" or op == "fmod") and o.dtype.kind in "iu":
            self._int_div(op, _arg(a), _arg(b), o)
            return
        f = BINARY_UFUNCS.get(op)
        if f is None:
            raise unknown_op("binary", op, self.device_type)
        aa, bb = _arg(a), _arg(b)
        if o.size >= _DENSE_MIN:
            aa, bb = _dense_inner(aa, o), _dense_inner(bb, o)
        f(aa, bb, out=o)

    @staticmethod
    def _int_div(op: str, a: Any, b: Any, o: np.ndarray) -> None:
        if np.any(np.asarray(b) == 0):
            raise ZeroDivisionError("ZeroDivisionError: integer division or modulo by zero")
        (np.floor_divide if op == "floordiv" else np.fmod if op == "fmod" else np.remainder)(
            a, b, out=o)

    def where(self, cond: View, a: Any, b: Any, out: View) -> None:
        if _host_ops.is_plus_zero(b) and a.__class__ is View and _keep_or_zero(
                nd(cond), nd(a), nd(out)):
            return
        # a is out itself for masked_fill_: nd(a) is then nd(out) (the array memoised on the
        # view), of which _host_ops.where writes only b's positions
        _host_ops.where(nd(cond), _arg(a), _arg(b), out.dtype.numpy, out.dtype.name,
                        out=nd(out))

    def copy(self, src: View, dst: View) -> None:
        s, d = nd(src), nd(dst)
        if s.dtype.kind == "c" and d.dtype.kind != "c":
            # complex to real keeps the real part (the core warns); to bool: either part nonzero
            if d.dtype == np.bool_:
                np.not_equal(s, 0, out=d)
                return
            s = s.real
        if s.dtype is BFLOAT16_NP and d.dtype.kind in "iub":  # as float32 (truncation, != 0 for bool)
            s = s.astype(np.float32)
        if d.dtype.kind in "iub" and s.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                if d.dtype == np.bool_:
                    np.not_equal(s, 0, out=d)
                else:
                    d[...] = np.trunc(s)
            return
        if not jit.bf16_cast(s, d):  # (float32 <-> bfloat16 in numba's loop where it runs)
            np.copyto(d, s, casting="unsafe")

    def fill(self, out: View, value: Any) -> None:
        value = fit_scalar(value, out.dtype.name)
        if 0 not in out.shape:  # an empty tensor has nothing to fill (and numpy may not view it)
            nd(out).fill(value)

    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        if op not in REDUCE_OPS:
            raise unknown_op("reduce", op, self.device_type)
        if x.dtype is BFLOAT16:  # accumulates in float32
            via_f32(self.reduce, (3,), op, x, axes, out)
            return
        xa, o = nd(x), nd(out)
        if xa.dtype == _F16 and (op == "sum" or op == "prod"):
            # float16 sums and products accumulate in float32, rounded once (PyTorch; numpy
            # would accumulate in float16, which stalls a long sum at 2048)
            o[...] = _REDUCE[op].reduce(xa, axis=tuple(axes), dtype=np.float32, keepdims=True)
            return
        if op == "sum" and xa.dtype.kind == "f" and xa.dtype == o.dtype and \
                _reduce_outer_first(_REDUCE[op], xa, axes, o):
            return
        # the ufunc's reduce is what np.sum/np.max call, without their argument handling
        dt = o.dtype if xa.dtype.kind == "b" and (op == "sum" or op == "prod") else None
        # numpy's stubs type `out` and `keepdims` as keyword-only; numpy takes them positionally
        _REDUCE[op].reduce(xa, axes if axes.__class__ is tuple else tuple(axes), dt, o, True)  # type: ignore[call-overload]

    def arg_reduce(self, op: str, x: View, axis: int, out: View) -> None:
        if op not in ARG_REDUCE_OPS:
            raise unknown_op("arg_reduce", op, self.device_type)
        _host_ops.arg_reduce(op, nd(x), axis, out=nd(out))

    def cumsum(self, x: View, axis: int, out: View) -> None:
        _host_ops.cumsum(nd(x), axis, out.dtype.numpy, out=nd(out))

    def matmul(self, a: View, b: View, out: View) -> None:
        if a.dtype is BFLOAT16:  # accumulates in float32
            if not (_bf16_dot(a, b, out) or _bf16_few_rows(a, b, out)):
                via_f32(self.matmul, (2,), a, b, out)
            return
        aa, bb, oo = nd(a), nd(b), nd(out)
        if oo.shape[0] == 1:
            # NOTE: numpy's batched matmul skips BLAS for some transposed operands (a weight
            # gradient x.T @ g among them); a single matrix always gets BLAS
            _product(aa[0], bb[0], oo[0])
            return
        np.matmul(aa, bb, out=oo)

    def mm(self, a: View, b: View, out: View, bias: View | None) -> None:
        """The optional 2-D product (M, K) @ (K, N) into the contiguous ``out``, plus ``bias``
        (N,) on each row when given: what :meth:`matmul` (and ``binary("add")``) do with one
        matrix, without the batch views around it."""
        if a.dtype is BFLOAT16:  # (its kernels take the batched views)
            self.matmul(_one_batch(a), _one_batch(b), _one_batch(out))
        else:
            om = nd(out)
            _product(nd(a), nd(b), om)
            if bias is not None and om.dtype.kind == "f" and om.dtype.itemsize >= 4:
                np.add(om, nd(bias), out=om)  # (binary's own path for these dtypes)
                return
        if bias is not None:
            self.binary("add", out, View(bias.buffer, bias.offset, out.shape,
                                         (0,) + bias.strides, bias.dtype), out)

    def gather(self, x: View, axis: int, index: View, out: View) -> None:
        _host_ops.gather(nd(x), axis, nd(index), out=nd(out))

    def scatter(self, out: View, axis: int, index: View, src: View, reduce: str | None) -> None:
        o, idx, s = nd(out), nd(index), nd(src)
        if reduce == "add" and _add_rows(o, axis, idx, s):
            return
        if reduce is None and _along_one_axis(o, axis, idx):
            # one index per position along axis, the same across the other dimensions
            # (index_copy_, index_fill_: a KV cache written each decode step): one slice
            # assignment by a 1-D index, not a full grid of indices per element
            vec = idx[(0,) * axis + (slice(None),) + (0,) * (idx.ndim - axis - 1)]
            part = s[tuple(slice(0, n) for n in idx.shape)]
            if vec.size == 1:  # one slice (a KV cache's position): a basic-index copy
                i = int(vec[0])
                i = i + o.shape[axis] if i < 0 else i  # (as the fancy index would read it)
                o[(slice(None),) * axis + (slice(i, i + 1),)] = part
                return
            o[(slice(None),) * axis + (vec,)] = part
            return
        _host_ops.scatter(o, axis, idx, s, reduce)

    def sort(self, x: View, axis: int, descending: bool, values: View, indices: View) -> None:
        _host_ops.sort(nd(x), axis, descending, out=(nd(values), nd(indices)))

    def eigh(self, a: View, uplo: str, w: View, v: View | None) -> None:
        if 0 not in w.shape:
            _host_ops.eigh(nd(a), uplo, v is not None, out=(nd(w), None if v is None else nd(v)))

    def eig(self, a: View, w: View, v: View | None) -> None:
        if 0 not in w.shape:
            vals, vecs = _host_ops.eig(nd(a), v is not None)
            nd(w)[...] = vals
            if v is not None and vecs is not None:
                nd(v)[...] = vecs

    def svd(self, a: View, full_matrices: bool, u: View | None, s: View,
            vh: View | None) -> None:
        if 0 not in a.shape:
            _host_ops.svd(nd(a), full_matrices, u is not None,
                          out=(None if u is None else nd(u), nd(s),
                               None if vh is None else nd(vh)))

    def random(self, kind: str, out: View, seed: int, offset: int, a: float, b: float) -> None:
        if kind not in RANDOM_KINDS:
            raise unknown_op("random", kind, self.device_type)
        o = nd(out)
        if kind == "uniform" and o.flags.c_contiguous and jit.available():
            # dropout's masks: the same words in one compiled pass (bfloat16: the float32
            # stream rounded, as the contract says)
            if o.dtype == np.float32:
                jit.philox_uniform32(o.reshape(-1), seed, offset, a, b)
                return
            if o.dtype == BFLOAT16_NP:
                r = np.empty(o.size, np.float32)
                jit.philox_uniform32(r, seed, offset, a, b)
                np.copyto(o.reshape(-1), r, casting="unsafe")  # round to nearest even
                return
        _host_ops.random(kind, o.size, o.dtype, seed, offset, a, b, out=o)


def _add_rows(o: np.ndarray, axis: int, idx: np.ndarray, s: np.ndarray) -> bool:
    """``o[idx[i, 0]] += s[i]`` row by row when the index picks whole rows (2-D, ``axis`` 0, the
    index repeated along the row: ``index_select``'s and embedding's gradient), floating ``o``;
    False for every other form. Each element receives its terms in the order of the rows, as
    the element-wise ``np.add.at`` adds them, so the sums are the same: only the per-element
    indexing goes (numba's loop, or ``np.add.at`` with the 1-D row index)."""
    if (axis != 0 or o.ndim != 2 or idx.ndim != 2 or idx.strides[1] != 0
            or s.shape != idx.shape or s.dtype != o.dtype or o.dtype.kind != "f"
            or o.shape[1] != s.shape[1]):
        return False
    rows = idx[:, 0]
    if jit.available() and o.dtype in (np.float32, np.float64) and o.flags.c_contiguous:
        jit.index_add_rows(o, np.ascontiguousarray(rows, np.int64), np.ascontiguousarray(s))
    else:
        np.add.at(o, rows, s)
    return True


# Outputs from this many elements on: a broadcast operand repeated along inner axes is worth a
# small dense copy (below this the check would cost more than it saves)
_DENSE_MIN = 4096
_DENSE_F32, _DENSE_F64 = _DENSE_MIN * 4, _DENSE_MIN * 8  # the same in bytes (binary_array)


def _dense_inner(x: Any, o: np.ndarray) -> Any:
    """``x`` (an operand of a binary op writing ``o``), repeated along inner axes (a zero stride
    after a nonzero one, as a conv bias (N, C, H, W) with strides (0, 1, 0, 0)), as a dense block
    over the axes after its leading broadcast ones: numpy then runs one long contiguous inner loop
    per outer index instead of one of a few elements per row. Else ``x`` itself."""
    if x.__class__ is not np.ndarray or x.ndim < 2 or 0 not in x.strides or \
            not o.flags.c_contiguous:
        return x
    st = x.strides
    k = 0  # leading broadcast axes
    while k < x.ndim and st[k] == 0:
        k += 1
    if k == x.ndim or 0 not in st[k:]:
        return x
    block = x[(0,) * k]
    if block.size * 4 > o.size:  # the copy would not be small beside the op
        return x
    return np.ascontiguousarray(block)


def _reduce_outer_first(uf: np.ufunc, xa: np.ndarray, axes: Sequence[int], o: np.ndarray) -> bool:
    """Reduce a contiguous ``xa`` of the form (R0, K, R1) (axes merged: reduced, kept, reduced,
    as BatchNorm's statistics over (N, H, W) of NCHW) over R0 and R1; False for other forms.

    numpy reduces such a pattern with its inner loop over the short R1 run of every (r0, k) row;
    reducing R0 first adds whole contiguous rows of K*R1 (vectorised), leaving a small (K, R1)."""
    if not xa.flags.c_contiguous or xa.ndim < 3:
        return False
    red = set(axes)
    blocks: list[list[int]] = []  # [size, reduced] after merging neighbours and dropping 1s
    for d, n in enumerate(xa.shape):
        if n == 1:
            continue
        r = int(d in red)
        if blocks and blocks[-1][1] == r:
            blocks[-1][0] *= n
        else:
            blocks.append([n, r])
    if [b[1] for b in blocks] != [1, 0, 1]:
        return False
    (r0, _), (k, _), (r1, _) = blocks
    part = uf.reduce(xa.reshape(r0, k * r1), 0)
    if o.flags.c_contiguous:
        uf.reduce(part.reshape(k, r1), 1, None, o.reshape(k))
    else:
        o[...] = uf.reduce(part.reshape(k, r1), 1).reshape(o.shape)
    return True
