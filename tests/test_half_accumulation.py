"""How 16-bit (bfloat16, float16) accumulations round, op by op, as PyTorch 2.13's CPU kernels:

* ``scatter_add``/``scatter(reduce="add")``/``scatter_reduce`` sum and prod: each slot reduced in
  float32 and rounded once; ``mean``: that rounded sum divided by the count, rounded again;
* ``index_add`` into a 1-D tensor, or with ``alpha != 1``: element after element in index order,
  ``source * alpha`` and each sum rounded; into slices of a larger tensor with ``alpha`` 1: summed
  in float32, rounded once;
* ``index_put(accumulate=True)``: element after element, each sum rounded.

The references below compute those rules in numpy (float32 and ``ml_dtypes``), so the tests hold
without torch; :func:`test_the_rules_are_torchs` checks them against torch where it is installed.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import portagrad as pg

from torch_cases import torch

N, M = 40, 4
NP = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


def _data(seed, shape):
    rng = np.random.default_rng(seed)
    self_ = (rng.standard_normal(shape) * 10).astype(np.float32)
    src = (rng.standard_normal((N,) + shape[1:]) * 3).astype(np.float32)
    return self_, src, rng.integers(0, M, N), rng.integers(0, M, (N,) + shape[1:])


def _round(x, dt):
    return np.asarray(x, np.float32).astype(NP[dt]).astype(np.float32)


def _in_order(self_, src, index, dt, alpha=1.0):
    out = _round(self_, dt).copy()
    for k, i in enumerate(index):
        out[i] = _round(out[i] + _round(_round(src[k], dt) * alpha, dt), dt)
    return out


def _f32_once(self_, src, index, dt):
    out = _round(self_, dt).copy()
    np.add.at(out, index, _round(src, dt))
    return _round(out, dt)


def _index_add_rule(self_, src, index, dt, alpha):
    if self_.ndim == 1 or alpha != 1:
        return _in_order(self_, src, index, dt, alpha)
    return _f32_once(self_, src, index, dt)


def _scatter_f32(self_, src, index2, dt, reduce):
    s, v = _round(self_, dt).copy(), _round(src, dt)
    cols = np.broadcast_to(np.arange(s.shape[1]), index2.shape)
    if reduce == "prod":
        np.multiply.at(s, (index2, cols), v)
        return _round(s, dt)
    np.add.at(s, (index2, cols), v)
    if reduce != "mean":
        return _round(s, dt)
    count = np.ones_like(s)
    np.add.at(count, (index2, cols), 1)
    return _round(_round(s, dt) / _round(count, dt), dt)


def _pg(x, dt, device):
    return pg.tensor(x, device=device).to(getattr(pg, dt))


def _declines(device, dt):
    try:
        pg.zeros(1, dtype=getattr(pg, dt), device=device) + 1
    except pg.errors.DTypeError:
        return True
    return False


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("seed", range(3))
def test_index_add_and_index_put(device, dt, seed):
    if _declines(device, dt):
        pytest.skip(f"{device} declines {dt} (DTypeError)")
    for shape in ((M,), (M, 3)):
        self_, src, index, _ = _data(seed, shape)
        a, s, i = _pg(self_, dt, device), _pg(src, dt, device), pg.tensor(index, device=device)
        for alpha in (1, 2, 3):
            got = a.index_add(0, i, s, alpha=alpha).float().cpu().numpy()
            np.testing.assert_array_equal(got, _index_add_rule(self_, src, index, dt, alpha))
        got = a.index_put((i,), s, accumulate=True).float().cpu().numpy()
        np.testing.assert_array_equal(got, _in_order(self_, src, index, dt))


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("seed", range(3))
def test_scatter_family(device, dt, seed):
    if _declines(device, dt):
        pytest.skip(f"{device} declines {dt} (DTypeError)")
    self_, src, _, index2 = _data(seed, (M, 3))
    a, s, i = _pg(self_, dt, device), _pg(src, dt, device), pg.tensor(index2, device=device)
    np.testing.assert_array_equal(a.scatter_add(0, i, s).float().cpu().numpy(),
                                  _scatter_f32(self_, src, index2, dt, "sum"))
    np.testing.assert_array_equal(a.scatter(0, i, s, reduce="add").float().cpu().numpy(),
                                  _scatter_f32(self_, src, index2, dt, "sum"))
    for reduce in ("sum", "prod", "mean"):
        got = a.scatter_reduce(0, i, s, reduce).float().cpu().numpy()
        np.testing.assert_array_equal(got, _scatter_f32(self_, src, index2, dt, reduce))


def test_three_hundred_ones(device):
    """The case that tells the rules apart: summed in bfloat16, 300 ones stop at 256."""
    if _declines(device, "bfloat16"):
        pytest.skip(f"{device} declines bfloat16 (DTypeError)")
    ones = pg.ones(300, dtype=pg.bfloat16, device=device)
    zero = pg.zeros(1, dtype=pg.bfloat16, device=device)
    idx = pg.zeros(300, dtype=pg.int64, device=device)
    assert float(zero.scatter_add(0, idx, ones)) == 300.0
    assert float(zero.scatter_reduce(0, idx, ones, "sum")) == 300.0
    assert float(zero.index_add(0, idx, ones)) == 256.0
    assert float(zero.index_put((idx,), ones, accumulate=True)) == 256.0
    assert float(zero.reshape(1, 1).index_add(0, idx, ones.reshape(300, 1))) == 300.0


@pytest.mark.skipif(torch is None, reason="compares with torch, which is not installed")
@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_the_rules_are_torchs(dt):
    tdt = getattr(torch, dt)
    for seed in range(5):
        for shape in ((M,), (M, 3)):
            self_, src, index, index2 = _data(seed, shape)
            a, s = torch.tensor(self_).to(tdt), torch.tensor(src).to(tdt)
            i = torch.tensor(index)
            for alpha in (1, 2, 3):
                np.testing.assert_array_equal(a.index_add(0, i, s, alpha=alpha).float().numpy(),
                                              _index_add_rule(self_, src, index, dt, alpha))
            np.testing.assert_array_equal(a.index_put((i,), s, accumulate=True).float().numpy(),
                                          _in_order(self_, src, index, dt))
            if len(shape) == 2:
                i2 = torch.tensor(index2)
                for reduce in ("sum", "prod", "mean"):
                    np.testing.assert_array_equal(
                        a.scatter_reduce(0, i2, s, reduce).float().numpy(),
                        _scatter_f32(self_, src, index2, dt, reduce))
