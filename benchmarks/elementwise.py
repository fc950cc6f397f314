"""Elementwise bandwidth (``a*b+c``) and the per-op cost of long chains of small ops.

Run: ``python -m benchmarks.elementwise [--device opencl:0] [--quick]``, from the repository root.

``a*b+c`` is two portagrad ops, as in numpy; both sides are reported as *effective* bandwidth,
``16 bytes * n / time`` (three reads and one write), so the ratio is simply numpy's time over
ours. On OpenCL the two ops are fused into one kernel (``backends/opencl/fusion.py``) and the
temporary ``a*b`` is never written; the unfused figure (``PORTAGRAD_OPENCL_FUSION=0``'s path) is
printed beside it. So that fusion cannot skip or share work, every evaluation has inputs of its
own and its result is kept alive until the timing ends (dead results are legitimately never
computed), on both sides. The chains time 1000 dependent ops
(``y = y * 1.0001 + 0.5`` on 1000 elements, then one ``.cpu()``; and a broadcast ``a + b``) per op,
through the public API, against numpy doing the same.
"""
from __future__ import annotations

import time

import numpy as np

from . import backend_device, best_time, device_label, parse_args, report, sync


def _chain_cost(fn, reps: int) -> float:
    """Best seconds per op of ``fn`` (which runs the whole chain and reads the result)."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        ops = fn()
        best = min(best, (time.perf_counter() - t) / ops)
    return best


def _kept_time(fn, sync_fn, repeat: int, number: int) -> float:
    """Best seconds per call of ``fn(i)``, ``i < number``, every result kept until after
    ``sync_fn`` (after one warm-up round)."""
    best = float("inf")
    for r in range(repeat + 1):
        t = time.perf_counter()
        keep = [fn(i) for i in range(number)]
        sync_fn()
        if r:
            best = min(best, (time.perf_counter() - t) / number)
        del keep
    return best


def _is_gpu(dev) -> bool:
    import portagrad as pg

    d = pg.device(dev)
    return d.type == "opencl" and backend_device(dev).is_gpu


def _fuser(dev):
    """The OpenCL backend's fuser behind ``dev`` (None on other devices or with fusion off)."""
    import portagrad as pg
    from portagrad.plugins.manager import get_backend

    if pg.device(dev).type != "opencl":
        return None
    return get_backend("opencl")._fz


class _unfused:
    """Fusion off for the body (what ``PORTAGRAD_OPENCL_FUSION=0`` gives), for comparison."""

    def __init__(self, dev):
        from portagrad.plugins.manager import get_backend

        self.be = get_backend("opencl")

    def __enter__(self):
        self.fz = self.be._fz
        self.fz.flush()
        self.be._fz = None

    def __exit__(self, *exc):
        self.be._fz = self.fz


def _abc(dev: str, n: int, rng: np.random.Generator, repeat: int, unfused_too: bool) -> None:
    """Report ``a*b+c`` on ``n`` float32 elements (and unfused too, when asked and possible).
    Every evaluation in one timing has inputs of its own; they are freed when this returns."""
    import portagrad as pg

    number = max(1, min(2000, int(2e7 // (16 * n))))
    trip = [[rng.standard_normal(n).astype(np.float32) for _ in range(3)] for _ in range(number)]
    dtrip = [[pg.from_numpy(x).to(dev) for x in t] for t in trip]

    def ours(i: int):
        return dtrip[i][0] * dtrip[i][1] + dtrip[i][2]

    t_ours = _kept_time(ours, lambda: sync(dev), repeat, number)
    t_np = _kept_time(lambda i: trip[i][0] * trip[i][1] + trip[i][2], lambda: None, repeat, number)
    assert np.array_equal(ours(0).cpu().numpy(), trip[0][0] * trip[0][1] + trip[0][2])
    report(f"a*b+c float32 n={n:.0e}, effective GB/s", 16 * n / t_ours / 1e9, 16 * n / t_np / 1e9,
           "GB/s")
    if unfused_too and _fuser(dev) is not None:
        with _unfused(dev):
            t_un = _kept_time(ours, lambda: sync(dev), repeat, number)
        report("  the same unfused, effective GB/s", 16 * n / t_un / 1e9, 16 * n / t_np / 1e9, "GB/s")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    import portagrad as pg

    dev = args.device
    print(f"device: {device_label(dev)}")
    sizes = [1_000, 100_000, 10_000_000] if args.quick else \
        [1_000, 10_000, 100_000, 1_000_000, 10_000_000]
    if _is_gpu(dev):  # 1e7 is launch-latency bound on a GPU: add a size that measures bandwidth
        sizes.append(100_000_000)
    rng = np.random.default_rng(0)
    repeat = 3 if args.quick else 7
    for n in sizes:
        _abc(dev, n, rng, repeat, unfused_too=n == sizes[-1])

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
    t_np_chain = _chain_cost(chain_np, reps) * 1e6
    report(f"chain y*1.0001+0.5, {ops} ops on {m} el., us/op", _chain_cost(chain, reps) * 1e6,
           t_np_chain, "us", higher_is_better=False)
    if _fuser(dev) is not None:
        with _unfused(dev):
            report("  the same unfused, us/op", _chain_cost(chain, reps) * 1e6, t_np_chain, "us",
                   higher_is_better=False)

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
