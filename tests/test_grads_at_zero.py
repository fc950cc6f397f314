"""Gradients of ``std``, ``var``, the norms and softplus where they are not differentiable (or
where their stable formulas are not, as softplus at 0): zero variance,
a zero norm (``dist`` of equal points, ``pdist``/``cdist`` of equal rows, ``normalize`` of a
zero row), and ``var``/``std`` without degrees of freedom (``correction >= N``).

PyTorch defines these by its derivative formulas rather than by the chain rule through ``sqrt``
and ``pow``: ``std``'s gradient is 0 where the standard deviation is 0 (``sqrt``'s chain rule gives
``0 * inf = nan``), a p-norm's is 0 at a zero norm, ``var``'s without degrees of freedom is
``inf`` or ``nan`` by a fixed rule. The expected values are PyTorch 2.13's, written out; they
are checked against torch where it is installed. Away from these points, the op table's
gradchecks cover the same functions (``std``, ``var``, ``norm_p`` ...).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck, gradgradcheck

from torch_cases import torch

INF, NAN = math.inf, math.nan


def _cases(L: Any) -> dict[str, tuple[Any, Callable[[Any], Any], Any]]:
    """name -> (x, f(x), PyTorch's x.grad of f(x).sum())."""
    F = L.nn.functional

    def t(v: Any, x: Any) -> Any:
        return L.tensor(v, dtype=x.dtype, device=x.device)

    return {
        "std_constant": ([1.0, 1.0, 1.0], lambda x: x.std(), [0.0, 0.0, 0.0]),
        "std_zeros": ([0.0, 0.0, 0.0], lambda x: x.std(), [0.0, 0.0, 0.0]),
        "std_correction0_constant": ([2.0, 2.0], lambda x: x.std(correction=0), [0.0, 0.0]),
        "std_correction2_constant": ([5.0, 5.0, 5.0], lambda x: x.std(correction=2),
                                     [0.0, 0.0, 0.0]),
        "std_dim_constant_row": ([[3.0, 3.0], [1.0, 2.0]], lambda x: x.std(1),
                                 [[0.0, 0.0], [-0.7071067811865475, 0.7071067811865475]]),
        "std_keepdim_constant_row": ([[3.0, 3.0], [1.0, 2.0]],
                                     lambda x: x.std(1, keepdim=True),
                                     [[0.0, 0.0], [-0.7071067811865475, 0.7071067811865475]]),
        "std_mean_constant": ([1.0, 1.0, 1.0], lambda x: sum(r.sum() for r in L.std_mean(x)),
                              [1 / 3, 1 / 3, 1 / 3]),
        "std_mean_dim_constant_row": ([[3.0, 3.0], [1.0, 2.0]],
                                      lambda x: sum(r.sum() for r in L.std_mean(x, 1)),
                                      [[0.5, 0.5], [-0.20710678118654746, 1.2071067811865475]]),
        "std_no_dof": ([0.0, 2.0, -1.0], lambda x: x.std(correction=3), [NAN, NAN, NAN]),
        "std_dim_negative_dof": ([[2.0], [4.0]], lambda x: x.std(1, correction=2),
                                 [[NAN], [NAN]]),
        "var_constant": ([1.0, 1.0, 1.0], lambda x: x.var(), [0.0, 0.0, 0.0]),
        "var_mean_constant": ([1.0, 1.0, 1.0], lambda x: sum(r.sum() for r in L.var_mean(x)),
                              [1 / 3, 1 / 3, 1 / 3]),
        "var_no_dof": ([0.0, 2.0, -1.0], lambda x: x.var(correction=3), [INF, INF, INF]),
        "var_no_dof_at_the_mean": ([1.0, 1.0], lambda x: x.var(correction=2), [NAN, NAN]),
        "var_dim_no_dof": ([[3.0, 3.0], [1.0, 2.0]], lambda x: x.var(1, correction=2),
                           [[NAN, NAN], [-INF, INF]]),
        "var_dim_negative_dof": ([[2.0], [4.0]], lambda x: x.var(1, correction=2),
                                 [[-0.0], [-0.0]]),
        "norm_zero": ([0.0, 0.0, 0.0], lambda x: x.norm(), [0.0, 0.0, 0.0]),
        "norm_p1_zero": ([0.0, 0.0, 0.0], lambda x: x.norm(1), [0.0, 0.0, 0.0]),
        "norm_inf_zero": ([0.0, 0.0, 0.0], lambda x: x.norm(INF), [0.0, 0.0, 0.0]),
        "norm_p3_zero": ([0.0, 0.0, 0.0], lambda x: x.norm(3), [0.0, 0.0, 0.0]),
        "norm_p3_zero_row": ([[0.0, 0.0], [1.0, 2.0]], lambda x: x.norm(3, dim=1),
                             [[0.0, 0.0], [0.2311204247835449, 0.9244816991341795]]),
        "norm_p1_5_zero": ([0.0, 0.0, 0.0], lambda x: x.norm(1.5), [0.0, 0.0, 0.0]),
        "norm_p0_5_zero": ([0.0, 0.0, 0.0], lambda x: x.norm(0.5), [0.0, 0.0, 0.0]),
        "norm_p0_5_with_a_zero": ([0.0, 1.0, -4.0], lambda x: x.norm(0.5), [0.0, 3.0, -1.5]),
        "norm_pm1_with_a_zero": ([0.0, 2.0, -1.0], lambda x: x.norm(-1), [0.0, 0.0, -0.0]),
        "vector_norm_p3_zero": ([0.0, 0.0], lambda x: L.linalg.vector_norm(x, 3), [0.0, 0.0]),
        "linalg_norm_zero": ([[0.0, 0.0], [0.0, 0.0]], lambda x: L.linalg.norm(x),
                             [[0.0, 0.0], [0.0, 0.0]]),
        "dist_zero": ([1.0, 2.0], lambda x: L.dist(x, t([1.0, 2.0], x)), [0.0, 0.0]),
        "dist_p3_zero": ([1.0, 2.0], lambda x: L.dist(x, t([1.0, 2.0], x), 3), [0.0, 0.0]),
        "dist_inf_zero": ([1.0, 2.0], lambda x: L.dist(x, t([1.0, 2.0], x), INF), [0.0, 0.0]),
        "pdist_equal_rows": ([[1.0, 2.0], [1.0, 2.0], [0.0, 0.0]], lambda x: F.pdist(x),
                             [[0.4472135954999579, 0.8944271909999159],
                              [0.4472135954999579, 0.8944271909999159],
                              [-0.8944271909999159, -1.7888543819998317]]),
        "pdist_p3_equal_rows": ([[1.0, 2.0], [1.0, 2.0], [0.0, 0.0]], lambda x: F.pdist(x, 3),
                                [[0.2311204247835449, 0.9244816991341795],
                                 [0.2311204247835449, 0.9244816991341795],
                                 [-0.4622408495670898, -1.848963398268359]]),
        "cdist_equal_rows": ([[1.0, 2.0], [0.0, 0.0]],
                             lambda x: L.cdist(x, t([[1.0, 2.0], [3.0, 2.0]], x)),
                             [[-1.0, 0.0], [-1.2792638898378017, -1.4491273872251451]]),
        "cdist_p3_equal_rows": ([[1.0, 2.0], [0.0, 0.0]],
                                lambda x: L.cdist(x, t([[1.0, 2.0], [3.0, 2.0]], x), 3),
                                [[-1.0, 0.0], [-1.0722517616891822, -1.2983178488700184]]),
        "normalize_zero_row": ([[0.0, 0.0], [3.0, 4.0]],
                               lambda x: F.normalize(x) * t([1.0, 2.0], x),
                               [[1e12, 2e12], [-0.064, 0.048]]),
        "normalize_p3_zero_row": ([[0.0, 0.0], [3.0, 4.0]],
                                  lambda x: F.normalize(x, 3) * t([1.0, 2.0], x),
                                  [[1e12, 2e12], [-0.01954496050730717, 0.014658720380480272]]),
        # the incoming gradient (inf here) reaches a zero norm's input as PyTorch's formula
        # multiplies it: inf * 0 = nan
        "divide_by_a_zero_norm": ([0.0, 0.0], lambda x: x / x.norm(), [NAN, NAN]),
        # softplus's derivative is sigmoid(beta x): 1/2 at 0 (the kinks of |x| and relu in its
        # stable formula are no kinks of softplus), and so for logsigmoid and logit losses
        "softplus_zero": ([0.0, -3.0], lambda x: F.softplus(x), [0.5, 0.04742587317756679]),
        "softplus_beta_threshold_zero": ([0.0, 3.0], lambda x: F.softplus(x, 2, 5),
                                         [0.5, 1.0]),
        "logsigmoid_zero": ([0.0, 2.0], lambda x: F.logsigmoid(x), [0.5, 0.11920292202211757]),
        "bce_with_logits_zero": ([0.0, 0.0], lambda x: F.binary_cross_entropy_with_logits(
            x, t([0.25, 1.0], x), reduction="none", pos_weight=t([3.0], x)), [0.0, -1.5]),
    }


NAMES = sorted(_cases(pg))


def _grad(L: Any, name: str, device: Any) -> np.ndarray:
    data, fn, _ = _cases(L)[name]
    kw = {"device": device} if device is not None else {}
    x = L.tensor(data, dtype=L.float64, requires_grad=True, **kw)
    fn(x).sum().backward()
    return np.asarray(x.grad.tolist())


def _check(got: np.ndarray, want: Any) -> None:
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-15, equal_nan=True)


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
@pytest.mark.parametrize("name", NAMES)
def test_grad_at_zero(name: str, device: str) -> None:
    _check(_grad(pg, name, device), _cases(pg)[name][2])


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", NAMES)
def test_grad_at_zero_is_torchs(name: str) -> None:
    _check(_grad(torch, name, None), _cases(torch)[name][2])


# float64 gradcheck (and gradgradcheck) away from the kinks, of the rewritten derivatives
GRADCHECK: dict[str, tuple[tuple[int, ...], Callable[[pg.Tensor], pg.Tensor]]] = {
    "std": ((2, 3), lambda x: x.std()),
    "std_dim_correction0": ((2, 3), lambda x: x.std(1, correction=0)),
    "std_keepdim_correction2": ((3, 4), lambda x: x.std(0, correction=2, keepdim=True)),
    "std_mean": ((2, 3), lambda x: pg.std_mean(x, 1)[0]),
    "var": ((2, 3), lambda x: x.var()),
    "var_dims": ((2, 3, 2), lambda x: x.var((0, 2), correction=0)),
    "var_mean": ((2, 3), lambda x: pg.var_mean(x, 1, keepdim=True)[0]),
    "norm_p3": ((2, 3), lambda x: x.norm(3, dim=1)),
    "norm_p1_5": ((2, 3), lambda x: x.norm(1.5)),
    "norm_p0_5": ((2, 3), lambda x: x.norm(0.5, dim=0)),
    "norm_pm1": ((2, 3), lambda x: x.norm(-1, dim=1, keepdim=True)),
    "norm_p2": ((2, 3), lambda x: x.norm(dim=1)),
    "dist_p3": ((4,), lambda x: pg.dist(x[:2], x[2:], 3)),
    "cdist_p3": ((3, 2), lambda x: pg.cdist(x[:1], x[1:], 3)),
    "pdist_p1_5": ((3, 2), lambda x: pg.nn.functional.pdist(x, 1.5)),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_gradcheck_std_var_norm(name: str, device: str) -> None:
    shape, fn = GRADCHECK[name]
    gen = pg.Generator().manual_seed(3)
    x = (pg.rand(shape, generator=gen, dtype=pg.float64) + 0.5).to(device)
    x = (x * pg.tensor([1.0, -1.0], dtype=pg.float64, device=device).repeat(x.numel())[
        :x.numel()].reshape(shape)).requires_grad_()  # signs alternate, |x| >= 0.5
    assert gradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)
    assert gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)
