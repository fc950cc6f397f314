"""Learning-rate schedules: the lr sequences PyTorch produces (closed forms, and values computed with
torch 2.13 for the recursive ones), state_dict round trips."""
from __future__ import annotations

import io
import math
import warnings

import pytest

import portagrad as pg
from portagrad import optim
from portagrad.optim import lr_scheduler as L


def _seq(make, n=12, opt_cls=optim.SGD, metrics=None, **okw):
    p = [pg.zeros(1, requires_grad=True)]
    opt = opt_cls(p, lr=0.1, **okw)
    sched = make(opt)
    lrs = []
    for i in range(n):
        opt.step()
        sched.step(metrics[i]) if metrics else sched.step()
        lrs.append(opt.param_groups[0]["lr"])
        assert sched.get_last_lr() == [lrs[-1]]
    return lrs, opt, sched


def test_step_lr():
    lrs, *_ = _seq(lambda o: L.StepLR(o, 3, gamma=0.5))
    assert lrs == pytest.approx([0.1 * 0.5 ** (e // 3) for e in range(1, 13)])


def test_multistep_lr_with_repeated_milestone():
    lrs, *_ = _seq(lambda o: L.MultiStepLR(o, [2, 5, 5, 9], gamma=0.1))
    expect = [0.1 * 0.1 ** sum(m <= e for m in [2, 5, 5, 9]) for e in range(1, 13)]
    assert lrs == pytest.approx(expect)


def test_exponential_lr():
    lrs, *_ = _seq(lambda o: L.ExponentialLR(o, 0.9))
    assert lrs == pytest.approx([0.1 * 0.9 ** e for e in range(1, 13)])


def test_cosine_annealing_lr_follows_closed_form_and_restarts_upwards():
    lrs, *_ = _seq(lambda o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.01))
    closed = [0.01 + 0.09 * (1 + math.cos(math.pi * e / 5)) / 2 for e in range(1, 13)]
    assert lrs == pytest.approx(closed)  # the recursive form equals the periodic closed form
    # torch 2.13: [0.0914057647, 0.0689057647, 0.0410942353, 0.0185942353, 0.01, 0.0185942353, ...]
    assert lrs[:6] == pytest.approx([0.0914057647, 0.0689057647, 0.0410942353, 0.0185942353,
                                     0.01, 0.0185942353])


def test_lambda_lr_and_state_dict():
    lrs, opt, sched = _seq(lambda o: L.LambdaLR(o, lambda e: 1 / (e + 1)))
    assert lrs == pytest.approx([0.1 / (e + 1) for e in range(1, 13)])
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["lr_lambdas"] == [None]
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas"):
        L.LambdaLR(opt, [lambda e: 1, lambda e: 2])


def test_one_cycle_lr_values_and_momentum():
    lrs, opt, _ = _seq(lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=12), momentum=0.9)
    # values computed with torch 2.13 (cos annealing, pct_start 0.3, div 25, final div 1e4)
    assert lrs[:4] == pytest.approx([0.3497896542, 0.8792851591, 0.9944154355, 0.9330129698])
    assert lrs[10] == pytest.approx(4e-06)
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9465436874)
    _, opt2, sched = _seq(lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=3), n=3)
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()
    _, adam, _ = _seq(lambda o: L.OneCycleLR(o, max_lr=0.5, epochs=2, steps_per_epoch=3), n=1,
                      opt_cls=optim.Adam)
    assert adam.param_groups[0]["betas"][1] == 0.999 and adam.param_groups[0]["betas"][0] < 0.95
    with pytest.raises(ValueError, match="total_steps OR"):
        L.OneCycleLR(optim.SGD([pg.zeros(1, requires_grad=True)], lr=0.1), max_lr=1.0)


def test_one_cycle_three_phase_linear():
    lrs, *_ = _seq(lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=12, three_phase=True,
                                          anneal_strategy="linear"), n=11)
    assert max(lrs) == pytest.approx(1.0, abs=0.2) and lrs[-1] < lrs[0]


def test_reduce_lr_on_plateau():
    metrics = [1, 0.9, 0.95, 0.94, 0.93, 0.92, 0.91, 0.9, 0.9, 0.9, 0.9, 0.9]
    lrs, opt, sched = _seq(lambda o: L.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1,
                                                         min_lr=0.02), metrics=metrics)
    # torch 2.13 gives exactly this sequence
    assert lrs == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.02,
                                 0.02, 0.02])
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        L.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode max2 is unknown"):
        L.ReduceLROnPlateau(opt, mode="max2")


@pytest.mark.parametrize("make", [
    lambda o: L.StepLR(o, 2, gamma=0.5),
    lambda o: L.MultiStepLR(o, [1, 3], gamma=0.5),
    lambda o: L.CosineAnnealingLR(o, T_max=4),
    lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=20),
    lambda o: L.ReduceLROnPlateau(o, patience=0),
], ids=["step", "multistep", "cosine", "onecycle", "plateau"])
def test_scheduler_state_dict_round_trip_through_save(make):
    def run(sched, opt, n):
        for _ in range(n):
            opt.step()
            if isinstance(sched, L.ReduceLROnPlateau):
                sched.step(1.0)
            else:
                sched.step()

    p = pg.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    sched = make(opt)
    run(sched, opt, 3)
    buf = io.BytesIO()
    pg.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, buf)
    ck = pg.load(io.BytesIO(buf.getvalue()))
    q = pg.zeros(1, requires_grad=True)
    opt2 = optim.SGD([q], lr=0.1, momentum=0.9)
    sched2 = make(opt2)
    opt2.load_state_dict(ck["opt"])
    sched2.load_state_dict(ck["sched"])
    run(sched, opt, 4)
    run(sched2, opt2, 4)
    assert opt2.param_groups[0]["lr"] == pytest.approx(opt.param_groups[0]["lr"])
    assert sched2.get_last_lr() == pytest.approx(sched.get_last_lr())


def test_warns_when_scheduler_steps_before_optimizer():
    opt = optim.SGD([pg.zeros(1, requires_grad=True)], lr=0.1)
    sched = L.StepLR(opt, 1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = optim.SGD([pg.zeros(1, requires_grad=True)], lr=0.1)
    sched2 = L.StepLR(opt2, 1)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()


@pytest.mark.parametrize("make, expected", [
    (lambda o: L.ExponentialLR(o, 0.5, last_epoch=4),
     [0.1, 0.05, 0.025, 0.0125, 0.00625]),
    (lambda o: L.CosineAnnealingLR(o, T_max=10, last_epoch=4),
     [0.1, 0.0690983, 0.04122147, 0.0190983, 0.00489435]),
])
def test_resumed_schedules_start_at_the_current_lr(make, expected) -> None:
    """A scheduler built with ``last_epoch >= 0`` (resuming) leaves the lr as it is until its
    first step, as PyTorch 2.13 (``_is_initial``); it decayed once more on construction.
    Expected values are PyTorch's."""
    p = pg.zeros(1, requires_grad=True)
    o = pg.optim.SGD([{"params": [p], "lr": 0.1, "initial_lr": 0.1}], lr=0.1)
    s = make(o)
    got = [s.get_last_lr()[0]]
    for _ in range(4):
        o.step()
        s.step()
        got.append(s.get_last_lr()[0])
    assert got == pytest.approx(expected, rel=1e-6)
