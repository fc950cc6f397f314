"""Quick end-to-end checks on every device: create, compute, differentiate, move."""
import numpy as np

import portagrad as pg


def test_mlp_step(device):
    pg.manual_seed(0)
    x = pg.randn(8, 4, device=device)
    w = pg.randn(4, 3, device=device, requires_grad=True)
    b = pg.zeros(3, device=device, requires_grad=True)
    loss = ((x @ w + b).relu() ** 2).mean()
    loss.backward()
    xn, wn = x.cpu().numpy(), w.detach().cpu().numpy()
    h = xn @ wn
    expect_gw = xn.T @ (2 * np.maximum(h, 0) * (h > 0) / h.size)
    np.testing.assert_allclose(w.grad.cpu().numpy(), expect_gw, rtol=1e-4, atol=1e-6)
    assert b.grad.device == pg.device(device)


def test_random_identical_across_devices(device):
    pg.manual_seed(123)
    a = pg.rand(1000, device=device).cpu().numpy()
    pg.manual_seed(123)
    b = pg.rand(1000).numpy()
    np.testing.assert_array_equal(a, b)
