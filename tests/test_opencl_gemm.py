"""Every GEMM kernel family of the OpenCL backend, on PoCL (CI) or whatever device is there.

The GPU kernels ("gpu", "gpu_simple") are forced on CPU devices through the backend's
``_force_gemm_gpu`` so that their index arithmetic, bounds checks and double buffering are checked
everywhere at ragged sizes and for every operand layout (``a`` k-fast or m-fast, ``b`` n-fast or
k-fast, broadcast batches, column-major outputs, offsets).
"""
from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed")
try:
    _PLATFORMS = cl.get_platforms()
except cl.Error:  # pragma: no cover
    _PLATFORMS = []
if not any(p.get_devices() for p in _PLATFORMS):  # pragma: no cover
    pytest.skip("no OpenCL platform/device available", allow_module_level=True)

from portagrad import _dtype as D  # noqa: E402
from portagrad.backends.interface import View  # noqa: E402
from portagrad.backends.opencl.backend import OpenCLBackend  # noqa: E402
from portagrad.backends.opencl.gemm import GEMM_KINDS  # noqa: E402

RNG = np.random.default_rng(2)


@pytest.fixture(scope="module")
def be() -> OpenCLBackend:
    return OpenCLBackend()


def store(be, arr: np.ndarray, offset: int = 0):
    """Device buffer holding ``offset`` zeros then ``arr`` (C order); returns the buffer."""
    flat = np.concatenate([np.zeros(offset, arr.dtype), np.ascontiguousarray(arr).reshape(-1)])
    dt = D.from_numpy_dtype(arr.dtype)
    buf = be.allocate(0, flat.nbytes)
    be.from_host(View(buf, 0, (flat.size,), (1,), dt), flat)
    return buf, dt


def run(be, kind, a_view, b_view, out_view):
    be._force_gemm_gpu = kind
    try:
        be.matmul(a_view, b_view, out_view)
    finally:
        be._force_gemm_gpu = None


@pytest.mark.parametrize("kind", GEMM_KINDS)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 33, 65), (130, 257, 129), (128, 16, 128),
                                   (129, 17, 260), (5, 300, 3)])
@pytest.mark.parametrize("a_layout", ["row", "col"])
@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_gemm_layouts(be, kind, m, k, n, a_layout, b_layout):
    bsz = 2
    a = RNG.standard_normal((bsz, m, k)).astype(np.float32)
    b = RNG.standard_normal((bsz, k, n)).astype(np.float32)
    if a_layout == "row":
        abuf, dt = store(be, a, offset=3)
        av = View(abuf, 3, (bsz, m, k), (m * k, k, 1), dt)
    else:  # each matrix stored transposed: m is the unit-stride axis
        abuf, dt = store(be, a.transpose(0, 2, 1), offset=1)
        av = View(abuf, 1, (bsz, m, k), (m * k, 1, m), dt)
    if b_layout == "row":
        bbuf, _ = store(be, b)
        bv = View(bbuf, 0, (bsz, k, n), (k * n, n, 1), dt)
    else:
        bbuf, _ = store(be, b.transpose(0, 2, 1))
        bv = View(bbuf, 0, (bsz, k, n), (k * n, 1, k), dt)
    obuf = be.allocate(0, 4 * bsz * m * n + 8)
    ov = View(obuf, 2, (bsz, m, n), (m * n, n, 1), dt)
    run(be, kind, av, bv, ov)
    want = a @ b
    np.testing.assert_allclose(be.to_host(ov), want, rtol=2e-5, atol=2e-5 * np.sqrt(k))


@pytest.mark.parametrize("kind", GEMM_KINDS)
def test_gemm_broadcast_batch_column_major_out_float64(be, kind):
    m, k, n, bsz = 70, 45, 131, 3
    a = RNG.standard_normal((m, k))
    b = RNG.standard_normal((bsz, k, n))
    abuf, dt = store(be, a)
    av = View(abuf, 0, (bsz, m, k), (0, k, 1), dt)  # broadcast batch
    bbuf, _ = store(be, b)
    bv = View(bbuf, 0, (bsz, k, n), (k * n, n, 1), dt)
    obuf = be.allocate(0, 8 * bsz * m * n)
    ov = View(obuf, 0, (bsz, m, n), (m * n, 1, m), dt)  # column-major output
    run(be, kind, av, bv, ov)
    np.testing.assert_allclose(be.to_host(ov), a @ b, rtol=1e-12, atol=1e-12)


def test_unknown_kind_raises(be):
    a = View(be.allocate(0, 4), 0, (1, 1, 1), (1, 1, 1), D.float32)
    with pytest.raises(ValueError, match="GEMM kernel family"):
        run(be, "nope", a, a, a)
