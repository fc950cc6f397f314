"""The numpy backend's direct float32 convolution for small planes (an LLVM IR kernel, where the
CPU has AVX-512 and llvmlite is installed), forward and weight gradient: results against a
float64 convolution over strides,
paddings, dilations, channel counts that are not multiples of 16 and strided operands; the
routing (the demo CNN's layers and their input gradients take it, large layers keep im2col);
``PORTAGRAD_CONV_DIRECT=0``. Where the kernel is not available its own tests skip with that
reason, and the public-API tests run the im2col paths they fall back to.
"""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.backends.numpy import conv_direct

pytestmark = pytest.mark.backend_independent

needs_kernel = pytest.mark.skipif(not conv_direct.available(),
                                  reason="no AVX-512 on this CPU, or no llvmlite")


def _reference(x: np.ndarray, w: np.ndarray, stride: tuple[int, int], padding: tuple[int, int],
               dilation: tuple[int, int]) -> np.ndarray:
    """float64 convolution by a loop over the taps."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    N, C, H, W = x.shape
    O, _, kh, kw = w.shape
    OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.zeros((N, C, H + 2 * ph + sh + dh * kh, W + 2 * pw + sw + dw * kw))
    xp[:, :, ph:ph + H, pw:pw + W] = x
    out = np.zeros((N, O, OH, OW))
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dh:i * dh + sh * OH:sh, j * dw:j * dw + sw * OW:sw]
            out += np.einsum("nchw,oc->nohw", win, w[:, :, i, j].astype(np.float64))
    return out


@needs_kernel
@pytest.mark.parametrize("N,C,H,W,O,k,stride,padding,dilation", [
    (64, 16, 4, 4, 32, (3, 3), (1, 1), (1, 1), (1, 1)),  # the demo CNN's second layer
    (64, 1, 8, 8, 16, (3, 3), (1, 1), (1, 1), (1, 1)),  # its first
    (3, 5, 7, 6, 20, (3, 2), (2, 1), (1, 0), (1, 2)),  # channels past a multiple of 16
    (2, 3, 5, 5, 48, (1, 1), (1, 1), (0, 0), (1, 1)),  # 1x1: no padding copy
    (1, 4, 9, 3, 17, (5, 3), (3, 1), (2, 1), (1, 1)),  # one image, a position left over
    (5, 2, 6, 6, 16, (3, 3), (1, 1), (2, 2), (2, 2)),
])
def test_kernel_against_float64(N, C, H, W, O, k, stride, padding, dilation) -> None:
    rng = np.random.default_rng(N * 100 + C * 10 + O)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((O, C) + k).astype(np.float32)
    want = _reference(x, w, stride, padding, dilation)
    out = np.full(want.shape, np.nan, np.float32)  # every output must be written
    conv_direct.conv2d(x, w, out, stride, padding, dilation)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def _reference_grad_weight(x: np.ndarray, g: np.ndarray, kh: int, kw: int,
                           stride: tuple[int, int], padding: tuple[int, int],
                           dilation: tuple[int, int]) -> np.ndarray:
    """float64 weight gradient: each tap's window of the padded input against g."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    N, C, H, W = x.shape
    OH, OW = g.shape[2:]
    xp = np.zeros((N, C, H + 2 * ph + sh * OH + dh * kh, W + 2 * pw + sw * OW + dw * kw))
    xp[:, :, ph:ph + H, pw:pw + W] = x
    out = np.zeros((g.shape[1], C, kh, kw))
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dh:i * dh + sh * OH:sh, j * dw:j * dw + sw * OW:sw]
            out[:, :, i, j] = np.einsum("nchw,nohw->oc", win, g.astype(np.float64))
    return out


@needs_kernel
@pytest.mark.parametrize("N,C,H,W,O,k,stride,padding,dilation", [
    (64, 16, 4, 4, 32, (3, 3), (1, 1), (1, 1), (1, 1)),
    (3, 5, 7, 6, 20, (3, 2), (2, 1), (1, 0), (1, 2)),
    (2, 3, 5, 5, 48, (1, 1), (1, 1), (0, 0), (1, 1)),
    (5, 2, 6, 6, 16, (3, 3), (1, 1), (2, 2), (2, 2)),
])
def test_weight_gradient_against_float64(N, C, H, W, O, k, stride, padding, dilation) -> None:
    rng = np.random.default_rng(N * 100 + C * 10 + O + 1)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    out_shape = _reference(x, np.zeros((O, C) + k, np.float32), stride, padding, dilation).shape
    g = rng.standard_normal(out_shape).astype(np.float32)
    want = _reference_grad_weight(x, g, *k, stride, padding, dilation)
    out = np.full(want.shape, np.nan, np.float32)
    conv_direct.conv2d_grad_weight(x, g, out, stride, padding, dilation)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-3)

@needs_kernel
def test_strided_operands_and_output() -> None:
    """Operands that are views (a channel slice, a transposed weight) and an output inside a
    wider array: the values, and nothing written outside ``out``."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 5, 5)).astype(np.float32)[:, 1:5]
    w = np.ascontiguousarray(rng.standard_normal((3, 3, 4, 32)).astype(np.float32).transpose(
        3, 2, 0, 1))[:, :, ::-1]
    big = np.zeros((4, 40, 5, 5), np.float32)
    out = big[:, 4:36]
    conv_direct.conv2d(x, w, out, (1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(out, _reference(x, w, (1, 1), (1, 1), (1, 1)), rtol=1e-5,
                               atol=1e-4)
    assert not big[:, :4].any() and not big[:, 36:].any()


@needs_kernel
def test_infinities_and_nans_propagate() -> None:
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 0, 0] = np.inf
    x[0, 0, 3, 3] = np.nan
    w = np.ones((16, 1, 3, 3), np.float32)
    out = np.empty((1, 16, 4, 4), np.float32)
    conv_direct.conv2d(x, w, out, (1, 1), (1, 1), (1, 1))
    assert np.isinf(out[0, 0, :2, :2]).all() and np.isnan(out[0, 0, 2:, 2:]).all()
    assert (out[0, 0, 0, 3] == 0) and (out[0, 0, 3, 0] == 0)


def test_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo CNN's convolutions, the second one's input and weight gradients take the kernel
    (where it runs); large layers (packed weights past the cache) and big planes keep im2col;
    the values match float64 either way."""
    calls: list[tuple[int, ...]] = []
    real = conv_direct.conv2d
    monkeypatch.setattr(conv_direct, "conv2d",
                        lambda x, w, out, *a: calls.append(w.shape) or real(x, w, out, *a))
    grads: list[tuple[int, ...]] = []
    real_gw = conv_direct.conv2d_grad_weight
    monkeypatch.setattr(conv_direct, "conv2d_grad_weight",
                        lambda x, g, out, *a: grads.append(out.shape) or real_gw(x, g, out, *a))
    assert not conv_direct.fits(512, 3, 3, 512, 16)  # ResNet's last stage: 9 MB of weights
    assert not conv_direct.fits(16, 3, 3, 32, 32 * 32)
    rng = np.random.default_rng(2)
    xn = rng.standard_normal((8, 16, 4, 4)).astype(np.float32)
    wn = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    x = pg.tensor(xn, requires_grad=True)
    w = pg.tensor(wn, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(pg.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), _reference(xn, wn, (1, 1), (1, 1), (1, 1)),
                               rtol=1e-5, atol=1e-4)
    # the input gradient: the convolution of g with the flipped, transposed kernel
    wf = wn.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
    np.testing.assert_allclose(x.grad.numpy(), _reference(g, wf, (1, 1), (1, 1), (1, 1)),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(w.grad.numpy(), _reference_grad_weight(xn, g, 3, 3, (1, 1),
                                                                      (1, 1), (1, 1)),
                               rtol=1e-5, atol=1e-4)
    if conv_direct.available():
        assert calls == [(32, 16, 3, 3), (16, 32, 3, 3)] and grads == [(32, 16, 3, 3)]
    else:
        assert calls == [] and grads == []


def test_switched_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conv_direct, "_STATE", [])
    monkeypatch.setenv("PORTAGRAD_CONV_DIRECT", "0")
    assert not conv_direct.available()
    assert not conv_direct.fits(16, 3, 3, 32, 16)
    with pytest.raises(RuntimeError, match="not available"):
        conv_direct.conv2d(np.zeros((1, 1, 2, 2), np.float32), np.zeros((16, 1, 1, 1), np.float32),
                           np.empty((1, 16, 2, 2), np.float32), (1, 1), (0, 0), (1, 1))
