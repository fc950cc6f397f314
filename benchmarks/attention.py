"""Fused ``scaled_dot_product_attention`` against the composed one (q k^T, mask, softmax, @ v):
forward plus backward time and peak memory, for GPT-ish shapes.

Run: ``python -m benchmarks.attention [--device opencl:0] [--quick] [--lengths 256,1024]
[--batch 8]``, from the repository root. For each length L = S, times causal attention of
(B, H=12, L, D=64) float32 tensors, forward and backward of ``out.sum()``, the best of a few
runs, once through the fused primitives and once composed (the fused path switched off), and
reports the peak memory allocated above what was allocated before (``max_memory_allocated`` of
the device's module; on ``cpu``, tracemalloc's peak; the composed path keeps the (B, H, L,
S) weights for backward). BLAS runs on one thread (numpy backend and portagrad's host GEMMs).
"""
from __future__ import annotations

from typing import Any

from . import best_time, blas_line, device_label, one_blas_thread, parse_args, sync


def _run(dev: str, q: Any, k: Any, v: Any) -> None:
    import portagrad.nn.functional as F

    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.sum().backward()
    for t in (q, k, v):
        t.grad = None


def _peak_mib(dev: str, fn: Any) -> float:
    import portagrad as pg

    d = pg.device(dev)
    if d.type == "cpu":  # numpy memory has no device accounting: Python's tracemalloc sees it
        import tracemalloc

        pg.cpu.empty_cache()  # pooled buffers would hide what a run allocates
        tracemalloc.start()
        try:
            fn()
            return tracemalloc.get_traced_memory()[1] / 2 ** 20
        finally:
            tracemalloc.stop()
    mod = getattr(pg, d.type)
    index = d.index or 0
    sync(dev)
    base = mod.memory_allocated(index)
    mod.reset_peak_memory_stats(index)
    fn()
    sync(dev)
    return (mod.max_memory_allocated(index) - base) / 2 ** 20


def main(argv: list[str] | None = None) -> None:
    def extra(p: Any) -> None:
        p.add_argument("--lengths", default=None, help="comma-separated L = S (default 256,1024)")
        p.add_argument("--batch", type=int, default=8)

    args = parse_args(__doc__.splitlines()[0], argv, extra)
    import portagrad as pg
    from portagrad._ops.nn import attention as node

    dev = args.device
    lengths = [int(s) for s in (args.lengths or ("256" if args.quick else "256,1024")).split(",")]
    reps = 2 if args.quick else 3
    print(device_label(dev))
    print(blas_line())
    fused_ok = node.fused_ok
    # the fused kernels themselves, also where the backend prefers to compose (CPU OpenCL devices)
    be = pg.empty(1, device=dev)._storage.backend
    if hasattr(be, "_force_fused_attention"):
        be._force_fused_attention = True
    with one_blas_thread():
        for L in lengths:
            shape = (args.batch, 12, L, 64)
            q, k, v = (pg.randn(*shape, device=dev, requires_grad=True) for _ in range(3))
            res = {}
            for name in ("fused", "composed"):
                node.fused_ok = fused_ok if name == "fused" else (lambda *a: False)  # type: ignore[assignment]
                try:
                    def step(q: Any = q, k: Any = k, v: Any = v) -> None:
                        _run(dev, q, k, v)
                    t = best_time(step, lambda: sync(dev), reps)
                    mib = _peak_mib(dev, step)
                finally:
                    node.fused_ok = fused_ok  # type: ignore[assignment]
                res[name] = (t, mib)
                print(f"B={args.batch} H=12 L=S={L} D=64 causal float32 {name}: fwd+bwd "
                      f"{t * 1e3:.1f} ms, peak extra {mib:.1f} MiB")
            (tf, mf), (tc, mc) = res["fused"], res["composed"]
            print(f"  composed/fused time {tc / tf:.2f} (> 1: fused faster), peak memory fused "
                  f"{mf:.1f} vs composed {mc:.1f} MiB")


if __name__ == "__main__":
    main()
