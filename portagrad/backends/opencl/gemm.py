"""Batched GEMM kernels: ``out[b] = a[b] @ b[b]`` on arbitrary strided operands.

Two kernel families, chosen by device type:

* **CPU** (PoCL and other CPU drivers): no local memory and no barriers. PoCL keeps values that
  live across a barrier in per-work-item memory, so a classic local-memory tiled kernel spills its
  accumulators and ran at ~7 GFLOP/s here, while a barrier-free kernel in which each work-item
  owns an ``RM x (V*W)`` block of ``floatW`` accumulators ran at 30-40 GFLOP/s. Measured detail: the
  ``fma()`` builtin goes through a slow path in PoCL (15 GFLOP/s); ``c += a * b`` with
  ``FP_CONTRACT ON`` compiles to hardware FMA. The full blocks of ``out`` go to this kernel; the
  ragged right and bottom strips (fewer than ``RM`` rows / ``V*W`` columns) to a simple
  one-element-per-work-item kernel.
* **GPU**: the classic register-blocked tiled kernel: a work-group of 16x16 work-items computes a
  128x128 tile, 8x8 per work-item, staging ``TK``-deep slices of ``a`` and ``b`` in local memory.
  Loads are bounds-checked (zero padding) and stores guarded, so any size works in one launch.

Strides (in elements) and offsets are kernel arguments, so a transposed operand (swapped strides)
or a broadcast batch (batch stride 0) needs no copy. Variants are keyed by dtype and by whether
``b``'s and ``out``'s column strides are 1 (vector loads/stores), never by sizes.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .kernels import CTYPE

__all__ = ["GemmPlan", "gemm_source", "launch_gemm", "CPU_BLOCK", "GPU_TILE"]

#: CPU register block: (rows per work-item, vectors per row) and vector width by dtype
CPU_BLOCK = {"float32": (8, 2, 8), "float64": (8, 2, 4)}
#: GPU tile: (tile M, tile N, tile K, work-items in x, work-items in y)
GPU_TILE = (128, 128, 8, 16, 16)

_LANES = "0123456789abcdef"
_ARGS = ("__global const {t}* A, long ao, long sab, long sam, long sak, "
         "__global const {t}* B, long bo, long sbb, long sbk, long sbn, "
         "__global {t}* C, long co, long scb, long scm, long scn, long M, long N, long K")
# scalar argument dtypes matching _ARGS (plus two row/col origins for the edge kernel)
_ARG_TYPES = [None] + [np.int64] * 4 + [None] + [np.int64] * 4 + [None] + [np.int64] * 7


class GemmPlan:
    """What :func:`gemm_source` generated: the program key, source and kernel names."""

    __slots__ = ("key", "source", "dtype")

    def __init__(self, key: tuple, source: str, dtype: str) -> None:
        self.key = key
        self.source = source
        self.dtype = dtype


def _edge_kernel(t: str) -> str:
    # one element per work-item over the rectangle [r0, r0 + rows) x [c0, c0 + cols) given by
    # the global size; accumulates in the output type
    return f"""
__kernel void gemm_edge({_ARGS.format(t=t)}, long r0, long c0)
{{
    long n = c0 + get_global_id(0), m = r0 + get_global_id(1), bt = get_global_id(2);
    __global const {t}* a = A + ao + bt * sab + m * sam;
    __global const {t}* b = B + bo + bt * sbb + n * sbn;
    {t} acc = 0;
    for (long k = 0; k < K; ++k) acc += a[k * sak] * b[k * sbk];
    C[co + bt * scb + m * scm + n * scn] = acc;
}}
"""


def _cpu_kernel(t: str, dtype: str, b_unit: bool, c_unit: bool) -> str:
    rm, v, w = CPU_BLOCK[dtype]
    vt = f"{t}{w}"
    acc = "\n    ".join(f"{vt} c{i}_{j} = 0;" for i in range(rm) for j in range(v))
    if b_unit:
        bl = "".join(f"{vt} b{j} = vload{w}(0, bk + {j * w});\n        " for j in range(v))
    else:
        bl = "".join(
            f"{vt} b{j} = ({vt})(" + ", ".join(f"bk[{j * w + l} * sbn]" for l in range(w)) + ");\n        "
            for j in range(v))
    al = "".join(f"{t} a{i} = ak[{i} * sam];\n        " for i in range(rm))
    fma = "\n        ".join(f"c{i}_{j} += a{i} * b{j};" for i in range(rm) for j in range(v))
    stores = []
    for i in range(rm):
        for j in range(v):
            if c_unit:
                stores.append(f"vstore{w}(c{i}_{j}, 0, cp + {i} * scm + {j * w});")
            else:
                stores.extend(f"cp[{i} * scm + {j * w + l} * scn] = c{i}_{j}.s{_LANES[l]};"
                              for l in range(w))
    st = "\n    ".join(stores)
    return f"""
__kernel void gemm_main({_ARGS.format(t=t)})
{{
    long col = get_global_id(0) * {v * w}, row = get_global_id(1) * {rm}, bt = get_global_id(2);
    __global const {t}* ak = A + ao + bt * sab + row * sam;
    __global const {t}* bk = B + bo + bt * sbb + col * sbn;
    {acc}
    for (long k = 0; k < K; ++k) {{
        {bl}{al}{fma}
        ak += sak; bk += sbk;
    }}
    __global {t}* cp = C + co + bt * scb + row * scm + col * scn;
    {st}
}}
"""


def _gpu_kernel(t: str) -> str:
    tm, tn, tk, lx, ly = GPU_TILE
    rm, rn = tm // ly, tn // lx  # 8 x 8 per work-item
    nt = lx * ly
    acc = "\n    ".join(f"{t} c{i}_{j} = 0;" for i in range(rm) for j in range(rn))
    # work-item (x, y) owns rows y + ly*i and columns x + lx*j: neighbouring work-items touch
    # neighbouring columns, so global stores and local reads are coalesced / conflict-free
    inner = "\n            ".join(
        [f"{t} a{i} = As[k][ty + {ly * i}];" for i in range(rm)]
        + [f"{t} b{j} = Bs[k][tx + {lx * j}];" for j in range(rn)]
        + [f"c{i}_{j} += a{i} * b{j};" for i in range(rm) for j in range(rn)])
    stores = "\n    ".join(
        f"if (m0 + {ly * i} < M && n0 + {lx * j} < N) "
        f"cb[(m0 + {ly * i}) * scm + (n0 + {lx * j}) * scn] = c{i}_{j};"
        for i in range(rm) for j in range(rn))
    return f"""
__kernel __attribute__((reqd_work_group_size({lx}, {ly}, 1)))
void gemm_main({_ARGS.format(t=t)})
{{
    __local {t} As[{tk}][{tm + 1}];
    __local {t} Bs[{tk}][{tn + 1}];
    int tx = get_local_id(0), ty = get_local_id(1), tid = ty * {lx} + tx;
    long gm = get_group_id(1) * {tm}, gn = get_group_id(0) * {tn}, bt = get_group_id(2);
    __global const {t}* ab = A + ao + bt * sab;
    __global const {t}* bb = B + bo + bt * sbb;
    {acc}
    for (long k0 = 0; k0 < K; k0 += {tk}) {{
        for (int e = tid; e < {tk * tm}; e += {nt}) {{
            int kk = e % {tk}, mm = e / {tk};
            long m = gm + mm, k = k0 + kk;
            As[kk][mm] = (m < M && k < K) ? ab[m * sam + k * sak] : ({t})0;
        }}
        for (int e = tid; e < {tk * tn}; e += {nt}) {{
            int nn = e % {tn}, kk = e / {tn};
            long n = gn + nn, k = k0 + kk;
            Bs[kk][nn] = (n < N && k < K) ? bb[k * sbk + n * sbn] : ({t})0;
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < {tk}; ++k) {{
            {inner}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    long m0 = gm + ty, n0 = gn + tx;
    __global {t}* cb = C + co + bt * scb;
    {stores}
}}
"""


def gemm_source(dtype: str, gpu: bool, b_unit: bool, c_unit: bool) -> GemmPlan:
    """Source for ``dtype`` on a GPU or CPU device (see the module doc)."""
    t = CTYPE[dtype]
    head = "#pragma OPENCL FP_CONTRACT ON\n"  # let a*b+c fuse: GEMM is not bit-exact anyway
    if dtype == "float64":
        head += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    if gpu:
        body = _gpu_kernel(t)
        key = ("gemm", dtype, "gpu")
    else:
        body = _cpu_kernel(t, dtype, b_unit, c_unit)
        key = ("gemm", dtype, "cpu", b_unit, c_unit)
    return GemmPlan(key, head + body + _edge_kernel(t), dtype)


def launch_gemm(dev: Any, a: Any, b: Any, out: Any, gpu: "bool | None" = None) -> None:
    """Enqueue ``out = a @ b`` for views of shapes (B, M, K), (B, K, N), (B, M, N) on ``dev``.

    ``gpu`` overrides the kernel family (tests run the GPU kernel on a CPU device)."""
    bsz, m, n = out.shape
    k = a.shape[2]
    if gpu is None:
        gpu = dev.is_gpu
    dt = out.dtype.name
    sab, sam, sak = a.strides
    sbb, sbk, sbn = b.strides
    scb, scm, scn = out.strides
    b_unit = sbn == 1
    c_unit = scn == 1
    key = ("gemm", dt, "gpu") if gpu else ("gemm", dt, "cpu", b_unit, c_unit)
    args = [a.buffer.mem, a.offset, sab, sam, sak, b.buffer.mem, b.offset, sbb, sbk, sbn,
            out.buffer.mem, out.offset, scb, scm, scn, m, n, k]

    def src() -> str:
        return gemm_source(dt, gpu, b_unit, c_unit).source

    main = dev.kernel(key, "gemm_main", src, [dt], _ARG_TYPES)
    q = dev.queue
    if gpu:
        tm, tn, _, lx, ly = GPU_TILE
        gs = ((n + tn - 1) // tn * lx, (m + tm - 1) // tm * ly, bsz)
        main(q, gs, (lx, ly, 1), *args)
        return
    rm, v, w = CPU_BLOCK[dt]
    nb = v * w
    mm, nn = m // rm, n // nb
    if mm and nn:
        main(q, (nn, mm, bsz), (1, 1, 1), *args)
    edge = dev.kernel(key, "gemm_edge", src, [dt], _ARG_TYPES + [np.int64, np.int64])
    if n > nn * nb:  # right strip, all rows
        edge(q, (n - nn * nb, m, bsz), (1, 1, 1), *args, 0, nn * nb)
    if m > mm * rm and nn:  # bottom strip, full-block columns
        edge(q, (nn * nb, m - mm * rm, bsz), (1, 1, 1), *args, mm * rm, 0)
