"""The "packed" GEMM family and the per-device GEMM tuner of the OpenCL backend.

Every packed tile (``PACKED_TILES``) is checked at ragged sizes, on every operand layout, with
broadcast batches, a strided output and more than one ``kc`` pass. The tuner is checked for what
it promises: a size class is timed once and then remembered (in memory and in its cache file,
which a new process, here a new ``Tuner``, reads back instead of timing), small products and
``PORTAGRAD_OPENCL_GEMM_TUNE=0`` are never timed, and a broken cache file is ignored.
"""
from __future__ import annotations

import json
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
from portagrad.backends.opencl import gemm, gemm_tune  # noqa: E402
from portagrad.backends.opencl.backend import OpenCLBackend  # noqa: E402
from portagrad.backends.opencl.gemm_packed import PACKED_TILES, PackedTile  # noqa: E402

RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def be() -> OpenCLBackend:
    return OpenCLBackend()


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A tuner state of its own: no remembered choices, the cache file under ``tmp_path``."""
    monkeypatch.setattr(gemm, "_TUNERS", {})
    monkeypatch.setattr(gemm, "_ENV_KIND", None)
    monkeypatch.setenv("PORTAGRAD_OPENCL_GEMM_CACHE", str(tmp_path))
    monkeypatch.delenv("PORTAGRAD_OPENCL_GEMM_TUNE", raising=False)
    return tmp_path


def view(be, x: np.ndarray, layout: str, offset: int = 0, broadcast: bool = False) -> View:
    """(B, R, C) view of ``x``: "row" C-ordered matrices, "col" transposed ones; ``broadcast``
    stores the first matrix only, with batch stride 0."""
    bsz, r, c = x.shape
    src = x[:1] if broadcast else x
    src = src if layout == "row" else src.transpose(0, 2, 1)
    flat = np.concatenate([np.zeros(offset, x.dtype), np.ascontiguousarray(src).reshape(-1)])
    dt = D.from_numpy_dtype(x.dtype)
    buf = be.allocate(0, flat.nbytes)
    be.from_host(View(buf, 0, (flat.size,), (1,), dt), flat)
    strides = (r * c, c, 1) if layout == "row" else (r * c, 1, r)
    return View(buf, offset, x.shape, (0 if broadcast else strides[0], *strides[1:]), dt)


def product(be, m, k, n, *, dtype=np.float32, bsz=2, a_layout="row", b_layout="row",
            a_bcast=False, out_col=False, **launch):
    a = RNG.standard_normal((bsz, m, k)).astype(dtype)
    b = RNG.standard_normal((bsz, k, n)).astype(dtype)
    if a_bcast:
        a[1:] = a[:1]
    av = view(be, a, a_layout, 3, broadcast=a_bcast)
    bv = view(be, b, b_layout, 1)
    dt = av.dtype
    obuf = be.allocate(0, a.itemsize * (bsz * m * n + 2))
    strides = (m * n, 1, m) if out_col else (m * n, n, 1)
    ov = View(obuf, 2, (bsz, m, n), strides, dt)
    gemm.launch_gemm(be.device(0), av, bv, ov, **launch)
    got = be.to_host(ov)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))
    return got


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layouts", [("row", "row"), ("col", "col"), ("row", "col"), ("col", "row")])
def test_every_packed_tile_ragged_multi_pass(be, dtype, layouts):
    if dtype == "float64" and not be.device(0).fp64:
        pytest.skip("no float64 on this device")
    for tile in PACKED_TILES[dtype]:
        # k crosses a kc boundary (256 / 128) with a ragged last pass; m, n not multiples of the
        # block: zero-padded panels and bounds-checked edge stores
        product(be, 2 * tile.rm + 3, 300, tile.nb + 5, dtype=np.dtype(dtype).type,
                a_layout=layouts[0], b_layout=layouts[1], config=tile)


@pytest.mark.parametrize("tile", PACKED_TILES["float32"], ids=lambda t: t.name)
def test_packed_broadcast_batch_strided_out(be, tile):
    product(be, 19, 40, 37, bsz=3, a_bcast=True, out_col=True, config=tile)
    product(be, 1, 1, 1, bsz=1, config=tile)  # smaller than any block


def test_packed_empty_sum_writes_zeros(be):
    got = product(be, 5, 0, 7, config=PACKED_TILES["float32"][0])
    assert not got.any()


def test_packed_unknown_tile_raises(be):
    with pytest.raises(ValueError, match="not one of the float32 tiles"):
        product(be, 4, 4, 4, config=PackedTile(3, 1, 16))


def test_tuner_times_a_class_once_and_remembers_it(be, fresh, monkeypatch):
    monkeypatch.setattr(gemm_tune, "TUNE_MIN_FLOPS", 1)
    dev = be.device(0)
    product(be, 40, 24, 48)
    t = gemm.tuner(dev)
    assert t.timed == 1
    product(be, 33, 31, 60)  # same buckets (33..64, 17..32, 33..64): remembered
    assert t.timed == 1
    product(be, 80, 24, 48)  # another class
    assert t.timed == 2
    data = json.loads((fresh / "opencl_gemm_tiles.json").read_text())
    (entry,) = data.values()
    assert len(entry) == 2
    labels = {gemm_tune._label(c) for c in gemm.candidates(dev, "float32")}
    assert set(entry.values()) <= labels
    # a new process (a new Tuner) reads the file back instead of timing
    monkeypatch.setattr(gemm, "_TUNERS", {})
    product(be, 40, 24, 48)
    assert gemm.tuner(dev).timed == 0


def test_tuner_off_and_small_products_are_not_timed(be, fresh, monkeypatch):
    dev = be.device(0)
    product(be, 40, 24, 48)  # under TUNE_MIN_FLOPS
    assert gemm.tuner(dev).timed == 0
    monkeypatch.setattr(gemm_tune, "TUNE_MIN_FLOPS", 1)
    monkeypatch.setenv("PORTAGRAD_OPENCL_GEMM_TUNE", "0")
    product(be, 40, 24, 48)
    assert gemm.tuner(dev).timed == 0
    assert not (fresh / "opencl_gemm_tiles.json").exists()


def test_default_choice_without_timing(be):
    dev = be.device(0)
    cands = gemm.candidates(dev, "float32")
    big = 1 << 30
    if dev.is_gpu:
        assert gemm_tune.default_choice(cands, big, 512, 512) == cands[0]
        return
    assert gemm_tune.default_choice(cands, big, 512, 512) == ("packed", PACKED_TILES["float32"][0])
    assert gemm_tune.default_choice(cands, 1000, 512, 512) == ("cpu", None)  # too small to pack
    assert gemm_tune.default_choice(cands, big, 2, 4096) == ("cpu", None)  # thinner than a block


def test_broken_cache_file_is_ignored(be, fresh, monkeypatch):
    monkeypatch.setattr(gemm_tune, "TUNE_MIN_FLOPS", 1)
    (fresh / "opencl_gemm_tiles.json").write_text("{not json")
    product(be, 40, 24, 48)
    assert gemm.tuner(be.device(0)).timed == 1
    assert json.loads((fresh / "opencl_gemm_tiles.json").read_text())  # rewritten, valid


def test_cache_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("PORTAGRAD_OPENCL_GEMM_CACHE", "0")
    assert gemm_tune.cache_path() is None
    monkeypatch.setenv("PORTAGRAD_OPENCL_GEMM_CACHE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert gemm_tune.cache_path() == "/somewhere/portagrad/opencl_gemm_tiles.json"


def test_forced_packed_family_through_the_backend(be):
    a = RNG.standard_normal((1, 20, 30)).astype(np.float32)
    b = RNG.standard_normal((1, 30, 40)).astype(np.float32)
    av, bv = view(be, a, "row"), view(be, b, "row")
    ov = View(be.allocate(0, 4 * 800), 0, (1, 20, 40), (800, 40, 1), D.float32)
    be._force_gemm_kind = "packed"
    try:
        be.matmul(av, bv, ov)
    finally:
        be._force_gemm_kind = None
    np.testing.assert_allclose(be.to_host(ov), a @ b, rtol=2e-5, atol=2e-4)


def test_tuning_off_ignores_remembered_choices(be, fresh, monkeypatch):
    dev = be.device(0)
    t = gemm.tuner(dev)
    cands = gemm.candidates(dev, "float32")
    other = cands[-1]  # not what the sizes alone pick for a large product
    default = gemm_tune.default_choice(cands, 1 << 30, 512, 512)
    assert other != default
    t._disk_loaded = True
    t._mem["cls"] = gemm_tune._label(other)

    def run(*a):
        raise AssertionError("nothing may be timed here")

    finish = run
    assert t.choose("cls", cands, 1 << 30, 512, 512, run, finish) == other
    monkeypatch.setenv("PORTAGRAD_OPENCL_GEMM_TUNE", "0")
    assert t.choose("cls", cands, 1 << 30, 512, 512, run, finish) == default
    assert t.last == gemm_tune._label(default)
