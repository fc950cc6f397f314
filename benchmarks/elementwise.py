"""Elementwise bandwidth (``a*b+c``) and the per-op cost of long chains of small ops.

Run: ``python -m benchmarks.elementwise [--device opencl:0] [--quick]``.

``a*b+c`` is two portagrad ops (a temporary in between), as in numpy; both sides are reported as
*effective* bandwidth, ``16 bytes * n / time`` (three reads and one write of a fused kernel), so
the ratio is simply numpy's time over ours. The chains time 1000 dependent ops
(``y = y * 1.0001 + 0.5`` on 1000 elements, then one ``.cpu()``; and a broadcast ``a + b``) per op,
through the public API, against numpy doing the same.
"""
from __future__ import annotations

import time

import numpy as np

from . import best_time, device_label, parse_args, report, sync


def _chain_cost(fn, reps: int) -> float:
    """Best seconds per op of ``fn`` (which runs the whole chain and reads the result)."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        ops = fn()
        best = min(best, (time.perf_counter() - t) / ops)
    return best


def main(argv: "list[str] | None" = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    import portagrad as pg

    dev = args.device
    print(f"device: {device_label(dev)}")
    sizes = [1_000, 100_000, 10_000_000] if args.quick else \
        [1_000, 10_000, 100_000, 1_000_000, 10_000_000]
    rng = np.random.default_rng(0)
    for n in sizes:
        an, bn, cn = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
        a, b, c = (pg.from_numpy(x).to(dev) for x in (an, bn, cn))
        number = max(1, min(2000, int(2e7 // (16 * n))))
        repeat = 3 if args.quick else 7
        t_ours = best_time(lambda: a * b + c, lambda: sync(dev), repeat, number)
        t_np = best_time(lambda: an * bn + cn, repeat=repeat, number=number)
        got = (a * b + c).cpu().numpy()
        assert np.allclose(got, an * bn + cn, rtol=1e-6, atol=1e-6)
        report(f"a*b+c float32 n={n:.0e}, effective GB/s", 16 * n / t_ours / 1e9, 16 * n / t_np / 1e9,
               "GB/s")

    # chains of small ops: enqueue cost per op, one synchronisation at the end
    m, ops = 1000, 1000
    xn = rng.standard_normal(m).astype(np.float32)
    x = pg.from_numpy(xn).to(dev)

    def chain() -> int:
        y = x
        for _ in range(ops // 2):
            y = y * 1.0001 + 0.5
        y.cpu()
        return ops

    def chain_np() -> int:
        y = xn
        for _ in range(ops // 2):
            y = y * np.float32(1.0001) + np.float32(0.5)
        y.copy()
        return ops

    reps = 3 if args.quick else 7
    report(f"chain y*1.0001+0.5, {ops} ops on {m} el., us/op", _chain_cost(chain, reps) * 1e6,
           _chain_cost(chain_np, reps) * 1e6, "us", higher_is_better=False)

    mn, rn = rng.standard_normal((25, 40)).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    mat, row = pg.from_numpy(mn).to(dev), pg.from_numpy(rn).to(dev)

    def bchain() -> int:
        for _ in range(ops):
            z = mat + row
        z.cpu()
        return ops

    def bchain_np() -> int:
        for _ in range(ops):
            z = mn + rn
        z.copy()
        return ops

    report("broadcast (25,40)+(40,), 1000 ops, us/op", _chain_cost(bchain, reps) * 1e6,
           _chain_cost(bchain_np, reps) * 1e6, "us", higher_is_better=False)
    # a large broadcast (bias add): strided kernels
    R, C = (1000, 1000)
    Mn, Rn = rng.standard_normal((R, C)).astype(np.float32), rng.standard_normal(C).astype(np.float32)
    M, Rw = pg.from_numpy(Mn).to(dev), pg.from_numpy(Rn).to(dev)
    t_ours = best_time(lambda: M + Rw, lambda: sync(dev), 5, 20)
    t_np = best_time(lambda: Mn + Rn, repeat=5, number=20)
    assert np.array_equal((M + Rw).cpu().numpy(), Mn + Rn)
    report(f"broadcast ({R},{C})+({C},), GB/s (8 B/el.)", 8 * R * C / t_ours / 1e9,
           8 * R * C / t_np / 1e9, "GB/s")


if __name__ == "__main__":
    main()
