"""Fusion of broadcast operands on the OpenCL backend (``broadcast_terms`` in fusion.py).

A bias ``(C,)`` over ``(N, C)``, a ``(1, C, 1, 1)`` scale over NCHW or a one-element tensor is a
stride-0 view; such chains must run as one kernel and give, bit for bit, what the unfused kernels
give. Hazards (writing the broadcast buffer while a node reads it, broadcasting a pending output)
are provoked on purpose.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.opencl.fusion import MAX_BCAST_TERMS, broadcast_terms

pytestmark = pytest.mark.usefixtures("opencl_devices")

DEV = "opencl:0"


@pytest.fixture
def be(opencl_devices):
    b = pg.zeros(1, device=DEV)._storage.backend
    if b._fz is None:
        pytest.fail("fusion is off in this process (PORTAGRAD_OPENCL_FUSION is set)")
    pg.opencl.synchronize()
    gc.collect()
    gc.disable()  # launch counts are exact only if no finalizer flushes half-way
    yield b
    gc.enable()


@pytest.fixture(params=["loop", "grid"])
def style(request, be, monkeypatch):
    """Both kernel layouts: counters stepped per element (CPU devices), divisions (GPUs)."""
    monkeypatch.setattr(be.device(0), "ew_style", request.param)
    return request.param


def _rand(*shape, seed=0, dtype=np.float32):
    return pg.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype)).to(DEV)


def _fused_and_unfused(be, fn):
    """``fn()`` fused (with the number of fused launches) and unfused, as numpy arrays."""
    fz = be._fz
    fz.flush()
    launches = fz.launches
    got = fn().cpu().numpy()
    n = fz.launches - launches
    be._fz = None
    try:
        ref = fn().cpu().numpy()
    finally:
        be._fz = fz
    return got, ref, n


def test_broadcast_terms():
    assert broadcast_terms((4, 3), (0, 1)) == ((1, 3, 1),)  # bias over rows: j % 3
    assert broadcast_terms((2, 3, 4, 5), (0, 1, 0, 0)) == ((20, 3, 1),)  # per channel
    assert broadcast_terms((2, 3, 4, 5), (0, 0, 0, 0)) == ()  # one element
    assert broadcast_terms((2, 3, 4, 5), (0, 20, 5, 1)) == ((1, 60, 1),)  # one contiguous run
    assert broadcast_terms((2, 3, 4, 5), (3, 1, 0, 0)) == ((20, 6, 1),)  # (N, C, 1, 1)
    assert broadcast_terms((2, 3, 4, 5), (4, 0, 1, 0)) == ((5, 4, 1), (60, 2, 4))
    assert broadcast_terms((1, 3), (0, 1)) is None  # no axis is broadcast
    assert broadcast_terms((4, 3), (1, 4)) is None  # a transpose: not a broadcast
    assert broadcast_terms((4, 3), (0, -1)) is None
    shape = (2,) * (2 * MAX_BCAST_TERMS + 2)
    strides = tuple(0 if i % 2 else 2 ** i for i in range(len(shape)))
    assert broadcast_terms(shape, strides) is None  # too many terms


def test_bias_scale_and_scalar_tensor_fuse_bit_identical(be, style):
    x = _rand(37, 30, seed=1)
    bias = _rand(30, seed=2)
    got, ref, n = _fused_and_unfused(be, lambda: (x * 2.0 + bias).relu() * 0.5)
    np.testing.assert_array_equal(got, ref)
    assert n == 1
    img = _rand(3, 4, 5, 7, seed=3)
    scale, shift = _rand(1, 4, 1, 1, seed=4), _rand(1, 4, 1, 1, seed=5)
    one = _rand(seed=6)  # a 0-d tensor
    got, ref, n = _fused_and_unfused(be, lambda: (img * scale + shift) * one - img)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_allclose(got, (img.cpu().numpy() * scale.cpu().numpy() + shift.cpu().numpy())
                               * one.cpu().numpy() - img.cpu().numpy(), rtol=1e-6)
    assert n == 1
    # two index terms (a row and a column broadcast) and the same buffer broadcast two ways
    row, v = _rand(1, 4, 5, 1, seed=7), _rand(35, seed=8)
    got, ref, n = _fused_and_unfused(be, lambda: img * row + v.reshape(5, 7) - v[:5].reshape(5, 1))
    np.testing.assert_array_equal(got, ref)
    assert n == 1


def test_broadcast_float64_and_ragged_chunks(be, style):
    if not be.device(0).fp64:
        pytest.skip("no float64 on this device")
    x = _rand(5, 3001, seed=9, dtype=np.float64)  # several work-items per row in the loop style
    b = _rand(3001, seed=10, dtype=np.float64)
    c = _rand(5, 1, seed=11, dtype=np.float64)
    got, ref, n = _fused_and_unfused(be, lambda: x / (b * b + 1.0) + c)
    np.testing.assert_array_equal(got, ref)
    assert n == 2  # b * b + 1 (3001 elements), then one group over (5, 3001)


def test_writing_a_broadcast_buffer_after_the_read(be):
    x, b = _rand(6, 4, seed=12), _rand(4, seed=13)
    old = b.cpu().numpy().copy()
    y = x + b  # pending: reads b through a broadcast
    b.mul_(3.0)  # must not change y; the in-place write may not join the group that reads b
    np.testing.assert_array_equal(y.cpu().numpy(), x.cpu().numpy() + old)
    np.testing.assert_array_equal(b.cpu().numpy(), old * np.float32(3))


def test_broadcasting_a_pending_output(be):
    x, b = _rand(6, 4, seed=14), _rand(4, seed=15)
    t = b * 2.0  # pending
    y = x + t  # t read at other positions: flushed first, then read as a leaf
    np.testing.assert_array_equal(y.cpu().numpy(), x.cpu().numpy() + b.cpu().numpy() * np.float32(2))


def test_autograd_through_a_fused_bias(be):
    x = _rand(8, 5, seed=16).requires_grad_()
    w = _rand(5, seed=17).requires_grad_()
    (x * w + w).relu().sum().backward()
    xn, wn = x.detach().cpu().numpy(), w.detach().cpu().numpy()
    mask = (xn * wn + wn > 0).astype(np.float32)
    np.testing.assert_allclose(x.grad.cpu().numpy(), mask * wn, rtol=1e-6)
    np.testing.assert_allclose(w.grad.cpu().numpy(), (mask * (xn + 1)).sum(0), rtol=1e-5)
