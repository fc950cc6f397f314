"""Ops given NaN or infinite inputs: the values PyTorch computes for them.

Found by running every op-table row with a NaN placed in each floating input against torch:
``grid_sample`` with a NaN in the grid cast it to an index and failed with an out-of-bounds error
from its gather; ``mvlgamma`` refused elements at or below ``(p - 1) / 2`` (and NaN), which
PyTorch 2.13 no longer checks (it also read the check back from the device on every call);
``multi_margin_loss`` and ``multilabel_margin_loss`` gave NaN where PyTorch's kernels leave a NaN
term out (they add a term only where it is positive). The expected values are PyTorch 2.13's,
written out, and checked against torch where it is installed.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import portagrad as pg

from torch_cases import torch

NAN, INF = math.nan, math.inf

# sample points (x first): a NaN x, a NaN y, an infinite x, an ordinary point
GRID = [[[[NAN, 0.5], [0.2, -0.3]], [[0.5, NAN], [INF, 0.1]]]]
GRID_SAMPLE = {
    ("bilinear", "zeros"): [NAN, 5.5, NAN, NAN],
    ("bilinear", "border"): [10.0, 5.5, 2.5, 9.8],
    ("bilinear", "reflection"): [10.0, 5.5, 2.5, 6.8],
    ("nearest", "zeros"): [0.0, 6.0, 0.0, 0.0],
    ("nearest", "border"): [8.0, 6.0, 2.0, 11.0],
    ("nearest", "reflection"): [8.0, 6.0, 2.0, 8.0],
}


def _grid_sample(L: Any, key: tuple[str, str], device: str | None) -> np.ndarray:
    kw = {} if device is None else {"device": device}
    inp = L.arange(16.0, **kw).reshape(1, 1, 4, 4)
    out = L.nn.functional.grid_sample(inp, L.tensor(GRID, **kw), mode=key[0], padding_mode=key[1],
                                      align_corners=False)
    return out.reshape(-1).cpu().numpy()


@pytest.mark.parametrize("key", sorted(GRID_SAMPLE), ids="-".join)
def test_grid_sample_nonfinite_coordinates(key: tuple[str, str], device: str) -> None:
    """A NaN coordinate reads as 0 under border and reflection padding (PyTorch's clipping),
    gives NaN bilinearly and 0 nearest under zeros padding; an infinite one is clipped or, under
    zeros padding, bilinear NaN."""
    np.testing.assert_allclose(_grid_sample(pg, key, device), GRID_SAMPLE[key], rtol=1e-6,
                               equal_nan=True)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("key", sorted(GRID_SAMPLE), ids="-".join)
def test_grid_sample_nonfinite_coordinates_is_torchs(key: tuple[str, str]) -> None:
    np.testing.assert_allclose(_grid_sample(torch, key, None), GRID_SAMPLE[key], rtol=1e-6,
                               equal_nan=True)


MVLGAMMA = ([0.1, NAN, -1.0, 2.0], [4.139602184602296, NAN, INF, 0.4515827052894549])


def test_mvlgamma_computes_below_its_old_domain(device: str) -> None:
    x = pg.tensor(MVLGAMMA[0], dtype=pg.float64, device=device)
    np.testing.assert_allclose(pg.mvlgamma(x, 2).cpu().numpy(), MVLGAMMA[1], rtol=1e-12,
                               equal_nan=True)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        pg.mvlgamma(x, 0)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
def test_mvlgamma_computes_below_its_old_domain_is_torchs() -> None:
    x = torch.tensor(MVLGAMMA[0], dtype=torch.float64)
    np.testing.assert_allclose(torch.mvlgamma(x, 2).numpy(), MVLGAMMA[1], rtol=1e-12,
                               equal_nan=True)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        torch.mvlgamma(x, 0)


# PyTorch's margin-loss kernels add a term only where it is positive: a NaN term is left out
MARGIN_X = [[0.2, NAN, -0.4, 0.9], [0.3, 0.1, 0.5, -0.2]]
MARGIN = {
    "multi_margin_loss": (lambda F, x, L, kw: F.multi_margin_loss(
        x, L.tensor([0, 2], **kw), reduction="none"),
        [0.5250000357627869, 0.42500001192092896],
        [[-0.5, 0.0, 0.25, 0.25], [0.25, 0.25, -0.75, 0.25]]),
    "multilabel_margin_loss": (lambda F, x, L, kw: F.multilabel_margin_loss(
        x, L.tensor([[0, 3, -1, 0], [2, -1, 0, 0]], **kw), reduction="none"),
        [0.10000000149011612, 0.42500001192092896],
        [[-0.25, 0.0, 0.25, 0.0], [0.25, 0.25, -0.75, 0.25]]),
}


def _margin(L: Any, name: str, device: str | None) -> tuple[np.ndarray, np.ndarray]:
    kw = {} if device is None else {"device": device}
    x = L.tensor(MARGIN_X, requires_grad=True, **kw)
    loss = MARGIN[name][0](L.nn.functional, x, L, kw)
    loss.sum().backward()
    return loss.detach().cpu().numpy(), x.grad.cpu().numpy()


@pytest.mark.parametrize("name", sorted(MARGIN))
def test_margin_losses_leave_nan_terms_out(name: str, device: str) -> None:
    loss, grad = _margin(pg, name, device)
    np.testing.assert_allclose(loss, MARGIN[name][1], rtol=1e-6)
    np.testing.assert_allclose(grad, MARGIN[name][2], rtol=1e-6)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", sorted(MARGIN))
def test_margin_losses_leave_nan_terms_out_is_torchs(name: str) -> None:
    loss, grad = _margin(torch, name, None)
    np.testing.assert_allclose(loss, MARGIN[name][1], rtol=1e-6)
    np.testing.assert_allclose(grad, MARGIN[name][2], rtol=1e-6)


# log-space sums: equal infinities give themselves (two -inf: a sum of nothing), as PyTorch
LOGADDEXP_A = [INF, -INF, INF, -INF, 1.0, NAN, 0.5]
LOGADDEXP_B = [INF, -INF, -INF, INF, INF, 1.0, 0.25]
LOGADDEXP = {
    "logaddexp": ([INF, -INF, INF, INF, INF, NAN, 1.0759394198788437],
                  [NAN, NAN, 1.0, 0.0, 0.0, NAN, 0.5621765008857981]),
    "logaddexp2": ([INF, -INF, INF, INF, INF, NAN, 1.380408450476996],
                   [NAN, NAN, 1.0, 0.0, 0.0, NAN, 0.5432136168629449]),
}


def _logaddexp(L: Any, name: str, device: str | None) -> tuple[np.ndarray, np.ndarray]:
    kw = {} if device is None else {"device": device}
    a = L.tensor(LOGADDEXP_A, dtype=L.float64, requires_grad=True, **kw)
    b = L.tensor(LOGADDEXP_B, dtype=L.float64, **kw)
    r = getattr(L, name)(a, b)
    r.backward(L.ones(len(LOGADDEXP_A), dtype=L.float64, **kw))
    return r.detach().cpu().numpy(), a.grad.cpu().numpy()


@pytest.mark.parametrize("name", sorted(LOGADDEXP))
def test_logaddexp_infinities(name: str, device: str) -> None:
    value, grad = _logaddexp(pg, name, device)
    np.testing.assert_allclose(value, LOGADDEXP[name][0], rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(grad, LOGADDEXP[name][1], rtol=1e-12, equal_nan=True)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", sorted(LOGADDEXP))
def test_logaddexp_infinities_is_torchs(name: str) -> None:
    value, grad = _logaddexp(torch, name, None)
    np.testing.assert_allclose(value, LOGADDEXP[name][0], rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(grad, LOGADDEXP[name][1], rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("lib", ["pg", "torch"])
def test_polygamma_at_poles(lib: str, device: str) -> None:
    """At the poles (0 and the negative integers) PyTorch's polygamma of even order is -inf
    (the limit from the right), not NaN; of odd order inf (at 0; PyTorch's value at the
    negative integers is a large finite number, not compared)."""
    if lib == "torch":
        if torch is None:
            pytest.skip("torch is not installed (an optional reference)")
        L, kw = torch, {}
    else:
        L, kw = pg, {"device": device}
    x = L.tensor([0.0, -1.0, -2.0, -0.0], dtype=L.float64, **kw)
    for n in (2, 4):
        assert L.polygamma(n, x).cpu().tolist() == [-INF] * 4
    for n in (1, 3):
        assert L.polygamma(n, x[:1]).cpu().tolist() == [INF]


def test_einsum_sums_an_operand_alone_first(device: str) -> None:
    """``einsum("ii,j->j", a, v)`` is ``trace(a) * v`` (PyTorch sums an index one operand has
    alone before the product): an infinite trace times an infinite element is infinite, where
    the sum of the products ``inf * inf + x * inf + -inf * inf`` was NaN."""
    a = pg.tensor([[INF, 1.0], [2.0, 3.0]], device=device)
    v = pg.tensor([INF, -0.5, -INF, 2.0], device=device)
    assert pg.einsum("ii,j->j", a, v).cpu().tolist() == [INF, -INF, -INF, INF]
