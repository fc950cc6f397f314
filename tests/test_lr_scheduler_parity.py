"""Learning-rate sequences of ``portagrad.optim.lr_scheduler`` against PyTorch 2.13's over
several steps and two parameter groups: fractional epochs of ``CosineAnnealingWarmRestarts``,
three-phase ``OneCycleLR`` with momentum, ``CyclicLR`` (``triangular2``, per-group maxima,
momentum cycling), ``ReduceLROnPlateau`` (absolute threshold, cooldown, per-group ``min_lr``) and
``SequentialLR``; expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import pytest

import portagrad as pg

LS = pg.optim.lr_scheduler


def _opt(device: str) -> pg.optim.SGD:
    ps = [pg.nn.Parameter(pg.ones(2, device=device)) for _ in range(2)]
    return pg.optim.SGD([{"params": [ps[0]], "lr": 0.1}, {"params": [ps[1]], "lr": 0.2}],
                        lr=0.1, momentum=0.9)


def _lrs(o: pg.optim.SGD) -> list[float]:
    return [g["lr"] for g in o.param_groups]


def test_cosine_warm_restarts_fractional(device: str) -> None:
    o = _opt(device)
    s = LS.CosineAnnealingWarmRestarts(o, 3, T_mult=2, eta_min=0.001)
    expected = [([0.093368257487, 0.186669527677], 0.5, 3),
                ([0.003422702443, 0.005869876629], 2.7, 3),
                ([0.1, 0.2], 0.0, 6), ([0.085501785669, 0.170857124728], 1.5, 6),
                ([0.1, 0.2], 0.0, 12), ([0.097577297557, 0.195130123371], 1.2, 12)]
    for epoch, (lrs, t_cur, t_i) in zip([0.5, 2.7, 3.0, 4.5, 9.0, 10.2], expected):
        o.step()
        s.step(epoch)
        assert _lrs(o) == pytest.approx(lrs, abs=1e-11)
        assert s.T_cur == pytest.approx(t_cur, abs=1e-11) and s.T_i == t_i


def test_one_cycle_three_phase(device: str) -> None:
    o = _opt(device)
    s = LS.OneCycleLR(o, [1.0, 2.0], total_steps=9, three_phase=True, div_factor=10,
                      final_div_factor=100)
    expected = [[0.673148345532, 1.346296691065, 0.886316850496],
                [0.932597711078, 1.865195422157, 0.857489143214],
                [0.217445987251, 0.434891974501, 0.936950445861],
                [0.095901959425, 0.191803918849, 0.95], [0.073273219368, 0.146546438735, 0.95],
                [0.040428927354, 0.080857854708, 0.95], [0.01210229111, 0.02420458222, 0.95],
                [0.001, 0.002, 0.95]]
    for row in expected:
        o.step()
        s.step()
        assert _lrs(o) + [o.param_groups[0]["momentum"]] == pytest.approx(row, abs=1e-11)
    assert s.get_last_lr() == pytest.approx([0.001, 0.002], abs=1e-12)


def test_cyclic_triangular2_momentum(device: str) -> None:
    o = _opt(device)
    s = LS.CyclicLR(o, 0.01, [0.1, 0.3], step_size_up=2, step_size_down=3, mode="triangular2")
    expected = [[0.055, 0.155, 0.85], [0.1, 0.3, 0.8], [0.07, 0.203333333333, 0.833333333333],
                [0.04, 0.106666666667, 0.866666666667], [0.01, 0.01, 0.9],
                [0.0325, 0.0825, 0.875], [0.055, 0.155, 0.85],
                [0.04, 0.106666666667, 0.866666666667], [0.025, 0.058333333333, 0.883333333333],
                [0.01, 0.01, 0.9], [0.02125, 0.04625, 0.8875], [0.0325, 0.0825, 0.875]]
    for row in expected:
        o.step()
        s.step()
        assert _lrs(o) + [o.param_groups[1]["momentum"]] == pytest.approx(row, abs=1e-11)


def test_plateau_abs_cooldown_min_lr(device: str) -> None:
    o = _opt(device)
    s = LS.ReduceLROnPlateau(o, patience=1, threshold=0.01, threshold_mode="abs", cooldown=1,
                             min_lr=[0.05, 0.02], factor=0.5)
    metrics = [1.0, 0.995, 0.99, 0.985, 0.98, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
    expected = [[0.1, 0.2], [0.1, 0.2], [0.05, 0.1], [0.05, 0.1], [0.05, 0.1], [0.05, 0.1],
                [0.05, 0.1], [0.05, 0.05], [0.05, 0.05], [0.05, 0.05], [0.05, 0.025]]
    for v, lrs in zip(metrics, expected):
        o.step()
        s.step(pg.tensor(v, device=device))  # (a 0-d tensor metric, as PyTorch accepts)
        assert _lrs(o) == pytest.approx(lrs, abs=1e-12)
    assert s.get_last_lr() == pytest.approx([0.05, 0.025], abs=1e-12)


def test_sequential_linear_then_exponential(device: str) -> None:
    o = _opt(device)
    s = LS.SequentialLR(o, [LS.LinearLR(o, 0.1, total_iters=3), LS.ExponentialLR(o, 0.5)],
                        milestones=[3])
    expected = [[0.04, 0.08], [0.07, 0.14], [0.1, 0.2], [0.05, 0.1], [0.025, 0.05],
                [0.0125, 0.025]]
    for lrs in expected:
        o.step()
        s.step()
        assert _lrs(o) == pytest.approx(lrs, abs=1e-12)
    assert s.get_last_lr() == pytest.approx([0.0125, 0.025], abs=1e-12)
