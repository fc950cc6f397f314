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
collector is off during the loop, and one BLAS thread keeps the counts repeatable.
"""
from __future__ import annotations

import argparse
import gc
from collections.abc import Callable

import numpy as np

import portagrad as pg
from benchmarks.train_step import _SHAPES, _models, _step_fn


def _ops() -> dict[str, Callable[[], object]]:
    a, b = pg.ones(1), pg.ones(1)
    x = pg.ones(4, requires_grad=True)
    z = pg.ones(4)

    y = pg.ones(4)
    lin = pg.nn.Linear(8, 4)
    inp = pg.ones(2, 8)

    def recorded() -> None:
        (x * 2.0).sum().backward()

    def mulsum() -> None:
        (x * y).sum().backward()

    def linear_relu() -> None:
        pg.nn.functional.relu(lin(inp)).sum().backward()

    steps = {}
    rng = np.random.default_rng(0)
    for key, (name, make) in zip(("mlp_step", "cnn_step"), _models(pg).items()):
        pg.manual_seed(0)
        xs = pg.tensor(rng.standard_normal(_SHAPES[name]).astype(np.float32))
        steps[key] = _step_fn(pg, make(), xs, pg.tensor(rng.integers(0, 10, 64)))

    return {**steps, "fast": lambda: a + b, "call": lambda: pg.exp(a), "inplace": lambda: z.add_(1.0),
            "recorded": recorded, "mulsum": mulsum, "linear_relu": linear_relu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=sorted(_ops()), default="call")
    parser.add_argument("--iters", type=int, default=100000)
    args = parser.parse_args()
    fn = _ops()[args.op]
    for _ in range(200):  # warm-up: caches, lazy imports
        fn()
    gc.collect()
    gc.disable()
    for _ in range(args.iters):
        fn()


if __name__ == "__main__":
    main()
