"""Exact GELU keeps ``1 + erf(x / sqrt(2))`` from forward for its backward (float32, float64).

The kept tensor must give the bits the slope recomputed from ``x`` gives (a backward that records,
``create_graph=True``, recomputes it), and the recording backward must still differentiate
through ``erf``: second derivatives against the closed form ``phi(x) * (2 - x^2)``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck, gradgradcheck


@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=str)
def test_kept_slope_is_the_recomputed_one(device: str, dtype: pg.dtype) -> None:
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((17, 33)) * 3
    gn = rng.standard_normal((17, 33))
    grads = []
    for create_graph in (False, True):
        x = pg.tensor(xn, dtype=dtype, device=device, requires_grad=True)
        y = pg.nn.functional.gelu(x)
        (gx,) = pg.autograd.grad(y, x, pg.tensor(gn, dtype=dtype, device=device),
                                 create_graph=create_graph)
        grads.append(gx.detach().cpu().numpy())
    assert grads[0].tobytes() == grads[1].tobytes()
    # and the slope itself: Phi(x) + x * phi(x)
    phi = np.exp(-xn * xn / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(xn / math.sqrt(2)))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == pg.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(grads[0], gn * (cdf + xn * phi), **tol)


def test_second_derivative(device: str) -> None:
    rng = np.random.default_rng(1)
    xn = rng.standard_normal(40) * 2
    x = pg.tensor(xn, dtype=pg.float64, device=device, requires_grad=True)
    (g1,) = pg.autograd.grad(pg.nn.functional.gelu(x).sum(), x, create_graph=True)
    (g2,) = pg.autograd.grad(g1.sum(), x)
    phi = np.exp(-xn * xn / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(g2.cpu().numpy(), phi * (2 - xn * xn), rtol=1e-10, atol=1e-12)
    assert gradcheck(pg.nn.functional.gelu, (x,))
    assert gradgradcheck(pg.nn.functional.gelu, (x,))
