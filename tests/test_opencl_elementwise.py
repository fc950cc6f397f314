"""Launch plans of the OpenCL backend's elementwise primitives (PoCL on CI).

The backend caches, per signature (op, dtypes, device, output shape and strides, input strides or
"scalar"), a plan: kernel, launch geometry and constant arguments. These tests check every launch
shape a plan can take (chunked loops, one guarded launch, exact main + tail launches, loop and
N-D strided kernels of rank 1..5) on both sides of the size thresholds, and that a cached plan is
right for new buffers, offsets and scalar values.
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
    pytest.skip("no OpenCL platform/device available", allow_module_level=True)

from portagrad import _dtype as D  # noqa: E402
from portagrad.backends.interface import View  # noqa: E402
from portagrad.backends.opencl.backend import OpenCLBackend  # noqa: E402

RNG = np.random.default_rng(1)


@pytest.fixture(scope="module")
def be() -> OpenCLBackend:
    return OpenCLBackend()


@pytest.fixture(params=["loop", "grid", "grid_threshold", "exact"])
def style(request, be):
    """Run a test in every elementwise launch style (see ``Device.ew_style``): "loop" (CPU
    devices), "grid" (GPUs: every contiguous launch guarded, N-D strided ranges), "grid" with a
    size threshold (guarded below 8192 elements, main + tail above) and "exact" (main + tail)."""
    dev = be.device(0)
    old = dev.ew_style, dev.guard_below
    dev.ew_style = "grid" if request.param.startswith("grid") else request.param
    dev.guard_below = 8192 if request.param == "grid_threshold" else 1 << 62
    caches = (be._uplans, be._bplans, be._wplans, be._cplans)
    for c in caches:
        c.clear()
    yield request.param
    dev.ew_style, dev.guard_below = old
    for c in caches:
        c.clear()


def put(be, arr: np.ndarray, offset: int = 0) -> View:
    """A contiguous device view of ``arr`` after ``offset`` unused elements."""
    arr = np.array(arr, order="C")  # (not ascontiguousarray: it makes 0-d arrays 1-d)
    dt = D.from_numpy_dtype(arr.dtype)
    flat = np.concatenate([np.zeros(offset, arr.dtype), arr.reshape(-1)])
    buf = be.allocate(0, max(flat.nbytes, 1))
    if flat.size:
        be.from_host(View(buf, 0, (flat.size,), (1,), dt), flat)
    strides = tuple(s // arr.itemsize for s in arr.strides) if arr.ndim else ()
    return View(buf, offset, arr.shape, strides, dt)


def empty(be, shape, np_dtype=np.float32) -> View:
    return put(be, np.zeros(shape, np_dtype))


def get(be, v: View) -> np.ndarray:
    return be.to_host(v)


SIZES = [1, 5, 63, 64, 65, 1000, 8191, 8192, 8193, 3 * 8192 + 5]


@pytest.mark.parametrize("n", SIZES)
def test_contiguous_sizes(be, style, n):
    a = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    va, vb = put(be, a, offset=3), put(be, b)
    out = empty(be, (n,))
    be.binary("mul", va, vb, out)
    np.testing.assert_array_equal(get(be, out), a * b)
    be.binary("add", va, np.float32(0.5), out)  # view (op) scalar
    np.testing.assert_array_equal(get(be, out), a + np.float32(0.5))
    be.binary("sub", 2.0, vb, out)  # scalar (op) view
    np.testing.assert_array_equal(get(be, out), np.float32(2.0) - b)
    be.unary("neg", va, out)
    np.testing.assert_array_equal(get(be, out), -a)
    o64 = empty(be, (n,), np.float64)
    be.copy(va, o64)  # cast
    np.testing.assert_array_equal(get(be, o64), a.astype(np.float64))
    cond = put(be, a > 0)
    be.where(cond, va, 0.0, out)
    np.testing.assert_array_equal(get(be, out), np.where(a > 0, a, np.float32(0)))


@pytest.mark.parametrize("shape", [(7,), (5, 9), (3, 4, 70), (2, 3, 5, 7), (2, 1, 3, 2, 5, 3)])
def test_strided_ranks(be, style, shape):
    """Transposed, broadcast and sliced operands give coalesced ranks 1..5."""
    r = len(shape)
    a = RNG.standard_normal(shape).astype(np.float32)
    # ``b`` stored with its axes reversed (a transposed view), ``c`` broadcast along axis 0
    bt = np.ascontiguousarray(RNG.standard_normal(shape[::-1]).astype(np.float32))
    vb = put(be, bt, offset=1)
    vb = View(vb.buffer, 1, shape, vb.strides[::-1], vb.dtype)
    b = bt.transpose(tuple(range(r))[::-1])
    row = RNG.standard_normal(shape[1:]).astype(np.float32)
    vr = put(be, row, offset=2)
    vc = View(vr.buffer, 2, shape, (0,) + vr.strides, vr.dtype)
    c = np.broadcast_to(row, shape)
    va = put(be, a)
    out = empty(be, shape)
    be.binary("add", va, vb, out)
    np.testing.assert_array_equal(get(be, out), a + b)
    be.binary("mul", vb, vc, out)
    np.testing.assert_array_equal(get(be, out), b * c)
    be.binary("maximum", vc, 0.25, out)
    np.testing.assert_array_equal(get(be, out), np.maximum(c, np.float32(0.25)))
    be.unary("abs", vb, out)
    np.testing.assert_array_equal(get(be, out), np.abs(b))
    # a strided *output*: every other element of a wider buffer, written in place
    wide = put(be, np.zeros(shape[:-1] + (2 * shape[-1],), np.float32))
    ws = View(wide.buffer, 0, shape, wide.strides[:-1] + (2,), wide.dtype)
    be.binary("sub", va, vc, ws)
    want = np.zeros(shape[:-1] + (2 * shape[-1],), np.float32)
    want[..., ::2] = a - c
    np.testing.assert_array_equal(get(be, wide), want)
    be.binary("mul", ws, 2.0, ws)  # in place, strided
    want[..., ::2] *= 2
    np.testing.assert_array_equal(get(be, wide), want)


def test_cached_plan_new_buffers_offsets_scalars(be, style):
    """The second call of a signature takes the cached plan: new data, offsets and scalars."""
    shape = (33, 17)
    for k in range(3):
        a = RNG.standard_normal(shape).astype(np.float32)
        b = RNG.standard_normal(shape[1]).astype(np.float32)
        va = put(be, a, offset=k)
        vr = put(be, b, offset=2 * k)
        vb = View(vr.buffer, 2 * k, shape, (0, 1), vr.dtype)
        out = empty(be, shape)
        be.binary("add", va, vb, out)
        np.testing.assert_array_equal(get(be, out), a + b)
        s = float(k) + 0.5
        be.binary("mul", va, s, out)
        np.testing.assert_array_equal(get(be, out), a * np.float32(s))
    # integer scalars wrap like numpy's fixed-width arithmetic and bool scalars are 0/1
    vi = put(be, np.arange(10, dtype=np.int32))
    oi = empty(be, (10,), np.int32)
    for s in (3, -7, 2 ** 31 + 5):
        be.binary("add", vi, s, oi)
        want = (np.arange(10, dtype=np.int64) + s).astype(np.int64)
        np.testing.assert_array_equal(get(be, oi), ((want + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32))
    vb8 = put(be, np.array([True, False, True]))
    ob = empty(be, (3,), np.bool_)
    for s in (True, False):
        be.binary("logical_or", vb8, s, ob)
        np.testing.assert_array_equal(get(be, ob), np.array([True, False, True]) | s)


def test_integer_division_by_scalar_zero_never_cached(be):
    vi = put(be, np.arange(1, 6, dtype=np.int64))
    oi = empty(be, (5,), np.int64)
    be.binary("floordiv", vi, 2, oi)
    np.testing.assert_array_equal(get(be, oi), np.arange(1, 6) // 2)
    with pytest.raises(ZeroDivisionError):
        be.binary("floordiv", vi, 0, oi)
    with pytest.raises(ZeroDivisionError):
        be.binary("remainder", vi, 0, oi)


def test_zero_size_and_zero_dim(be, style):
    e = empty(be, (0, 3))
    be.binary("add", e, e, e)
    be.unary("neg", e, e)
    x = put(be, np.array(3.0, np.float32))
    o = empty(be, ())
    be.binary("mul", x, 2.0, o)
    assert get(be, o) == np.float32(6.0)
    be.binary("add", x, x, o)
    assert get(be, o) == np.float32(6.0)
