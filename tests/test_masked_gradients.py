"""Gradients that PyTorch masks to exactly 0, or forms as one product with the incoming gradient,
checked with infinite and NaN incoming gradients.

PyTorch's ``threshold_backward`` (ReLU), the shrink functions, ``CopySlices`` (``x[i] = v`` and
the ``*_scatter`` ops), ``sign``/``floor``/... (``zeros_like``) and ``embedding_bag``'s
``max`` select the gradient: where it does not flow it is 0 whatever the incoming gradient is.
Multiplying by a 0/1 mask instead gives ``inf * 0 = nan`` there. ``mish``, ``lerp``, ``sinc``
and ``mvlgamma`` compute their slope first and multiply once; the chain rule through their
compositions added several products of the gradient, ``inf - inf = nan``.

The expected values are PyTorch 2.13's, written out; they are checked against torch where it is
installed.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg

from torch_cases import torch

INF, NAN = math.inf, math.nan

# name -> (x, f(L, x), upstream gradient, PyTorch's x.grad)
Case = tuple[list, Callable[[Any, Any], Any], list, list]


def _setitem(L: Any, x: Any) -> Any:
    y = x * 1
    y[1:3] = 5.0
    return y


def _relu_inplace(L: Any, x: Any) -> Any:
    return L.nn.functional.relu(x * 1, inplace=True)


CASES: dict[str, Case] = {
    "relu": ([-1.0, 2.0, 0.0, 3.0], lambda L, x: L.relu(x), [INF, NAN, NAN, 1.0],
             [0.0, NAN, 0.0, 1.0]),
    "relu_inplace": ([-1.0, 2.0, 0.0], _relu_inplace, [INF, INF, -INF], [0.0, INF, 0.0]),
    "hardshrink": ([NAN, -0.3, 0.3, -1.0, 1.0], lambda L, x: L.nn.functional.hardshrink(x),
                   [1.0, INF, INF, INF, 2.0], [1.0, 0.0, 0.0, INF, 2.0]),
    "softshrink": ([NAN, -0.3, 0.3, -1.0, 1.0], lambda L, x: L.nn.functional.softshrink(x),
                   [1.0, INF, NAN, INF, 2.0], [1.0, 0.0, 0.0, INF, 2.0]),
    "mish": ([-1.0, 0.0, -4.0], lambda L, x: L.nn.functional.mish(x), [INF, INF, INF],
             [INF, INF, -INF]),
    "sign": ([-2.0, 0.0, 3.0], lambda L, x: x.sign(), [INF, NAN, 1.0], [0.0, 0.0, 0.0]),
    "floor": ([-2.5, 0.5], lambda L, x: x.floor(), [INF, NAN], [0.0, 0.0]),
    "round": ([-2.5, 0.7], lambda L, x: x.round(), [INF, -INF], [0.0, 0.0]),
    "setitem": ([1.0, 2.0, 3.0, 4.0], _setitem, [INF, INF, NAN, 1.0], [INF, 0.0, 0.0, 1.0]),
    "slice_scatter": ([1.0, 2.0, 3.0, 4.0],
                      lambda L, x: L.slice_scatter(x, L.zeros(2, dtype=x.dtype,
                                                              device=x.device), 0, 0, 2),
                      [INF, NAN, INF, 2.0], [0.0, 0.0, INF, 2.0]),
    "lerp_scalar": ([1.0, 2.0], lambda L, x: L.lerp(x, x.detach() * 3, 0.25), [INF, 2.0],
                    [INF, 1.5]),
    "lerp_tensor": ([1.0, 2.0], lambda L, x: L.lerp(x.detach() * 3, x.detach(), x * 0.1),
                    [INF, 1.0], [-INF, -0.4]),
    "sinc": ([0.5, 1.5, 0.0], lambda L, x: L.sinc(x), [INF, INF, INF], [-INF, INF, 0.0]),
    "mvlgamma": ([1.3, 2.2], lambda L, x: L.mvlgamma(x, 2), [INF, INF], [-INF, INF]),
}

NAMES = sorted(CASES)


def _grad(L: Any, name: str, device: str | None) -> np.ndarray:
    x0, fn, g0, _ = CASES[name]
    kw = {} if device is None else {"device": device}
    x = L.tensor(x0, dtype=L.float64, requires_grad=True, **kw)
    y = fn(L, x)
    y.backward(L.tensor(g0, dtype=L.float64, **kw))
    g = x.grad
    return (g.cpu().numpy() if L is pg else g.numpy()).astype(np.float64)


def _check(got: np.ndarray, want: list) -> None:
    np.testing.assert_allclose(got, np.array(want, dtype=np.float64), rtol=1e-6, atol=0,
                               equal_nan=True)
    # infinities keep their sign and zeros are zeros (not NaN): assert_allclose compares both


@pytest.mark.parametrize("name", NAMES)
def test_masked_gradient(name: str, device: str) -> None:
    _check(_grad(pg, name, device), CASES[name][3])


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", NAMES)
def test_masked_gradient_is_torchs(name: str) -> None:
    _check(_grad(torch, name, None), CASES[name][3])


def test_shrink_values_keep_nan_and_signed_zero(device: str) -> None:
    """The rewritten shrinks keep PyTorch's values: NaN stays NaN, softshrink gives ``x * 0``
    inside the band (``-0.0`` for a negative x), hardshrink ``+0.0``."""
    x = pg.tensor([NAN, -0.3, 0.3, -1.0, 1.0], device=device)
    soft = pg.nn.functional.softshrink(x).cpu().numpy()
    hard = pg.nn.functional.hardshrink(x).cpu().numpy()
    np.testing.assert_array_equal(soft, np.array([NAN, -0.0, 0.0, -0.5, 0.5], np.float32))
    np.testing.assert_array_equal(np.signbit(soft), [False, True, False, True, False])
    np.testing.assert_array_equal(hard, np.array([NAN, 0.0, 0.0, -1.0, 1.0], np.float32))
    assert not np.signbit(hard[1])


def test_embedding_bag_max_gradient_goes_to_the_first_maximum(device: str) -> None:
    """PyTorch's ``max_indices``: each bag and column's gradient goes to its first maximal row
    only (ties included), and the other rows get exactly 0 even when the gradient is
    infinite."""
    w = pg.tensor([[1.0, 2.0], [1.0, 0.0], [3.0, 2.0], [0.0, 0.0]], requires_grad=True,
                  device=device)
    out = pg.nn.functional.embedding_bag(pg.tensor([0, 1, 2, 3, 0, 1], device=device), w,
                                         pg.tensor([0, 2, 3], device=device), mode="max")
    out.backward(pg.tensor([[1.0, INF], [2.0, 3.0], [5.0, 7.0]], device=device))
    np.testing.assert_array_equal(out.detach().cpu().numpy(), [[1, 2], [3, 2], [1, 2]])
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [[6, INF], [0, 0], [2, 3], [0, 0]])


GRADCHECK: dict[str, Callable[[Any], Any]] = {
    "mish": lambda x: pg.nn.functional.mish(x),
    "sinc": lambda x: pg.sinc(x),
    "mvlgamma": lambda x: pg.mvlgamma(x.abs() + 1.0, 3),
    "lerp_scalar": lambda x: pg.lerp(x[:3], x[3:], 0.7),
    "lerp_tensor": lambda x: pg.lerp(x[:2], x[2:4], x[4:]),
    "hardshrink": lambda x: pg.nn.functional.hardshrink(x),
    "softshrink": lambda x: pg.nn.functional.softshrink(x),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_gradcheck_rewritten(name: str, device: str) -> None:
    """float64 gradcheck and gradgradcheck of the new single-node derivatives (away from the
    shrinks' band edges)."""
    x = pg.tensor([0.9, -1.3, 2.1, -0.7, 1.6, 0.8], dtype=pg.float64, device=device,
                  requires_grad=True)
    fn = GRADCHECK[name]
    assert pg.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)
    assert pg.autograd.gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)


def test_copysign_gives_other_a_zero_gradient(device: str) -> None:
    """PyTorch's copysign derivative: ``g * result / input`` (0 where the input is 0) for the
    input and a tensor of zeros for ``other`` (whose ``.grad`` the composition left None)."""
    a = pg.tensor([1.0, -2.0, 0.0], requires_grad=True, device=device)
    b = pg.tensor([-1.0, 2.0, -3.0], requires_grad=True, device=device)
    pg.copysign(a, b).backward(pg.tensor([2.0, INF, 5.0], device=device))
    assert a.grad.cpu().tolist() == [-2.0, -INF, 0.0]
    assert b.grad is not None and b.grad.cpu().tolist() == [0.0, 0.0, 0.0]
