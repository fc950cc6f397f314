"""The implicit-GEMM convolution kernels (``portagrad/backends/opencl/conv_implicit.py``) and the
per-shape choice between them and im2col.

Every convolution case of ``test_opencl_conv.py`` (strides, padding, dilation, groups, depthwise,
non-contiguous inputs, float32 and float64) runs forward and both gradients with the implicit path
forced, against the numpy backend; then the choice itself: forced by the backend attribute or
``PORTAGRAD_OPENCL_CONV``, an unknown name raising, and a large enough shape timed once and
remembered.
"""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.backends.opencl import conv as conv_mod
from portagrad.backends.opencl import gemm, gemm_tune
from portagrad.testing.conformance import conv_checks as cc
from portagrad.testing.conformance.conv_checks import CONV_CASES, _conv_run, _tol


def _need_fp64(device: str) -> None:
    try:
        cc.need_fp64(device)
    except cc.NoFloat64 as exc:
        pytest.skip(str(exc))

pytestmark = pytest.mark.usefixtures("opencl_devices")

DEV = "opencl:0"


def _backend():
    return pg.empty(1, device=DEV)._storage.backend


@pytest.fixture
def implicit(monkeypatch):
    monkeypatch.setattr(_backend(), "_force_conv_kind", "implicit", raising=False)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No forced path and no remembered choices; the cache file under ``tmp_path``."""
    monkeypatch.setattr(conv_mod, "_ENV_CONV", None)
    monkeypatch.setattr(gemm, "_ENV_KIND", None)
    monkeypatch.setattr(gemm, "_TUNERS", {})
    monkeypatch.setenv("PORTAGRAD_OPENCL_GEMM_CACHE", str(tmp_path))
    monkeypatch.delenv("PORTAGRAD_OPENCL_GEMM_TUNE", raising=False)
    return tmp_path


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=["f32", "f64"])
def test_implicit_matches_numpy_backend(implicit, case, dtype):
    if dtype == pg.float64:
        _need_fp64(DEV)
    transposed = case[0] == 3
    got = _conv_run(DEV, case, dtype, transposed)
    want = _conv_run("cpu", case, dtype, transposed)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, **_tol(dtype))


@pytest.mark.parametrize("case", [
    (2, 17, 10, 9, 19, (3, 3), 1, 1, 1, 1),  # channels and positions not multiples of the block
    (2, 16, 8, 8, 24, (1, 1), 2, 0, 1, 1),  # ResNet's 1x1 stride-2 shortcut
    (1, 9, 4, 4, 9, (3, 3), 2, 1, 1, 3),
])
def test_implicit_ragged_blocks(implicit, case):
    got = _conv_run(DEV, case, pg.float32, False)
    want = _conv_run("cpu", case, pg.float32, False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_implicit_empty_batch(implicit):
    x = pg.randn(0, 4, 5, 5, device=DEV, requires_grad=True)
    w = pg.randn(6, 2, 3, 3, device=DEV, requires_grad=True)
    out = F.conv2d(x, w, None, 1, 1, 1, 2)
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.zeros((6, 2, 3, 3), np.float32))


def test_unknown_conv_path_raises(monkeypatch):
    x, w = pg.randn(1, 2, 4, 4, device=DEV), pg.randn(3, 2, 3, 3, device=DEV)
    monkeypatch.setattr(_backend(), "_force_conv_kind", "winograd", raising=False)
    with pytest.raises(ValueError, match="unknown convolution path 'winograd'; expected one of "
                                         "im2col, implicit"):
        F.conv2d(x, w)
    monkeypatch.setattr(_backend(), "_force_conv_kind", None, raising=False)
    monkeypatch.setattr(conv_mod, "_ENV_CONV", "fft")
    with pytest.raises(ValueError, match="from PORTAGRAD_OPENCL_CONV"):
        F.conv2d(x, w)


def test_each_path_is_timed_once_per_shape(fresh, monkeypatch):
    monkeypatch.setattr(gemm_tune, "TUNE_MIN_FLOPS", 1)
    be = _backend()
    t = gemm.tuner(be.device(0))
    x = pg.randn(2, 8, 6, 6, device=DEV, requires_grad=True)
    w = pg.randn(8, 8, 3, 3, device=DEV, requires_grad=True)
    out = F.conv2d(x, w, None, 1, 1)
    out.sum().backward()
    want = [F.conv2d(x.cpu(), w.cpu(), None, 1, 1).detach().numpy()]
    classes = {c for c in t._mem if c.startswith("conv_")}
    assert {c.split("/")[0] for c in classes} == {"conv_fwd", "conv_dgrad", "conv_wgrad"}
    assert set(t._mem[c] for c in classes) <= {"im2col", "implicit"}
    timed = t.timed
    out2 = F.conv2d(x, w, None, 1, 1)  # the same shape: remembered, nothing timed
    assert t.timed == timed
    np.testing.assert_allclose(out2.detach().cpu().numpy(), want[0], rtol=1e-4, atol=1e-4)


def test_small_convolutions_are_not_timed(fresh):
    be = _backend()
    x, w = pg.randn(1, 2, 4, 4, device=DEV), pg.randn(3, 2, 3, 3, device=DEV)
    F.conv2d(x, w).cpu()
    assert gemm.tuner(be.device(0)).timed == 0


@pytest.mark.parametrize("splits", [2, 3, 8])
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_implicit_weight_gradient_split_over_the_batch(implicit, monkeypatch, case, splits):
    """The weight gradient with the batch split into parts (what GPUs run for long reductions:
    partial sums in a scratch buffer, added in order by a second kernel) equals the numpy
    backend's; more parts than samples fall back to one per sample."""
    monkeypatch.setattr(_backend(), "_force_wgrad_splits", splits, raising=False)
    got = _conv_run(DEV, case, pg.float32, False)
    want = _conv_run("cpu", case, pg.float32, False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **_tol(pg.float32))


@pytest.mark.parametrize("dtype", [pg.float64, pg.bfloat16, pg.float16],
                         ids=["f64", "bf16", "f16"])
def test_implicit_split_weight_gradient_dtypes(implicit, monkeypatch, dtype):
    """float64 parts sum in float64; 16-bit ones in float32, each weight rounded once: the
    split result equals the unsplit one up to float32 summation order, i.e. to within one
    16-bit rounding."""
    if dtype == pg.float64:
        _need_fp64(DEV)
    x = pg.randn(6, 5, 9, 9, dtype=pg.float64)
    w = pg.randn(7, 5, 3, 3, dtype=pg.float64)
    g = pg.randn(6, 7, 9, 9, dtype=pg.float64)
    ref = pg.nn.grad.conv2d_weight(x, w.shape, g, 1, 1).numpy()
    res = {}
    for s in (1, 4):
        monkeypatch.setattr(_backend(), "_force_wgrad_splits", s, raising=False)
        got = pg.nn.grad.conv2d_weight(x.to(DEV, dtype), w.shape, g.to(DEV, dtype), 1, 1)
        assert got.dtype is dtype
        res[s] = got.cpu().double().numpy()
    tol = {pg.float64: 1e-12, pg.bfloat16: 2e-2, pg.float16: 3e-3}[dtype]
    scale = np.abs(ref).max()
    for s in (1, 4):
        np.testing.assert_allclose(res[s], ref, rtol=tol, atol=tol * scale)
    np.testing.assert_allclose(res[4], res[1], rtol=tol, atol=tol * scale)


def test_weight_gradient_split_count():
    """wgrad_splits: one part on CPU devices and where blocks fill the GPU; else enough for
    the GPU, at most one per sample, within the scratch budget."""
    from types import SimpleNamespace

    from portagrad.backends.opencl.conv_implicit import SPLIT_BYTES, wgrad_splits

    def dev(gpu: bool) -> SimpleNamespace:
        return SimpleNamespace(is_gpu=gpu, properties=SimpleNamespace(compute_units=132))

    def geom(N: int, C: int, O: int, k: int = 3, G: int = 1) -> dict[str, int]:
        return {"N": N, "C": C, "O": O, "kh": k, "kw": k, "G": G}

    resnet_layer1 = geom(128, 64, 64)  # 64 x 576 weights, 8 x 72 blocks of 8 x 8
    assert wgrad_splits(dev(False), resnet_layer1, 4) == 1
    s = wgrad_splits(dev(True), resnet_layer1, 4)
    assert 8 <= s <= 128
    assert s * 8 * 72 >= 132 * 256 or s == 128
    assert wgrad_splits(dev(True), geom(1, 64, 64), 4) == 1  # nothing to split
    assert wgrad_splits(dev(True), geom(4, 64, 64), 4) == 4  # one part per sample at most
    big = geom(512, 2048, 2048)  # 2048 x 18432 weights: blocks alone fill the GPU
    assert wgrad_splits(dev(True), big, 4) == 1
    for shape in (geom(512, 1024, 256, k=7), geom(64, 256, 64, k=5), geom(32, 3, 64, k=7)):
        s = wgrad_splits(dev(True), shape, 8)
        ck = shape["C"] * shape["kh"] * shape["kw"]
        assert s == 1 or s * shape["O"] * ck * 8 <= SPLIT_BYTES
