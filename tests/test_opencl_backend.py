"""Primitive-level tests of the OpenCL backend against the numpy backend on identical views.

Each test builds the same storage on both backends, takes views with the same offset, shape and
strides, runs one primitive on both and compares. Runs on PoCL's CPU devices on CI
(``POCL_DEVICES="pthread pthread"`` gives two devices).
"""
from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed")
try:
    _PLATFORMS = cl.get_platforms()
except cl.Error:  # pragma: no cover - depends on the machine
    _PLATFORMS = []
if not any(p.get_devices() for p in _PLATFORMS):  # pragma: no cover
    pytest.skip("no OpenCL platform/device available (install pocl-binary-distribution)",
                allow_module_level=True)

from portagrad import _dtype as D  # noqa: E402
from portagrad.backends import philox  # noqa: E402
from portagrad.backends.interface import (ARG_REDUCE_OPS, BINARY_OPS, COMPARISON_OPS,  # noqa: E402
                                          REDUCE_OPS, UNARY_OPS, View)
from portagrad.backends.numpy.backend import NumpyBackend  # noqa: E402
from portagrad.backends.opencl.backend import OpenCLBackend  # noqa: E402
from portagrad.backends.ufuncs import BINARY_UFUNCS  # noqa: E402
from portagrad.errors import DTypeError, OutOfMemoryError  # noqa: E402

DTYPES = [D.bool, D.int32, D.int64, D.float32, D.float64]
DT_IDS = [d.name for d in DTYPES]
RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def be() -> OpenCLBackend:
    return OpenCLBackend()


NB = NumpyBackend()


# ------------------------------------------------------------------ helpers
class Twin:
    """The same storage on the OpenCL device and in the numpy backend."""

    def __init__(self, be: OpenCLBackend, storage: np.ndarray, dtype, device: int = 0) -> None:
        self.be, self.dtype = be, dtype
        storage = np.ascontiguousarray(storage.astype(dtype.numpy).reshape(-1))
        self.size = storage.size
        self.cl = be.allocate(device, storage.nbytes)
        if storage.size:
            be.from_host(View(self.cl, 0, (storage.size,), (1,), dtype), storage)
        self.np = storage.view(np.uint8).copy()

    def views(self, offset: int, shape, strides) -> tuple[View, View]:
        shape, strides = tuple(shape), tuple(strides)
        return (View(self.cl, offset, shape, strides, self.dtype),
                View(self.np, offset, shape, strides, self.dtype))


def contiguous(be, arr: np.ndarray, dtype, offset: int = 0, device: int = 0) -> tuple[View, View]:
    """Views of ``arr`` stored contiguously after ``offset`` unused elements."""
    arr = np.asarray(arr)
    flat = np.concatenate([np.zeros(offset, arr.dtype), arr.reshape(-1)])
    t = Twin(be, flat, dtype, device)
    strides, acc = [], 1
    for s in reversed(arr.shape):
        strides.append(acc)
        acc *= s
    return t.views(offset, arr.shape, tuple(reversed(strides)))


def transposed(be, arr: np.ndarray, dtype) -> tuple[View, View]:
    """2-D ``arr`` stored as its transpose (column-major view)."""
    t = Twin(be, np.ascontiguousarray(arr.T), dtype)
    return t.views(0, arr.shape, (1, arr.shape[0]))


def broadcast_rows(be, row: np.ndarray, nrows: int, dtype) -> tuple[View, View]:
    """A (nrows, len(row)) view with row stride 0."""
    t = Twin(be, row, dtype)
    return t.views(0, (nrows, row.size), (0, 1))


def empty(be, shape, dtype, device: int = 0) -> tuple[View, View]:
    return contiguous(be, np.zeros(shape, dtype.numpy), dtype, device=device)


def host(be, pair) -> tuple[np.ndarray, np.ndarray]:
    c, n = pair
    return be.to_host(c), NB.to_host(n)


def sample(dtype, shape, kind: str = "any") -> np.ndarray:
    n = int(np.prod(shape))
    if dtype is D.bool:
        return RNG.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype in (D.int32, D.int64):
        lo = 1 if kind == "nonzero" else (0 if kind == "small_pos" else -50)
        hi = 6 if kind == "small_pos" else 50
        v = RNG.integers(lo, hi, n)
        if kind == "nonzero":
            v *= RNG.choice([-1, 1], n)
        return v.astype(dtype.numpy).reshape(shape)
    v = RNG.standard_normal(n) * 3
    if kind == "positive":
        v = np.abs(v) + 0.1
    elif kind == "any" and n > 8:
        v[:4] = [np.nan, np.inf, -np.inf, 0.0]
    return v.astype(dtype.numpy).reshape(shape)


def assert_same(got: np.ndarray, want: np.ndarray, exact: bool = True, rtol: float = 0.0) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact or got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
    else:
        tol = rtol or (2e-6 if got.dtype == np.float32 else 1e-13)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def run_both(be, method: str, *args) -> Exception | None:
    """Run on numpy first; returns numpy's exception (the combination is invalid) or None."""
    nargs = [a[1] if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], View) else a for a in args]
    cargs = [a[0] if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], View) else a for a in args]
    try:
        with np.errstate(all="ignore"):
            getattr(NB, method)(*nargs)
    except (TypeError, ValueError) as exc:  # numpy refuses this dtype: so may we
        try:
            getattr(be, method)(*cargs)
        except (DTypeError, TypeError):
            pass
        return exc
    getattr(be, method)(*cargs)
    return None


SHAPE = (5, 29)  # 145 elements: one main launch of 128 plus a tail
_INEXACT_UNARY = {"exp", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "erf"}
_FLOAT_ONLY_UNARY = {"exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
                     "sigmoid", "erf", "reciprocal"}
_INEXACT_BINARY = {"pow", "atan2"}


# ------------------------------------------------------------------ devices
def test_devices_and_properties(be):
    assert be.device_count() >= 1
    p = be.get_device_properties(0)
    assert p.name and p.type in ("gpu", "cpu", "accelerator", "other")
    assert p.total_memory > 0 and p.max_alloc > 0 and p.compute_units >= 1
    assert p.fp64 is True  # PoCL's CPU device has cl_khr_fp64
    assert {"platform", "vendor", "driver_version"} <= set(p.extra)


def test_visible_devices(monkeypatch):
    monkeypatch.setenv("PORTAGRAD_VISIBLE_DEVICES", "opencl:1")
    b = OpenCLBackend()
    assert b.device_count() == (1 if len(_PLATFORMS[0].get_devices()) >= 2 or len(_PLATFORMS) > 1 else 0)


def test_fp64_missing_raises_dtype_error(be):
    dev = be.device(0)
    saved = dev.fp64, dict(dev._programs), dict(dev._kernels)
    try:
        dev.fp64 = False
        dev._programs.clear()
        dev._kernels.clear()
        with pytest.raises(DTypeError, match="opencl:0.*float64"):
            contiguous(be, np.ones(3), D.float64)  # host->device copy
        x = View(be.allocate(0, 24), 0, (3,), (1,), D.float64)
        with pytest.raises(DTypeError, match="opencl:0.*float64"):
            be.unary("exp", x, x)
    finally:
        dev.fp64 = saved[0]
        dev._programs.update(saved[1])
        dev._kernels.update(saved[2])


# ------------------------------------------------------------------ unary
def _numpy_accepts(method: str, op: str, dtype, nargs: int) -> bool:
    """Whether the reference backend accepts ``op`` on ``dtype`` (the contract's valid inputs)."""
    odt = D.bool if op in ("logical_not", "isnan", "isinf") or op in COMPARISON_OPS \
        or op.startswith("logical") else dtype
    arrs = [np.ones(2, dtype.numpy) for _ in range(nargs)] + [np.empty(2, odt.numpy)]
    views = [View(a.view(np.uint8), 0, (2,), (1,), d) for a, d in zip(arrs, [dtype] * nargs + [odt])]
    try:
        with np.errstate(all="ignore"):
            getattr(NB, method)(op, *views)
    except (TypeError, ValueError):
        return False
    return True


_UNARY_CASES = [(op, dt) for op in UNARY_OPS for dt in DTYPES
                if _numpy_accepts("unary", op, dt, 1) or
                (not dt.is_floating_point and op in _FLOAT_ONLY_UNARY)]
_BINARY_CASES = [(op, dt) for op in BINARY_OPS + COMPARISON_OPS for dt in DTYPES
                 if _numpy_accepts("binary", op, dt, 2)]


@pytest.mark.parametrize("op,dtype", _UNARY_CASES, ids=[f"{o}-{d.name}" for o, d in _UNARY_CASES])
def test_unary_contiguous(be, op, dtype):
    if not dtype.is_floating_point and op in _FLOAT_ONLY_UNARY:
        # the core casts to a floating dtype first; the numpy backend happens to accept some
        # of these (scipy's erf on bool), the OpenCL backend raises DTypeError
        with pytest.raises(DTypeError):
            be.unary(op, *[contiguous(be, sample(dtype, (3,)), dtype)[0]] * 2)
        return
    x = contiguous(be, sample(dtype, SHAPE), dtype, offset=3)
    odt = D.bool if op in ("logical_not", "isnan", "isinf") else dtype
    out = empty(be, SHAPE, odt)
    assert run_both(be, "unary", op, x, out) is None
    assert_same(*host(be, out), exact=op not in _INEXACT_UNARY)


@pytest.mark.parametrize("op,dtype,layout", [
    (op, dt, layout) for op, dt in [("neg", D.float32), ("abs", D.int64), ("sqrt", D.float64),
                                    ("isnan", D.float32)]
    for layout in ["transposed", "broadcast", "inplace", "strided_out"]
    if not (layout == "inplace" and op == "isnan")])  # in place needs equal dtypes
def test_unary_layouts(be, op, dtype, layout):
    odt = D.bool if op == "isnan" else dtype
    a = sample(dtype, SHAPE, "positive" if op == "sqrt" else "any")
    if layout == "transposed":
        x = transposed(be, a, dtype)
        out = empty(be, SHAPE, odt)
    elif layout == "broadcast":
        x = broadcast_rows(be, a[0], SHAPE[0], dtype)
        out = empty(be, SHAPE, odt)
    elif layout == "inplace":
        x = out = contiguous(be, a, dtype, offset=1)
    else:  # output is a transposed view
        x = contiguous(be, a, dtype)
        out = transposed(be, np.zeros(SHAPE, odt.numpy), odt)
    run_both(be, "unary", op, x, out)
    assert_same(*host(be, out))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 64, 65, 1031])
def test_unary_sizes(be, n):
    x = contiguous(be, sample(D.float32, (n,)), D.float32)
    out = empty(be, (n,), D.float32)
    run_both(be, "unary", "relu", x, out)
    assert_same(*host(be, out))


# ------------------------------------------------------------------ binary
@pytest.mark.parametrize("op,dtype", _BINARY_CASES, ids=[f"{o}-{d.name}" for o, d in _BINARY_CASES])
def test_binary_contiguous(be, op, dtype):
    kind_b = "nonzero" if op in ("floordiv", "remainder", "fmod") else ("small_pos" if op == "pow" else "any")
    kind_a = "positive" if op == "pow" else "any"
    a = contiguous(be, sample(dtype, SHAPE, kind_a), dtype, offset=2)
    b = contiguous(be, sample(dtype, SHAPE, kind_b), dtype)
    odt = D.bool if op in COMPARISON_OPS or op.startswith("logical") else dtype
    out = empty(be, SHAPE, odt)
    assert run_both(be, "binary", op, a, b, out) is None
    assert_same(*host(be, out), exact=op not in _INEXACT_BINARY)


@pytest.mark.parametrize("op,dtype,case", [
    (op, dt, case)
    for op, dt in [("add", D.float32), ("floordiv", D.int64), ("remainder", D.float64),
                   ("lt", D.int32), ("maximum", D.float32), ("bitwise_xor", D.bool)]
    for case in ["scalar_b", "scalar_a", "broadcast", "transposed", "inplace"]
    if not (case == "inplace" and op in COMPARISON_OPS)])  # in place needs equal dtypes
def test_binary_layouts(be, op, dtype, case):
    odt = D.bool if op in COMPARISON_OPS else dtype
    kb = "nonzero" if op in ("floordiv", "remainder") else "any"
    a = sample(dtype, SHAPE)
    b = sample(dtype, SHAPE, kb)
    sc = b.flat[5].item()
    out = empty(be, SHAPE, odt)
    if case == "scalar_b":
        args = (contiguous(be, a, dtype), sc)
    elif case == "scalar_a":
        args = (sc, contiguous(be, b, dtype))
    elif case == "broadcast":
        args = (contiguous(be, a, dtype), broadcast_rows(be, b[1], SHAPE[0], dtype))
    elif case == "transposed":
        args = (transposed(be, a, dtype), contiguous(be, b, dtype, offset=5))
    else:
        x = contiguous(be, a, dtype)
        args = (x, contiguous(be, b, dtype))
        out = x
    run_both(be, "binary", op, *args, out)
    assert_same(*host(be, out))


@pytest.mark.parametrize("op,dtype,a,b", [
    ("add", D.float32, 1.5, 2.25), ("floordiv", D.int64, 7, -2), ("remainder", D.int32, -7, 3),
    ("pow", D.float64, 2.0, 0.5), ("maximum", D.float32, -1.0, 3.0),
    ("bitwise_xor", D.bool, True, False), ("logical_and", D.bool, 2, 0)])
def test_binary_of_two_scalars_is_computed_on_the_host(be, op, dtype, a, b):
    # no view operand: the value comes from the shared ufunc table and is filled on the device
    out = empty(be, (3,), dtype)
    run_both(be, "binary", op, a, b, out)
    assert_same(*host(be, out))


def test_the_shared_ufunc_table_covers_every_binary_op():
    assert set(BINARY_UFUNCS) == set(BINARY_OPS) | set(COMPARISON_OPS)


def test_int_division_by_scalar_zero_raises(be):
    x = contiguous(be, np.arange(4), D.int64)
    out = empty(be, (4,), D.int64)
    with pytest.raises(ZeroDivisionError):
        be.binary("floordiv", x[0], 0, out[0])


def test_int_floordiv_edge_values(be):
    a = np.array([-7, 7, -7, 7, np.iinfo(np.int32).min, 0], np.int32)
    b = np.array([2, -2, -2, 2, -1, 3], np.int32)
    x, y, out = contiguous(be, a, D.int32), contiguous(be, b, D.int32), empty(be, (6,), D.int32)
    for op in ("floordiv", "remainder"):
        run_both(be, "binary", op, x, y, out)
        assert_same(*host(be, out))


# ------------------------------------------------------------------ where / copy / fill
@pytest.mark.parametrize("dtype", [D.float32, D.int64, D.bool], ids=lambda d: d.name)
def test_where(be, dtype):
    cond = contiguous(be, sample(D.bool, SHAPE), D.bool)
    a = transposed(be, sample(dtype, SHAPE), dtype)
    out = empty(be, SHAPE, dtype)
    run_both(be, "where", cond, a, sample(dtype, (1,)).item(), out)
    assert_same(*host(be, out))
    b = broadcast_rows(be, sample(dtype, (SHAPE[1],)), SHAPE[0], dtype)
    run_both(be, "where", cond, a, b, out)
    assert_same(*host(be, out))


@pytest.mark.parametrize("src", DTYPES, ids=DT_IDS)
def test_copy_casts(be, src):
    a = sample(src, SHAPE)
    if src.is_floating_point:
        a = np.where(np.isfinite(a), a, 2.75).astype(src.numpy)  # float->int of inf/nan is undefined
        a.flat[:3] = [-2.7, 2.7, -0.0]
    for dst in DTYPES:
        x = contiguous(be, a, src, offset=1)
        out = empty(be, SHAPE, dst)
        run_both(be, "copy", x, out)
        assert_same(*host(be, out))
    x = transposed(be, a, src)
    out = transposed(be, np.zeros(SHAPE, src.numpy), src)
    run_both(be, "copy", x, out)
    assert_same(*host(be, out))


def test_copy_nan_to_bool(be):
    x = contiguous(be, np.array([np.nan, 0.0, -0.0, 1e-30]), D.float64)
    out = empty(be, (4,), D.bool)
    run_both(be, "copy", x, out)
    assert_same(*host(be, out))


@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
def test_fill(be, dtype):
    value = {"bool": True, "int32": -7, "int64": 2 ** 40, "float32": 1.5, "float64": -0.25}[dtype.name]
    out = empty(be, (3, 41), dtype)
    run_both(be, "fill", out, value)
    assert_same(*host(be, out))
    t = transposed(be, np.zeros((4, 5), dtype.numpy), dtype)
    sub = (View(t[0].buffer, 1, (2, 3), (1, 4), dtype), View(t[1].buffer, 1, (2, 3), (1, 4), dtype))
    run_both(be, "fill", sub, value)
    assert_same(be.to_host(t[0]), NB.to_host(t[1]))


# ------------------------------------------------------------------ reductions
_RED_CASES = [((50, 7), (1,)), ((3, 1000), (1,)), ((1, 5000), (1,)), ((20011,), (0,)),
              ((6, 5, 4), (0, 2)), ((4, 0), (1,)), ((4, 6), ())]


@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce(be, op, dtype):
    for shape, axes in _RED_CASES:
        if op in ("max", "min") and 0 in shape:
            continue
        a = sample(dtype, shape)
        if op == "prod" and dtype.is_floating_point:
            a = RNG.uniform(0.99, 1.01, shape).astype(dtype.numpy)
        if op == "prod" and not dtype.is_floating_point and dtype is not D.bool:
            a = RNG.integers(-2, 3, shape).astype(dtype.numpy)
        odt = D.int64 if dtype is D.bool and op in ("sum", "prod") else dtype
        oshape = tuple(1 if d in axes else s for d, s in enumerate(shape))
        x = contiguous(be, a, dtype, offset=1)
        out = empty(be, oshape, odt)
        run_both(be, "reduce", op, x, axes, out)
        assert_same(*host(be, out), exact=False, rtol=1e-4 if dtype is D.float32 else 1e-10)


def test_reduce_noncontiguous_and_nan(be):
    a = sample(D.float32, (300, 3), "positive")
    a[7, 1] = np.nan
    x = transposed(be, a, D.float32)
    for op in REDUCE_OPS:
        out = empty(be, (1, 3), D.float32)
        run_both(be, "reduce", op, x, (0,), out)
        assert_same(*host(be, out), exact=False, rtol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("op", ARG_REDUCE_OPS)
def test_arg_reduce(be, op, dtype):
    a = sample(dtype, (6, 37))
    if dtype.is_floating_point:
        a[2, 5] = a[2, 9] = np.nan
        a[3, :] = 1.0  # ties: first index
    for axis in (0, 1):
        x = contiguous(be, a, dtype)
        oshape = (1, 37) if axis == 0 else (6, 1)
        out = empty(be, oshape, D.int64)
        run_both(be, "arg_reduce", op, x, axis, out)
        assert_same(*host(be, out))


@pytest.mark.parametrize("src,dst", [(D.float32, D.float32), (D.float64, D.float64),
                                     (D.int32, D.int64), (D.bool, D.int64)], ids=str)
def test_cumsum(be, src, dst):
    a = sample(src, (7, 45), "positive")
    for axis in (0, 1):
        x = transposed(be, a, src)
        out = empty(be, (7, 45), dst)
        run_both(be, "cumsum", x, axis, out)
        assert_same(*host(be, out))


# ------------------------------------------------------------------ matmul
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 33, 65), (130, 257, 129), (8, 16, 16), (3, 0, 5)])
@pytest.mark.parametrize("dtype", [D.float32, D.float64], ids=lambda d: d.name)
def test_matmul_sizes(be, m, k, n, dtype):
    a = sample(dtype, (2, m, k), "positive")
    b = sample(dtype, (2, k, n), "positive")
    out = empty(be, (2, m, n), dtype)
    run_both(be, "matmul", contiguous(be, a, dtype, offset=3), contiguous(be, b, dtype), out)
    assert_same(*host(be, out), exact=False, rtol=1e-5 if dtype is D.float32 else 1e-12)


@pytest.mark.parametrize("kind", ["cpu", "gpu3"])
def test_matmul_strided_operands(be, kind):
    m, k, n = 19, 23, 37
    at = sample(D.float32, (k, m), "positive")  # a stored transposed
    a_tw = Twin(be, at, D.float32)
    a = a_tw.views(0, (3, m, k), (0, 1, m))  # broadcast batch (stride 0), transposed matrix
    bt = sample(D.float32, (3, n, k), "positive")
    b_tw = Twin(be, bt, D.float32)
    b = b_tw.views(0, (3, k, n), (n * k, 1, k))  # each batch transposed
    o_tw = Twin(be, np.zeros(3 * m * n), D.float32)
    out = o_tw.views(0, (3, m, n), (m * n, 1, m))  # column-major output
    try:
        be._force_gemm_kind = kind
        run_both(be, "matmul", a, b, out)
    finally:
        be._force_gemm_kind = None
    assert_same(be.to_host(out[0]), NB.to_host(out[1]), exact=False, rtol=1e-5)


@pytest.mark.parametrize("dtype", [D.int32, D.int64], ids=lambda d: d.name)
def test_matmul_ints(be, dtype):
    # exact, as numpy (PyTorch's CPU matmul takes integers); a transposed operand, a ragged size
    m, k, n = 5, 7, 3
    a = sample(dtype, (1, m, k))
    b_tw = Twin(be, sample(dtype, (n, k)), dtype)
    b = b_tw.views(0, (1, k, n), (0, 1, k))
    out = empty(be, (1, m, n), dtype)
    run_both(be, "matmul", contiguous(be, a, dtype, offset=2), b, out)
    assert_same(*host(be, out))


def test_matmul_int32_wraps(be):
    # overflow wraps as on the CPU (computed in the unsigned twin: signed overflow is undefined)
    a = contiguous(be, np.full((1, 1, 2), 2**30), D.int32)
    b = contiguous(be, np.full((1, 2, 1), 4), D.int32)
    out = empty(be, (1, 1, 1), D.int32)
    run_both(be, "matmul", a, b, out)
    assert_same(*host(be, out))
    assert be.to_host(out[0]).item() == 0


def test_matmul_rejects_bool(be):
    a = contiguous(be, np.ones((1, 2, 2)), D.bool)
    with pytest.raises(DTypeError):
        be.matmul(a[0], a[0], empty(be, (1, 2, 2), D.bool)[0])


# ------------------------------------------------------------------ gather / scatter / sort
@pytest.mark.parametrize("dtype", [D.float32, D.int64, D.bool], ids=lambda d: d.name)
def test_gather(be, dtype):
    x = transposed(be, sample(dtype, (6, 9)), dtype)
    for axis, ishape in ((0, (4, 9)), (1, (6, 13))):
        idx = RNG.integers(0, (6, 9)[axis], ishape)
        index = contiguous(be, idx, D.int64)
        out = empty(be, ishape, dtype)
        run_both(be, "gather", x, axis, index, out)
        assert_same(*host(be, out))


@pytest.mark.parametrize("reduce", [None, "add"])
@pytest.mark.parametrize("dtype", [D.float32, D.float64, D.int32], ids=lambda d: d.name)
def test_scatter(be, dtype, reduce):
    for axis in (0, 1):
        base = contiguous(be, sample(dtype, (5, 7)), dtype)
        ishape = (8, 7) if axis == 0 else (5, 11)
        idx = RNG.integers(0, (5, 7)[axis], ishape)  # many duplicates
        if reduce is None:  # duplicates with plain assignment are order-dependent: make unique
            ishape = (3, 7) if axis == 0 else (5, 4)
            idx = np.stack([RNG.permutation((5, 7)[axis])[:ishape[axis]] for _ in range(ishape[1 - axis])],
                           axis=1 - axis)
        index = contiguous(be, idx, D.int64)
        src = contiguous(be, sample(dtype, ishape), dtype)
        run_both(be, "scatter", base, axis, index, src, reduce)
        assert_same(*host(be, base), exact=dtype is not D.float32, rtol=1e-6)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [D.float32, D.float64, D.int32, D.int64, D.bool], ids=lambda d: d.name)
def test_sort(be, dtype, descending):
    a = sample(dtype, (6, 45))
    if dtype.is_floating_point:
        a[1, ::3] = 1.0  # ties
        a[2, ::5] = np.nan
    else:
        a = (a % 4).astype(dtype.numpy)  # lots of ties
    for axis in (0, 1):
        x = transposed(be, a, dtype)
        vals = empty(be, a.shape, dtype)
        idx = empty(be, a.shape, D.int64)
        run_both(be, "sort", x, axis, descending, vals, idx)
        assert_same(*host(be, vals))
        assert_same(*host(be, idx))


# ------------------------------------------------------------------ random
@pytest.mark.parametrize("dtype", [D.float32, D.float64], ids=lambda d: d.name)
def test_random_uniform_bit_identical(be, dtype):
    # every position inside a block of four slots, a block counter past 2**32, the 2**64 wrap
    for n, seed, offset in ((1, 0, 0), (1000, 2 ** 40 + 7, 3), (257, 12345, 2 ** 34 - 5),
                            (33, 7, 2 ** 64 - 6), (6, 1, 1), (5, 1, 2)):
        out = empty(be, (n,), dtype)
        be.random("uniform", out[0], seed, offset, -2.0, 3.5)
        want = philox.uniform(n, seed, offset, -2.0, 3.5, dtype.numpy)
        assert be.to_host(out[0]).tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [D.float32, D.float64], ids=lambda d: d.name)
def test_random_normal(be, dtype):
    for offset in (11, 2 ** 64 - 7):  # elements straddling two blocks; the 2**64 wrap
        out = empty(be, (40, 25), dtype)
        be.random("normal", out[0], 99, offset, 1.0, 2.0)
        want = philox.normal(1000, 99, offset, 1.0, 2.0, dtype.numpy).reshape(40, 25)
        np.testing.assert_allclose(be.to_host(out[0]), want, rtol=1e-6, atol=1e-6)


def test_random_noncontiguous_out(be):
    out = transposed(be, np.zeros((4, 6), np.float32), D.float32)
    run_both(be, "random", "uniform", out, 5, 0, 0.0, 1.0)
    assert_same(*host(be, out))


# ------------------------------------------------------------------ memory
def test_caching_allocator_reuses(be):
    be.empty_cache(0)
    s0 = be.memory_stats(0)
    buf = be.allocate(0, 1000)
    s1 = be.memory_stats(0)
    assert s1["allocated"] - s0["allocated"] == 1024  # 512-byte classes
    del buf
    s2 = be.memory_stats(0)
    assert s2["allocated"] == s0["allocated"] and s2["reserved"] == s1["reserved"]
    buf = be.allocate(0, 900)  # same class: served from the cache
    assert be.memory_stats(0)["num_reuses"] == s2["num_reuses"] + 1
    assert be.memory_stats(0)["peak_allocated"] >= s1["allocated"]
    del buf
    be.reset_peak_memory_stats(0)
    assert be.memory_stats(0)["peak_allocated"] == be.memory_stats(0)["allocated"]
    be.empty_cache(0)
    assert be.memory_stats(0)["reserved"] == be.memory_stats(0)["allocated"]


def test_out_of_memory(be):
    total = be.get_device_properties(0).total_memory
    with pytest.raises(OutOfMemoryError, match=r"opencl:0 .*tried to allocate .*MiB allocated"):
        be.allocate(0, 2 * total)
    buf = be.allocate(0, 4096)  # still works afterwards
    assert buf.nbytes == 4096


def test_pinned_memory_non_blocking(be):
    n = 100_003
    pinned = be.pin_memory(n * 4)
    assert be.is_pinned(pinned) and be.is_pinned(pinned.view(np.float32)[3:])
    assert not be.is_pinned(np.zeros(4))
    src = pinned.view(np.float32)
    src[:] = np.arange(n, dtype=np.float32)
    dst = empty(be, (n,), D.float32)[0]
    be.from_host(dst, src, non_blocking=True)
    be.synchronize(0)
    np.testing.assert_array_equal(be.to_host(dst), np.arange(n, dtype=np.float32))


def test_small_writes_do_not_wait_and_keep_their_values(be, monkeypatch):
    """A small host->device write is enqueued without blocking (it would wait for every kernel
    queued before it), from a private copy: the caller's array may change at once, and the
    device still receives the values it had at the call. A large pageable one blocks."""
    import pyopencl as cl

    from portagrad.backends.opencl import runtime

    blocking = []
    orig = cl.enqueue_copy

    def spy(queue, dst, src, **kw):
        if isinstance(src, np.ndarray):
            blocking.append(kw.get("is_blocking", True))
        return orig(queue, dst, src, **kw)

    monkeypatch.setattr(cl, "enqueue_copy", spy)
    rng = np.random.default_rng(0)
    src = rng.standard_normal(1000).astype(np.float32)
    want = []
    dsts = []
    for _ in range(20):  # writes between kernels, the source overwritten after each call
        d = empty(be, (1000,), D.float32)[0]
        be.from_host(d, src)
        want.append(src.copy())
        src += 1.0
        out = empty(be, (1000,), D.float32)[0]
        be.unary("neg", d, out)
        dsts.append(out)
    assert len(blocking) >= 20 and not any(blocking)
    for d, w in zip(dsts, want):
        np.testing.assert_array_equal(be.to_host(d), -w)
    n = runtime._ASYNC_WRITE_MAX // 4 + 1
    big = empty(be, (n,), D.float32)[0]
    blocking.clear()
    be.from_host(big, np.ones(n, np.float32))
    assert blocking == [True]
    assert be.to_host(big).sum() == n


@pytest.mark.parametrize("dtype", [D.float64, D.int64, D.bool], ids=lambda d: d.name)
def test_two_devices_copy_between(be, dtype):
    # the values (both ways) are the conformance kit's check; the OpenCL part: the buffer really
    # lives on device 1 and device 1's kernels read it
    if be.device_count() < 2:
        pytest.skip("needs two OpenCL devices (POCL_DEVICES='pthread pthread')")
    from portagrad.testing.conformance.device_checks import (check_copy_between,
                                                             check_to_another_device)

    check_copy_between(be, dtype, 0, 1)
    check_copy_between(be, dtype, 1, 0)
    if dtype is D.float64:
        check_to_another_device("opencl")
    a = sample(D.float64, (33,))
    src = contiguous(be, a, D.float64, device=0)[0]
    dst = empty(be, (33,), D.float64, device=1)[0]
    assert dst.buffer.device == 1
    be.copy_between(dst, src)
    out = empty(be, (33,), D.float64, device=1)[0]
    be.unary("neg", dst, out)  # kernels run on device 1 too
    np.testing.assert_array_equal(be.to_host(out), -a)


def test_events_elapsed(be):
    e1 = be.record_event(0)
    x = contiguous(be, np.ones(10000, np.float32), D.float32)[0]
    be.unary("exp", x, x)
    e2 = be.record_event(0)
    assert be.elapsed_ms(e1, e2) >= 0.0


def test_build_error_is_readable(be):
    from portagrad.backends.opencl.errors import BuildError

    with pytest.raises(BuildError, match=r"opencl:0 .*compile"):
        be.device(0).program(("bad",), lambda: "__kernel void k() { nope; }", [], "a test")


def test_builds_leave_no_compiler_notes(be):
    # the device's source prefix must not make the compiler warn: PoCL's clang prints its warning
    # count ("1 warning generated.") to stderr at every build, where a user sees it
    import uuid

    dev = be.device(0)
    tag = uuid.uuid4().hex  # a source nothing has cached: the compiler really runs
    src = (f"// {tag}\n__kernel void k(__global float* a) "
           "{ a[0] = isnan(a[0]) ? 0.0f : a[0]; }")
    prg = dev.program(("notes", tag), lambda: src, [], "a test")
    log = prg.get_build_info(dev.cl_device, cl.program_build_info.LOG)
    assert "warning" not in log.lower(), log


def test_error_translation_oom():
    from portagrad.backends.opencl.errors import translate

    class FakeError(Exception):
        code = -4
        routine = "clCreateBuffer"

    err = translate(FakeError("MEM_OBJECT_ALLOCATION_FAILURE"), "opencl:0 (dev)", "allocating")
    assert isinstance(err, OutOfMemoryError) and "opencl:0 (dev)" in str(err)


@pytest.mark.parametrize("nbytes", [8 << 20, (8 << 20) + 4, (16 << 20) - 4, 16 << 20, (19 << 20) + 12])
def test_staged_device_to_host_reads(be, nbytes):
    # large reads go through two pinned staging buffers on GPUs; forced here on PoCL: every chunk
    # boundary (8 MiB), a ragged last chunk, and a source offset must come back intact
    n = nbytes // 4
    x = np.random.default_rng(nbytes).standard_normal(n + 3).astype(np.float32)
    buf = be.allocate(0, x.nbytes)
    be.from_host(View(buf, 0, (n + 3,), (1,), D.float32), x)
    old = be._staged_reads
    be._staged_reads = True
    try:
        got = be.to_host(View(buf, 3, (n,), (1,), D.float32))
        got2 = be.to_host(View(buf, 0, (n + 3,), (1,), D.float32))  # the stages are reused
    finally:
        be._staged_reads = old
    np.testing.assert_array_equal(got, x[3:])
    np.testing.assert_array_equal(got2, x)
