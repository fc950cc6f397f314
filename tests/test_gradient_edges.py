"""Gradients at the edges of their domains where PyTorch's derivative is the exact one (or its
own documented rule), once different in portagrad: ``fmax``/``fmin`` ties, ``xlogy``/``xlog1py`` at
``x == 0``, the smooth L1 and Huber losses at infinite differences, ``renorm`` of a slice with a
NaN norm, ``logit`` outside ``[0, 1]``, ``angle`` of real tensors, rounded division (recorded, zeros)
``frexp``'s mantissa (its slope ``2**-e``, once missing from the gradient) and ``logcumsumexp``
after -inf entries.

Each case runs backward with the incoming gradient ``0.5, 1.5, 2.5 ...`` and compares every input's
gradient with PyTorch 2.13's, written out; where torch is installed the literals are checked
against it.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg

from torch_cases import torch

NAN, INF = math.nan, math.inf


def _grads(L: Any, d: Any, fn: Callable[..., Any], *inputs: list) -> list:
    xs = [L.tensor(v, dtype=L.float64, device=d, requires_grad=True) for v in inputs]
    y = fn(L, *xs)
    g = L.tensor([0.5 + k for k in range(y.numel())], dtype=L.float64, device=d).reshape(y.shape)
    y.backward(g)
    return [x.grad.tolist() for x in xs]


CASES: dict[str, tuple[Callable[..., Any], tuple]] = {
    # fmax/fmin: the whole gradient to input where it is chosen (ties, other NaN), else to other
    "fmax": (lambda L, x, o: L.fmax(x, o), ([0.5, 1.0, NAN, 2.0, NAN], [0.5, 2.0, 1.0, NAN, NAN])),
    "fmin": (lambda L, x, o: L.fmin(x, o), ([0.5, 1.0, NAN, 2.0, NAN], [0.5, 2.0, 1.0, NAN, NAN])),
    "fmax_broadcast": (lambda L, x, o: L.fmax(x, o), ([[1.0, 3.0]], [[2.0], [3.0]])),
    # xlogy/xlog1py: the slope log(y) at x == 0 too (0 only where y <= 0, or y <= -1)
    "xlogy": (lambda L, x, y: L.xlogy(x, y),
              ([0.0, -0.0, 0.0, 0.0, 1.0, 2.0, 0.0], [2.0, 2.0, 0.0, -1.0, 3.0, NAN, -2.0])),
    "xlog1py": (lambda L, x, y: L.special.xlog1py(x, y),
                ([0.0, -0.0, 0.0, 0.0, 1.0, 2.0, 0.0], [2.0, 2.0, -1.0, -2.0, 3.0, NAN, 0.5])),
    # the losses' square is not taken at infinite differences: a finite slope there
    "smooth_l1_loss": (lambda L, x, t: L.nn.functional.smooth_l1_loss(x, t, reduction="none"),
                       ([INF, -INF, 0.3, 2.0], [0.0, 0.0, 0.0, 0.0])),
    "huber_loss": (lambda L, x, t: L.nn.functional.huber_loss(x, t, reduction="none", delta=0.5),
                   ([INF, -INF, 0.3, 2.0], [1.0, 0.0, 0.0, 0.0])),
    # a slice left as it is (its norm NaN) passes the gradient unchanged
    "renorm": (lambda L, x: L.renorm(x, 2, 0, 1.0), ([[NAN, 1.0], [3.0, 4.0], [0.3, 0.4]],)),
    # NaN outside [0, 1], where the value is NaN
    "logit": (lambda L, x: L.logit(x), ([-0.5, 0.25, 1.5, 0.0, 1.0],)),
    # angle of a real tensor: zeros, NaN included
    "angle": (lambda L, x: L.angle(x), ([NAN, -1.0, 2.0],)),
    # rounded division: recorded, with a zero derivative (a loss through it alone runs backward)
    "div_floor": (lambda L, x, y: L.div(x, y, rounding_mode="floor"),
                  ([1.5, -2.5, 7.0], [2.0, 2.0, 0.5])),
    "div_trunc": (lambda L, x: L.div(3.0, x, rounding_mode="trunc"), ([1.5, -2.5, 0.0],)),
    # -inf entries (masked log-probabilities) after a finite one: zero slopes, not NaN
    "logcumsumexp_masked": (lambda L, x: x.logcumsumexp(0), ([0.2, -INF, -INF, -INF],)),
    "logcumsumexp_tail": (lambda L, x: x.logcumsumexp(0), ([-800.0, -750.0, 0.5, -INF],)),
    # frexp's mantissa x / 2**e: the slope 1 / 2**e (zero, inf and NaN: e = 0)
    "frexp": (lambda L, x: L.frexp(x).mantissa, ([1.5, -2.5, 0.0, 7.0, INF, 0.001],)),
}

WANT: dict[str, list] = {
    "fmax": [[0.5, 0.0, 0.0, 3.5, 4.5], [0.0, 1.5, 2.5, 0.0, 0.0]],
    "fmin": [[0.5, 1.5, 0.0, 3.5, 4.5], [0.0, 0.0, 2.5, 0.0, 0.0]],
    "fmax_broadcast": [[[0.0, 5.0]], [[0.5], [2.5]]],
    "xlogy": [[0.34657359027997264, 1.0397207708399179, 0.0, 0.0, 4.943755299006494, NAN, 0.0],
              [0.0, -0.0, NAN, -0.0, 1.5, NAN, -0.0]],
    "xlog1py": [[0.5493061443340548, 1.6479184330021643, 0.0, 0.0, 6.238324625039508, NAN,
                 2.6355232027030686], [0.0, -0.0, NAN, -0.0, 1.125, NAN, 0.0]],
    "smooth_l1_loss": [[0.5, -1.5, 0.75, 3.5], [-0.5, 1.5, -0.75, -3.5]],
    "huber_loss": [[0.25, -0.75, 0.75, 1.75], [-0.25, 0.75, -0.75, -1.75]],
    "renorm": [[[0.5, 1.5], [-0.01599998936000044, 0.012000013519999546], [4.5, 5.5]]],
    "logit": [[NAN, 8.0, NAN, INF, INF]],
    "angle": [[0.0, 0.0, 0.0]],
    "div_floor": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "div_trunc": [[0.0, 0.0, 0.0]],
    "frexp": [[0.25, 0.375, 2.5, 0.4375, 4.5, 2816.0]],
    "logcumsumexp_masked": [[8.000000000000002, 0.0, 0.0, 0.0]],
    "logcumsumexp_tail": [[0.5000000000000275, 1.4999999999999938, 6.0, 0.0]],
}


def test_logcumsumexp_gradient_where_pytorchs_is_not_the_derivative(device: Any) -> None:
    """Two cases where PyTorch's signed log-space formula gives something else than the
    derivative, and portagrad the derivative: a leading -inf is its own prefix (``y0 = x0``,
    slope 1; PyTorch NaN), and two equal entries of 1e308 split each prefix's weight in half
    (PyTorch [1, 1, 0, 0], its ``exp(x - y)`` rounding to 1 for both)."""
    got = _grads(pg, device, lambda L, x: x.logcumsumexp(0), [-INF, 0.5, -INF, 1.0])[0]
    assert got[0] == 0.5 and got[2] == 0.0
    got = _grads(pg, device, lambda L, x: x.logcumsumexp(0), [1e308, 1e308, 0.0, 1.0])[0]
    _close(got, [0.5 + (1.5 + 2.5 + 3.5) / 2, (1.5 + 2.5 + 3.5) / 2, 0.0, 0.0])


def _close(got: Any, want: Any) -> None:
    np.testing.assert_allclose(np.array(got, dtype=np.float64), np.array(want, dtype=np.float64),
                               rtol=1e-12, atol=0.0, equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_at_the_edge(device: Any, name: str) -> None:
    fn, inputs = CASES[name]
    for got, want in zip(_grads(pg, device, fn, *inputs), WANT[name], strict=True):
        _close(got, want)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_literals_are_torchs(name: str) -> None:
    fn, inputs = CASES[name]
    for got, want in zip(_grads(torch, "cpu", fn, *inputs), WANT[name], strict=True):
        _close(got, want)


@pytest.mark.parametrize("name", ["fmax", "fmin", "xlogy", "xlog1py"])
def test_gradcheck(device: Any, name: str) -> None:
    rng = np.random.default_rng(3)
    a = pg.tensor(rng.uniform(0.1, 2.0, (3, 4)), dtype=pg.float64, device=device, requires_grad=True)
    b = pg.tensor(rng.uniform(0.1, 2.0, (4,)), dtype=pg.float64, device=device, requires_grad=True)
    fn = {"fmax": pg.fmax, "fmin": pg.fmin, "xlogy": pg.xlogy, "xlog1py": pg.special.xlog1py}[name]
    assert pg.autograd.gradcheck(fn, (a, b))
    assert pg.autograd.gradgradcheck(fn, (a, b))


def test_backward_names_are_torchs() -> None:
    x = pg.tensor([1.0, 2.0], requires_grad=True)
    names = [pg.fmax(x, x).grad_fn.name(), pg.fmin(x, x).grad_fn.name(),
             pg.xlogy(x, x).grad_fn.name(), pg.special.xlog1py(x, x).grad_fn.name(),
             pg.angle(x).grad_fn.name(), pg.div(x, 2, rounding_mode="floor").grad_fn.name(),
             pg.frexp(x).mantissa.grad_fn.name()]
    assert names == ["FmaxBackward0", "FminBackward0", "XlogyBackward0", "SpecialXlog1PyBackward0",
                     "AngleBackward0", "DivBackward2", "FrexpBackward0"]
