"""1-D complex FFTs (``pg.fft.fft``) on the device against ``numpy.fft.fft`` on the host.

Run: ``python -m benchmarks.fft [--device opencl:0] [--quick] [--dtype complex64] [--exps 10,12]``,
from the repository root.

Sizes ``2^10 .. 2^20`` (``2^10, 2^14, 2^18`` with ``--quick``) of one transform, a prime size
(65537, through Bluestein's algorithm: a convolution of ``2^18``), a batch of 64 rows of 1024,
and ``rfft`` of real 64 x 1024 and ``2^18`` (against ``numpy.fft.rfft``).
The input already lives on the device; the time is the transform and a synchronisation. numpy
transforms the same array (the same dtype: numpy 2's pocketfft computes complex64 in single
precision) on the host. Figures are GFLOP/s by the usual ``5 n log2 n`` per transform, the same
count for both, so the ratio is the ratio of the times.
"""
from __future__ import annotations

import math

import numpy as np

from . import best_time, device_label, parse_args, report, sync


def _extra(p: object) -> None:
    p.add_argument("--dtype", default="complex64", choices=["complex64", "complex128"],  # type: ignore[attr-defined]
                   help="complex dtype of the transforms (default complex64)")
    p.add_argument("--exps", default=None,  # type: ignore[attr-defined]
                   help="comma-separated exponents e of the sizes 2^e of one transform "
                        "(default 10..20; 10,14,18 with --quick)")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, _extra)
    import portagrad as pg

    dev = args.device
    print(f"device: {device_label(dev)}")
    print(f"dtype: {args.dtype}")
    if args.exps:
        exps = [int(e) for e in args.exps.split(",")]
    else:
        exps = [10, 14, 18] if args.quick else list(range(10, 21))
    cases = [(f"n = 2^{e}", 1, 1 << e) for e in exps]
    cases += [("n = 65537 (prime, Bluestein)", 1, 65537), ("64 x 1024 (batch of rows)", 64, 1024)]
    repeat = 3 if args.quick else 5
    rng = np.random.default_rng(0)
    cases += [("rfft 64 x 1024 (real input)", 64, 1024), ("rfft n = 2^18 (real input)", 1, 1 << 18)]
    for what, batch, n in cases:
        real = what.startswith("rfft")
        host = rng.standard_normal((batch, n))
        if real:
            host = host.astype(np.float32 if args.dtype == "complex64" else np.float64)
        else:
            host = (host + 1j * rng.standard_normal((batch, n))).astype(args.dtype)
        ours, theirs = (pg.fft.rfft, np.fft.rfft) if real else (pg.fft.fft, np.fft.fft)
        x = pg.from_numpy(host).to(dev)
        sync(dev)
        number = max(1, (1 << 18) // (batch * n))
        t_ours = best_time(lambda: ours(x), lambda: sync(dev), repeat, number)  # noqa: B023 - timed within this iteration
        t_np = best_time(lambda: theirs(host), repeat=repeat, number=number)  # noqa: B023 - timed within this iteration
        # the complex count for both (a real transform does about half that work)
        gflop = 5 * n * math.log2(n) * batch / 1e9
        report(f"{what}, GFLOP/s", gflop / t_ours, gflop / t_np, "GFLOP/s")
        got = ours(x).cpu().numpy()
        ref = theirs(host.astype(np.float64 if real else np.complex128))
        err = np.abs(got - ref).max() / np.abs(ref).max()
        assert err < (1e-5 if args.dtype == "complex64" else 1e-12), (what, err)


if __name__ == "__main__":
    main()
