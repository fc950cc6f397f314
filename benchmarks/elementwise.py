"""Elementwise bandwidth (``a*b+c``) and the per-op cost of a chain of small enqueues.

Run: ``python -m benchmarks.elementwise [N]`` (default 1e7). Bandwidth counts the 16 bytes per
element of a fused ``a*b+c`` (three reads, one write) for both sides; both sides run two passes
(``mul`` then ``add``; numpy with ``out=``).
"""
from __future__ import annotations

import sys

import numpy as np

from . import backend, best_time, empty, report, to_device


def main(n: int = 10_000_000) -> None:
    be = backend()
    dev = be.device(0)
    print(f"device: {dev.label}")
    rng = np.random.default_rng(0)
    an, bn, cn = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    a, b, c = to_device(an), to_device(bn), to_device(cn)
    t, o = empty((n,)), empty((n,))

    def ours() -> None:
        be.binary("mul", a, b, t)
        be.binary("add", t, c, o)

    tn, on = np.empty_like(an), np.empty_like(an)

    def theirs() -> None:
        np.multiply(an, bn, out=tn)
        np.add(tn, cn, out=on)

    t_ours = best_time(ours, dev.queue.finish)
    t_np = best_time(theirs)
    assert np.array_equal(be.to_host(o), on)
    report(f"a*b+c float32 n={n:.0e} GB/s", 16 * n / t_ours / 1e9, 16 * n / t_np / 1e9, "GB/s")

    # per-op cost of many small enqueues with one synchronisation at the end
    m, reps = 1000, 2000
    xs, ys = to_device(an[:m]), to_device(bn[:m])
    zs = empty((m,))
    xn, yn, zn = an[:m], bn[:m], np.empty(m, np.float32)

    def chain() -> None:
        for _ in range(reps):
            be.binary("add", xs, ys, zs)

    def chain_np() -> None:
        for _ in range(reps):
            np.add(xn, yn, out=zn)

    per_ours = best_time(chain, dev.queue.finish, repeat=3) / reps * 1e6
    per_np = best_time(chain_np, repeat=3) / reps * 1e6
    report(f"chain of {reps} adds on {m} elements, us/op", per_ours, per_np, "us", higher_is_better=False)
    # the same on strided (broadcast) operands: the rank-2 kernel with shape/stride arguments
    from portagrad.backends.interface import View

    row = to_device(an[:40])
    bc = View(row.buffer, 0, (25, 40), (0, 1), row.dtype)
    mat = to_device(bn[:m].reshape(25, 40))
    out2 = empty((25, 40))

    def chain_bc() -> None:
        for _ in range(reps):
            be.binary("add", mat, bc, out2)

    mn, rn, on2 = bn[:m].reshape(25, 40), an[:40], np.empty((25, 40), np.float32)

    def chain_bc_np() -> None:
        for _ in range(reps):
            np.add(mn, rn, out=on2)

    report("chain of broadcast adds (25x40 + 40), us/op", best_time(chain_bc, dev.queue.finish, repeat=3)
           / reps * 1e6, best_time(chain_bc_np, repeat=3) / reps * 1e6, "us", higher_is_better=False)


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000)
