"""16-bit GEMM and convolution on an OpenCL device: time and device memory, beside float32.

Run: ``python -m benchmarks.half16 [--device opencl:0] [--quick] [--default-paths]``, from the
repository root. Times ``a @ b`` of two ``n x n`` tensors (n = 1024; 512 with ``--quick``) and one
conv layer (N=16, C=64->64, 32x32, 3x3, padding 1: forward alone, then forward and the input
gradient) in float32, bfloat16 and float16, each the best of a few calls, and the device memory
allocated during one call above what was allocated before (``max_memory_allocated``, the result
included). Unless ``--default-paths``, the GPU GEMM kernel ("gpu3") and the implicit-GEMM
convolution are forced, as they run on a GPU, whatever the device.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import best_time, device_label, parse_args, sync


def _extra_mib(device: str, fn: Callable[[], Any]) -> float:
    import portagrad as pg

    sync(device)
    index = pg.device(device).index or 0
    base = pg.opencl.memory_allocated(index)
    pg.opencl.reset_peak_memory_stats(index)
    keep = fn()
    sync(device)
    del keep
    return (pg.opencl.max_memory_allocated(index) - base) / 2 ** 20


def _gemm(dev: str, dt: Any, n: int, reps: int) -> None:
    import portagrad as pg

    a = pg.randn(n, n, device=dev).to(dt)
    b = pg.randn(n, n, device=dev).to(dt)
    t = best_time(lambda: a @ b, lambda: sync(dev), reps)
    print(f"GEMM {n}^3 {dt}: {t * 1e3:.1f} ms, {2 * n ** 3 / t / 1e9:.2f} GFLOP/s, "
          f"extra {_extra_mib(dev, lambda: a @ b):.2f} MiB")


def _conv(dev: str, dt: Any, reps: int) -> None:
    import portagrad as pg
    import portagrad.nn.functional as F

    x = pg.randn(16, 64, 32, 32, device=dev).to(dt).requires_grad_()
    w = (pg.randn(64, 64, 3, 3, device=dev) * 0.05).to(dt)
    gy = pg.randn(16, 64, 32, 32, device=dev).to(dt)

    def fwd() -> Any:
        return F.conv2d(x.detach(), w, padding=1)

    def fwd_dgrad() -> Any:
        return pg.autograd.grad(F.conv2d(x, w, padding=1), x, gy)[0]

    tf = best_time(fwd, lambda: sync(dev), reps)
    tb = best_time(fwd_dgrad, lambda: sync(dev), reps)
    print(f"conv 16x64x32x32 3x3 -> 64 {dt}: forward {tf * 1e3:.1f} ms (extra "
          f"{_extra_mib(dev, fwd):.2f} MiB), forward + input gradient {tb * 1e3:.1f} ms "
          f"(extra {_extra_mib(dev, fwd_dgrad):.2f} MiB)")


def main(argv: list[str] | None = None) -> None:
    import portagrad as pg

    args = parse_args(__doc__.splitlines()[0], argv, lambda p: p.add_argument(
        "--default-paths", action="store_true", help="do not force gpu3 and implicit convolution"))
    dev = args.device
    if not args.default_paths:
        be = pg.empty(1, device=dev)._storage.backend
        be._force_gemm_kind, be._force_conv_kind = "gpu3", "implicit"
    print(f"device: {device_label(dev)}; "
          f"{'default paths' if args.default_paths else 'gpu3 GEMM and implicit convolution forced'}")
    reps = 2 if args.quick else 3
    for dt in (pg.float32, pg.bfloat16, pg.float16):
        _gemm(dev, dt, 512 if args.quick else 1024, reps)
    for dt in (pg.float32, pg.bfloat16, pg.float16):
        _conv(dev, dt, reps)


if __name__ == "__main__":
    main()
