"""Real-size training steps: ResNet-18 (CIFAR) and a GPT-style decoder, portagrad beside PyTorch.

Run: ``python -m benchmarks.models [--model resnet18|gpt|all] [--device DEV ...] [--steps N]
[--warmup N] [--batch N] [--capture] [--interleave ROUNDS] [--amp]``, from the repository root.

Both libraries train the model from ``benchmarks/model_zoo.py`` from the same initial weights
(the PyTorch state_dict copied into portagrad via numpy) on the same random batch:

- ResNet-18: 32x32 images, 10 classes, BatchNorm in training mode, cross-entropy, SGD momentum 0.9
  with weight decay 5e-4; batch 16 on the CPU, 128 when CUDA is present (``--batch``).
- GPT: 4 layers, d_model 256, 4 heads, sequence 128, vocab 1024, dropout 0.1, untied output head,
  batch 16 sequences, next-token cross-entropy, AdamW.

A step is zero_grad + forward + backward + optimizer step. For each portagrad device (``cpu`` and
every ``opencl:N`` by default) and PyTorch (CPU always, CUDA with TF32 off when present) it prints
the mean ms/step over ``--steps`` timed steps after ``--warmup`` untimed ones, images or tokens per
second, peak memory and the ratio to PyTorch on the CPU. Peak memory is
``pg.opencl.max_memory_allocated()`` / ``torch.cuda.max_memory_allocated()`` on devices and, on
the CPU, the process's peak RSS during the run above its RSS at the start: the high-water mark
``VmHWM`` of ``/proc/self/status`` is reset before each run by writing 5 to
``/proc/self/clear_refs`` (Linux); where that is not possible it falls back to the growth of
``resource.getrusage(...).ru_maxrss``, which only grows, so later runs then read low.
Both libraries use one BLAS/intra-op thread (the figures stay comparable on a shared machine).
``--capture`` adds a row per portagrad device for the step captured
(``pg.compile(step, mode="reduce-overhead")``, see ``portagrad.capture``; AdamW with
``capturable=True``; at least 3 warm-up steps: one eager, two recorded). ``--interleave ROUNDS``
then times every library again, one step each in turn for ``ROUNDS`` rounds, and prints the
medians and the median of the per-round ratios (on a shared machine, load that comes and goes
then weighs on both sides of each ratio).

``--amp`` instead prints, per model, each library and device without and with autocast
(``autocast(device_type, dtype=bfloat16)`` around forward and loss; bfloat16 on every device, as
PoCL has no float16, and PyTorch's CPU autocast default): ms/step, the step's peak memory (the
most memory held at once from the start of forward to the end of the step: activations, the
gradients, the optimizer's temporaries) and the memory held when forward and loss end (the
activations saved for backward, plus under autocast the 16-bit copies of the weights), both above
what was held when forward began (weights, optimizer state; the last step's gradients are
released by ``zero_grad`` before). They are measured on one extra step after the timed ones, as
the counters slow the step down: ``pg.opencl.memory_allocated``/``max_memory_allocated`` on
OpenCL devices; on portagrad's cpu ``tracemalloc``, which sees every numpy buffer (the backend's
buffer pools keep no freed buffer during that step, so only live buffers count); on PyTorch's
CPU the running sum of the allocation events of ``torch.profiler`` with ``profile_memory=True``
(tracemalloc does not see PyTorch's allocator, and PyTorch has no CPU peak counter).
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks import blas_line, one_blas_thread
from benchmarks.model_zoo import GPTConfig, copy_state, gpt, resnet18

__all__ = ["main"]


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def _status_mib(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return None


def _reset_rss_peak() -> float:
    """Reset the RSS high-water mark where Linux allows it; return the baseline in MiB."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        now = _status_mib("VmRSS")
        if now is not None:
            return now
    except OSError:
        pass
    return _rss_peak_mib()


def _rss_peak_mib() -> float:
    hwm = _status_mib("VmHWM")
    if hwm is not None:
        return hwm
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


class _Spec:
    """One model: how to build it, its batch, its optimizer and its unit of throughput."""

    def __init__(self, name: str, build: Callable[[Any], Any], make_batch: Callable[[int], Any],
                 make_opt: Callable[[Any, Any], Any], unit: str, items: Callable[[int], int],
                 vocab: int | None) -> None:
        self.name, self.build, self.make_batch, self.make_opt = name, build, make_batch, make_opt
        self.unit, self.items, self.vocab = unit, items, vocab


def _specs() -> dict[str, _Spec]:
    cfg = GPTConfig()

    def images(b: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(0)
        return rng.standard_normal((b, 3, 32, 32)).astype(np.float32), rng.integers(0, 10, b)

    def tokens(b: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(0)
        seq = rng.integers(0, cfg.vocab, (b, cfg.seq + 1))
        return seq[:, :-1], seq[:, 1:].copy()  # next-token targets

    return {
        "resnet18": _Spec("ResNet-18 (CIFAR)", resnet18, images,
                          lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.9,
                                                       weight_decay=5e-4),
                          "images/s", lambda b: b, None),
        "gpt": _Spec("GPT 4x256, seq 128", lambda lib: gpt(lib, cfg), tokens,
                     lambda lib, m: lib.optim.AdamW(m.parameters(), lr=3e-4),
                     "tokens/s", lambda b: b * cfg.seq, cfg.vocab),
    }


def _region(lib: Any, x: Any, amp: bool) -> Any:
    """The autocast region of a step: bfloat16 on ``x``'s device type, or none."""
    if not amp:
        return contextlib.nullcontext()
    return lib.autocast(x.device.type, dtype=lib.bfloat16)


def _step_fn(lib: Any, spec: _Spec, model: Any, x: Any, y: Any,
             capture: bool = False, amp: bool = False) -> Callable[[], Any]:
    opt = spec.make_opt(lib, model)
    model.train()
    if capture:  # the step count on the device: no host read in the step (Adam, AdamW)
        for group in opt.param_groups:
            group["capturable"] = True

    def step(x: Any = x, y: Any = y, mark: Callable[[], Any] | None = None) -> Any:
        # (x, y: the inputs of a captured step; mark: a context around forward and loss)
        opt.zero_grad()
        with _region(lib, x, amp), (mark() if mark is not None else contextlib.nullcontext()):
            out = model(x)
            target = y
            if spec.vocab is not None:
                out, target = out.reshape(-1, spec.vocab), y.reshape(-1)
            loss = lib.nn.functional.cross_entropy(out, target)
        loss.backward()
        opt.step()
        return loss

    if capture:
        captured = lib.compile(step, mode="reduce-overhead")
        return lambda: captured(x, y)
    return step


def _measure(step: Callable[[], Any], steps: int, warmup: int, sync: Callable[[], Any],
             reset_peak: Callable[[], Any], peak: Callable[[], float]) -> tuple[float, float, float]:
    """Return (ms per step, peak MiB, last loss) of ``steps`` timed steps after ``warmup``.
    The device peak counts the timed steps only: warm-up steps build kernels and let the GEMM
    tuner time its candidates on scratch buffers of the real sizes, which a steady step does
    not hold (the RSS growth of a host library is counted from before the warm-up, so that it
    includes the optimizer's state made by the first step)."""
    base = _reset_rss_peak()
    for _ in range(warmup):
        step()
    sync()
    reset_peak()
    t = time.perf_counter()
    for _ in range(steps):
        loss = step()
    sync()
    ms = (time.perf_counter() - t) / max(steps, 1) * 1000
    mem = peak()
    return ms, (mem if mem >= 0 else _rss_peak_mib() - base), float(loss.item())


def _portagrad_step(spec: _Spec, dev: str, tmodel: Any, xs: np.ndarray, ys: np.ndarray,
                    capture: bool = False, amp: bool = False
                    ) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(step, synchronize) of portagrad on ``dev``, from the PyTorch reference's weights."""
    import portagrad as pg

    model = spec.build(pg).to(dev)
    if tmodel is not None:  # the PyTorch reference's initial weights
        copy_state(tmodel, model, pg, dev)
    x, y = pg.tensor(xs, device=dev), pg.tensor(ys, device=dev)
    d = pg.device(dev)
    sync = (lambda: pg.opencl.synchronize(d)) if dev.startswith("opencl") else (lambda: None)
    return _step_fn(pg, spec, model, x, y, capture, amp), sync


def _torch_step(torch: Any, spec: _Spec, dev: str, tmodel: Any, xs: np.ndarray, ys: np.ndarray,
                amp: bool = False) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(step, synchronize) of PyTorch on ``dev``, from ``tmodel``'s weights."""
    model = spec.build(torch)
    model.load_state_dict(tmodel.state_dict())
    model = model.to(dev)
    x, y = torch.from_numpy(xs).to(dev), torch.from_numpy(ys).to(dev)
    return _step_fn(torch, spec, model, x, y, amp=amp), (
        torch.cuda.synchronize if dev == "cuda" else (lambda: None))


def _run_portagrad(spec: _Spec, dev: str, tmodel: Any, xs: np.ndarray, ys: np.ndarray,
                   steps: int, warmup: int, capture: bool = False) -> tuple[float, float, float]:
    import portagrad as pg

    step, sync = _portagrad_step(spec, dev, tmodel, xs, ys, capture)
    if dev.startswith("opencl"):
        d = pg.device(dev)
        return _measure(step, steps, warmup, sync, lambda: pg.opencl.reset_peak_memory_stats(d),
                        lambda: pg.opencl.max_memory_allocated(d) / 2**20)
    return _measure(step, steps, warmup, sync, lambda: None, lambda: -1.0)


def _run_torch(torch: Any, spec: _Spec, dev: str, tmodel: Any, xs: np.ndarray, ys: np.ndarray,
               steps: int, warmup: int) -> tuple[float, float, float]:
    step, sync = _torch_step(torch, spec, dev, tmodel, xs, ys)
    if dev == "cuda":
        return _measure(step, steps, warmup, sync, torch.cuda.reset_peak_memory_stats,
                        lambda: torch.cuda.max_memory_allocated() / 2**20)
    return _measure(step, steps, warmup, sync, lambda: None, lambda: -1.0)


def _interleaved(spec: _Spec, tmodel: Any, xs: np.ndarray, ys: np.ndarray,
                 devices: list[str], rounds: int, warmup: int) -> None:
    """Time one step of each library in turn, ``rounds`` times, and print the median of each
    and the median of the per-round ratios to torch on the CPU: load that comes and goes on a
    shared machine then falls on both sides of every ratio."""
    torch = _torch()
    runs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {}
    if torch is not None and tmodel is not None:
        runs["torch cpu"] = _torch_step(torch, spec, "cpu", tmodel, xs, ys)
    for dev in devices:
        runs[f"portagrad {dev}"] = _portagrad_step(spec, dev, tmodel, xs, ys)
    for step, sync in runs.values():
        for _ in range(max(warmup, 1)):
            step()
        sync()
    times: dict[str, list[float]] = {who: [] for who in runs}
    cpu: dict[str, list[float]] = {who: [] for who in runs}
    for _ in range(rounds):
        for who, (step, sync) in runs.items():
            t, c = time.perf_counter(), time.process_time()
            step()
            sync()
            times[who].append((time.perf_counter() - t) * 1000)
            cpu[who].append((time.process_time() - c) * 1000)
    # the process's CPU time besides the wall clock: with one thread on each side, other work on
    # a loaded machine inflates it far less (PoCL's own threads count in it too)
    for title, table in (("median ms/step", times), ("median process CPU ms/step", cpu)):
        print(f"  interleaved, {rounds} rounds of one step each, {title}:", flush=True)
        ref = table.get("torch cpu")
        for who, ts in table.items():
            line = f"    {who:<18} {float(np.median(ts)):10.1f} ms/step (min {min(ts):.1f})"
            if ref is not None:
                ratios = [a / r for a, r in zip(ts, ref)]
                line += f"  ratio to torch cpu: median {float(np.median(ratios)):5.2f}"
            print(line, flush=True)


def _timed(step: Callable[[], Any], sync: Callable[[], Any], steps: int,
           warmup: int) -> tuple[float, float]:
    """(mean ms per step, last loss) of ``steps`` timed steps after ``warmup`` (at least 1)."""
    for _ in range(max(warmup, 1)):
        step()
    sync()
    t = time.perf_counter()
    for _ in range(steps):
        loss = step()
    sync()
    return (time.perf_counter() - t) / steps * 1000, float(loss.item())


def _step_peak_portagrad(step: Callable[..., Any], sync: Callable[[], Any],
                         dev: str) -> tuple[float, float]:
    """MiB: (the most memory held at once from the start of forward to the end of the step,
    the memory held when forward and loss end), each above what was held when forward began."""
    import portagrad as pg

    gc.collect()
    held: list[float] = []
    if dev.startswith("opencl"):
        d = pg.device(dev)

        @contextlib.contextmanager
        def counted() -> Any:
            sync()
            held.append(pg.opencl.memory_allocated(d))
            pg.opencl.reset_peak_memory_stats(d)
            yield
            sync()
            held.append(pg.opencl.memory_allocated(d))

        step(mark=counted)
        sync()
        base, fwd = held
        return (pg.opencl.max_memory_allocated(d) - base) / 2**20, (fwd - base) / 2**20

    @contextlib.contextmanager
    def traced() -> Any:
        # numpy reports its buffers to tracemalloc, and only what is allocated after start() is
        # traced: the figures are the step's own from here on
        tracemalloc.start()
        yield
        held.append(tracemalloc.get_traced_memory()[0])

    # the numpy backend's buffer pools keep freed buffers for reuse: for this step they keep
    # none, so the figures are live buffers only (PyTorch's CPU allocator caches nothing either)
    from portagrad.backends.numpy.arrays import SCRATCH_POOL
    from portagrad.backends.numpy.backend import _POOL

    pools = [(pool, pool.max_bytes) for pool in (_POOL, SCRATCH_POOL)]
    pg.cpu.empty_cache()
    try:
        for pool, _ in pools:
            pool.max_bytes = 0
        step(mark=traced)
        return tracemalloc.get_traced_memory()[1] / 2**20, held[0] / 2**20
    finally:
        tracemalloc.stop()
        for pool, limit in pools:
            pool.max_bytes = limit


def _step_peak_torch(torch: Any, step: Callable[..., Any]) -> tuple[float, float]:
    """MiB: PyTorch CPU's (peak from the start of forward to the end of the step, memory held
    when forward and loss end) above what was held when forward began, from the profiler's
    allocation and free events (``profile_memory=True``) summed in time order; forward is a
    ``record_function`` range."""
    from torch.profiler import ProfilerActivity, profile, record_function

    gc.collect()
    label = "benchmarks.models forward"
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(mark=lambda: record_function(label))
    events = list(prof.profiler.kineto_results.events())
    fwd = [e for e in events if e.name() == label][-1]
    start, end = fwd.start_ns(), fwd.start_ns() + fwd.duration_ns()
    memory = sorted((e for e in events if e.name() == "[memory]" and e.start_ns() >= start),
                    key=lambda e: e.start_ns())
    now = peak = at_end = 0
    for e in memory:
        now += e.nbytes()  # negative for a free
        peak = max(peak, now)
        if e.start_ns() <= end:
            at_end = now
    return peak / 2**20, at_end / 2**20


def bench_amp(model: str, devices: list[str] | None, steps: int, warmup: int,
              batch: int | None) -> None:
    """Per model: each library and device without and with autocast (bfloat16): ms/step and the
    step's peak memory (see the module's docstring), then the ratios with/without."""
    torch = _torch()
    specs = _specs()
    names = list(specs) if model == "all" else [model]
    for key in names:
        spec = specs[key]
        b = batch or 16
        xs, ys = spec.make_batch(b)
        tmodel = _reference_model(torch, spec)
        print(f"{spec.name}, batch {b}: {max(warmup, 1)} warm-up + {steps} timed steps, "
              f"autocast bfloat16", flush=True)
        print(f"  {'library device':<20} {'ms/step':>17} {'':>5} {'step peak MiB':>17} {'':>5} "
              f"{'after forward MiB':>17} {'':>5}  loss", flush=True)
        print(f"  {'':<20} " + f"{'fp32':>8} {'amp':>8} {'ratio':>5} " * 3 + " fp32 / amp",
              flush=True)
        # (row label, portagrad device or None for PyTorch's CPU)
        runs: list[tuple[str, str | None]] = [("torch cpu", None)] if torch is not None else []
        runs += [(f"portagrad {dev}", dev) for dev in _devices(devices)]
        for who, dev in runs:
            cols = []
            for amp in (False, True):
                if dev is None:
                    step, sync = _torch_step(torch, spec, "cpu", tmodel, xs, ys, amp)
                else:
                    step, sync = _portagrad_step(spec, dev, tmodel, xs, ys, amp=amp)
                ms, loss = _timed(step, sync, steps, warmup)
                peak, fwd = (_step_peak_torch(torch, step) if dev is None
                             else _step_peak_portagrad(step, sync, dev))
                cols.append((ms, peak, fwd, loss))
                del step, sync
            (ms0, peak0, fwd0, l0), (ms1, peak1, fwd1, l1) = cols
            line = f"  {who:<20} "
            for a, b in ((ms0, ms1), (peak0, peak1), (fwd0, fwd1)):
                line += f"{a:8.1f} {b:8.1f} {b / a if a > 0 else float('nan'):5.2f} "
            print(line + f" {l0:.4f} / {l1:.4f}", flush=True)


def _reference_model(torch: Any, spec: Any) -> Any:
    """PyTorch's model from seed 0 (the weights portagrad's copies), or None without PyTorch
    (portagrad's generator is seeded instead)."""
    if torch is None:
        import portagrad as pg

        pg.manual_seed(0)
        return None
    torch.manual_seed(0)
    return spec.build(torch)


def _devices(requested: list[str] | None) -> list[str]:
    import portagrad as pg

    if requested:
        return requested
    devs = ["cpu"]
    if pg.opencl.is_available():
        devs += [f"opencl:{i}" for i in range(pg.opencl.device_count())]
    return devs


def bench(model: str, devices: list[str] | None, steps: int, warmup: int,
          batch: int | None, capture: bool = False, interleave: int = 0,
          torch_devices: list[str] | None = None) -> None:
    """Print one line per (library, device) for each model asked for."""
    torch = _torch()
    cuda = torch is not None and torch.cuda.is_available()
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    specs = _specs()
    names = list(specs) if model == "all" else [model]
    for key in names:
        spec = specs[key]
        b = batch or (128 if cuda and key == "resnet18" else 16)
        xs, ys = spec.make_batch(b)
        tmodel = _reference_model(torch, spec)
        print(f"{spec.name}, batch {b}: {warmup} warm-up + {steps} timed steps, mean", flush=True)
        rows: list[tuple[str, float, float, float]] = []
        ref: tuple[str, float] | None = None
        if torch is not None:
            for tdev in torch_devices or ["cpu"] + (["cuda"] if cuda else []):
                r = _run_torch(torch, spec, tdev, tmodel, xs, ys, steps, warmup)
                rows.append((f"torch {tdev}", *r))
                ref = ref or (rows[-1][0], r[0])  # ratios are to the first torch row
                _print_row(rows[-1], spec, b, ref)
        for dev in _devices(devices):
            r = _run_portagrad(spec, dev, tmodel, xs, ys, steps, warmup)
            rows.append((f"portagrad {dev}", *r))
            _print_row(rows[-1], spec, b, ref)
            if capture:
                # a captured step's first three calls are a warm-up call and two recordings;
                # its first replay may still build kernels: warm-up replays come after them
                r = _run_portagrad(spec, dev, tmodel, xs, ys, steps, max(warmup, 1) + 3, True)
                rows.append((f"portagrad {dev} capt", *r))
                _print_row(rows[-1], spec, b, ref)
        if interleave:
            _interleaved(spec, tmodel, xs, ys, _devices(devices), interleave, warmup)


def _print_row(row: tuple[str, float, float, float], spec: _Spec, b: int,
               ref: tuple[str, float] | None) -> None:
    who, ms, mem, loss = row
    mem_kind = "device" if ("opencl" in who or "cuda" in who) else "RSS peak growth"
    line = (f"  {who:<18} {ms:10.1f} ms/step {spec.items(b) / ms * 1000:10.1f} {spec.unit:<9} "
            f"peak {mem:8.1f} MiB ({mem_kind})  loss {loss:.4f}")
    if ref is not None:
        line += f"  ratio to {ref[0]} {ms / ref[1]:6.2f}"
    print(line, flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.models")
    p.add_argument("--model", choices=["resnet18", "gpt", "all"], default="all")
    p.add_argument("--device", action="append", default=None,
                   help="portagrad device (repeatable); default cpu and every opencl:N")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--batch", type=int, default=None,
                   help="batch size (default 16; ResNet-18 128 when CUDA is present)")
    p.add_argument("--capture", action="store_true",
                   help="also time each step captured (pg.compile mode='reduce-overhead')")
    p.add_argument("--interleave", type=int, default=0, metavar="ROUNDS",
                   help="then time ROUNDS rounds of one step of each library in turn and print "
                        "medians and the median ratio (steadier on a shared machine)")
    p.add_argument("--amp", action="store_true",
                   help="instead: each library and device without and with autocast (bfloat16): "
                        "ms/step and the step's peak memory")
    p.add_argument("--torch-device", action="append", choices=["cpu", "cuda"], default=None,
                   help="where torch's reference runs (repeatable; default cpu, and cuda when "
                        "present); ratios are to the first")
    p.add_argument("--conv-precision", choices=["ieee", "tf32", "bf16"], default=None,
                   help="set torch.backends.mkldnn.conv.fp32_precision in both libraries: "
                        "'tf32' lets portagrad's cpu take Winograd F(4x4, 3x3) for 3x3 "
                        "convolutions (default: neither library's setting is touched)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.interleave < 0:
        p.error("--steps must be >= 1, --warmup and --interleave >= 0")
    if args.conv_precision is not None:
        import portagrad as pg

        pg.backends.mkldnn.conv.fp32_precision = args.conv_precision
        torch = _torch()
        if torch is not None:
            torch.backends.mkldnn.conv.fp32_precision = args.conv_precision
    with one_blas_thread():
        print(blas_line())
        if args.conv_precision is not None:
            print(f"mkldnn.conv.fp32_precision = {args.conv_precision!r} in both libraries")
        if _torch() is None:
            print("torch is not installed: printing portagrad figures only")
        if args.amp:
            bench_amp(args.model, args.device, args.steps, args.warmup, args.batch)
        else:
            bench(args.model, args.device, args.steps, args.warmup, args.batch, args.capture,
                  args.interleave, args.torch_device)


if __name__ == "__main__":
    main()
