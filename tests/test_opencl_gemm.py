"""Every GEMM kernel family of the OpenCL backend, on PoCL (CI) or whatever device is there.

The GPU kernel ("gpu3") is forced on CPU devices through the backend's ``_force_gemm_kind`` so
that its index arithmetic, bounds checks and double buffering are checked
everywhere at ragged sizes and for every operand layout (``a`` k-fast or m-fast, ``b`` n-fast or
k-fast, broadcast batches, column-major outputs, offsets). Every "gpu3" tile the GEMM sweep times
(``GPU3_SWEEP``) is checked through ``launch_gemm``'s ``config``, on both its unchecked 4-vector
path (aligned operands, interior tiles) and its scalar and bounds-checked paths.
"""
from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed")
try:
    _PLATFORMS = cl.get_platforms()
except cl.Error:  # pragma: no cover
    _PLATFORMS = []
if not any(p.get_devices() for p in _PLATFORMS):  # pragma: no cover
    pytest.skip("no OpenCL platform/device available", allow_module_level=True)

from portagrad import _dtype as D  # noqa: E402
from portagrad.backends.interface import View  # noqa: E402
from portagrad.backends.opencl import gemm  # noqa: E402
from portagrad.backends.opencl.backend import OpenCLBackend  # noqa: E402
from portagrad.backends.opencl.gemm_packed import PACKED_TILES  # noqa: E402
from portagrad.backends.opencl.gemm import (  # noqa: E402
    GEMM_KINDS, GPU3_CONFIG, GPU3_SWEEP, Gpu3Config, gpu3_layout, launch_gemm)

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
    be._force_gemm_kind = kind
    try:
        be.matmul(a_view, b_view, out_view)
    finally:
        be._force_gemm_kind = None


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


def test_unknown_env_kind_raises_naming_the_valid_ones(be, monkeypatch):
    # "gpu" and "gpu_simple" were families once: the variable must now say what it accepts
    monkeypatch.setattr(gemm, "_ENV_KIND", "gpu")
    a = View(be.allocate(0, 4), 0, (1, 1, 1), (1, 1, 1), D.float32)
    msg = r"'gpu' \(from PORTAGRAD_OPENCL_GEMM\); expected one of cpu, gpu3"
    with pytest.raises(ValueError, match=msg):
        be.matmul(a, a, a)


def layout_view(be, x: np.ndarray, layout: str, offset: int, broadcast: bool = False):
    """A (B, R, C) view of ``x`` starting ``offset`` elements into its buffer: "row" stores each
    matrix C-ordered, "col" transposed (R is the unit-stride axis); ``broadcast`` stores one matrix
    and gives the batch stride 0."""
    bsz, r, c = x.shape
    src = x[:1] if broadcast else x
    buf, dt = store(be, src if layout == "row" else src.transpose(0, 2, 1), offset)
    strides = (r * c, c, 1) if layout == "row" else (r * c, 1, r)
    return View(buf, offset, x.shape, (0 if broadcast else strides[0], *strides[1:]), dt)


def run_gpu3(be, cfg: Gpu3Config, m: int, k: int, n: int, a_layout: str, b_layout: str,
             aligned: bool, dtype=np.float32, bsz: int = 2):
    """``a @ b`` through "gpu3" with tile ``cfg``; returns (got, want, layout used). Aligned:
    offsets 4, B broadcast over the batch; else odd offsets, A broadcast."""
    a = RNG.standard_normal((bsz, m, k)).astype(dtype)
    b = RNG.standard_normal((bsz, k, n)).astype(dtype)
    if aligned:
        b[1:] = b[:1]
    else:
        a[1:] = a[:1]
    av = layout_view(be, a, a_layout, 4 if aligned else 3, broadcast=not aligned)
    bv = layout_view(be, b, b_layout, 4 if aligned else 1, broadcast=aligned)
    off = 4 if aligned else 2
    obuf = be.allocate(0, a.itemsize * (bsz * m * n + off))
    ov = View(obuf, off, (bsz, m, n), (m * n, n, 1), av.dtype)
    launch_gemm(be.device(0), av, bv, ov, kind="gpu3", config=cfg)
    return be.to_host(ov), a @ b, gpu3_layout(av, bv, ov, cfg)


def assert_close(got, want, k: int):
    tol = 1e-12 if got.dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


@pytest.mark.parametrize("cfg", GPU3_SWEEP, ids=lambda c: c.name)
@pytest.mark.parametrize("a_layout,b_layout", [("row", "row"), ("row", "col"), ("col", "row"),
                                               ("col", "col")])
def test_gpu3_tile_vector_path(be, cfg, a_layout, b_layout):
    # sizes: full interior tiles (the unchecked path) next to ragged edge tiles in m and n, and a
    # last k slice of 4 (multiples of 4 everywhere, so the 4-vector path is taken)
    m, k, n = 2 * cfg.tm + 4, 3 * cfg.tk + 4, cfg.tn + 36
    got, want, lay = run_gpu3(be, cfg, m, k, n, a_layout, b_layout, aligned=True)
    assert (lay.a_vec, lay.b_vec, lay.c_vec) == (cfg.vec,) * 3
    assert_close(got, want, k)


@pytest.mark.parametrize("cfg", GPU3_SWEEP, ids=lambda c: c.name)
@pytest.mark.parametrize("a_layout,b_layout", [("row", "row"), ("col", "col")])
def test_gpu3_tile_ragged_unaligned(be, cfg, a_layout, b_layout):
    # primes and one-past-a-tile sizes, odd offsets: scalar loads, bounds checks on every edge
    m, k, n = cfg.tm + 1, 2 * cfg.tk + 3, cfg.tn + 31
    got, want, lay = run_gpu3(be, cfg, m, k, n, a_layout, b_layout, aligned=False)
    assert not (lay.a_vec or lay.b_vec or lay.c_vec)
    assert_close(got, want, k)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (127, 15, 129), (132, 40, 260)])
def test_gpu3_float64(be, m, k, n):
    if not be.device(0).fp64:
        pytest.skip("no float64 on this device")
    cfg = GPU3_CONFIG["float64"]
    got, want, _ = run_gpu3(be, cfg, m, k, n, "row", "col", aligned=(m % 4 == 0), dtype=np.float64)
    assert_close(got, want, k)


def test_gpu3_bad_tile_raises(be):
    with pytest.raises(ValueError, match="multiple of 4"):
        Gpu3Config(128, 128, 16, 16, 64).validate()  # 2 rows per work-item
    with pytest.raises(ValueError, match="evenly"):
        Gpu3Config(128, 128, 12).validate()
    with pytest.raises(ValueError, match="local memory"):  # checked before building
        run_gpu3(be, Gpu3Config(128, 128, 1024), 4, 4, 4, "row", "row", aligned=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("cfg", [GPU3_CONFIG["float32"], Gpu3Config(128, 128, 8, warp8x4=True),
                                 Gpu3Config(128, 128, 16, vec=False)], ids=lambda c: c.name)
@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_gpu3_16bit_tiles(be, dtype, cfg, aligned):
    """"gpu3" on 16-bit operands: 4-vectors of ``ushort`` wherever a 4-vector of elements is
    aligned to its 8 bytes (offsets and strides multiples of 4 elements), scalar loads and bounds
    checks elsewhere. Integer operands: the float32 sums are exact, so the result rounded once is
    one value whatever the order."""
    np_dt = getattr(D, dtype).numpy
    m, k, n = (2 * cfg.tm + 4, 3 * cfg.tk + 4, cfg.tn + 36) if aligned else \
        (cfg.tm + 1, 2 * cfg.tk + 3, cfg.tn + 31)
    a, b = _int_operands(np_dt, (2, m, k), (2, k, n))
    b[1:] = b[:1]
    av = layout_view(be, a, "row" if aligned else "col", 4 if aligned else 3)
    bv = layout_view(be, b, "col", 4 if aligned else 1, broadcast=True)
    off = 4 if aligned else 2
    ov = View(be.allocate(0, 2 * (2 * m * n + off)), off, (2, m, n), (m * n, n, 1), av.dtype)
    launch_gemm(be.device(0), av, bv, ov, kind="gpu3", config=cfg)
    lay = gpu3_layout(av, bv, ov, cfg)
    assert (lay.a_vec, lay.b_vec, lay.c_vec) == ((cfg.vec and aligned),) * 3
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np_dt)
    np.testing.assert_array_equal(be.to_host(ov).view(np.uint16), want.view(np.uint16))


def test_gpu3_2byte_alignment_rule(be):
    """A 16-bit 4-vector is 8 bytes: an offset of 2 elements (4 bytes) is not aligned, 4 is."""
    cfg = GPU3_CONFIG["bfloat16"]
    x = np.zeros((1, 8, 8), D.bfloat16.numpy)
    for off, vec in ((2, False), (4, True), (8, True)):
        v = layout_view(be, x, "row", off)
        assert gpu3_layout(v, v, v, cfg).a_vec is vec


def _int_operands(np_dt, *shapes):
    """Small non-negative integers: every product and partial sum is exact in float32 whatever
    the order, so the product rounded once to the 16-bit dtype is one value; the sums pass 2048
    (float16) and 256 (bfloat16), where a kernel rounding partial sums would differ."""
    return [RNG.integers(0, 9, s).astype(np_dt) for s in shapes]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", GEMM_KINDS)
@pytest.mark.parametrize("a_layout,b_layout", [("row", "row"), ("col", "col"), ("row", "col")])
def test_16bit_gemm_accumulates_in_float32(be, dtype, kind, a_layout, b_layout):
    """16-bit operands, float32 accumulation, the output rounded once. Every kernel reads the
    16-bit operands themselves: no float32 temporaries ("packed" allocates its panels only)."""
    np_dt = getattr(D, dtype).numpy
    m, k, n, bsz = 37, 300, 70, 2
    a, b = _int_operands(np_dt, (bsz, m, k), (bsz, k, n))
    av = layout_view(be, a, a_layout, 3)
    bv = layout_view(be, b, b_layout, 1)
    ov = View(be.allocate(0, 2 * bsz * m * n), 0, (bsz, m, n), (m * n, n, 1), av.dtype)
    be.device(0).queue.finish()
    be.reset_peak_memory_stats(0)
    before = be.memory_stats(0)
    run(be, kind, av, bv, ov)
    extra = be.memory_stats(0)["peak_allocated"] - before["allocated"]
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np_dt)
    np.testing.assert_array_equal(be.to_host(ov).view(np.uint16), want.view(np.uint16))
    if kind in ("cpu", "gpu3", "dot", "gemv"):
        assert extra == 0
    elif kind == "packed":  # the panels only: float16 widened as packed, bfloat16 as its bits
        per = 4 if dtype == "float16" else 2
        assert extra <= per * bsz * (-(-m // 8) * 8 * k + -(-n // 16) * 16 * k) + 4096


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_packed_tiles(be, dtype):
    np_dt = getattr(D, dtype).numpy
    for tile in PACKED_TILES[dtype]:
        assert tile.kc == 0  # one pass: out is rounded once
        m, k, n = 29, 170, 45
        a, b = _int_operands(np_dt, (1, m, k), (1, k, n))
        av, bv = layout_view(be, a, "row", 0), layout_view(be, b, "col", 0)
        ov = View(be.allocate(0, 2 * m * n), 0, (1, m, n), (m * n, 1, m), av.dtype)
        launch_gemm(be.device(0), av, bv, ov, config=tile)
        want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np_dt)
        np.testing.assert_array_equal(be.to_host(ov).view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_direct_vector_sources_call_no_vector_builtin(dtype):
    """With ``direct`` (PoCL), the CPU families read and write vectors through pointers: PoCL
    calls ``vloadn``/``vstoren`` out of line, which spilled the accumulators on every k step."""
    from portagrad.backends.opencl.gemm_dot import dot_source
    from portagrad.backends.opencl.gemm_gemv import gemv_source

    sources = [gemm.gemm_source(dtype, "cpu", True, True, direct=True).source,
               dot_source(dtype, True, True, True),
               gemv_source(dtype, 3, True, True, True, True, direct=True),
               gemv_source(dtype, 3, False, True, True, True, direct=True)]
    for src in sources:
        assert "vload" not in src and "vstore" not in src, src
    # without it, the builtins (the portable form other drivers inline)
    assert "vload" in gemm.gemm_source(dtype, "cpu", True, True).source


def test_linear_layout_takes_dot_on_cpu_devices(be):
    """``x @ W.T`` (both operands contiguous along k) takes "dot" on CPU devices unless timed."""
    dev = be.device(0)
    if dev.is_gpu:
        pytest.skip("dot is a CPU-device family; GPUs choose among gpu3 tiles")
    from portagrad.backends.opencl import gemm_tune

    cands = gemm.candidates(dev, "float32", kfast=True)
    assert cands[0] == ("dot", None)
    assert gemm_tune.default_choice(cands, 1 << 30, 512, 512) == ("dot", None)
    assert gemm_tune.default_choice(cands, 1000, 3, 5) == ("dot", None)
    assert ("dot", None) not in gemm.candidates(dev, "float32")
