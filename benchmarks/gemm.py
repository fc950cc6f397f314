"""SGEMM/DGEMM throughput: our register-blocked kernel vs numpy (BLAS) and a plain 16x16 tiled kernel.

Run: ``python -m benchmarks.gemm [N]`` (default 1024).
"""
from __future__ import annotations

import sys

import numpy as np

from . import backend, best_time, empty, report, to_device

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


def _tiled16_gflops(n: int, a: object, b: object, c: object) -> float:
    """GFLOP/s of the textbook 16x16 local-memory kernel (n must be a multiple of 16)."""
    import pyopencl as cl

    dev = backend().device(0)
    k = cl.Kernel(cl.Program(dev.context, _TILED16).build(), "tiled16")
    k.set_scalar_arg_dtypes([None, None, None, np.int32])
    t = best_time(lambda: k(dev.queue, (n, n), (16, 16), a.buffer.mem, b.buffer.mem, c.buffer.mem, n),
                  dev.queue.finish, repeat=2)
    return 2 * n ** 3 / t / 1e9


def main(n: int = 1024) -> None:
    be = backend()
    dev = be.device(0)
    print(f"device: {dev.label}; matmul {n}x{n}x{n}")
    for dt in (np.float32, np.float64):
        an = np.random.default_rng(0).standard_normal((1, n, n)).astype(dt)
        bn = np.random.default_rng(1).standard_normal((1, n, n)).astype(dt)
        a, b, c = to_device(an), to_device(bn), empty((1, n, n), dt)
        ours = best_time(lambda: be.matmul(a, b, c), dev.queue.finish, repeat=3)
        cn = np.empty_like(an)
        theirs = best_time(lambda: np.matmul(an, bn, out=cn), repeat=3)
        err = np.abs(be.to_host(c) - cn).max() / np.abs(cn).max()
        flops = 2 * n ** 3
        report(f"{np.dtype(dt).name} GEMM GFLOP/s (rel err {err:.1e})", flops / ours / 1e9,
               flops / theirs / 1e9, "GFLOP/s")
        if dt is np.float32 and n % 16 == 0:
            g16 = _tiled16_gflops(n, a, b, c)
            print(f"{'  16x16 local-memory tiled kernel':<44} {g16:10.3f} GFLOP/s "
                  f"(ours is {flops / ours / 1e9 / g16:.2f}x that)", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1024)
