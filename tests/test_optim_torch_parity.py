"""Live comparison with the installed PyTorch (skipped without it): every ``torch.optim`` name and
signature exists here, every optimizer follows torch's trajectory on random problems in float32 and
float64, and a torch checkpoint loads into the portagrad optimizer and continues identically."""
from __future__ import annotations

import copy
import inspect
import warnings

import numpy as np
import pytest

import portagrad as pg
from portagrad import optim

torch = pytest.importorskip("torch")


def _signature(fn):
    return [(p.name, p.kind, repr(p.default)) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("module", ["", "lr_scheduler", "swa_utils"])
def test_every_name_and_signature(module):
    tmod = getattr(torch.optim, module) if module else torch.optim
    pmod = getattr(optim, module) if module else optim
    for name in tmod.__all__:
        assert hasattr(pmod, name), f"missing {module}.{name}"
        t, p = getattr(tmod, name), getattr(pmod, name)
        if inspect.isclass(t):
            assert _signature(p.__init__) == _signature(t.__init__), name
        elif callable(t) and name != "swap_in_optimizer_params_and_state":
            assert _signature(p) == _signature(t), name


CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("Adamax", dict(lr=0.02, weight_decay=0.05)),
    ("NAdam", dict(lr=0.02, momentum_decay=0.01, weight_decay=0.05)),
    ("NAdam", dict(lr=0.02, weight_decay=0.05, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.02, betas=(0.9, 0.8), weight_decay=0.05)),
    ("RAdam", dict(lr=0.02, weight_decay=0.05, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.05, lambd=0.01, t0=3, weight_decay=0.05)),
    ("Rprop", dict(lr=0.02, etas=(0.4, 1.3), step_sizes=(1e-3, 0.2))),
    ("Adafactor", dict(lr=0.02, weight_decay=0.05)),
    ("Adafactor", dict(lr=0.02, eps=(1e-4, 1e-3), beta2_decay=-0.6, d=2.0, maximize=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
]
SHAPES = ((4, 3), (2, 3, 5), (7,))


def _problem(seed, dtype, steps=8):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]
    return init, grads


def _steps(opt, params, grads, tensor):
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad = tensor(g)
        opt.step()


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_problem_and_checkpoint_interop(case, dtype):
    name, kw = case
    init, grads = _problem(hash(name) % 1000, dtype)
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    pp = [pg.tensor(a, requires_grad=True) for a in init]
    to = getattr(torch.optim, name)(tp, **kw)
    po = getattr(optim, name)(pp, **kw)
    _steps(to, tp, grads[:4], torch.tensor)
    _steps(po, pp, grads[:4], pg.tensor)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    for t, p in zip(tp, pp):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), **tol)
    tsd = to.state_dict()
    psd = po.state_dict()
    assert tsd["param_groups"] == [{k: (list(v) if isinstance(v, tuple) and k == "params" else v)
                                    for k, v in g.items()} for g in psd["param_groups"]]
    for i, st in tsd["state"].items():
        assert sorted(st) == sorted(psd["state"][i])
        for k, v in st.items():
            np.testing.assert_allclose(np.asarray(psd["state"][i][k].numpy()), v.numpy(), **tol)
    # a torch checkpoint, tensors converted, continues in portagrad exactly as in torch after the
    # same load (which casts float state such as NAdam's mu_product to the parameters' dtype)
    tq = [torch.tensor(t.detach().numpy(), requires_grad=True) for t in tp]
    tqo = getattr(torch.optim, name)(tq, **{**kw, "lr": 9.0})
    tqo.load_state_dict(copy.deepcopy(tsd))
    conv = {"param_groups": tsd["param_groups"],
            "state": {i: {k: pg.tensor(v.numpy()) for k, v in st.items()}
                      for i, st in tsd["state"].items()}}
    qp = [pg.tensor(t.detach().numpy(), requires_grad=True) for t in tp]
    qo = getattr(optim, name)(qp, **{**kw, "lr": 9.0})
    qo.load_state_dict(conv)
    _steps(tqo, tq, grads[4:], torch.tensor)
    _steps(qo, qp, grads[4:], pg.tensor)
    for t, q in zip(tq, qp):
        np.testing.assert_allclose(q.detach().numpy(), t.detach().numpy(), **tol)


@pytest.mark.parametrize("kw", [dict(), dict(history_size=4, max_iter=9),
                                dict(line_search_fn="strong_wolfe", history_size=5),
                                dict(line_search_fn="strong_wolfe", max_iter=5, max_eval=9,
                                     tolerance_change=1e-6)])
def test_lbfgs_least_squares(kw):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((12, 6))
    b = rng.standard_normal(12)
    x0 = rng.standard_normal(6)
    result = []
    for lib, mod in ((torch, torch.optim), (pg, optim)):
        A, B = lib.tensor(a), lib.tensor(b)
        x = lib.tensor(x0, requires_grad=True)
        opt = mod.LBFGS([x], **kw)

        def closure(opt=opt, A=A, B=B, x=x):
            opt.zero_grad()
            loss = ((A @ x - B) ** 2).sum() + 0.1 * (x ** 4).sum()
            loss.backward()
            return loss.detach()

        losses = [float(opt.step(closure)) for _ in range(3)]
        result.append((x.detach().numpy().copy(), losses, opt.state[x]["func_evals"],
                       opt.state[x]["n_iter"]))
    (tx, tl, tf, tn), (px, pl, pf, pn) = result
    np.testing.assert_allclose(px, tx, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(pl, tl, rtol=1e-10)
    assert (pf, pn) == (tf, tn)


SCHEDULERS = [
    "L.CyclicLR(o, 0.02, [0.3, 0.5], step_size_up=7, step_size_down=3, mode='triangular2')",
    "L.OneCycleLR(o, 0.5, epochs=3, steps_per_epoch=13, pct_start=0.4, div_factor=10)",
    "L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=3, eta_min=0.01)",
    "L.SequentialLR(o, [L.ConstantLR(o, 0.1, total_iters=4), L.CosineAnnealingLR(o, 9), "
    "L.MultiplicativeLR(o, lambda e: 0.99)], [6, 20])",
    "L.ChainedScheduler([L.CosineAnnealingLR(o, 9), L.MultiplicativeLR(o, lambda e: 0.99)])",
    "L.LinearLR(o, 0.5, 0.05, total_iters=25)",
    "L.PolynomialLR(o, total_iters=17, power=0.5)",
]


@pytest.mark.parametrize("code", SCHEDULERS)
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_schedulers_live(code, opt_name):
    seqs = []
    for lib, mod in ((torch, torch.optim), (pg, optim)):
        ps = [lib.zeros(2, requires_grad=True) for _ in range(2)]
        kw = dict(momentum=0.9) if opt_name == "SGD" else {}
        o = getattr(mod, opt_name)([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.3}], lr=0.1,
                                   **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = eval(code, {"L": mod.lr_scheduler, "o": o})
            seq = [s.get_last_lr()]
            for _ in range(38):
                o.step()
                s.step()
                seq.append(s.get_last_lr())
                seq.append([g.get("momentum", g.get("betas", (0,))[0]) for g in o.param_groups])
        seqs.append(np.array(seq, dtype=float))
    np.testing.assert_allclose(seqs[1], seqs[0], rtol=1e-12, atol=1e-15)
