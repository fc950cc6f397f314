"""Shapes, gradients, result types and error families where the differential fuzzer found
portagrad and PyTorch apart (the values here are PyTorch 2.13's; torch is not needed)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F

INF, NAN = math.inf, math.nan


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


# ------------------------------------------------------------ unbatched class-index losses
def test_unbatched_loss_takes_a_size_one_target(device: str) -> None:
    x = pg.tensor([1.0, 2.0, 3.0], dtype=pg.float64, device=device)
    for t in (pg.tensor(1, device=device), pg.tensor([1], device=device)):
        for red in ("mean", "sum", "none"):
            out = F.nll_loss(x, t, reduction=red)
            assert out.shape == () and float(out) == -2.0
    ce = F.cross_entropy(x, pg.tensor([2], device=device), reduction="none")
    assert ce.shape == () and abs(float(ce) - 0.40760596444437) < 1e-12


def test_unbatched_loss_target_errors(device: str) -> None:
    x = pg.tensor([1.0, 2.0, 3.0], device=device)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        F.cross_entropy(x, pg.tensor(3, device=device)).item()  # OpenCL: at the read
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.nll_loss(x, pg.tensor([5], device=device)).item()
    with pytest.raises(ValueError, match="1D target must have size 1, but got target size: 2"):
        F.cross_entropy(x, pg.tensor([1, 2], device=device))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        F.nll_loss(x, pg.tensor([[1]], device=device))


# ------------------------------------------------------------ take_along_dim
def test_take_along_dim_without_dim_flattens(device: str) -> None:
    out = pg.take_along_dim(pg.tensor(5.0, device=device), pg.tensor(0, device=device))
    assert out.shape == (1,) and _np(out).tolist() == [5.0]
    x = pg.arange(6.0, device=device).reshape(2, 3)
    assert _np(x.take_along_dim(pg.tensor([[4, 0]], device=device))).tolist() == [4.0, 0.0]


def test_take_along_dim_needs_equal_dims(device: str) -> None:
    x = pg.arange(6.0, device=device).reshape(2, 3)
    with pytest.raises(RuntimeError, match="same number of dimensions, but got 2 dimensions for "
                                           "input, and 1 dimensions for indices"):
        pg.take_along_dim(x, pg.tensor([0, 2], device=device), 1)
    with pytest.raises(IndexError, match="has no dimensions"):
        pg.take_along_dim(pg.tensor(5.0, device=device), pg.tensor(0, device=device), 0)


# ------------------------------------------------------------ gradients
def test_relu_passes_the_gradient_of_nan(device: str) -> None:
    for inplace in (False, True):
        a = pg.tensor([NAN, 1.0, -1.0, 0.0], device=device, requires_grad=True)
        y = (a * 1).relu_() if inplace else F.relu(a)
        y.sum().backward()
        assert _np(a.grad).tolist() == [1.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("op,ga,gb", [("maximum", [0.5, 0.0, 1.0], [0.5, 1.0, 1.0]),
                                      ("minimum", [0.5, 1.0, 1.0], [0.5, 0.0, 1.0])])
def test_maximum_minimum_grad_ties_and_nan(device: str, op: str, ga: list, gb: list) -> None:
    a = pg.tensor([1.0, 2.0, NAN], device=device, requires_grad=True)
    b = pg.tensor([1.0, 3.0, 4.0], device=device, requires_grad=True)
    getattr(pg, op)(a, b).sum().backward()
    assert _np(a.grad).tolist() == ga and _np(b.grad).tolist() == gb


def test_maximum_grad_of_loser_is_zero_under_infinite_grad(device: str) -> None:
    a = pg.tensor([1e30, 2.0], device=device, requires_grad=True)
    b = pg.tensor([0.5, 3.0], device=device, requires_grad=True)
    pg.maximum(a, b).backward(pg.tensor([INF, 1.0], device=device))
    assert _np(a.grad).tolist() == [INF, 0.0] and _np(b.grad).tolist() == [0.0, 1.0]


# ------------------------------------------------------------ cat
def test_cat_promotes_over_skipped_empty_inputs(device: str) -> None:
    out = pg.cat([pg.zeros(0, dtype=pg.int64, device=device), pg.ones(2, device=device)])
    assert out.dtype is pg.float32 and _np(out).tolist() == [1.0, 1.0]
    out = pg.cat([pg.zeros(0, dtype=pg.float64, device=device), pg.ones(1, device=device)])
    assert out.dtype is pg.float64
    assert pg.cat([pg.zeros(0, dtype=pg.int64, device=device),
                   pg.zeros(0, device=device)]).dtype is pg.float32
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 1\)"):
        pg.cat([pg.zeros(0, device=device), pg.tensor(1.0, device=device)])
    with pytest.raises(RuntimeError, match="for tensor number 2 in the list"):
        pg.cat([pg.zeros(2, 3, device=device), pg.zeros(0, device=device),
                pg.zeros(2, 4, device=device)])


# ------------------------------------------------------------ empty reductions
def test_empty_reduction_error_families(device: str) -> None:
    z = pg.zeros(0, device=device)
    for f in (lambda: pg.argmax(z), lambda: pg.argmin(pg.zeros(0, 3, device=device))):
        with pytest.raises(IndexError, match="Expected reduction dim to be specified"):
            f()
    for f in (lambda: z.max(0), lambda: z.amax(0), lambda: z.argmax(0), lambda: z.amin(dim=0)):
        with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
            f()
    with pytest.raises(IndexError, match="reduction dim 1 to have non-zero size"):
        pg.zeros(2, 0, device=device).amax((0, 1))
    for f in (lambda: z.max(), lambda: z.amax(), lambda: z.amin(())):
        with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
            f()
    assert pg.zeros(2, 0, device=device).amax(0).shape == (0,)


def test_argmax_refuses_bool_first(device: str) -> None:
    for f in (lambda: pg.argmax(pg.tensor([True, False], device=device)),
              lambda: pg.argmin(pg.zeros(0, dtype=pg.bool, device=device), 0)):
        with pytest.raises(RuntimeError, match="does not support bool input"):
            f()


# ------------------------------------------------------------ floor_divide
def test_float_floor_divide_is_torch_div_floor(device: str) -> None:
    a = pg.tensor([-4.0, 4.0, -INF, INF, 5.0, -5.0, 0.0, -0.0, 7.0, -7.0, 7.5, -4.0, 4.0],
                  device=device)
    b = pg.tensor([INF, INF, 2.0, INF, 0.0, 0.0, INF, INF, 2.0, 2.0, -2.0, -INF, -INF],
                  device=device)
    want = [-1.0, 0.0, NAN, NAN, INF, -INF, 0.0, -0.0, 3.0, -4.0, -4.0, 0.0, -1.0]
    for out in (a // b, pg.div(a, b, rounding_mode="floor"), pg.floor_divide(a, b)):
        got = _np(out)
        np.testing.assert_array_equal(got, np.array(want, dtype=np.float32))
        assert np.signbit(got[7]) and not np.signbit(got[6])
    assert _np(pg.tensor([-4], device=device) // pg.tensor(INF, device=device)).tolist() == [-1.0]
