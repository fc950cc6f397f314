"""Where a training step's time goes: one step of a model under ``pg.profiler``, ops by device time.

Run: ``python -m benchmarks.profile_step [--model mlp|cnn|resnet18|gpt ...] [--device D]
[--batch N] [--rows 25] [--kernels]``, from the repository root (defaults: every model,
``opencl:0``).

For each model (the MLP and demo CNN of ``benchmarks.train_step``, ResNet-18 and the GPT of
``benchmarks.models``, their batches as there) it runs three warm-up steps (kernels built, the
GEMM tuner's choices made), then one step under
``pg.profiler.profile(activities=[CPU, OPENCL])`` (after one profiled step that builds the
kernels of the profiler's unfused mode) and prints the ops sorted by their own device
time (OpenCL events), with their host time and call counts, and the step's wall time beside the
sum of device time: when the device is busy for a small part of the wall time, the step is bound
by the host (dispatch, launches, synchronisation), not by kernels.

``--kernels`` (OpenCL devices) then times one more step kernel by kernel: every
``pyopencl.Kernel`` launch of the step is wrapped to keep its event, and the kernels are listed by
total device time (each distinct kernel object on its own line, with its launch count and the
global size of its first launch), so that one slow kernel among an op's several shows itself.
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks import device_label, one_blas_thread

__all__ = ["kernel_times", "main", "profile_step"]


def _small(name: str) -> Callable[[Any, str, int | None], tuple[Callable[[], Any], Callable]]:
    def make(pg: Any, dev: str, batch: int | None) -> tuple[Callable[[], Any], Callable]:
        from benchmarks.train_step import _SHAPES, _models, _step_fn

        b = batch or 64
        rng = np.random.default_rng(0)
        shape = (b,) + _SHAPES[name][1:]
        x = pg.tensor(rng.standard_normal(shape).astype(np.float32), device=dev)
        y = pg.tensor(rng.integers(0, 10, b), device=dev)
        model = _models(pg)[name]().to(dev)
        d = pg.device(dev)
        sync = (lambda: pg.opencl.synchronize(d)) if d.type == "opencl" else (lambda: None)
        return _step_fn(pg, model, x, y), sync
    return make


def _big(key: str) -> Callable[[Any, str, int | None], tuple[Callable[[], Any], Callable]]:
    def make(pg: Any, dev: str, batch: int | None) -> tuple[Callable[[], Any], Callable]:
        from benchmarks.models import _portagrad_step, _specs

        spec = _specs()[key]
        pg.manual_seed(0)
        xs, ys = spec.make_batch(batch or (128 if key == "resnet18" else 16))
        return _portagrad_step(spec, dev, None, xs, ys)
    return make


_MODELS = {"mlp": _small("MLP 784-256-10"), "cnn": _small("demo CNN (digits)"),
           "resnet18": _big("resnet18"), "gpt": _big("gpt")}


def kernel_times(step: Callable[[], Any], sync: Callable[[], Any], rows: int) -> None:
    """Run ``step`` once with every ``pyopencl.Kernel`` launch recorded; print the kernels by
    total device time (profiling events of the backend's queues)."""
    import pyopencl as cl

    orig = cl.Kernel.__call__
    log: list[tuple[Any, Any, Any]] = []

    def recorded(self: Any, queue: Any, gsize: Any, *args: Any, **kw: Any) -> Any:
        ev = orig(self, queue, gsize, *args, **kw)
        log.append((self, gsize, ev))
        return ev

    cl.Kernel.__call__ = recorded
    try:
        step()
        sync()
    finally:
        cl.Kernel.__call__ = orig
    per: dict[int, list[Any]] = {}
    for k, gsize, ev in log:
        t = (ev.profile.end - ev.profile.start) * 1e-6
        e = per.setdefault(id(k), [k.function_name, 0, 0.0, gsize])
        e[1] += 1
        e[2] += t
    total = sum(e[2] for e in per.values())
    print(f"  kernels: {len(log)} launches of {len(per)} kernels, {total:.2f} ms of device "
          "time", flush=True)
    print(f"  {'kernel':<28} {'launches':>8} {'total ms':>9} {'avg us':>8}  first global size")
    for name, n, t, gsize in sorted(per.values(), key=lambda e: -e[2])[:rows]:
        print(f"  {name:<28} {n:8d} {t:9.3f} {t / n * 1000:8.1f}  {tuple(gsize)}")


def profile_step(model: str, dev: str, batch: int | None, rows: int,
                 kernels: bool = False) -> None:
    """Print the profile of one training step of ``model`` on ``dev``."""
    import portagrad as pg
    from portagrad.profiler import ProfilerActivity, profile

    step, sync = _MODELS[model](pg, dev, batch)
    for _ in range(3):
        step()
    sync()
    t = time.perf_counter()
    step()
    sync()
    plain = time.perf_counter() - t
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.OPENCL] if dev.startswith("opencl")
                                     else [])
    for _ in range(2):  # the first profiled step builds the kernels the profiler's mode needs
        with profile(activities=acts) as prof:
            step()
            sync()
    avg = prof.key_averages()
    dev_total = sum(e.self_device_time_total for e in avg) / 1000
    print(f"{model} on {dev}: step {plain * 1000:.2f} ms unprofiled; under the profiler, "
          f"device time (sum of ops' own) {dev_total:.2f} ms", flush=True)
    key = "self_device_time_total" if dev.startswith("opencl") else "self_cpu_time_total"
    print(avg.table(sort_by=key, row_limit=rows), flush=True)
    if kernels and dev.startswith("opencl"):
        kernel_times(step, sync, rows)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_step")
    p.add_argument("--model", action="append", choices=list(_MODELS), default=None,
                   help="repeatable; default all")
    p.add_argument("--device", default="opencl:0")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--rows", type=int, default=25)
    p.add_argument("--kernels", action="store_true",
                   help="also list one step's kernels by device time (OpenCL)")
    args = p.parse_args(argv)
    with one_blas_thread():
        print(device_label(args.device))
        for m in args.model or list(_MODELS):
            profile_step(m, args.device, args.batch, args.rows, args.kernels)


if __name__ == "__main__":
    main()
