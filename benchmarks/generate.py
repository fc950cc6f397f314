"""Language-model inference with a static KV cache: portagrad eager, captured, and PyTorch CPU.

Run: ``python -m benchmarks.generate [--device DEV ...] [--dtype float32|bfloat16 ...]
[--batch N ...] [--prompt 128] [--new 32] [--layers 12] [--rounds 3] [--no-torch]
[--torch-device cpu|cuda]``, from the repository root (defaults: ``cpu``, float32, batch 1 and 8,
PyTorch on the CPU).

The model is :func:`benchmarks.gpt2.gpt2`, GPT-2 small's shape (12 layers, d_model 768, 12
heads, vocab 50257, context 1024, untied head), random weights made by PyTorch (seed 0) and
copied into portagrad, then cast to the dtype in both. Greedy decoding of ``--new`` tokens after
a random prompt of ``--prompt`` tokens, the cache sized ``prompt + new``. Per configuration
(device, dtype, batch) it prints:

- prefill: prompt tokens per second (``batch * prompt`` / the prompt's forward + first argmax);
- decode: mean milliseconds per generated token (per step of the whole batch, ``new - 1`` steps);

for portagrad eager, portagrad with the decode step captured
(``pg.compile(step, mode="reduce-overhead")``: replayed after one eager and two recorded calls;
the row says how many steps were replays and why it fell back if it did) and PyTorch on the CPU
or, with ``--torch-device cuda``, on a CUDA GPU (fp32 with TF32 off; ``torch.inference_mode``).
Both libraries use one BLAS / intra-op thread. Each round runs one whole generation of every
row in turn (after one untimed generation each), and the figures are medians over ``--rounds``
rounds, the ratio the median of the per-round ratios to PyTorch (``x`` > 1: portagrad is
faster): load that comes and goes on a shared machine falls on both.

Correctness, checked on every generation: the captured step's tokens equal portagrad eager's
(a replay is bit-identical to eager), and for float32 portagrad's tokens on a CPU device equal
PyTorch CPU's; for bfloat16, for GPUs and against CUDA (other summation orders, rounded
differently, so greedy paths may part) the fraction of equal tokens is printed. A mismatch that
must not happen aborts with exit status 1.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks import blas_line, device_label, one_blas_thread
from benchmarks.gpt2 import GPT2Config, StaticKVCache, greedy_generate, gpt2, make_step
from benchmarks.model_zoo import copy_state

__all__ = ["main", "run_config", "Row"]


class Row:
    """One library/mode of one configuration: its generate function and what it measured."""

    def __init__(self, who: str, gen: Callable[[], tuple[Any, float, float]]) -> None:
        self.who, self.gen = who, gen
        self.prefill: list[float] = []
        self.decode: list[float] = []
        self.tokens: np.ndarray | None = None
        self.note = ""
        #: float32 tokens must equal PyTorch CPU's (both sum in the same orders on a CPU)
        self.exact = True

    def run(self) -> np.ndarray:
        tokens, t_prefill, t_decode = self.gen()
        self.prefill.append(t_prefill)
        self.decode.append(t_decode)
        return np.asarray(tokens.numpy())


class Mismatch(RuntimeError):
    """Tokens that must be equal are not."""


def _torch(enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def _pg_rows(dev: str, dtype: str, tmodel: Any, pg_state: Any, cfg: GPT2Config,
             prompt: np.ndarray, new: int, capture: bool) -> list[Row]:
    import portagrad as pg

    model = gpt2(pg, cfg).eval()
    copy_state(tmodel if tmodel is not None else pg_state, model, pg, "cpu")
    model = model.to(device=dev, dtype=getattr(pg, dtype))
    B, T = prompt.shape
    x = pg.tensor(prompt, device=dev)

    def gen(step_of: Callable[[Any, StaticKVCache], Any]) -> Callable[[], Any]:
        cache = StaticKVCache(pg, cfg, B, T + new, dev, getattr(pg, dtype))
        step = step_of(model, cache)

        def run() -> Any:
            with pg.no_grad():
                return greedy_generate(pg, model, x, new, cache, step)
        run.step = step  # type: ignore[attr-defined]
        return run

    rows = [Row(f"portagrad {dev}", gen(make_step))]
    if capture:
        rows.append(Row(f"portagrad {dev} captured", gen(
            lambda m, c: pg.compile(make_step(m, c), mode="reduce-overhead"))))
    d = pg.device(dev)
    on_cpu = d.type == "cpu" or \
        getattr(pg, d.type).get_device_properties(d.index or 0).type.upper() == "CPU"
    for r in rows:
        r.exact = on_cpu
    return rows


def _torch_row(torch: Any, dtype: str, tmodel: Any, cfg: GPT2Config, prompt: np.ndarray,
               new: int, tdev: str = "cpu") -> Row:
    model = tmodel.to(device=tdev, dtype=getattr(torch, dtype))
    B, T = prompt.shape
    x = torch.tensor(prompt, device=tdev)
    cache = StaticKVCache(torch, cfg, B, T + new, tdev, getattr(torch, dtype))

    def run() -> Any:
        with torch.inference_mode():
            return greedy_generate(torch, model, x, new, cache)
    return Row(f"torch {tdev}", run)


def _check(rows: list[Row], ref: Row, tokens: dict[str, np.ndarray], dtype: str) -> None:
    """Compare this round's tokens; raise :class:`Mismatch` where they must be equal."""
    for r in rows:
        t = tokens[r.who]
        if r.who.endswith(" captured"):
            eager = tokens[r.who[: -len(" captured")]]
            if not np.array_equal(t, eager):
                raise Mismatch(f"{r.who}: the captured step's tokens differ from eager's "
                               f"({int((t != eager).sum())} of {t.size})")
        if r is ref:
            continue
        if dtype == "float32" and ref.who == "torch cpu" and r.exact and \
                not np.array_equal(t, tokens[ref.who]):
            raise Mismatch(f"{r.who}: float32 greedy tokens differ from PyTorch's "
                           f"({int((t != tokens[ref.who]).sum())} of {t.size}): first rows\n"
                           f"{t[:2]}\nvs\n{tokens[ref.who][:2]}")
        r.note = f"tokens = {ref.who}'s: {float((t == tokens[ref.who]).mean()):.0%}"


def run_config(devices: list[str], dtype: str, batch: int, cfg: GPT2Config, prompt_len: int,
               new: int, rounds: int, torch: Any, capture: bool = True,
               seed: int = 0, torch_device: str = "cpu") -> list[Row]:
    """Build every row of one (dtype, batch) configuration, run ``rounds`` interleaved rounds
    after one warm-up round, check the tokens each round and return the rows (torch first when
    present)."""
    import portagrad as pg

    rng = np.random.default_rng(seed)
    prompt = rng.integers(0, cfg.vocab, (batch, prompt_len))
    tmodel = pg_state = None
    if torch is not None:
        torch.manual_seed(seed)
        tmodel = gpt2(torch, cfg).eval()
    else:
        pg.manual_seed(seed)
        pg_state = gpt2(pg, cfg)
    rows: list[Row] = []
    for dev in devices:
        rows += _pg_rows(dev, dtype, tmodel, pg_state, cfg, prompt, new, capture)
    if torch is not None:
        rows.insert(0, _torch_row(torch, dtype, tmodel, cfg, prompt, new, torch_device))
    ref = rows[0]
    for i in range(rounds + 1):
        tokens = {r.who: r.run() for r in rows}
        _check(rows, ref, tokens, dtype)
        if i == 0:  # warm-up round: caches, kernel builds, the captured step's recording
            for r in rows:
                r.prefill.clear()
                r.decode.clear()
    if torch is not None and dtype == "float32" and ref.who == "torch cpu" and \
            any(r.exact for r in rows[1:]):
        ref.note = "portagrad's float32 tokens on CPU devices equal these"
    for r in rows:
        st = getattr(r.gen, "step", None)
        if st is not None and hasattr(st, "stats"):
            s = st.stats
            r.note = (f"{r.note}; " if r.note else "") + (
                f"{s['replays']}/{s['calls']} steps replayed"
                + (f", fell back: {s['last_fallback']}" if s["last_fallback"] else ""))
    return rows


def _print(rows: list[Row], batch: int, prompt_len: int, new: int) -> None:
    ref = rows[0] if rows[0].who.startswith("torch ") else None
    for r in rows:
        pf = batch * prompt_len / statistics.median(r.prefill)
        ms = statistics.median(r.decode) / (new - 1) * 1000
        line = f"  {r.who:<28} {pf:10.1f} tok/s {ms:10.2f} ms/token"
        if ref is not None and r is not ref:
            pr = statistics.median(a / b for a, b in zip(ref.prefill, r.prefill))
            dr = statistics.median(a / b for a, b in zip(ref.decode, r.decode))
            line += f"   vs torch: prefill {pr:5.2f}x decode {dr:5.2f}x"
        print(line + (f"   [{r.note}]" if r.note else ""), flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.generate")
    p.add_argument("--device", action="append", default=None,
                   help="portagrad device (repeatable; default cpu)")
    p.add_argument("--dtype", action="append", choices=["float32", "bfloat16"], default=None,
                   help="repeatable; default float32")
    p.add_argument("--batch", action="append", type=int, default=None,
                   help="repeatable; default 1 and 8")
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--new", type=int, default=32)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--rounds", type=int, default=3, help="timed rounds (after one warm-up)")
    p.add_argument("--no-torch", action="store_true", help="portagrad only")
    p.add_argument("--no-capture", action="store_true", help="no captured-step rows")
    p.add_argument("--torch-device", choices=["cpu", "cuda"], default="cpu",
                   help="where PyTorch's reference runs (cuda: fp32 with TF32 off)")
    args = p.parse_args(argv)
    cfg = GPT2Config(layers=args.layers)
    if args.new < 2 or args.prompt < 1 or args.rounds < 1 or args.prompt + args.new > cfg.ctx:
        p.error(f"need --new >= 2, --prompt >= 1, --rounds >= 1 and prompt + new <= {cfg.ctx}")
    devices = args.device or ["cpu"]
    torch = _torch(not args.no_torch)
    if torch is not None and args.torch_device == "cuda":
        if not torch.cuda.is_available():
            p.error("--torch-device cuda: PyTorch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    with one_blas_thread():
        try:
            print(blas_line())
            for dev in devices:
                print(device_label(dev))
            if torch is None:
                print("no PyTorch (--no-torch or not installed): portagrad figures only")
            print(f"GPT-2 small shape, {args.layers} layers; prompt {args.prompt}, {args.new} new "
                  f"tokens (greedy), static KV cache; medians of {args.rounds} interleaved rounds",
                  flush=True)
            for dtype in args.dtype or ["float32"]:
                for batch in args.batch or [1, 8]:
                    print(f"{dtype}, batch {batch}:", flush=True)
                    rows = run_config(devices, dtype, batch, cfg, args.prompt, args.new,
                                      args.rounds, torch, not args.no_capture,
                                      torch_device=args.torch_device)
                    if torch is not None and dtype == "float32" and rows[0].note:
                        print("  correctness: portagrad's greedy tokens (eager and captured) on "
                              "CPU devices equal PyTorch's on every round", flush=True)
                    _print(rows, batch, args.prompt, args.new)
        except Mismatch as e:
            print(f"TOKEN MISMATCH: {e}", file=sys.stderr, flush=True)
            raise SystemExit(1) from e


if __name__ == "__main__":
    main()
