"""Regenerate tests/optim_literals.py with the installed PyTorch: ``python tests/optim_literals_gen.py``
from the repository root. The inputs are the ones the tests build (see ``problem`` in
tests/test_optim_algorithms.py and ``make_opt`` in tests/test_optim_schedulers.py)."""
from __future__ import annotations

import copy
import pprint
import warnings
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).with_name("optim_literals.py")
STEPS = 5

TRAJ = [
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.6), weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, betas=(0.8, 0.5), weight_decay=0.1, decoupled_weight_decay=True,
                   maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=2, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.05)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(0.01, 0.1), maximize=True)),
    ("Adafactor", dict(lr=0.05)),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-3, 1e-2), d=1.2, weight_decay=0.1,
                       maximize=True)),
    ("AdamW", dict(lr=0.05, amsgrad=True, maximize=True)),
]
MUON = [
    dict(lr=0.05),
    dict(lr=0.05, weight_decay=0.2, momentum=0.8, nesterov=False, adjust_lr_fn="match_rms_adamw",
         ns_steps=3),
]
LBFGS = [
    (dict(), 3),
    (dict(lr=0.5, history_size=3, max_iter=7), 3),
    (dict(line_search_fn="strong_wolfe"), 2),
    (dict(line_search_fn="strong_wolfe", history_size=2, max_iter=10, max_eval=12, lr=0.8), 4),
]
LBFGS_F32 = [dict(max_iter=8), dict(line_search_fn="strong_wolfe", max_iter=3, history_size=3)]
VALIDATION = [
    ("Adamax", dict(lr=-1.0)), ("Adamax", dict(eps=-1.0)), ("Adamax", dict(betas=(1.0, 0.9))),
    ("Adamax", dict(betas=(0.9, -0.1))), ("Adamax", dict(weight_decay=-0.5)),
    ("NAdam", dict(lr=-0.1)), ("NAdam", dict(momentum_decay=-0.1)),
    ("NAdam", dict(betas=(0.9, 1.0))), ("RAdam", dict(eps=-1e-8)), ("RAdam", dict(weight_decay=-1)),
    ("ASGD", dict(lr=-0.01)), ("ASGD", dict(weight_decay=-0.1)),
    ("Rprop", dict(lr=-1)), ("Rprop", dict(etas=(1.2, 0.5))), ("Rprop", dict(etas=(0.0, 1.2))),
    ("SparseAdam", dict(lr=0.0)), ("SparseAdam", dict(eps=0.0)),
    ("SparseAdam", dict(betas=(0.9, 1.5))),
    ("Adafactor", dict(lr=-1)), ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(eps=(-1.0, 1e-3))), ("Adafactor", dict(eps=(None, -1e-3))),
    ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-0.1)),
    ("Muon", dict(lr=-1)), ("Muon", dict(momentum=-0.5)), ("Muon", dict(weight_decay=-0.1)),
    ("Muon", dict(adjust_lr_fn="bogus")),
    ("LBFGS", dict(lr=-1)),
]
SCHEDULES = {
    "MultiplicativeLR": "L.MultiplicativeLR(o, lambda e: 0.95)",
    "MultiplicativeLR-per-group":
        "L.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 1.0 if e % 2 else 0.5])",
    "ConstantLR": "L.ConstantLR(o, factor=0.5, total_iters=4)",
    "LinearLR": "L.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=10)",
    "PolynomialLR": "L.PolynomialLR(o, total_iters=20, power=2.0)",
    "CyclicLR": "L.CyclicLR(o, 0.01, 0.1, step_size_up=4, step_size_down=6)",
    "CyclicLR-triangular2": "L.CyclicLR(o, [0.01, 0.02], 0.1, step_size_up=3, mode='triangular2')",
    "CyclicLR-exp_range": "L.CyclicLR(o, 0.01, 0.1, step_size_up=5, mode='exp_range', gamma=0.9)",
    "CyclicLR-scale_fn": "L.CyclicLR(o, 0.01, 0.1, step_size_up=3, scale_fn=lambda x: 1 / (1 + x), "
                         "scale_mode='iterations')",
    "CosineAnnealingWarmRestarts": "L.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.001)",
    "CosineAnnealingWarmRestarts-T_mult1": "L.CosineAnnealingWarmRestarts(o, T_0=7)",
    "SequentialLR": "L.SequentialLR(o, [L.LinearLR(o, 0.1, total_iters=5), L.ExponentialLR(o, 0.9), "
                    "L.StepLR(o, 3, 0.5)], milestones=[5, 15])",
    "ChainedScheduler": "L.ChainedScheduler([L.ConstantLR(o, 0.5, total_iters=6), "
                        "L.ExponentialLR(o, 0.9)])",
    "StepLR": "L.StepLR(o, 4, 0.5)",
    "MultiStepLR": "L.MultiStepLR(o, [3, 8, 8, 20], 0.5)",
    "ExponentialLR": "L.ExponentialLR(o, 0.9)",
    "CosineAnnealingLR": "L.CosineAnnealingLR(o, T_max=10, eta_min=0.01)",
    "LambdaLR": "L.LambdaLR(o, lambda e: 1 / (1 + e))",
    "OneCycleLR": "L.OneCycleLR(o, 1.0, total_steps=31)",
    "OneCycleLR-three_phase": "L.OneCycleLR(o, [1.0, 2.0], total_steps=31, three_phase=True, "
                              "anneal_strategy='linear')",
}
SWALR = [dict(swa_lr=0.05, anneal_epochs=3),
         dict(swa_lr=[0.01, 0.5], anneal_epochs=4, anneal_strategy="linear"),
         dict(swa_lr=0.02, anneal_epochs=0)]


def problem(dtype: str, shapes: tuple = ((3, 4), (5,))) -> tuple[list, list]:
    init = [np.sin(np.arange(np.prod(s)) * 0.9 + i + 1).reshape(s) * 0.8
            for i, s in enumerate(shapes)]
    grads = [[np.sin(np.arange(np.prod(s)) * 0.7 + k * 1.1 + i).reshape(s) * (1 + 0.3 * k)
              for i, s in enumerate(shapes)] for k in range(STEPS)]
    return [a.astype(dtype) for a in init], [[g.astype(dtype) for g in gs] for gs in grads]


def quad_matrix() -> tuple[np.ndarray, np.ndarray]:
    a = np.eye(5) * 2 + np.sin(np.arange(25)).reshape(5, 5) * 0.3
    return a @ a.T, np.cos(np.arange(5))


def main() -> None:
    import torch
    import torch.optim._muon as muon

    warnings.simplefilter("ignore")

    def ns_same_dtype(grad: Any, coef: Any, steps: int, eps: float) -> Any:
        # Muon's iteration without the bfloat16 cast: portagrad runs it in the parameters' dtype
        a, b, c = coef
        tall = grad.size(0) > grad.size(1)
        x = grad.T if tall else grad.clone()
        x = x / x.norm().clamp(min=eps)
        for _ in range(steps):
            g = x @ x.T
            x = torch.addmm(x, torch.addmm(g, g, g, beta=b, alpha=c), x, beta=a)
        return x.T if tall else x

    muon._zeropower_via_newtonschulz = ns_same_dtype

    def traj(name: str, kw: dict, dtype: str, shapes: tuple = ((3, 4), (5,))) -> list[float]:
        init, grads = problem(dtype, shapes)
        ps = [torch.tensor(a, requires_grad=True) for a in init]
        opt = getattr(torch.optim, name)(ps, **kw)
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = torch.tensor(g)
            opt.step()
        return [float(v) for p in ps for v in p.detach().numpy().ravel()]

    def rosen(x: Any) -> Any:
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()

    out = ['"""Reference values computed with PyTorch 2.13 (CPU) for the optimizer and scheduler tests.',
           "", "Generated by tests/optim_literals_gen.py from the same inputs the tests build; torch",
           'is not needed to read them."""', ""]

    def emit(name: str, obj: Any, comment: str | None = None) -> None:
        if comment:
            out.append(comment)
        out.append(name + " = " + pprint.pformat(obj, width=98, sort_dicts=False, compact=True))
        out.append("")

    emit("TRAJECTORIES", [(n, kw, traj(n, kw, "float64"), traj(n, kw, "float32")) for n, kw in TRAJ],
         "# (optimizer, kwargs, parameters after 5 steps in float64, the same in float32)")
    emit("MUON", [(kw, traj("Muon", kw, "float64", ((3, 4), (5, 2)))) for kw in MUON],
         "# Muon: the Newton-Schulz iteration in the parameters' dtype (PyTorch runs it in bfloat16)")
    rows: list[Any] = []
    for kw, n in LBFGS:
        x = torch.tensor(np.linspace(-1.2, 1.0, 4), requires_grad=True)
        opt = torch.optim.LBFGS([x], **kw)

        def closure(opt: Any = opt, x: Any = x) -> Any:
            opt.zero_grad()
            loss = rosen(x)
            loss.backward()
            return loss

        losses = [float(opt.step(closure)) for _ in range(n)]
        st = opt.state[x]
        rows.append((kw, n, [float(v) for v in x.detach().numpy()], losses, st["func_evals"],
                     st["n_iter"]))
    emit("LBFGS_ROSENBROCK", rows,
         "# (kwargs, step calls, final x, losses returned, state func_evals, state n_iter)")
    qa, qb = quad_matrix()
    emit("QUAD_A", [float(v) for v in qa.ravel()])
    emit("QUAD_B", [float(v) for v in qb])
    rows = []
    for kw in LBFGS_F32:
        a, b = torch.tensor(qa.astype("float32")), torch.tensor(qb.astype("float32"))
        x = torch.zeros(5, requires_grad=True)
        opt = torch.optim.LBFGS([x], **kw)

        def qclosure(opt: Any = opt, x: Any = x, a: Any = a, b: Any = b) -> Any:
            opt.zero_grad()
            loss = 0.5 * (x @ (a @ x)) - (x * b).sum()
            loss.backward()
            return loss

        opt.step(qclosure)
        rows.append((kw, [float(v) for v in x.detach().numpy()], opt.state[x]["func_evals"]))
    emit("LBFGS_QUADRATIC_F32", rows, "# (kwargs, x after one step from zeros, func_evals)")
    rows = []
    for name, kw in VALIDATION:
        try:
            getattr(torch.optim, name)([torch.zeros(3, 4, requires_grad=True)], **kw)
        except (ValueError, TypeError, RuntimeError) as e:
            rows.append((name, kw, type(e).__name__, str(e)))
        else:
            raise SystemExit(f"no error for {name} {kw}")
    emit("VALIDATION", rows,
         "# (optimizer, kwargs, exception type name, message) for a (3, 4) float32 parameter")

    def make_opt() -> Any:
        ps = [torch.zeros(2, requires_grad=True) for _ in range(2)]
        return torch.optim.SGD([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ps)],
                               lr=0.1, momentum=0.9)

    sched_rows = {}
    for name, code in SCHEDULES.items():
        o = make_opt()
        s = eval(code, {"L": torch.optim.lr_scheduler, "o": o})
        lrs, moms = [s.get_last_lr()], []
        for _ in range(30):
            o.step()
            s.step()
            lrs.append(s.get_last_lr())
            moms.append(o.param_groups[0]["momentum"])
        cyc = "CyclicLR" in name or "OneCycle" in name
        sched_rows[name] = (code, [float(a) for a, _ in lrs], [float(b) for _, b in lrs],
                            moms if cyc else None)
    emit("SCHEDULES", sched_rows, "# lr of both parameter groups (base lrs 0.1 and 0.2, SGD momentum "
         "0.9) after construction and\n# each of 30 steps; momentum of group 0 for the schedulers "
         "that cycle it")
    rows = []
    for kw in SWALR:
        o = make_opt()
        s = torch.optim.swa_utils.SWALR(o, **copy.deepcopy(kw))
        lrs = [s.get_last_lr()]
        for _ in range(8):
            o.step()
            s.step()
            lrs.append(s.get_last_lr())
        rows.append((kw, [float(v) for lr in lrs for v in lr]))
    emit("SWALR", rows, "# (kwargs, lrs of both groups after construction and each of 8 steps, "
         "flattened)")
    lines = []
    for ln in "\n".join(out).rstrip().split("\n"):
        while len(ln) > 100:  # pprint leaves some long lines; wrap them after a comma
            cut = ln.rfind(", ", 0, 98)
            if cut <= 0:
                break
            lines.append(ln[:cut + 1])
            ln = "   " + ln[cut + 1:]
        lines.append(ln)
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
