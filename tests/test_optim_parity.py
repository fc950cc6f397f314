"""PyTorch's optimizer behaviour on real parameters: ``SGD``'s hyper-parameter messages, the
arguments the step hooks receive, and a few update rules after five steps; expected values are
PyTorch 2.13's, written out. (PyTorch's SGD lets a NaN lr through its ``< 0`` tests; portagrad
refuses it, as every other optimizer does.)"""
from __future__ import annotations

import re

import pytest

import portagrad as pg



def _param(device: str, dtype=pg.float64) -> pg.Tensor:
    return pg.tensor([1.0, -2.0, 3.0], dtype=dtype, device=device, requires_grad=True)


def _five_steps(opt: pg.optim.Optimizer, p: pg.Tensor, device: str) -> None:
    for s in range(5):
        p.grad = pg.tensor([0.5, -1.0 + s, 0.25 * s], dtype=p.dtype, device=device)
        opt.step()


# ---------------------------------------------------------------------------- SGD checks
def test_sgd_negative_hyper_parameters(device: str) -> None:
    p = _param(device)
    with pytest.raises(ValueError, match="^Invalid learning rate: -1$"):
        pg.optim.SGD([p], lr=-1)
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -1.0$"):
        pg.optim.SGD([p], lr=pg.tensor(-1.0))
    with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
        pg.optim.SGD([p], lr=pg.tensor([0.1, 0.2]))
    with pytest.raises(ValueError, match=r"^Invalid momentum value: -0.5$"):
        pg.optim.SGD([p], lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match=r"^Invalid weight_decay value: -0.5$"):
        pg.optim.SGD([p], lr=0.1, weight_decay=-0.5)


# ---------------------------------------------------------------------------- step hooks
def test_step_hooks_see_the_optimizer_as_first_argument(device: str) -> None:
    p = _param(device)
    opt = pg.optim.SGD([p], lr=0.5)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append(("pre", len(a), a[0] is o, dict(k))))
    opt.register_step_post_hook(lambda o, a, k: seen.append(("post", len(a), a[0] is o, dict(k))))
    p.grad = pg.ones(3, dtype=pg.float64, device=device)
    opt.step()
    opt.step(closure=None)
    assert seen == [("pre", 1, True, {}), ("post", 1, True, {}),
                    ("pre", 1, True, {"closure": None}), ("post", 1, True, {"closure": None})]
    assert p.tolist() == [0.0, -3.0, 2.0]


def test_step_pre_hook_replaces_the_arguments(device: str) -> None:
    p = _param(device)
    opt = pg.optim.SGD([p], lr=0.5)
    p.grad = pg.ones(3, dtype=pg.float64, device=device)
    # the replacement args hold the optimizer first, then the closure
    opt.register_step_pre_hook(lambda o, a, k: ((a[0], lambda: 7.0), {}))
    assert opt.step() == 7.0
    assert p.tolist() == [0.5, -2.5, 2.5]


def test_step_pre_hook_bad_return_names_step(device: str) -> None:
    opt = pg.optim.Adam([_param(device)], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: 5)
    with pytest.raises(RuntimeError, match=r"^<function Adam\.step at 0x[0-9a-f]+> must return "
                       + re.escape("None or a tuple of (new_args, new_kwargs), but got 5.")):
        opt.step()


# ------------------------------------------------------------------ values after 5 steps
def test_nadamw_maximize_five_steps(device: str) -> None:
    p = _param(device)
    opt = pg.optim.NAdam([p], lr=0.01, weight_decay=0.1, decoupled_weight_decay=True,
                         maximize=True)
    _five_steps(opt, p, device)
    assert p.tolist() == pytest.approx(
        [1.0354164236372385, -1.9725163846503047, 3.0272179275726163], rel=1e-6)
    st = opt.state[p]
    assert st["step"].dtype == pg.float32 and st["step"].item() == 5.0
    assert st["mu_product"].dtype == pg.float32
    assert st["mu_product"].item() == pytest.approx(0.01849803701043129, rel=1e-6)
    assert st["exp_avg_sq"].dtype == pg.float64
    assert st["exp_avg"].tolist() == pytest.approx(
        [-0.20475499999999996, -0.4953899999999999, -0.22622499999999995], rel=1e-6)


def test_radamw_rectified_five_steps(device: str) -> None:
    p = _param(device)
    opt = pg.optim.RAdam([p], lr=0.01, betas=(0.9, 0.5), weight_decay=0.1,
                         decoupled_weight_decay=True)
    _five_steps(opt, p, device)
    assert p.tolist() == pytest.approx(
        [0.9700599400299939, -1.9944406890183672, 2.971449767775402], rel=1e-6)
    assert opt.state[p]["exp_avg_sq"].tolist() == pytest.approx(
        [0.2421875, 5.65625, 0.67578125], rel=1e-6)


def test_rmsprop_centered_momentum_five_steps(device: str) -> None:
    p = _param(device)
    opt = pg.optim.RMSprop([p], lr=0.01, centered=True, momentum=0.9, weight_decay=0.1)
    _five_steps(opt, p, device)
    assert p.tolist() == pytest.approx(
        [0.052044060602719634, -1.9136358901594088, 1.8645550887687545], rel=1e-6)
    st = opt.state[p]
    assert sorted(st) == ["grad_avg", "momentum_buffer", "square_avg", "step"]
    assert st["grad_avg"].tolist() == pytest.approx(
        [0.027895221024333693, 0.04093968736329844, 0.037760370447552], rel=1e-6)
