"""Losses: forward against numpy references for every reduction, float64 gradchecks, errors."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn
from portagrad.autograd import gradcheck
import portagrad.nn.functional as F

RNG = np.random.default_rng(1)


def T(a, device, grad=False):
    return pg.tensor(np.asarray(a), device=device, requires_grad=grad)


def H(t):
    return t.detach().cpu().numpy()


def red(v, reduction):
    return {"mean": v.mean(), "sum": v.sum(), "none": v}[reduction]


def log_softmax(x, axis=1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(device, reduction):
    a = RNG.standard_normal((3, 4))
    b = RNG.standard_normal((3, 4))
    d = a - b
    cases = {
        nn.MSELoss(reduction=reduction): d ** 2,
        nn.L1Loss(reduction=reduction): np.abs(d),
        nn.SmoothL1Loss(reduction=reduction, beta=0.5):
            np.where(np.abs(d) < 0.5, 0.5 * d ** 2 / 0.5, np.abs(d) - 0.25),
        nn.HuberLoss(reduction=reduction, delta=0.5):
            np.where(np.abs(d) < 0.5, 0.5 * d ** 2, 0.5 * (np.abs(d) - 0.25)),
    }
    for mod, ref in cases.items():
        np.testing.assert_allclose(H(mod(T(a, device), T(b, device))), red(ref, reduction),
                                   rtol=1e-7)


def test_regression_gradcheck(device):
    a = T(RNG.standard_normal((2, 3)), device, True)
    b = T(RNG.standard_normal((2, 3)), device)
    for fn in (F.mse_loss, F.l1_loss, lambda x, y: F.smooth_l1_loss(x, y, beta=0.3)):
        assert gradcheck(lambda x: fn(x, b), (a,))  # noqa: B023 - called within this iteration


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_indices(device, reduction):
    x = RNG.standard_normal((5, 4)) * 3
    t = np.array([0, 3, 1, -100, 2])
    w = RNG.random(4) + 0.5
    lp = log_softmax(x)
    valid = t != -100
    tc = np.where(valid, t, 0)
    nll = -lp[np.arange(5), tc] * valid
    out = F.cross_entropy(T(x, device), T(t, device), reduction=reduction)
    ref = {"mean": nll.sum() / valid.sum(), "sum": nll.sum(), "none": nll}[reduction]
    np.testing.assert_allclose(H(out), ref, rtol=1e-7)
    wi = w[tc] * valid
    out_w = nn.CrossEntropyLoss(weight=T(w, device), reduction=reduction)(T(x, device), T(t, device))
    ref_w = {"mean": (nll * w[tc]).sum() / wi.sum(), "sum": (nll * w[tc]).sum(),
             "none": nll * w[tc]}[reduction]
    np.testing.assert_allclose(H(out_w), ref_w, rtol=1e-7)


def test_cross_entropy_label_smoothing_and_probs(device):
    x = RNG.standard_normal((4, 3))
    t = np.array([0, 2, 1, 1])
    lp = log_softmax(x)
    eps = 0.2
    ref = ((1 - eps) * -lp[np.arange(4), t] - eps / 3 * lp.sum(1)).mean()
    np.testing.assert_allclose(H(F.cross_entropy(T(x, device), T(t, device), label_smoothing=eps)),
                               ref, rtol=1e-7)
    p = RNG.random((4, 3))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(H(F.cross_entropy(T(x, device), T(p, device))),
                               (-(p * lp).sum(1)).mean(), rtol=1e-7)
    # no class index to ignore among probabilities: PyTorch refuses ignore_index >= 0
    np.testing.assert_allclose(H(F.cross_entropy(T(x, device), T(p, device), ignore_index=-1)),
                               (-(p * lp).sum(1)).mean(), rtol=1e-7)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point"):
        F.cross_entropy(T(x, device), T(p, device), ignore_index=1)
    # spatial (N, C, d) inputs
    xs = RNG.standard_normal((2, 3, 4))
    ts = RNG.integers(0, 3, (2, 4))
    lps = log_softmax(xs)
    ref_s = -np.take_along_axis(lps, ts[:, None], 1).mean()
    np.testing.assert_allclose(H(F.cross_entropy(T(xs, device), T(ts, device))), ref_s, rtol=1e-7)


def test_cross_entropy_stable_and_grad(device):
    x = T(np.array([[1000.0, -1000.0], [-500.0, 500.0]]), device)
    assert float(F.cross_entropy(x, T(np.array([0, 1]), device))) == 0.0
    xg = T(RNG.standard_normal((3, 4)), device, True)
    tg = T(np.array([1, 0, 3]), device)
    w = T(RNG.random(4), device)
    assert gradcheck(lambda a: F.cross_entropy(a, tg, w, label_smoothing=0.1), (xg,))
    pr = T(RNG.dirichlet(np.ones(4), 3), device)
    assert gradcheck(lambda a: F.cross_entropy(a, pr), (xg,))
    assert gradcheck(lambda a: F.nll_loss(F.log_softmax(a, 1), tg, reduction="sum"), (xg,))


def test_cross_entropy_mean_every_row_a_class(device):
    """Mean cross entropy whose targets are all classes (none ignored, no class weights): the loss
    is the row sum over n and each row's gradient factor g / n, as PyTorch's nll_loss; first and
    second derivatives by finite differences, and the same values as with one ignored row
    removed from a batch that has it (the general path)."""
    from portagrad.autograd import gradgradcheck
    x = RNG.standard_normal((6, 5)) * 2
    t = np.array([4, 0, 3, 1, 1, 2])
    nll = -log_softmax(x)[np.arange(6), t]
    xt = T(x, device, True)
    loss = F.cross_entropy(xt, T(t, device))
    np.testing.assert_allclose(H(loss), nll.mean(), rtol=1e-12)
    (g,) = pg.autograd.grad(loss * 3.0, xt)
    p = np.exp(log_softmax(x))
    np.testing.assert_allclose(H(g), 3.0 * (p - np.eye(5)[t]) / 6, rtol=1e-12, atol=1e-15)
    tt = T(t, device)
    assert gradcheck(lambda a: F.cross_entropy(a, tt), (T(x, device, True),))
    assert gradgradcheck(lambda a: F.cross_entropy(a, tt), (T(x, device, True),))
    # the same rows beside an ignored one: the general path gives the same mean and gradient
    x7 = np.concatenate([x, RNG.standard_normal((1, 5))])
    x7t = T(x7, device, True)
    loss7 = F.cross_entropy(x7t, T(np.append(t, -100), device))
    np.testing.assert_allclose(H(loss7), H(loss), rtol=1e-12)
    (g7,) = pg.autograd.grad(loss7 * 3.0, x7t)
    np.testing.assert_allclose(H(g7)[:6], H(g), rtol=1e-12, atol=1e-15)
    assert not H(g7)[6].any()


def test_nll_errors():
    x = pg.randn(3, 4)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                         r"batch_size \(2\)."):
        F.nll_loss(x, pg.tensor([0, 1]))
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F.nll_loss(x, pg.tensor([0, 1, 4]))
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="bogus")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_losses(device, reduction):
    z = RNG.standard_normal((3, 4)) * 4
    p = 1 / (1 + np.exp(-z))
    t = RNG.random((3, 4))
    pw = RNG.random(4) + 0.5
    bce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    np.testing.assert_allclose(H(nn.BCELoss(reduction=reduction)(T(p, device), T(t, device))),
                               red(bce, reduction), rtol=1e-6)
    np.testing.assert_allclose(
        H(nn.BCEWithLogitsLoss(reduction=reduction)(T(z, device), T(t, device))),
        red(bce, reduction), rtol=1e-6)
    bcew = -(pw * t * np.log(p) + (1 - t) * np.log(1 - p))
    np.testing.assert_allclose(
        H(nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=T(pw, device))(T(z, device),
                                                                                T(t, device))),
        red(bcew, reduction), rtol=1e-6)


def test_binary_losses_extremes_and_grad(device):
    out = F.binary_cross_entropy(T(np.array([0.0, 1.0]), device), T(np.array([1.0, 0.0]), device))
    assert float(out) == 100.0  # logs clamped at -100
    big = F.binary_cross_entropy_with_logits(T(np.array([1000.0]), device),
                                             T(np.array([0.0]), device))
    assert float(big) == 1000.0
    z = T(RNG.standard_normal((2, 3)), device, True)
    t = T(RNG.random((2, 3)), device)
    assert gradcheck(lambda a: F.binary_cross_entropy_with_logits(a, t), (z,))
    assert gradcheck(lambda a: F.binary_cross_entropy(pg.sigmoid(a), t), (z,))


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
def test_kl_div(device, reduction):
    q = RNG.dirichlet(np.ones(4), 3)
    p = RNG.dirichlet(np.ones(4), 3)
    p[0, 1] = 0.0
    lq = np.log(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(p > 0, p * (np.log(p) - lq), 0.0)
    ref = {"batchmean": v.sum() / 3, "sum": v.sum(), "none": v}[reduction]
    np.testing.assert_allclose(H(nn.KLDivLoss(reduction=reduction)(T(lq, device), T(p, device))),
                               ref, rtol=1e-7)
    vt = np.exp(lq) * (lq - np.log(q[::-1]))
    out = F.kl_div(T(np.log(q[::-1]), device), T(lq, device), reduction="sum", log_target=True)
    np.testing.assert_allclose(H(out), vt.sum(), rtol=1e-7)


def test_training_step_reduces_loss(device):
    pg.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(16, 3)).to(device)
    x = pg.randn(8, 1, 4, 4, device=device)
    y = pg.randint(0, 3, (8,), device=device)
    loss_fn = nn.CrossEntropyLoss()
    first = None
    for _ in range(30):
        model.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        with pg.no_grad():
            for p in model.parameters():
                p -= 0.2 * p.grad
        first = float(loss) if first is None else first
    assert float(loss) < 0.5 * first
