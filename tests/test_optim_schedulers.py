"""Every learning-rate scheduler and ``swa_utils`` against PyTorch 2.13 reference values
(tests/optim_literals.py): the lr of two parameter groups over 30 steps, momentum cycling, state
dicts of composite schedulers, argument errors and warnings."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from optim_literals import SCHEDULES, SWALR

import portagrad as pg
from portagrad import optim
from portagrad.optim import lr_scheduler as L
from portagrad.optim import swa_utils


def make_opt(groups=2, cls="SGD", **okw):
    ps = [pg.zeros(2, requires_grad=True) for _ in range(groups)]
    okw.setdefault("lr", 0.1)
    if cls == "SGD":
        okw.setdefault("momentum", 0.9)
    return getattr(optim, cls)([{"params": [p], "lr": okw["lr"] * (i + 1)}
                                for i, p in enumerate(ps)], **okw)


def build(code, o):
    return eval(code, {"L": L, "o": o})  # the constructor call the reference values came from


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_matches_pytorch(name):
    code, want0, want1, want_mom = SCHEDULES[name]
    o = make_opt()
    sched = build(code, o)
    got = [sched.get_last_lr()]
    moms = []
    for _ in range(30):
        o.step()
        sched.step()
        got.append(sched.get_last_lr())
        moms.append(o.param_groups[0]["momentum"])
    np.testing.assert_allclose([g[0] for g in got], want0, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose([g[1] for g in got], want1, rtol=1e-12, atol=1e-15)
    assert [g["lr"] for g in o.param_groups] == got[-1]
    if want_mom is not None:
        np.testing.assert_allclose(moms, want_mom, rtol=1e-12)


@pytest.mark.parametrize("name", ["SequentialLR", "ChainedScheduler", "CyclicLR-scale_fn",
                                  "CosineAnnealingWarmRestarts", "PolynomialLR", "LinearLR",
                                  "MultiplicativeLR"])
def test_state_dict_resumes_the_schedule(name):
    code, want0, _, _ = SCHEDULES[name]
    o = make_opt()
    sched = build(code, o)
    for _ in range(12):
        o.step()
        sched.step()
    buf = io.BytesIO()
    pg.save({"opt": o.state_dict(), "sched": sched.state_dict()}, buf)
    o2 = make_opt()
    sched2 = build(code, o2)
    ck = pg.load(io.BytesIO(buf.getvalue()))
    sched2.load_state_dict(ck["sched"])
    o2.load_state_dict(ck["opt"])
    got = []
    for _ in range(18):
        o2.step()
        sched2.step()
        got.append(sched2.get_last_lr()[0])
    np.testing.assert_allclose(got, want0[13:], rtol=1e-12)


def test_composite_state_dict_nests_members():
    o = make_opt()
    seq = L.SequentialLR(o, [L.ConstantLR(o, 0.5, total_iters=2), L.ExponentialLR(o, 0.9)], [3])
    sd = seq.state_dict()
    assert "optimizer" not in sd and len(sd["_schedulers"]) == 2
    assert sd["_milestones"] == [3] and sd["_schedulers"][1]["gamma"] == 0.9


def test_closed_form_with_epoch_argument_warns():
    o = make_opt()
    sched = L.PolynomialLR(o, total_iters=10, power=2.0)
    o.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
        sched.step(4)
    assert sched.get_last_lr()[0] == pytest.approx(0.1 * (1 - 4 / 10) ** 2)
    sched = L.ConstantLR(make_opt(), factor=0.25, total_iters=3)
    with pytest.warns(UserWarning):
        sched.step(5)
    assert sched.get_last_lr()[0] == pytest.approx(0.1)


def test_warm_restarts_fractional_epochs():
    o = make_opt(groups=1)
    sched = L.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.0)
    # PyTorch 2.13's values for these epochs
    want = {0.5: 0.09619397662556434, 5.0: 0.09619397662556434, 11.5: 0.0009607359798384785}
    for epoch, lr in want.items():
        sched.step(epoch)
        assert sched.get_last_lr()[0] == pytest.approx(lr, rel=1e-12)
    assert sched.T_i == 8 and sched.last_epoch == 11
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)


def test_scheduler_argument_errors_match_pytorch():
    o = make_opt()
    cases = [
        (lambda: L.ConstantLR(o, factor=1.5), ValueError,
         "Constant multiplicative factor expected to be between 0 and 1."),
        (lambda: L.LinearLR(o, start_factor=0), ValueError,
         "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
        (lambda: L.LinearLR(o, end_factor=1.5), ValueError,
         "Ending multiplicative factor expected to be between 0 and 1."),
        (lambda: L.MultiplicativeLR(o, [lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas, but got 1"),
        (lambda: L.MultiplicativeLR(o, 0.5), TypeError, "lr_lambda should be a function, but got float"),
        (lambda: L.CosineAnnealingWarmRestarts(o, T_0=0), ValueError,
         "Expected positive integer T_0, but got 0"),
        (lambda: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError,
         "Expected integer T_mult >= 1, but got 0"),
        (lambda: L.CyclicLR(o, 0.1, 1.0, mode="bogus"), ValueError,
         "mode is invalid and scale_fn is None"),
        (lambda: L.CyclicLR(o, [0.1], 1.0), ValueError,
         "base_lr must have the same length as optimizer.param_groups. base_lr has 1 values, "
         "param_groups has 2."),
        (lambda: L.CyclicLR(optim.Adagrad([pg.zeros(1, requires_grad=True)]), 0.1, 1.0),
         ValueError, "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
        (lambda: L.SequentialLR(o, [], []), ValueError,
         "SequentialLR expects at least one scheduler, but got no scheduler."),
        (lambda: L.SequentialLR(o, [L.StepLR(o, 2), L.StepLR(o, 3)], [1, 2]), ValueError,
         "Sequential Schedulers expects number of schedulers provided to be one more than the "
         "number of milestone points, but got number of schedulers 2 and the number of milestones "
         "to be equal to 2"),
        (lambda: L.SequentialLR(o, [L.ReduceLROnPlateau(o)], []), ValueError,
         "SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires additional "
         "kwargs to be specified when calling `step`, but got one at index 0 in the given "
         "schedulers sequence."),
        (lambda: L.ChainedScheduler([]), ValueError,
         "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
        (lambda: L.ChainedScheduler([L.StepLR(o, 2), L.StepLR(make_opt(), 2)]), ValueError,
         "ChainedScheduler expects all schedulers to belong to the same optimizer, but got "
         "scheduler StepLR at index 1 has"),
        (lambda: swa_utils.SWALR(o, 0.1, anneal_strategy="exp"), ValueError,
         "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
        (lambda: swa_utils.SWALR(o, 0.1, anneal_epochs=-1), ValueError,
         "anneal_epochs must be equal or greater than 0, got -1"),
        (lambda: swa_utils.get_ema_avg_fn(1.5), ValueError,
         "Invalid decay value 1.5 provided. Please provide a value in [0,1] range."),
    ]
    for make, exc, msg in cases:
        with pytest.raises(exc) as info:
            make()
        assert str(info.value).startswith(msg), (str(info.value), msg)


def test_get_lr_outside_step_warns():
    sched = L.LinearLR(make_opt())
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.get_last_lr()


# ---------------------------------------------------------------------------------- swa_utils
@pytest.mark.parametrize("kw,want", SWALR, ids=["cos", "linear-per-group", "no-anneal"])
def test_swalr_matches_pytorch(kw, want):
    o = make_opt()
    sched = swa_utils.SWALR(o, **kw)
    got = [sched.get_last_lr()]
    for _ in range(8):
        o.step()
        sched.step()
        got.append(sched.get_last_lr())
    np.testing.assert_allclose(np.ravel(got), want, rtol=1e-12)


def test_averaged_model_swa_and_ema(device):
    model = pg.nn.Linear(3, 2).to(device)
    swa = swa_utils.AveragedModel(model)
    ema = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.5))
    ema_fn = swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(0.5))
    snapshots = []
    for k in range(3):
        with pg.no_grad():
            model.weight.copy_(pg.full((2, 3), float(k + 1), device=device))
        snapshots.append(k + 1.0)
        for avg in (swa, ema, ema_fn):
            avg.update_parameters(model)
    assert int(swa.n_averaged) == 3
    np.testing.assert_allclose(swa.module.weight.numpy(force=True), np.full((2, 3), 2.0), rtol=1e-6)
    ema_want = (1.0 * 0.5 + 2.0 * 0.5) * 0.5 + 3.0 * 0.5  # first update copies
    np.testing.assert_allclose(ema.module.weight.numpy(force=True), np.full((2, 3), ema_want), rtol=1e-6)
    np.testing.assert_allclose(ema_fn.module.weight.numpy(force=True), np.full((2, 3), ema_want),
                               rtol=1e-6)
    x = pg.ones(4, 3, device=device)
    np.testing.assert_allclose(swa(x).numpy(force=True), swa.module(x).numpy(force=True))
    assert swa.module.weight.device == pg.device(device)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(model, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


def test_update_bn_recomputes_running_statistics():
    model = pg.nn.Sequential(pg.nn.Linear(2, 3), pg.nn.BatchNorm1d(3))
    data = [pg.tensor(np.cos(np.arange(8 * k, 8 * k + 8)).reshape(4, 2).astype(np.float32))
            for k in range(3)]
    model.eval()
    swa_utils.update_bn([(x, None) for x in data], model)
    assert not model.training and model[1].momentum == 0.1
    with pg.no_grad():
        feats = np.concatenate([model[0](x).numpy() for x in data])
    # the cumulative average of the batch means and unbiased variances
    means = np.mean([f.mean(0) for f in np.split(feats, 3)], axis=0)
    vars_ = np.mean([f.var(0, ddof=1) for f in np.split(feats, 3)], axis=0)
    np.testing.assert_allclose(model[1].running_mean.numpy(), means, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model[1].running_var.numpy(), vars_, rtol=1e-5, atol=1e-6)
    swa_utils.update_bn(data, pg.nn.Linear(2, 2))  # no batch norm: nothing to do


def test_resuming_without_initial_lr_names_the_group():
    o = make_opt()
    with pytest.raises(KeyError) as info:
        L.StepLR(o, 2, last_epoch=3)
    assert info.value.args[0].startswith(
        "param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with "
        "last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training from a "
        "checkpoint but haven't properly loaded the optimizer state\n")
    for g in o.param_groups:
        g["initial_lr"] = g["lr"]
    sched = L.StepLR(o, 2, gamma=0.5, last_epoch=3)  # resumes: epoch 4 is a multiple of 2
    assert sched.last_epoch == 4 and sched.get_last_lr() == [0.05, 0.1]


@pytest.mark.parametrize("name", ["StepLR", "CyclicLR", "SequentialLR", "OneCycleLR",
                                  "CosineAnnealingWarmRestarts"])
def test_tensor_lr_is_updated_in_place(name):
    code, want0, _, _ = SCHEDULES[name]
    ps = [pg.zeros(2, requires_grad=True) for _ in range(2)]
    lrs = [pg.tensor(0.1, dtype=pg.float64), pg.tensor(0.2, dtype=pg.float64)]
    o = optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(ps, lrs)], lr=0.1, momentum=0.9)
    sched = build(code, o)
    got = [float(sched.get_last_lr()[0])]
    for _ in range(30):
        o.step()
        sched.step()
        got.append(float(sched.get_last_lr()[0]))
    np.testing.assert_allclose(got, want0, rtol=1e-12)
    # the groups keep their tensors (filled in place); get_last_lr returns copies
    assert o.param_groups[0]["lr"] is lrs[0] and lrs[0].item() == got[-1]
    assert sched.get_last_lr()[0] is not lrs[0]
