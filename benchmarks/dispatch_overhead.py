"""The cost of op dispatch while no profiler is active, counted in instructions.

Run under callgrind, from the repository root, once with ``--iters 0`` and once with ``--iters N``;
the difference divided by N is the cost of one op (imports and warm-up cancel out)::

    export PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python -m benchmarks.dispatch_overhead --op call --iters 100000

Ops: ``fast`` (the operators' fast path, ``a + b`` on one-element tensors), ``call`` (an op
through ``_ops._common.call``, ``pg.exp(a)``), ``inplace`` (``z.add_(1.0)``), ``recorded`` (a
small forward and backward with autograd recording, ``(x * 2.0).sum().backward()``), ``mulsum``
(``(x * y).sum().backward()``, four elements, ``y`` a constant) and ``linear_relu`` (``relu`` of an
8-to-4 ``nn.Linear`` on a (2, 8) batch, summed, forward and backward); ``mlp_step`` and
``cnn_step`` are one training step of ``benchmarks.train_step``'s MLP and demo CNN (batch 64, SGD
with momentum; count those over tens of iterations, not thousands). Compare two trees (for
example with and without a dispatch hook) by pointing ``PYTHONPATH`` at each. The garbage
collector is off during the loop, and one BLAS thread keeps the counts repeatable. ``--torch``
runs the same loop in PyTorch (its instruction count for the same op).

Two timed modes (no valgrind)::

    python -m benchmarks.dispatch_overhead --time
    POCL_DEVICES=pthread python -m benchmarks.dispatch_overhead --chain --device cpu --device opencl:0

``--time`` times ``fast``, ``call`` and ``recorded`` against PyTorch's same loop, the two
alternating in one process (best of ``timeit`` repeats, in process CPU time, microseconds per
op). ``--chain`` times a chain of 100 small dependent ops (``_chain``: mul, add of a scalar,
tanh and sub, on 16 float32 elements) eager and captured (``pg.compile(fn,
mode="reduce-overhead")``) on each device, against PyTorch's eager chain on the CPU (process
CPU time of all threads, PoCL's workers included, best of 7 rounds of 200 chains, each round
ending with a device synchronisation).
"""
from __future__ import annotations

import argparse
import gc
import importlib
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import portagrad as pg
from benchmarks.train_step import _SHAPES, _models, _step_fn


def _ops(lib: Any = pg) -> dict[str, Callable[[], object]]:
    """The loops by name, in ``lib`` (portagrad, or torch for its reference figures)."""
    a, b = lib.ones(1), lib.ones(1)
    x = lib.ones(4, requires_grad=True)
    z = lib.ones(4)

    y = lib.ones(4)
    lin = lib.nn.Linear(8, 4)
    inp = lib.ones(2, 8)

    def recorded() -> None:
        (x * 2.0).sum().backward()

    def mulsum() -> None:
        (x * y).sum().backward()

    def linear_relu() -> None:
        lib.nn.functional.relu(lin(inp)).sum().backward()

    steps = {}
    rng = np.random.default_rng(0)
    for key, (name, make) in zip(("mlp_step", "cnn_step"), _models(lib).items()):
        lib.manual_seed(0)
        xs = lib.tensor(rng.standard_normal(_SHAPES[name]).astype(np.float32))
        steps[key] = _step_fn(lib, make(), xs, lib.tensor(rng.integers(0, 10, 64)))

    return {**steps, "fast": lambda: a + b, "call": lambda: lib.exp(a), "inplace": lambda: z.add_(1.0),
            "recorded": recorded, "mulsum": mulsum, "linear_relu": linear_relu}


def _per_op_us(fn: Callable[[], object], number: int) -> float:
    """Microseconds of process CPU time per call of ``fn`` over ``number`` calls (CPU time: on a
    shared machine wall time also counts the time other processes hold the core)."""
    return timeit.Timer(fn, timer=time.process_time).timeit(number) / number * 1e6


def time_ops(rounds: int = 15, number: int = 20000) -> None:
    """Print portagrad's and PyTorch's time per op of ``fast``, ``call`` and ``recorded``, the two
    timed alternately (``rounds`` rounds; the best of each kept: the machine is shared)."""
    torch = importlib.import_module("torch")
    torch.set_num_threads(1)
    names = ("fast", "call", "recorded")
    ours, theirs = _ops(pg), _ops(torch)
    best = {(lib, k): float("inf") for lib in ("pg", "torch") for k in names}
    for _ in range(rounds):
        for k in names:
            n = number if k != "recorded" else number // 20
            best["pg", k] = min(best["pg", k], _per_op_us(ours[k], n))
            best["torch", k] = min(best["torch", k], _per_op_us(theirs[k], n))
    for k in names:
        p, t = best["pg", k], best["torch", k]
        print(f"{k:<10} portagrad {p:8.3f} us   torch {t:8.3f} us   ratio {p / t:5.2f}x", flush=True)


def _chain(lib: Any, x: Any, w: Any, links: int = 25) -> Any:
    """100 small dependent ops (``links`` times four): what a captured step saves per op."""
    y = x
    for _ in range(links):
        y = y * w
        y = y + 0.5
        y = lib.tanh(y)
        y = y - x
    return y


def _chain_per_op(fn: Callable[[], object], sync_fn: Callable[[], None], calls: int, rounds: int,
                  ops: int) -> float:
    """Best microseconds per op of ``fn`` (one chain of ``ops`` ops), ``calls`` calls a round."""
    for _ in range(5):  # warm-up (a captured step records on its calls 2 and 3)
        fn()
    sync_fn()
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(calls):
            fn()
        sync_fn()
        best = min(best, (time.process_time() - t) / calls / ops * 1e6)
    return best


def _chain_on(dev: str, xn: np.ndarray, wn: np.ndarray, calls: int, rounds: int) -> None:
    from benchmarks import sync

    x, w = pg.tensor(xn, device=dev), pg.tensor(wn, device=dev)
    step = pg.compile(lambda a, b: _chain(pg, a, b), mode="reduce-overhead")
    eager = _chain_per_op(lambda: _chain(pg, x, w), lambda: sync(dev), calls, rounds, 100)
    captured = _chain_per_op(lambda: step(x, w), lambda: sync(dev), calls, rounds, 100)
    assert step.stats["replays"] > 0, step.stats  # the timed calls were replays
    ref = _chain(pg, x, w).cpu().numpy()
    assert np.allclose(step(x, w).cpu().numpy(), ref, rtol=1e-5, atol=1e-6)
    print(f"chain of 100 ops on 16 el., {dev:<9} eager {eager:7.2f} us/op   "
          f"captured {captured:7.2f} us/op   eager/captured {eager / captured:5.2f}x", flush=True)


def time_chain(devices: list[str], calls: int = 200, rounds: int = 7) -> None:
    """Print the 100-op chain's time per op, eager and captured, on each device (and PyTorch's
    eager chain on the CPU when it is installed)."""
    rng = np.random.default_rng(0)
    xn, wn = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    for dev in devices:
        _chain_on(dev, xn, wn, calls, rounds)
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return
    torch.set_num_threads(1)
    tx, tw = torch.from_numpy(xn), torch.from_numpy(wn)
    t = _chain_per_op(lambda: _chain(torch, tx, tw), lambda: None, calls, rounds, 100)
    print(f"chain of 100 ops on 16 el., torch cpu eager {t:7.2f} us/op", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=sorted(_ops()), default="call")
    parser.add_argument("--iters", type=int, default=100000)
    parser.add_argument("--torch", action="store_true", help="run the loop in PyTorch")
    parser.add_argument("--time", action="store_true", help="time fast/call/recorded against torch")
    parser.add_argument("--chain", action="store_true", help="time the 100-op chain, eager and captured")
    parser.add_argument("--device", action="append", help="a device for --chain (repeatable; default cpu)")
    args = parser.parse_args()
    if args.time:
        time_ops()
        return
    if args.chain:
        time_chain(args.device or ["cpu"])
        return
    fn = _ops(importlib.import_module("torch") if args.torch else pg)[args.op]
    for _ in range(200):  # warm-up: caches, lazy imports
        fn()
    gc.collect()
    gc.disable()
    for _ in range(args.iters):
        fn()


if __name__ == "__main__":
    main()
