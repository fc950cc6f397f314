"""SGEMM throughput through the public API (``a @ b``) vs numpy (BLAS), a plain 16x16 local-memory
tiled OpenCL kernel and, when torch is importable, torch fp32 (CUDA with TF32 off if available).

Run: ``python -m benchmarks.gemm [--device opencl:0] [--quick] [--sizes 256,512,1024]
[--kinds cpu,gpu3]``, from the repository root. ``--kinds`` times several of our GEMM kernel
families (``PORTAGRAD_OPENCL_GEMM`` values: cpu, gpu3) in one run.
"""
from __future__ import annotations

import numpy as np

from . import backend_device, best_time, device_label, parse_args, report, sync

_TILED16 = """
__kernel void tiled16(__global const float* A, __global const float* B, __global float* C, int N)
{
    __local float As[16][16], Bs[16][16];
    int tx = get_local_id(0), ty = get_local_id(1);
    int col = get_group_id(0) * 16 + tx, row = get_group_id(1) * 16 + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < N; k0 += 16) {
        As[ty][tx] = A[row * N + k0 + tx];
        Bs[ty][tx] = B[(k0 + ty) * N + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * N + col] = acc;
}
"""


def _tiled16_seconds(device: str, n: int, a, b, c, repeat: int) -> float:
    """Seconds per call of the textbook 16x16 local-memory kernel (n a multiple of 16)."""
    import pyopencl as cl

    dev = backend_device(device)
    k = cl.Kernel(cl.Program(dev.context, _TILED16).build(), "tiled16")
    k.set_scalar_arg_dtypes([None, None, None, np.int32])
    bufs = [t._storage.buffer.mem for t in (a, b, c)]
    return best_time(lambda: k(dev.queue, (n, n), (16, 16), *bufs, n), dev.queue.finish, repeat)


def _torch_seconds(n: int, repeat: int) -> tuple[float, str] | None:
    try:
        import torch
    except Exception:
        return None
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    s = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    number = 10 if dev == "cuda" else 1
    return best_time(lambda: a @ b, s, repeat, number), f"torch-{dev}"


def _tuned(dev) -> str | None:
    """The GEMM kernel and tile the device's tuner chose for its latest product, if any."""
    from portagrad.backends.opencl.gemm import tuner

    return tuner(dev).last


def main(argv: list[str] | None = None) -> None:
    def extra(p):
        p.add_argument("--sizes", default=None, help="comma-separated n for n^3 GEMMs")
        p.add_argument("--kinds", default=None,
                       help="comma-separated GEMM kernel families to time (default: the device's)")

    args = parse_args(__doc__.splitlines()[0], argv, extra)
    import portagrad as pg

    dev = args.device
    print(f"device: {device_label(dev)}")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else \
        ([256, 1024] if args.quick else [256, 512, 1024])
    kinds = args.kinds.split(",") if args.kinds else [None]
    repeat = 2 if args.quick else 3
    be = backend_device(dev) if pg.device(dev).type == "opencl" else None
    from portagrad.plugins.manager import get_backend

    for n in sizes:
        an = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
        bn = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)
        a, b = pg.from_numpy(an).to(dev), pg.from_numpy(bn).to(dev)
        flops = 2 * n ** 3
        # back-to-back products between synchronisations on GPUs, as torch's are timed (10)
        number = max(10, int(2e9 // flops)) if be is not None and be.is_gpu else 1
        t_np = best_time(lambda: an @ bn, repeat=repeat)  # noqa: B023 - timed within this iteration
        ref = an.astype(np.float64) @ bn.astype(np.float64)
        for kind in kinds:
            backend = get_backend(pg.device(dev).type) if be is not None else None
            if backend is not None:
                backend._force_gemm_kind = kind
            try:
                t = best_time(lambda: a @ b, lambda: sync(dev), repeat, number)  # noqa: B023 - timed within this iteration
                c = (a @ b).cpu().numpy()
            finally:
                if backend is not None:
                    backend._force_gemm_kind = None
            err = np.abs(c - ref).max() / np.abs(ref).max()
            if kind is None and be is not None:  # what the tuner chose for this size
                kind = _tuned(be)
            label = f"SGEMM {n}^3 [{kind or 'default'}] GFLOP/s (err {err:.0e})"
            report(label, flops / t / 1e9, flops / t_np / 1e9, "GFLOP/s")
        if be is not None and n % 16 == 0:
            c = pg.empty(n, n, device=dev)
            t16 = _tiled16_seconds(dev, n, a, b, c, repeat)
            print(f"{'  16x16 local-memory tiled kernel, GFLOP/s':<50} {flops / t16 / 1e9:10.3f}", flush=True)
        tt = _torch_seconds(n, repeat)
        if tt is not None:
            print(f"{'  ' + tt[1] + ' fp32 (TF32 off), GFLOP/s':<50} {flops / tt[0] / 1e9:10.3f}", flush=True)


if __name__ == "__main__":
    main()
