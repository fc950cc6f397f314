"""Training-step cost: portagrad beside PyTorch (CPU) in one process, plus peak host memory.

Run: ``python -m benchmarks.train_step [--steps N] [--rounds R] [--no-memory] [--capture]
[--device D ...]``, from the repository root (``--device``, repeatable, chooses the portagrad
devices: a plugin's ``xp:0``...; ``--capture`` also times each step captured).

For an MLP 784-256-10 and the demo CNN (batch 64, cross-entropy, SGD with momentum 0.9) it
prints ms per step (zero_grad + forward + backward + step) for portagrad on ``cpu`` and on
``opencl:0`` when available, for torch on the CPU when torch is installed, and the ratio
portagrad/torch (with torch: ``R`` rounds of ``N`` steps of each library in turn, the best block
of each and the median of the rounds' ratios, so that load which comes and goes weighs on both
sides of each ratio); then a one-element ``a + b``; then the peak resident memory of a child process
training the demo model for a few steps in each library. Both libraries use one BLAS/intra-op
thread (small matrices; this keeps the figures stable on a shared machine). ``--capture`` adds,
for each portagrad device, the same step captured (``pg.compile(step, mode="reduce-overhead")``,
see ``portagrad.capture``) and its speed-up over the eager step. Where torch sees a CUDA GPU, each
model is also timed eagerly on it (``torch cuda``, synchronised) and the captured rows say how they
compare with that.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks import blas_line, one_blas_thread


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def _time(step: Callable[[], Any], steps: int, sync: Callable[[], Any] = lambda: None) -> float:
    for _ in range(3):
        step()
    sync()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        best = min(best, (time.perf_counter() - t) / steps)
    return best * 1000


def _time_pair(ours: Callable[[], Any], ref: Callable[[], Any], steps: int, rounds: int,
               sync: Callable[[], Any] = lambda: None) -> tuple[float, float, float]:
    """Blocks of ``steps`` steps of ``ours`` and of ``ref`` in turn, ``rounds`` times: (best ms
    per step of each, median of the per-round ratios). Load that comes and goes on a shared
    machine then weighs on both sides of each ratio."""
    for _ in range(3):
        ours()
        ref()
    sync()
    best_o = best_r = float("inf")
    ratios = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(steps):
            ours()
        sync()
        t_o = (time.perf_counter() - t) / steps
        t = time.perf_counter()
        for _ in range(steps):
            ref()
        t_r = (time.perf_counter() - t) / steps
        best_o, best_r = min(best_o, t_o), min(best_r, t_r)
        ratios.append(t_o / t_r)
    return best_o * 1000, best_r * 1000, float(np.median(ratios))


def _models(lib: Any) -> dict[str, Callable[[], Any]]:
    nn = lib.nn
    return {
        "MLP 784-256-10": lambda: nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                                                nn.Linear(256, 10)),
        "demo CNN (digits)": lambda: nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(128, 10)),
    }


_SHAPES = {"MLP 784-256-10": (64, 784), "demo CNN (digits)": (64, 1, 8, 8)}


def _step_fn(lib: Any, model: Any, x: Any, y: Any) -> Callable[[], Any]:
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step(xb: Any = x, yb: Any = y) -> Any:  # (arguments: the inputs of a captured step)
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    return step


def _default_devices() -> list[str]:
    import portagrad as pg

    return ["cpu"] + (["opencl:0"] if pg.opencl.is_available() else [])


def bench_steps(steps: int, devices: list[str] | None = None, capture: bool = False,
                rounds: int = 10) -> None:
    import portagrad as pg

    torch = _torch()
    devices = devices or _default_devices()
    rng = np.random.default_rng(0)
    if torch is not None:
        print(f"training step, batch 64, SGD momentum 0.9 ({rounds} rounds of {steps} steps "
              "of each library in turn: best block, median ratio of the rounds)")
    else:
        print(f"training step, batch 64, SGD momentum 0.9 ({steps} steps, best of 3)")
    for name, make in _models(pg).items():
        xs = rng.standard_normal(_SHAPES[name]).astype(np.float32)
        ys = rng.integers(0, 10, 64)
        tstep = None
        cuda_ms = None
        if torch is not None:
            torch.manual_seed(0)
            tm = _models(torch)[name]()
            tstep = _step_fn(torch, tm, torch.from_numpy(xs), torch.from_numpy(ys))
            if torch.cuda.is_available():
                torch.manual_seed(0)
                tmc = _models(torch)[name]().cuda()
                cuda_ms = _time(_step_fn(torch, tmc, torch.from_numpy(xs).cuda(),
                                         torch.from_numpy(ys).cuda()), steps,
                                torch.cuda.synchronize)
                print(f"  {name:<20} torch     cuda      {cuda_ms:8.2f} ms/step (eager)",
                      flush=True)
        for dev in devices:
            pg.manual_seed(0)
            m = make().to(dev)
            x = pg.tensor(xs, device=dev)
            y = pg.tensor(ys, device=dev)
            d = pg.device(dev)
            sync = (lambda d=d: getattr(pg, d.type).synchronize(d)) if d.type != "cpu" else \
                (lambda: None)
            if tstep is not None:
                ours, ref, ratio = _time_pair(_step_fn(pg, m, x, y), tstep, steps, rounds, sync)
                print(f"  {name:<20} portagrad {dev:<9} {ours:8.2f} ms/step   torch cpu "
                      f"{ref:8.2f} ms/step   ratio portagrad/torch {ratio:6.2f}", flush=True)
            else:
                ours = _time(_step_fn(pg, m, x, y), steps, sync)
                print(f"  {name:<20} portagrad {dev:<9} {ours:8.2f} ms/step", flush=True)
            if capture:
                pg.manual_seed(0)
                m = make().to(dev)
                cstep = pg.compile(_step_fn(pg, m, x, y), mode="reduce-overhead")
                cap = _time(lambda c=cstep, a=x, b=y: c(a, b), steps, sync)
                vs_cuda = "" if cuda_ms is None else \
                    f", torch cuda eager/captured {cuda_ms / cap:5.2f}"
                print(f"  {name:<20} portagrad {dev:<9} {cap:8.2f} ms/step captured "
                      f"(replays {cstep.replays}, eager/captured {ours / cap:5.2f}{vs_cuda})",
                      flush=True)


def bench_tiny_add(devices: list[str] | None = None) -> None:
    import timeit

    import portagrad as pg

    torch = _torch()
    n = 20000
    ref = None
    if torch is not None:
        ta, tb = torch.tensor([1.0]), torch.tensor([2.0])
        ref = min(timeit.repeat(lambda: ta + tb, number=n, repeat=5)) / n * 1e6
    for dev in devices or ["cpu"]:
        a, b = pg.tensor([1.0], device=dev), pg.tensor([2.0], device=dev)
        ours = min(timeit.repeat(lambda a=a, b=b: a + b, number=n, repeat=5)) / n * 1e6
        line = f"one-element a + b: portagrad {dev:<9} {ours:6.2f} us"
        if ref is not None:
            line += f"   torch {ref:6.2f} us   ratio {ours / ref:5.2f}"
        print(line, flush=True)


_CHILD = r"""
import json, resource, sys
def hwm():
    # peak RSS of this process image: VmHWM restarts at exec, unlike ru_maxrss, which keeps the
    # forking parent's peak
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
lib = sys.argv[1]
import numpy as np
x = np.random.default_rng(0).standard_normal((64, 1, 8, 8)).astype(np.float32)
y = np.random.default_rng(0).integers(0, 10, 64)
base = hwm()
if lib == "torch":
    import torch as L
    torch = L
    torch.set_num_threads(1)
    X, Y = torch.from_numpy(x), torch.from_numpy(y)
else:
    import portagrad as L
    X, Y = L.tensor(x), L.tensor(y)
imported = hwm()
nn = L.nn
m = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                  nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                  nn.Flatten(), nn.Linear(128, 10))
opt = L.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
for _ in range(50):
    opt.zero_grad(); loss = nn.CrossEntropyLoss()(m(X), Y); loss.backward(); opt.step()
peak = hwm()
print(json.dumps({"import_kib": imported, "peak_kib": peak, "base_kib": base}))
"""


def bench_memory() -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH"))
                                          if p))
    libs = ["portagrad"] + (["torch"] if _torch() is not None else [])
    res = {}
    for lib in libs:
        proc = subprocess.run([sys.executable, "-c", _CHILD, lib], capture_output=True, text=True,
                              env=env, timeout=300)
        if proc.returncode != 0:
            print(f"  {lib}: failed: {proc.stderr[-500:]}")
            continue
        res[lib] = json.loads(proc.stdout.strip().splitlines()[-1])
    print("peak host memory (RSS) of a process training the demo CNN for 50 steps on the CPU")
    for lib, r in res.items():
        print(f"  {lib:<10} peak {r['peak_kib'] / 1024:7.1f} MiB (after import "
              f"{r['import_kib'] / 1024:7.1f} MiB; training adds "
              f"{(r['peak_kib'] - r['import_kib']) / 1024:6.1f} MiB)")
    if len(res) == 2:
        print(f"  ratio portagrad/torch peak: {res['portagrad']['peak_kib'] / res['torch']['peak_kib']:.2f}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.train_step")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=10,
                   help="alternating blocks of --steps steps per library (with torch)")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--capture", action="store_true",
                   help="also time each step captured (pg.compile mode='reduce-overhead')")
    p.add_argument("--device", action="append", default=None,
                   help="portagrad device to time (repeatable; default cpu and opencl:0 if present)")
    args = p.parse_args(argv)
    with one_blas_thread():
        print(blas_line())
        if _torch() is None:
            print("torch is not installed: printing portagrad figures only")
        bench_steps(args.steps, args.device, args.capture, max(args.rounds, 1))
        bench_tiny_add(args.device)
        if not args.no_memory:
            bench_memory()


if __name__ == "__main__":
    main()
