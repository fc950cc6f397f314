"""The fused linear and cross-entropy nodes: values, first and second derivatives, errors."""
import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.autograd import gradcheck, gradgradcheck


def test_linear_fused_matches_composition(device):
    pg.manual_seed(0)
    x = pg.randn(2, 3, 4, dtype=pg.float64, device=device, requires_grad=True)
    w = pg.randn(5, 4, dtype=pg.float64, device=device, requires_grad=True)
    b = pg.randn(5, dtype=pg.float64, device=device, requires_grad=True)
    out = F.linear(x, w, b)
    assert out.grad_fn.name() == "AddmmBackward0" and out.shape == (2, 3, 5)
    ref = x.detach().cpu().numpy() @ w.detach().cpu().numpy().T + b.detach().cpu().numpy()
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref, rtol=1e-12)
    assert gradcheck(F.linear, (x, w, b))
    assert gradgradcheck(F.linear, (x, w, b))
    xt = pg.randn(4, 3, dtype=pg.float64, device=device).t().requires_grad_()  # non-contiguous
    assert gradcheck(lambda a: F.linear(a, w), (xt,))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_fused(device, reduction):
    pg.manual_seed(1)
    x = pg.randn(6, 4, dtype=pg.float64, device=device, requires_grad=True)
    t = pg.tensor([0, 3, 1, -100, 2, 3], device=device)
    loss = F.cross_entropy(x, t, ignore_index=-100, reduction=reduction)
    assert loss.grad_fn.name() == "NllLossBackward0"
    xn, tn = x.detach().cpu().numpy(), t.cpu().numpy()
    logp = xn - np.log(np.exp(xn - xn.max(1, keepdims=True)).sum(1, keepdims=True)) - \
        xn.max(1, keepdims=True)
    per = np.array([-logp[i, k] if k != -100 else 0.0 for i, k in enumerate(tn)])
    want = {"mean": per.sum() / 5, "sum": per.sum(), "none": per}[reduction]
    np.testing.assert_allclose(loss.detach().cpu().numpy(), want, rtol=1e-10)
    f = lambda a: F.cross_entropy(a, t, reduction=reduction)  # noqa: E731
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_cross_entropy_target_out_of_range(device):
    x = pg.randn(2, 3, device=device)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        F.cross_entropy(x, pg.tensor([0, 3], device=device)).item()  # OpenCL: at the read
    with pytest.raises(IndexError, match="Target -2 is out of bounds"):
        F.cross_entropy(x, pg.tensor([-2, 0], device=device)).item()


@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, 0, 1), (1, 2, 2)])
def test_conv_fused(device, stride, padding, dilation):
    pg.manual_seed(2)
    x = pg.randn(2, 3, 6, 5, dtype=pg.float64, device=device, requires_grad=True)
    w = pg.randn(4, 3, 3, 2, dtype=pg.float64, device=device, requires_grad=True)
    b = pg.randn(4, dtype=pg.float64, device=device, requires_grad=True)
    f = lambda a, k, c: F.conv2d(a, k, c, stride, padding, dilation)  # noqa: E731
    out = f(x, w, b)
    assert out.grad_fn.name() == "ConvolutionBackward0"
    # direct reference: sum over channels and kernel taps
    xn = np.pad(x.detach().cpu().numpy(), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    wn, bn = w.detach().cpu().numpy(), b.detach().cpu().numpy()
    oh, ow = out.shape[2], out.shape[3]
    ref = np.zeros((2, 4, oh, ow))
    for i in range(oh):
        for j in range(ow):
            for u in range(3):
                for v in range(2):
                    patch = xn[:, :, i * stride + u * dilation, j * stride + v * dilation]
                    ref[:, :, i, j] += patch @ wn[:, :, u, v].T
    ref += bn[None, :, None, None]
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref, rtol=1e-10, atol=1e-12)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


def test_conv_cross_device_error(opencl_devices):
    x = pg.randn(1, 1, 4, 4)
    w = pg.randn(2, 1, 3, 3, device=opencl_devices[0])
    with pytest.raises(RuntimeError, match="same device"):
        F.conv2d(x, w)
