"""``sigmoid`` is PyTorch's ``1 / (1 + exp(-x))`` on every device: where ``exp(-x)`` overflows
(below about -88.7 in float32, -745 in float64) the result is 0, as PyTorch's, not the
subnormal that the ``exp(-|x|)`` form gives; and the rounding is that formula's."""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg


@pytest.mark.parametrize("dtype,edge", [(pg.float32, -89.0), (pg.float64, -746.0)])
def test_sigmoid_is_one_over_one_plus_exp(device, dtype, edge):
    np_dt = np.float32 if dtype == pg.float32 else np.float64
    xs = np.array([edge, edge - 20.0, -20.0, -1.5, -0.0, 0.0, 0.25, 3.0, 40.0, math.inf, -math.inf],
                  np_dt)
    got = pg.sigmoid(pg.tensor(xs, device=device)).cpu().numpy()
    assert got[0] == 0 and got[1] == 0  # exp(-x) overflowed: PyTorch's 0, not a subnormal
    assert got[-1] == 0 and got[-2] == 1
    with np.errstate(over="ignore"):
        want = (np_dt(1) / (np_dt(1) + np.exp(-xs))).astype(np_dt)
    # the device's exp may differ from numpy's by a unit; the formula is what is checked
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np_dt).eps, atol=0)
    assert np.isnan(pg.sigmoid(pg.tensor([math.nan], dtype=dtype, device=device)).item())
