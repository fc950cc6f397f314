"""The optimizers beyond SGD/Adam/RMSprop/Adagrad/Adadelta against PyTorch 2.13 reference values
(tests/optim_literals.py): trajectories on every device in float64 and float32, L-BFGS with and
without the strong-Wolfe line search, argument errors, state_dict layout and round trips."""
from __future__ import annotations

import io

import numpy as np
import pytest

import portagrad as pg
from portagrad import optim

from optim_literals import (LBFGS_QUADRATIC_F32, LBFGS_ROSENBROCK, MUON, QUAD_A, QUAD_B,
                             TRAJECTORIES, VALIDATION)
from optim_literals_gen import STEPS, problem  # the inputs the reference values came from


def run(name, kw, dtype, device, shapes=((3, 4), (5,)), steps=STEPS):
    init, grads = problem(dtype, shapes)
    ps = [pg.tensor(a, device=device, requires_grad=True) for a in init]
    opt = getattr(optim, name)(ps, **kw)
    for gs in grads[:steps]:
        for p, g in zip(ps, gs):
            p.grad = pg.tensor(g, device=device)
        opt.step()
    return opt, ps


def flat(ps):
    return np.concatenate([p.detach().numpy(force=True).ravel() for p in ps])


def _id(case):
    return case[0] + "-" + ",".join(f"{k}={v}" for k, v in case[1].items())


@pytest.mark.parametrize("case", TRAJECTORIES, ids=[_id(c) for c in TRAJECTORIES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_trajectory_matches_pytorch(case, dtype, device):
    name, kw, want64, want32 = case
    _, ps = run(name, kw, dtype, device)
    assert all(p.dtype == getattr(pg, dtype) and p.device == pg.device(device) for p in ps)
    if dtype == "float64":
        np.testing.assert_allclose(flat(ps), want64, rtol=1e-11, atol=1e-12)
    else:
        np.testing.assert_allclose(flat(ps), want32, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("kw,want", MUON, ids=["default", "options"])
def test_muon_trajectory(kw, want, device):
    _, ps = run("Muon", kw, "float64", device, shapes=((3, 4), (5, 2)))
    np.testing.assert_allclose(flat(ps), want, rtol=1e-10, atol=1e-12)


def test_muon_orthogonalizes_and_rejects_non_matrices():
    g = np.array([[2.0, 1.0, 0.0, 0.5], [0.0, 1.0, 3.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
    w = pg.zeros(3, 4, dtype=pg.float64, requires_grad=True)
    opt = optim.Muon([w], lr=1.0, weight_decay=0.0, momentum=0.0, nesterov=False, ns_steps=10)
    w.grad = pg.tensor(g)
    opt.step()
    s = np.linalg.svd(-w.detach().numpy(), compute_uv=False)
    assert np.all((s > 0.5) & (s < 1.5))  # the quintic iteration's band around 1
    with pytest.raises(ValueError, match=r"Muon only supports 2D parameters whereas we found a "
                                         r"parameter with size: portagrad.Size\(\[5\]\)"):
        optim.Muon([pg.zeros(5, requires_grad=True)])


def test_sparse_adam_refuses_dense_gradients_as_pytorch():
    w = pg.zeros(3, requires_grad=True)
    opt = optim.SparseAdam([w])
    assert opt.step() is None  # nothing to update
    w.grad = pg.ones(3)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please "
                                           "consider Adam instead"):
        opt.step()
    assert w.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("case", VALIDATION, ids=[_id(c) for c in VALIDATION])
def test_argument_errors_match_pytorch(case):
    name, kw, exc, msg = case
    with pytest.raises({"ValueError": ValueError, "TypeError": TypeError}[exc]) as info:
        getattr(optim, name)([pg.zeros(3, 4, requires_grad=True)], **kw)
    assert str(info.value) == msg


def test_tensor_lr_must_have_one_element():
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.NAdam([pg.zeros(2, requires_grad=True)], lr=pg.tensor([0.1, 0.2]))
    w = pg.zeros(2, requires_grad=True)
    opt = optim.Adamax([w], lr=pg.tensor(0.5))
    w.grad = pg.ones(2)
    opt.step()
    np.testing.assert_allclose(w.tolist(), [-0.5, -0.5], rtol=1e-6)


# ------------------------------------------------------------------------------------- L-BFGS
def rosen(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


@pytest.mark.parametrize("case", LBFGS_ROSENBROCK, ids=["plain", "history3", "wolfe", "wolfe-small"])
def test_lbfgs_rosenbrock_float64(case, device):
    kw, n, want_x, want_losses, func_evals, n_iter = case
    x = pg.tensor(np.linspace(-1.2, 1.0, 4), device=device, requires_grad=True)
    opt = optim.LBFGS([x], **kw)

    def closure():
        opt.zero_grad()
        loss = rosen(x)
        loss.backward()
        return loss

    losses = [float(opt.step(closure)) for _ in range(n)]
    # Rosenbrock amplifies summation-order differences of the dot products: 1e-5 still pins the
    # path (the counts of evaluations and iterations below must match exactly)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    np.testing.assert_allclose(x.detach().numpy(force=True), want_x, rtol=1e-5, atol=1e-6)
    st = opt.state[x]
    assert (st["func_evals"], st["n_iter"]) == (func_evals, n_iter)
    assert sorted(st) == sorted(["func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro",
                                 "H_diag", "prev_flat_grad", "prev_loss", "al"])
    assert len(st["old_dirs"]) <= kw.get("history_size", 100)


@pytest.mark.parametrize("case", LBFGS_QUADRATIC_F32, ids=["plain", "wolfe"])
def test_lbfgs_quadratic_float32(case, device):
    kw, want_x, func_evals = case
    a = pg.tensor(np.array(QUAD_A, dtype=np.float32).reshape(5, 5), device=device)
    b = pg.tensor(np.array(QUAD_B, dtype=np.float32), device=device)
    x = pg.zeros(5, device=device, requires_grad=True)
    opt = optim.LBFGS([x], **kw)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ (a @ x)) - (x * b).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 0.0  # the loss at the start
    # near the minimum float32 rounding dominates the last digits
    np.testing.assert_allclose(x.detach().numpy(force=True), want_x, rtol=1e-3, atol=3e-4)
    if "max_iter" in kw and kw["max_iter"] > 5:
        # converged: the run stops on a float32 tolerance check near the minimum, which rounding
        # decides one evaluation earlier or later (PyTorch itself: 7 on one CPU, 6 on another)
        assert abs(opt.state[x]["func_evals"] - func_evals) <= 1
    else:
        assert opt.state[x]["func_evals"] == func_evals
    if "max_iter" in kw and kw["max_iter"] > 5:  # converged: a x = b
        np.testing.assert_allclose(np.array(QUAD_A).reshape(5, 5) @ want_x, QUAD_B, atol=1e-3)


def test_lbfgs_contract():
    w = pg.tensor([1.0, -1.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [pg.zeros(1, requires_grad=True)]}])
    opt = optim.LBFGS([w], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    assert optim.LBFGS([w], max_iter=8).param_groups[0]["max_eval"] == 10
    with pytest.raises(TypeError):
        optim.LBFGS([w]).step()  # the closure is required
    # already optimal: one evaluation, no update
    z = pg.zeros(2, requires_grad=True)
    opt = optim.LBFGS([z])

    def flat_closure():
        opt.zero_grad()
        loss = (z ** 2).sum()
        loss.backward()
        return loss

    opt.step(flat_closure)
    assert opt.state[z]["func_evals"] == 1 and "d" not in opt.state[z]
    assert z.tolist() == [0.0, 0.0]


def test_lbfgs_state_dict_round_trip():
    def make():
        x = pg.tensor(np.linspace(-1.2, 1.0, 4), requires_grad=True)
        opt = optim.LBFGS([x], history_size=3, max_iter=4)

        def closure():
            opt.zero_grad()
            loss = rosen(x)
            loss.backward()
            return loss
        return x, opt, closure

    xa, oa, ca = make()
    oa.step(ca)
    buf = io.BytesIO()
    pg.save(oa.state_dict(), buf)
    xb, ob, cb = make()
    with pg.no_grad():
        xb.copy_(xa)
    ob.load_state_dict(pg.load(io.BytesIO(buf.getvalue())))
    oa.step(ca)
    ob.step(cb)
    np.testing.assert_allclose(xb.detach().numpy(), xa.detach().numpy(), rtol=1e-12)


# ------------------------------------------------------------------------- state and hooks
STATE_KEYS = {  # PyTorch's per-parameter state entries after one step
    "Adamax": ["exp_avg", "exp_inf", "step"],
    "NAdam": ["exp_avg", "exp_avg_sq", "mu_product", "step"],
    "RAdam": ["exp_avg", "exp_avg_sq", "step"],
    "ASGD": ["ax", "eta", "mu", "step"],
    "Rprop": ["prev", "step", "step_size"],
    "Adafactor": ["col_var", "row_var", "step"],
    "Muon": ["momentum_buffer"],
}
GROUP_KEYS = {  # PyTorch's param_groups entries (besides "params")
    "Adamax": ["betas", "capturable", "differentiable", "eps", "foreach", "lr", "maximize",
               "weight_decay"],
    "NAdam": ["betas", "capturable", "decoupled_weight_decay", "differentiable", "eps", "foreach",
              "lr", "maximize", "momentum_decay", "weight_decay"],
    "RAdam": ["betas", "capturable", "decoupled_weight_decay", "differentiable", "eps", "foreach",
              "lr", "maximize", "weight_decay"],
    "ASGD": ["alpha", "capturable", "differentiable", "foreach", "lambd", "lr", "maximize", "t0",
             "weight_decay"],
    "Rprop": ["capturable", "differentiable", "etas", "foreach", "lr", "maximize", "step_sizes"],
    "Adafactor": ["beta2_decay", "d", "eps", "foreach", "lr", "maximize", "weight_decay"],
    "Muon": ["adjust_lr_fn", "eps", "lr", "momentum", "nesterov", "ns_coefficients", "ns_steps",
             "weight_decay"],
}


@pytest.mark.parametrize("name", sorted(STATE_KEYS))
def test_state_dict_layout_and_round_trip(name, device):
    shapes = ((3, 4), (5, 2))
    kw = {"Muon": {}, "Rprop": {}, "ASGD": dict(t0=1)}.get(name, dict(weight_decay=0.1))
    opt_a, a = run(name, kw, "float32", "cpu", shapes, steps=3)
    sd = opt_a.state_dict()
    assert sorted(sd["state"][0]) == STATE_KEYS[name]
    assert sorted(k for k in sd["param_groups"][0] if k != "params") == GROUP_KEYS[name]
    if "step" in sd["state"][0]:
        step = sd["state"][0]["step"]
        assert step.dtype == pg.float32 and step.shape == () and step.item() == 3.0
    buf = io.BytesIO()
    pg.save(sd, buf)
    init, grads = problem("float32", shapes)
    b = [pg.tensor(p.detach().numpy(), device=device, requires_grad=True) for p in a]
    opt_b = getattr(optim, name)(b, **{**kw, "lr": 123.0})
    opt_b.load_state_dict(pg.load(io.BytesIO(buf.getvalue())))
    assert opt_b.param_groups[0]["lr"] == opt_a.param_groups[0]["lr"]
    for gs in grads[3:]:
        for pa, pb, g in zip(a, b, gs):
            pa.grad = pg.tensor(g)
            pb.grad = pg.tensor(g, device=device)
        opt_a.step()
        opt_b.step()
    np.testing.assert_allclose(flat(b), flat(a), rtol=1e-5, atol=1e-6)


def test_state_dict_hooks():
    w = pg.zeros(2, requires_grad=True)
    opt = optim.NAdam([w])
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre0"), prepend=True)

    def post(o, sd):
        calls.append("post")
        sd["extra"] = 1

    opt.register_state_dict_post_hook(post)
    sd = opt.state_dict()
    assert calls == ["pre0", "pre", "post"] and sd["extra"] == 1
    replaced = {"state": {}, "param_groups": [dict(sd["param_groups"][0], lr=0.5)]}
    h = opt.register_load_state_dict_pre_hook(lambda o, s: replaced)
    opt.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.5 and calls[-1] == "loaded"
    h.remove()
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 2e-3


def test_step_hooks_and_zero_grad_on_new_optimizers(device):
    w = pg.ones(3, device=device, requires_grad=True)
    opt = optim.RAdam([w], lr=0.1)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append(("pre", w.tolist())))
    opt.register_step_post_hook(lambda o, a, k: seen.append(("post", w.tolist())))
    (w * 2).sum().backward()
    v = w._version
    opt.step()
    assert [s[0] for s in seen] == ["pre", "post"] and seen[0][1] != seen[1][1]
    assert w._version > v and w.grad_fn is None
    opt.zero_grad()
    assert w.grad is None


def test_swap_in_optimizer_params_and_state():
    import copy

    w = pg.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    w.grad = pg.tensor([1.0, 1.0])
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    other = pg.tensor([5.0, 5.0])
    other.grad = pg.tensor([1.0, -1.0])
    with optim.swap_in_optimizer_params_and_state(opt, {"w": other}, sd):
        assert opt.param_groups[0]["params"] == [other]
        opt.step()
    np.testing.assert_allclose(w.tolist(), [0.9, 1.9], rtol=1e-6)  # untouched
    assert sd["state"][0]["step"].item() == 2.0 and opt.state[w]["step"].item() == 1.0
    assert other.tolist() != [5.0, 5.0] and opt.param_groups[0]["params"][0] is w
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        with optim.swap_in_optimizer_params_and_state(optim.SGD([w], lr=0.1), {"w": w}, sd):
            pass
    bad = copy.deepcopy(sd)
    bad["param_groups"][0]["unknown"] = 1
    with pytest.raises(RuntimeError, match=r"Keys only in swap-in: \['unknown'\]"):
        with optim.swap_in_optimizer_params_and_state(opt, {"w": other}, bad):
            pass


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad", "NAdam", "RAdam", "Rprop"])
def test_implementation_switches(name):
    w = pg.zeros(3, requires_grad=True)
    cls = getattr(optim, name)
    fusable = name in ("SGD", "Adam", "AdamW", "Adagrad")
    for kw in (dict(foreach=True), dict(foreach=False), dict(capturable=True)):
        if name in ("SGD", "Adagrad") and "capturable" in kw:
            continue  # no such argument in PyTorch either
        opt = cls([w], lr=0.1, **kw)  # accepted: the same values as the default path
        w.grad = pg.ones(3)
        opt.step()
    assert w.tolist() != [0.0, 0.0, 0.0]
    with pytest.raises(NotImplementedError, match="differentiable=True is not supported"):
        cls([w], lr=0.1, differentiable=True)
    if fusable:
        cls([w], lr=0.1, fused=True)
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
            cls([w], lr=0.1, fused=True, foreach=True)
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            cls([w], lr=0.1, fused=True, differentiable=True)


def test_lbfgs_several_parameters_act_as_one_flat_vector(device):
    x0 = np.linspace(-1.2, 1.0, 6)
    flat_x = pg.tensor(x0, device=device, requires_grad=True)
    # the same vector as a transposed (non-contiguous) 2x2 block and a 2-vector
    a = pg.tensor(x0[:4].reshape(2, 2).T.copy(), device=device).T.detach().requires_grad_()
    b = pg.tensor(x0[4:], device=device, requires_grad=True)
    results = []
    for params, vec in (([flat_x], lambda: flat_x),
                        ([a, b], lambda: pg.cat([a.reshape(-1), b]))):
        opt = optim.LBFGS(params, line_search_fn="strong_wolfe", history_size=4, max_iter=6)

        def closure(opt=opt, vec=vec):
            opt.zero_grad()
            loss = rosen(vec())
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        results.append((vec().detach().numpy(force=True), opt.state[params[0]]["func_evals"]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12, atol=1e-14)
    assert results[1][1] == results[0][1]
    assert not a.is_contiguous()


def test_param_group_names_and_retained_non_leaves():
    a, b = pg.zeros(2, requires_grad=True), pg.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="^all optimizer params should be with/without names. Some "
                                         "param names are missing$"):
        optim.SGD([("a", a), b], lr=0.1)
    with pytest.raises(ValueError, match="cannot add param group without names to the optimizer"):
        optim.SGD([("a", a)], lr=0.1).add_param_group({"params": [b]})
    with pytest.raises(ValueError, match="cannot add param group with names to the optimizer"):
        optim.SGD([a], lr=0.1).add_param_group({"params": [("b", b)]})
    with pytest.raises(TypeError, match="^param_group must be a dict, but got <class 'list'>$"):
        optim.SGD([a], lr=0.1).add_param_group([b])
    h = a * 2
    h.retain_grad()  # a non-leaf that keeps its .grad can be optimized, as in PyTorch
    assert optim.SGD([h], lr=0.1).param_groups[0]["params"][0] is h
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([b * 2], lr=0.1)
