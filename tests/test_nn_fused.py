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
        F.cross_entropy(x, pg.tensor([0, 3], device=device))
    with pytest.raises(IndexError, match="Target -2 is out of bounds"):
        F.cross_entropy(x, pg.tensor([-2, 0], device=device))
