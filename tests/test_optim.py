"""Optimizers against numpy re-implementations of PyTorch's update rules (float32, several steps)."""
from __future__ import annotations

import io

import numpy as np
import pytest

import portagrad as pg
from portagrad import optim

F = np.float32
STEPS = 6


# ------------------------------------------------------------------ numpy reference update rules
def ref_sgd(p, g, st, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
            maximize=False):
    g = -g if maximize else g
    if weight_decay:
        g = g + F(weight_decay) * p
    if momentum:
        if "buf" not in st:
            st["buf"] = g.copy()
        else:
            st["buf"] = st["buf"] * F(momentum) + F(1 - dampening) * g
        g = g + F(momentum) * st["buf"] if nesterov else st["buf"]
    return p + F(-lr) * g


def ref_adam(p, g, st, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
             maximize=False, decoupled=False):
    b1, b2 = betas
    g = -g if maximize else g
    st["t"] = st.get("t", 0) + 1
    m = st.setdefault("m", np.zeros_like(p))
    v = st.setdefault("v", np.zeros_like(p))
    if weight_decay:
        if decoupled:
            p = p * F(1 - lr * weight_decay)
        else:
            g = g + F(weight_decay) * p
    m = m + F(1 - b1) * (g - m)
    v = v * F(b2) + F(1 - b2) * g * g
    st["m"], st["v"] = m, v
    t = st["t"]
    bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
    if amsgrad:
        st["vmax"] = np.maximum(st.get("vmax", np.zeros_like(p)), v)
        denom = np.sqrt(st["vmax"]) / F(bc2 ** 0.5) + F(eps)
    else:
        denom = np.sqrt(v) / F(bc2 ** 0.5) + F(eps)
    return p + F(-lr / bc1) * m / denom


def ref_rmsprop(p, g, st, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                centered=False, maximize=False):
    g = -g if maximize else g
    if weight_decay:
        g = g + F(weight_decay) * p
    sq = st.get("sq", np.zeros_like(p)) * F(alpha) + F(1 - alpha) * g * g
    st["sq"] = sq
    if centered:
        ga = st.get("ga", np.zeros_like(p))
        ga = ga + F(1 - alpha) * (g - ga)
        st["ga"] = ga
        avg = np.sqrt(sq - ga * ga) + F(eps)
    else:
        avg = np.sqrt(sq) + F(eps)
    if momentum > 0:
        st["buf"] = st.get("buf", np.zeros_like(p)) * F(momentum) + g / avg
        return p + F(-lr) * st["buf"]
    return p + F(-lr) * g / avg


def ref_adagrad(p, g, st, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                eps=1e-10, maximize=False):
    g = -g if maximize else g
    st["t"] = st.get("t", 0) + 1
    if weight_decay:
        g = g + F(weight_decay) * p
    clr = lr / (1 + (st["t"] - 1) * lr_decay)
    s = st.get("sum", np.full_like(p, F(initial_accumulator_value))) + g * g
    st["sum"] = s
    return p + F(-clr) * g / (np.sqrt(s) + F(eps))


def ref_adadelta(p, g, st, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    g = -g if maximize else g
    if weight_decay:
        g = g + F(weight_decay) * p
    sq = st.get("sq", np.zeros_like(p)) * F(rho) + F(1 - rho) * g * g
    acc = st.get("acc", np.zeros_like(p))
    delta = np.sqrt(acc + F(eps)) / np.sqrt(sq + F(eps)) * g
    st["sq"], st["acc"] = sq, acc * F(rho) + F(1 - rho) * delta * delta
    return p + F(-lr) * delta


CASES = [
    (optim.SGD, ref_sgd, dict(lr=0.1)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9)),
    (optim.SGD, ref_sgd, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.1)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.5, maximize=True)),
    (optim.Adam, ref_adam, dict(lr=0.01)),
    (optim.Adam, ref_adam, dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    (optim.Adam, ref_adam, dict(lr=0.01, maximize=True, eps=1e-3)),
    (optim.AdamW, ref_adam, dict(lr=0.01, decoupled=True, weight_decay=0.01)),
    (optim.AdamW, ref_adam, dict(lr=0.02, decoupled=True, weight_decay=0.1, amsgrad=True)),
    (optim.RMSprop, ref_rmsprop, dict()),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, alpha=0.9, momentum=0.5)),
    (optim.Adagrad, ref_adagrad, dict()),
    (optim.Adagrad, ref_adagrad, dict(lr=0.1, lr_decay=0.1, weight_decay=0.1,
                                      initial_accumulator_value=0.5)),
    (optim.Adadelta, ref_adadelta, dict()),
    (optim.Adadelta, ref_adadelta, dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
]


def _ids(case):
    cls, _, kw = case
    return cls.__name__ + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal((3, 4)).astype(F), rng.standard_normal(5).astype(F)]
    grads = [[rng.standard_normal(p.shape).astype(F) for p in params] for _ in range(STEPS)]
    return params, grads


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_update_rule_matches_reference(case, device):
    cls, ref, kw = case
    params, grads = _problem()
    pg_kw = {k: v for k, v in kw.items() if k != "decoupled"}
    ref_kw = {k: v for k, v in kw.items()}
    if cls is optim.AdamW:
        ref_kw.setdefault("weight_decay", 1e-2)
    ps = [pg.tensor(p, device=device, requires_grad=True) for p in params]
    opt = cls(ps, **pg_kw)
    expect = [p.copy() for p in params]
    states = [{} for _ in params]
    for step in range(STEPS):
        for p, g in zip(ps, grads[step]):
            p.grad = pg.tensor(g, device=device)
        opt.step()
        expect = [ref(e, g, st, **ref_kw) for e, g, st in zip(expect, grads[step], states)]
        for p, e in zip(ps, expect):
            got = p.detach().numpy(force=True)
            np.testing.assert_allclose(got, e, rtol=2e-5, atol=2e-6,
                                       err_msg=f"{cls.__name__} step {step + 1}")
    assert all(p.device == pg.device(device) and p.dtype == pg.float32 for p in ps)


def test_sgd_matches_hand_computed_values():
    # w = 1, grad = 2w (loss w**2), lr 0.1, momentum 0.9: buf 2, 2*0.9+1.6=3.4
    w = pg.tensor([1.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    vals = []
    for _ in range(2):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
        vals.append(w.item())
    assert vals[0] == pytest.approx(0.8)  # 1 - 0.1 * 2
    assert vals[1] == pytest.approx(0.8 - 0.1 * (0.9 * 2 + 1.6))


def test_skips_params_without_grad_and_float64(device):
    a = pg.tensor([1.0, 2.0], dtype=pg.float64, device=device, requires_grad=True)
    b = pg.tensor([3.0], device=device, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = pg.tensor([1.0, -1.0], dtype=pg.float64, device=device)
    opt.step()
    assert b.tolist() == [3.0] and b not in opt.state
    np.testing.assert_allclose(a.tolist(), [0.9, 2.1], rtol=1e-6)
    assert a.dtype == pg.float64


def test_param_groups_and_defaults():
    a = pg.zeros(2, requires_grad=True)
    b = pg.zeros(2, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["momentum"] == 0.9
    c = pg.zeros(1, requires_grad=True)
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {pg.zeros(1, requires_grad=True)}})
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Adam([a], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        optim.Adam([a], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2], lr=0.1)


def test_named_parameters_are_accepted():
    a = pg.zeros(2, requires_grad=True)
    opt = optim.SGD([("a", a)], lr=0.1)
    assert opt.param_groups[0]["params"][0] is a
    assert opt.param_groups[0]["param_names"] == ["a"]


def test_zero_grad(device):
    a = pg.ones(3, device=device, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    (a * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and a.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert a.grad is None


def test_step_closure_and_hooks():
    w = pg.tensor([2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 4.0 and w.item() == pytest.approx(1.0)
    assert calls == ["pre", "post"]
    h1.remove()
    opt.step(closure)
    assert calls == ["pre", "post", "post"]


def test_step_runs_without_recording_and_bumps_version(device):
    w = pg.ones(3, device=device, requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    y = (w * w).sum()
    y.backward()
    v = w._version
    opt.step()
    assert w._version > v and w.grad_fn is None and w.requires_grad


def _run(opt, params, grads):
    for g in grads:
        for p, gi in zip(params, g):
            p.grad = pg.tensor(gi, device=p.device)
        opt.step()


@pytest.mark.parametrize("cls,kw", [(optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
                                    (optim.Adam, dict(lr=0.01, amsgrad=True)),
                                    (optim.AdamW, dict(lr=0.01)),
                                    (optim.RMSprop, dict(momentum=0.9, centered=True)),
                                    (optim.Adagrad, dict(lr_decay=0.01)),
                                    (optim.Adadelta, dict())])
def test_state_dict_round_trip_across_devices(cls, kw, device):
    params, grads = _problem(1)
    a = [pg.tensor(p, requires_grad=True) for p in params]  # on the cpu
    opt_a = cls(a, **kw)
    _run(opt_a, a, grads[:3])
    sd = opt_a.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert sd["param_groups"][0]["params"] == [0, 1] and sorted(sd["state"]) == [0, 1]
    buf = io.BytesIO()
    pg.save(sd, buf)
    loaded = pg.load(io.BytesIO(buf.getvalue()))
    b = [pg.tensor(p.detach().numpy(), device=device, requires_grad=True) for p in a]
    opt_b = cls(b, **{**kw, "lr": 123.0})
    opt_b.load_state_dict(loaded)
    assert opt_b.param_groups[0]["lr"] == opt_a.param_groups[0]["lr"]
    assert opt_b.param_groups[0]["params"][0] is b[0]
    for st in opt_b.state.values():
        for k, v in st.items():
            if isinstance(v, pg.Tensor):
                assert v.device == (pg.device("cpu") if k == "step" else pg.device(device))
    _run(opt_a, a, grads[3:])
    _run(opt_b, b, grads[3:])
    for pa, pb in zip(a, b):
        np.testing.assert_allclose(pb.detach().numpy(force=True), pa.detach().numpy(),
                                   rtol=1e-6, atol=1e-7)


def test_load_state_dict_errors():
    a, b = pg.zeros(2, requires_grad=True), pg.zeros(2, requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)


def test_gradient_accumulation_equals_big_batch(device):
    rng = np.random.default_rng(3)
    x = pg.tensor(rng.standard_normal((8, 3)).astype(F), device=device)
    y = pg.tensor(rng.standard_normal((8, 1)).astype(F), device=device)
    w0 = rng.standard_normal((3, 1)).astype(F)

    def loss_fn(w, xb, yb):
        return ((xb @ w - yb) ** 2).mean()

    big = pg.tensor(w0, device=device, requires_grad=True)
    loss_fn(big, x, y).backward()
    acc = pg.tensor(w0, device=device, requires_grad=True)
    opt = optim.SGD([acc], lr=0.1, momentum=0.9)
    opt.zero_grad()
    steps = 4
    for i in range(steps):
        (loss_fn(acc, x[2 * i:2 * i + 2], y[2 * i:2 * i + 2]) / steps).backward()
    np.testing.assert_allclose(acc.grad.numpy(force=True), big.grad.numpy(force=True),
                               rtol=1e-5, atol=1e-6)
    big_opt = optim.SGD([big], lr=0.1, momentum=0.9)
    opt.step()
    big_opt.step()
    np.testing.assert_allclose(acc.detach().numpy(force=True), big.detach().numpy(force=True),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta"])
def test_hyper_parameters_checked_one_way(name):
    """Every optimizer checks ``lr`` as PyTorch does (a number >= 0 or a one-element tensor)."""
    cls = getattr(pg.optim, name)
    p = [pg.zeros(1, requires_grad=True)]
    with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
        cls(p, lr=pg.tensor([0.1, 0.2]))
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -1$"):
        cls(p, lr=-1)
    with pytest.raises(ValueError, match=r"^Invalid weight_decay value: -0.5$"):
        cls(p, lr=0.1, weight_decay=-0.5)
    assert cls(p, lr=pg.tensor(0.01)).param_groups[0]["lr"].item() == pytest.approx(0.01)
