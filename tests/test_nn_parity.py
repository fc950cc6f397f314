"""``nn`` layers and ``nn.functional`` against values and behaviours of PyTorch (literals computed
with PyTorch and written here, so torch stays optional): BCE at the ends of its domain, the ranks
the feature dropouts accept, the encoder-decoder ``Transformer``, the 3-D layers and the losses and
activations built from existing ops. Every test runs on each test device."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn
import portagrad.nn.functional as F


def T(a, device, grad=False, dtype=None):
    return pg.tensor(np.asarray(a), device=device, requires_grad=grad, dtype=dtype)


def H(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------------ binary cross entropy
def test_bce_finite_gradient_at_zero_and_one(device):
    x = T([0.0, 1.0, 0.0, 1.0, 0.3], device, True, pg.float64)
    t = T([0.0, 1.0, 1.0, 0.0, 0.6], device, True, pg.float64)
    loss = F.binary_cross_entropy(x, t, reduction="none")
    np.testing.assert_allclose(H(loss), [0.0, 0.0, 100.0, 100.0, 0.8650536601710546], rtol=1e-12)
    loss.sum().backward()
    # PyTorch: (x - t) / max((1 - x) x, eps), eps a float32 1e-12; d/dt = log(1 - x) - log(x)
    np.testing.assert_allclose(H(x.grad), [0.0, 0.0, -1000000003995.8029, 1000000003995.8029,
                                           -1.4285714285714286], rtol=1e-12)
    np.testing.assert_array_equal(H(t.grad)[:4], [np.inf, -np.inf, np.inf, -np.inf])
    np.testing.assert_allclose(H(t.grad)[4], 0.8472978603872036, rtol=1e-12)


def test_bce_loss_module_mean_float32(device):
    x = T([0.0, 1.0, 0.5], device, True)
    loss = nn.BCELoss()(x, T([1.0, 0.0, 0.5], device))
    loss.backward()
    np.testing.assert_allclose(loss.item(), 66.89771270751953, rtol=1e-6)
    np.testing.assert_allclose(H(x.grad), [-333333331968.0, 333333331968.0, 0.0], rtol=1e-6)
    assert np.isfinite(H(x.grad)).all()


def test_bce_gradcheck(device):
    rng = np.random.default_rng(1)
    x = T(rng.uniform(0.1, 0.9, (3, 4)), device, True)
    t = T(rng.uniform(0, 1, (3, 4)), device, True)
    w = T(rng.uniform(0.5, 2, (4,)), device)
    assert pg.autograd.gradcheck(lambda a, b: F.binary_cross_entropy(a, b, w), (x, t))
    assert pg.autograd.gradgradcheck(lambda a, b: F.binary_cross_entropy(a, b), (x, t))


# ------------------------------------------------------------------ feature dropout ranks
def _run(fn, shape, device):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(pg.ones(shape, device=device), 0.5, True)
    return out, [str(w.message) for w in rec]


@pytest.mark.parametrize("fn", [F.dropout2d, F.dropout3d, F.feature_alpha_dropout, F.dropout1d,
                                F.alpha_dropout])
def test_feature_dropout_keeps_shape(fn, device):
    shapes = {F.dropout1d: [(4, 5), (4, 5, 6)]}.get(fn, [(4, 5), (4, 5, 6), (2, 4, 5, 6),
                                                         (2, 3, 4, 5, 6)])
    for shape in shapes:
        out, _ = _run(fn, shape, device)
        assert tuple(out.shape) == shape


def test_dropout2d_warnings_as_pytorch(device):
    _, msgs = _run(F.dropout2d, (4, 5), device)
    assert msgs == ["dropout2d: Received a 2-D input to dropout2d, which is deprecated and will "
                    "result in an error in a future release. To retain the behavior and silence "
                    "this warning, please use dropout instead. Note that dropout2d exists to "
                    "provide channel-wise dropout on inputs with 2 spatial dimensions, a channel "
                    "dimension, and an optional batch dimension (i.e. 3D or 4D inputs)."]
    _, msgs = _run(F.dropout2d, (4, 5, 6), device)
    assert len(msgs) == 1 and msgs[0].startswith("dropout2d: Received a 3D input to dropout2d and "
                                                 "assuming that channel-wise 1D dropout")
    _, msgs = _run(F.dropout2d, (2, 4, 5, 6), device)
    assert msgs == []
    _, msgs = _run(F.dropout3d, (4, 5, 6), device)
    assert len(msgs) == 1 and msgs[0].startswith("dropout3d: Received a 3-D input to dropout3d")
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        y = nn.Dropout2d()(pg.ones(4, 5, device=device))
    assert y.shape == (4, 5)


def test_feature_dropout_rank_errors(device):
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D"):
        F.dropout1d(pg.ones(2, 3, 4, 5, device=device))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(pg.ones(4, device=device), 0.5, True)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.dropout2d(pg.ones(4, device=device))
    # as PyTorch: nothing is checked when nothing is dropped
    x = pg.ones(4, device=device)
    with pytest.warns(UserWarning):
        assert F.dropout2d(x, 0.5, False) is x


def test_feature_dropout_drops_whole_channels(device):
    pg.manual_seed(0)
    y = H(F.dropout2d(pg.ones(8, 16, 3, 3, device=device), 0.5))
    per_channel = y.reshape(8, 16, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert 0 < (per_channel[..., 0] == 0).mean() < 1
    with pytest.warns(UserWarning, match="2-D input"):  # 2-D: single elements
        y = H(F.dropout2d(pg.ones(64, 32, device=device), 0.5))
    assert set(np.unique(y)) == {0.0, 2.0}
    y = H(nn.FeatureAlphaDropout(0.5).train()(pg.zeros(8, 16, 3, device=device)))
    assert (np.ptp(y, axis=-1) == 0).all() and len(np.unique(y)) == 2
    assert nn.FeatureAlphaDropout(0.5).eval()(pg.ones(2, 3, device=device)).sum().item() == 6


def test_alpha_dropout_everything_dropped(device):
    np.testing.assert_array_equal(H(F.alpha_dropout(pg.ones(3, device=device), 1.0, True)), 0)
    np.testing.assert_array_equal(
        H(F.feature_alpha_dropout(pg.ones(2, 4, device=device), 1.0, True)), 0)
