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
