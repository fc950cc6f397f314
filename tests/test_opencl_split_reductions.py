"""Column reductions split into parts of rows on GPUs (OpenCL backend).

Layer norm's weight and bias gradients sum N columns over M rows; with one work-item per
column a GPU runs a few hundred work-items for a long loop (GPT's (2048, 256): 0.4 ms per call on
an H200). GPUs split the rows into parts whose sums go to a scratch buffer, added in order by a
second kernel. Here the parts are forced on whatever OpenCL device runs the tests and checked
against the numpy backend, and the number of parts chosen for a GPU is checked.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.backends.opencl.norms import _MIN_ROWS_PER_PART, _row_parts

pytestmark = pytest.mark.usefixtures("opencl_devices")

DEV = "opencl:0"


def _backend():
    return pg.empty(1, device=DEV)._storage.backend


def _ln_grads(device: str, x: np.ndarray, w: np.ndarray, b: np.ndarray, r: np.ndarray,
              dtype) -> list[np.ndarray]:
    xt = pg.tensor(x, device=device, dtype=dtype, requires_grad=True)
    wt = pg.tensor(w, device=device, dtype=dtype, requires_grad=True)
    bt = pg.tensor(b, device=device, dtype=dtype, requires_grad=True)
    out = F.layer_norm(xt, (x.shape[-1],), wt, bt)
    (out * pg.tensor(r, device=device, dtype=dtype)).sum().backward()
    return [t.grad.cpu().double().numpy() for t in (xt, wt, bt)]


@pytest.mark.parametrize("parts", [2, 5, 64, 1000])
@pytest.mark.parametrize("shape", [(37, 19), (256, 64), (3, 4, 33)])
def test_layer_norm_weight_grad_in_parts(monkeypatch, parts, shape):
    """Forced parts (more than rows: one row each) give the numpy backend's gradients."""
    rng = np.random.default_rng(0)
    x, r = rng.standard_normal(shape), rng.standard_normal(shape)
    w, b = rng.standard_normal(shape[-1]), rng.standard_normal(shape[-1])
    want = _ln_grads("cpu", x, w, b, r, pg.float32)
    monkeypatch.setattr(_backend(), "_force_norm_parts", parts, raising=False)
    got = _ln_grads(DEV, x, w, b, r, pg.float32)
    for g, wv in zip(got, want):
        np.testing.assert_allclose(g, wv, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [pg.float64, pg.bfloat16], ids=str)
def test_layer_norm_weight_grad_parts_dtypes(monkeypatch, dtype):
    """float64 parts sum in float64; 16-bit parts in float32 and each column is rounded once,
    so one part and several agree to within one 16-bit rounding."""
    if dtype is pg.float64 and not pg.opencl.get_device_properties(0).fp64:
        pytest.skip("the OpenCL device has no float64")
    rng = np.random.default_rng(1)
    shape = (300, 40)
    x, r = rng.standard_normal(shape), rng.standard_normal(shape)
    w, b = rng.standard_normal(40), rng.standard_normal(40)
    ref = _ln_grads("cpu", x, w, b, r, pg.float64)
    res = {}
    for parts in (1, 7):
        monkeypatch.setattr(_backend(), "_force_norm_parts", parts, raising=False)
        res[parts] = _ln_grads(DEV, x, w, b, r, dtype)
    tol = 1e-10 if dtype is pg.float64 else 2e-2
    for parts in (1, 7):
        for g, wv in zip(res[parts][1:], ref[1:]):
            np.testing.assert_allclose(g, wv, rtol=tol, atol=tol * np.abs(wv).max())


def test_row_parts_choice():
    def dev(gpu: bool) -> SimpleNamespace:
        return SimpleNamespace(is_gpu=gpu, properties=SimpleNamespace(compute_units=132))

    assert _row_parts(dev(False), 2048, 256) == 1  # CPU devices: one part
    p = _row_parts(dev(True), 2048, 256)  # GPT's layer norm: 256 columns
    assert 2 <= p <= 2048 // _MIN_ROWS_PER_PART
    assert p * 256 >= 132 * 256 or p == 2048 // _MIN_ROWS_PER_PART
    assert _row_parts(dev(True), 8, 256) == 1  # too few rows to split
    assert _row_parts(dev(True), 4096, 1 << 20) == 1  # the columns alone fill the GPU
