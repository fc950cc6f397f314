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


# ---------------------------------------------------------------------------- batch norm
# GPUs split each channel's NB*L elements into parts (a work-group per part and channel, the
# partial sums in a scratch buffer, added in order by every later group); forced here.

def _bn_run(device: str, x: np.ndarray, r: np.ndarray, dtype, affine: bool = True) -> list[np.ndarray]:
    """Training-mode batch norm: output, running mean and variance, and the three gradients."""
    C = x.shape[1]
    xt = pg.tensor(x, device=device, dtype=dtype, requires_grad=True)
    wt = pg.tensor(np.linspace(0.5, 1.5, C), device=device, dtype=dtype, requires_grad=True)
    bt = pg.tensor(np.linspace(-1, 1, C), device=device, dtype=dtype, requires_grad=True)
    rm = pg.tensor(np.linspace(-0.2, 0.2, C), device=device, dtype=dtype)
    rv = pg.tensor(np.linspace(0.5, 2.0, C), device=device, dtype=dtype)
    out = F.batch_norm(xt, rm, rv, wt if affine else None, bt if affine else None, training=True,
                       momentum=0.3, eps=1e-5)
    (out * pg.tensor(r, device=device, dtype=dtype)).sum().backward()
    res = [out.detach(), rm, rv, xt.grad] + ([wt.grad, bt.grad] if affine else [])
    return [t.cpu().double().numpy() for t in res]


@pytest.mark.parametrize("parts", [1, 3, 7, 1000])
@pytest.mark.parametrize("shape", [(4, 3, 5, 7), (3, 5, 1, 1), (2, 4, 33), (1, 2, 130)],
                         ids=["4d", "L1", "3d", "batch1"])
def test_batch_norm_in_parts(monkeypatch, parts, shape):
    """Forced parts (more than elements: one element each) give the numpy backend's output,
    running statistics and gradients."""
    rng = np.random.default_rng(2)
    x, r = rng.standard_normal(shape) * 3 + 1, rng.standard_normal(shape)
    want = _bn_run("cpu", x, r, pg.float32)
    monkeypatch.setattr(_backend(), "_force_bn_parts", parts, raising=False)
    got = _bn_run(DEV, x, r, pg.float32)
    built = {name for (key, name) in _backend().device(0)._kernels if key[0] == "norms"}
    assert {"batch_norm_part", "batch_norm_part_out", "batch_norm_backward_part",
            "batch_norm_backward_part_gx"} <= built  # the split path ran
    for name, g, wv in zip(("out", "running_mean", "running_var", "grad x", "grad w", "grad b"),
                           got, want):
        np.testing.assert_allclose(g, wv, rtol=1e-4, atol=1e-4, err_msg=name)


def test_batch_norm_parts_without_affine_and_deterministic(monkeypatch):
    """No weight or bias; the same call twice gives the same bits (no atomics, fixed order)."""
    rng = np.random.default_rng(3)
    x, r = rng.standard_normal((8, 3, 6, 6)), rng.standard_normal((8, 3, 6, 6))
    want = _bn_run("cpu", x, r, pg.float32, affine=False)
    monkeypatch.setattr(_backend(), "_force_bn_parts", 5, raising=False)
    a = _bn_run(DEV, x, r, pg.float32, affine=False)
    b = _bn_run(DEV, x, r, pg.float32, affine=False)
    for g, h, wv in zip(a, b, want):
        np.testing.assert_array_equal(g, h)
        np.testing.assert_allclose(g, wv, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [pg.float64, pg.bfloat16], ids=str)
def test_batch_norm_parts_dtypes(monkeypatch, dtype):
    """float64 parts sum in float64; 16-bit ones in float32, each result rounded once: against
    the float64 result, to float64 precision or within a bfloat16 rounding."""
    if dtype is pg.float64 and not pg.opencl.get_device_properties(0).fp64:
        pytest.skip("the OpenCL device has no float64")
    rng = np.random.default_rng(4)
    shape = (6, 4, 5, 5)
    x, r = rng.standard_normal(shape), rng.standard_normal(shape)
    ref = _bn_run("cpu", x, r, pg.float64)
    monkeypatch.setattr(_backend(), "_force_bn_parts", 4, raising=False)
    got = _bn_run(DEV, x, r, dtype)
    tol = 1e-10 if dtype is pg.float64 else 2e-2
    for g, wv in zip(got, ref):
        np.testing.assert_allclose(g, wv, rtol=tol, atol=tol * np.abs(wv).max())


def test_batch_norm_parts_choice():
    """None on CPU devices; on a GPU enough groups for it over the channels, each part at least
    a few elements per work-item."""
    from portagrad.backends.opencl.norms import _MIN_PER_ITEM, _bn_parts

    def dev(gpu: bool) -> SimpleNamespace:
        return SimpleNamespace(is_gpu=gpu, properties=SimpleNamespace(compute_units=132))

    assert _bn_parts(dev(False), 128, 64, 1024, 16) == 0
    p = _bn_parts(dev(True), 128, 64, 1024, 256)  # ResNet-18's first layers: 64 channels
    assert p * 64 * 256 >= 132 * 256 and 128 * 1024 // p >= 256 * _MIN_PER_ITEM
    assert _bn_parts(dev(True), 2, 512, 16, 256) == 1  # 32 elements a channel: one part
