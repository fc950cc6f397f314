"""Batched GEMM kernels: ``out[b] = a[b] @ b[b]`` on arbitrary strided operands.

Kernel families, chosen by device type:

* **CPU** (PoCL and other CPU drivers): no local memory and no barriers. PoCL keeps values that
  live across a barrier in per-work-item memory, so a classic local-memory tiled kernel spills its
  accumulators and ran at ~7 GFLOP/s here, while a barrier-free kernel in which each work-item
  owns an ``RM x (V*W)`` block of ``floatW`` accumulators ran at 30-40 GFLOP/s. Measured detail: the
  ``fma()`` builtin goes through a slow path in PoCL (15 GFLOP/s); ``c += a * b`` with
  ``FP_CONTRACT ON`` compiles to hardware FMA. The full blocks of ``out`` go to this kernel; the
  ragged right and bottom strips (fewer than ``RM`` rows / ``V*W`` columns) to a simple
  one-element-per-work-item kernel.
* **GPU** ("gpu", the default on GPUs): a work-group of 16x16 work-items computes a 128x128 tile,
  8x8 per work-item as 4x4 quadrants so that local memory is read as ``float4``, ``TK = 16``-deep
  slices staged in local memory, the next slice prefetched into registers during the multiply
  (see :func:`_gpu_kernel_v2`). Loads are bounds-checked (zero padding) and stores guarded, so any
  size works in one launch. Written without access to a GPU: ``benchmarks/gpu_check.sh`` measures
  it against "gpu_simple" (the classic tiled kernel with scalar local reads, ~19.9 TFLOP/s on the
  H200 in an earlier measurement) and cuBLAS; ``tests/test_opencl_gemm.py`` checks both GPU
  kernels on PoCL at ragged sizes and every operand layout.

The family can be forced with ``PORTAGRAD_OPENCL_GEMM=cpu|gpu|gpu_simple``.

Strides (in elements) and offsets are kernel arguments, so a transposed operand (swapped strides)
or a broadcast batch (batch stride 0) needs no copy. Variants are keyed by dtype and by whether
``b``'s and ``out``'s column strides are 1 (vector loads/stores), never by sizes.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from .kernels import CTYPE

__all__ = ["GemmPlan", "gemm_source", "launch_gemm", "CPU_BLOCK", "GPU_TILE", "GEMM_KINDS"]

#: CPU register block: (rows per work-item, vectors per row) and vector width by dtype
CPU_BLOCK = {"float32": (8, 2, 8), "float64": (8, 2, 4)}
#: GPU tile: (tile M, tile N, tile K, work-items in x, work-items in y)
GPU_TILE = (128, 128, 8, 16, 16)
#: k depth of the second GPU kernel's slices
GPU_V2_TK = 16
#: GEMM kernel families: "cpu" (barrier-free register blocks), "gpu_simple" (the classic tiled
#: kernel, kept for comparison), "gpu" (the second tiled version, the default on GPUs).
#: ``PORTAGRAD_OPENCL_GEMM`` (or the backend's ``_force_gemm_gpu``) picks one on any device, so
#: the GPU kernels are tested on PoCL too.
GEMM_KINDS = ("cpu", "gpu", "gpu_simple")

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


def _gpu_kernel_v2(t: str, a_kfast: bool, b_nfast: bool) -> str:
    """The GPU kernel, second version: 128x128 tile, 8x8 per work-item as two 4x4 quadrants per
    axis (rows ``4*ty + i`` and ``64 + 4*ty + i``, the same for columns), so each ``k`` step reads
    four ``float4``s from local memory instead of sixteen scalars; ``TK = 16``; the next ``k`` slice
    is loaded from global memory into registers while the current one is multiplied (register
    double buffering). Global loads are bounds-checked scalar loads through the strides, mapped so
    that neighbouring work-items read neighbouring addresses: ``a_kfast`` (A's k stride is 1) walks
    k first, else m; ``b_nfast`` (B's n stride is 1) walks n first, else k. Any size, any strides."""
    tm, tn, lx, ly = 128, 128, 16, 16
    tk = GPU_V2_TK
    nt = lx * ly
    na, nb = tk * tm // nt, tk * tn // nt  # elements per work-item per slice: 8 and 8
    t4 = f"{t}4"
    if a_kfast:
        amap = f"int kk = e % {tk}, mm = e / {tk};"
    else:
        amap = f"int mm = e % {tm}, kk = e / {tm};"
    if b_nfast:
        bmap = f"int nn = e % {tn}, kk = e / {tn};"
    else:
        bmap = f"int kk = e % {tk}, nn = e / {tk};"
    load = []
    for i in range(na):
        load.append(f"{{ int e = tid + {i * nt}; {amap} long m = gm + mm, k = k0 + kk; "
                    f"ra{i} = (m < M && k < K) ? ab[m * sam + k * sak] : ({t})0; }}")
    for i in range(nb):
        load.append(f"{{ int e = tid + {i * nt}; {bmap} long n = gn + nn, k = k0 + kk; "
                    f"rb{i} = (n < N && k < K) ? bb[k * sbk + n * sbn] : ({t})0; }}")
    load_s = "\n        ".join(load)
    store = []
    for i in range(na):
        store.append(f"{{ int e = tid + {i * nt}; {amap} As[kk * {tm + 4} + mm] = ra{i}; }}")
    for i in range(nb):
        store.append(f"{{ int e = tid + {i * nt}; {bmap} Bs[kk * {tn + 4} + nn] = rb{i}; }}")
    store_s = "\n        ".join(store)
    regs = ", ".join([f"ra{i}" for i in range(na)] + [f"rb{i}" for i in range(nb)])
    acc = "\n    ".join(f"{t4} c{i}_{h} = 0;" for i in range(8) for h in range(2))
    comps = "xyzw"
    fma = []
    for i in range(8):
        av = f"a{i // 4}.{comps[i % 4]}"
        for h in range(2):
            fma.append(f"c{i}_{h} += {av} * b{h};")
    fma_s = "\n            ".join(fma)
    stores = []
    for i in range(8):
        row = f"(m0 + {(i // 4) * 64 + i % 4})"
        for h in range(2):
            for j in range(4):
                col = f"(n0 + {h * 64 + j})"
                stores.append(f"if ({row} < M && {col} < N) cb[{row} * scm + {col} * scn] = c{i}_{h}.{comps[j]};")
    stores_s = "\n    ".join(stores)
    return f"""
__kernel __attribute__((reqd_work_group_size({lx}, {ly}, 1)))
void gemm_main({_ARGS.format(t=t)})
{{
    /* rows padded by 4 elements: float4 reads stay 16-byte aligned, k-major stores spread banks */
    __local {t4} As4[{tk} * {(tm + 4) // 4}];
    __local {t4} Bs4[{tk} * {(tn + 4) // 4}];
    __local {t}* As = (__local {t}*)As4;
    __local {t}* Bs = (__local {t}*)Bs4;
    int tx = get_local_id(0), ty = get_local_id(1), tid = ty * {lx} + tx;
    long gm = get_group_id(1) * {tm}, gn = get_group_id(0) * {tn}, bt = get_group_id(2);
    __global const {t}* ab = A + ao + bt * sab;
    __global const {t}* bb = B + bo + bt * sbb;
    {t} {regs};
    {acc}
    long k0 = 0;
    {load_s}
    {store_s}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (; k0 < K; ) {{
        long kn = k0 + {tk};
        if (kn < K) {{  /* prefetch the next slice into registers */
            long k0 = kn;
            {load_s}
        }}
        for (int k = 0; k < {tk}; ++k) {{
            {t4} a0 = As4[k * {(tm + 4) // 4} + ty], a1 = As4[k * {(tm + 4) // 4} + 16 + ty];
            {t4} b0 = Bs4[k * {(tn + 4) // 4} + tx], b1 = Bs4[k * {(tn + 4) // 4} + 16 + tx];
            {fma_s}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        if (kn < K) {{
            {store_s}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        k0 = kn;
    }}
    long m0 = gm + 4 * ty, n0 = gn + 4 * tx;
    __global {t}* cb = C + co + bt * scb;
    {stores_s}
}}
"""


def gemm_source(dtype: str, kind: "bool | str", b_unit: bool, c_unit: bool,
                a_kfast: bool = True) -> GemmPlan:
    """Source of GEMM family ``kind`` (see :data:`GEMM_KINDS`; ``True``/``False`` mean "gpu"/"cpu")
    for ``dtype``."""
    kind = {True: "gpu", False: "cpu"}.get(kind, kind)  # type: ignore[arg-type]
    t = CTYPE[dtype]
    head = "#pragma OPENCL FP_CONTRACT ON\n"  # let a*b+c fuse: GEMM is not bit-exact anyway
    if dtype == "float64":
        head += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    if kind == "gpu_simple":
        body = _gpu_kernel(t)
        key: tuple = ("gemm", dtype, "gpu_simple")
    elif kind == "gpu":
        body = _gpu_kernel_v2(t, a_kfast, b_unit)
        key = ("gemm", dtype, "gpu", a_kfast, b_unit)
    else:
        body = _cpu_kernel(t, dtype, b_unit, c_unit)
        key = ("gemm", dtype, "cpu", b_unit, c_unit)
    return GemmPlan(key, head + body + _edge_kernel(t), dtype)


def launch_gemm(dev: Any, a: Any, b: Any, out: Any, gpu: "bool | str | None" = None) -> None:
    """Enqueue ``out = a @ b`` for views of shapes (B, M, K), (B, K, N), (B, M, N) on ``dev``.

    ``gpu`` overrides the kernel family: a name from :data:`GEMM_KINDS`, or ``True``/``False`` for
    "gpu"/"cpu" (tests run the GPU kernels on a CPU device); else ``PORTAGRAD_OPENCL_GEMM``, else
    "gpu" on GPUs and "cpu" elsewhere."""
    bsz, m, n = out.shape
    k = a.shape[2]
    if gpu is None:
        gpu = _ENV_KIND or ("gpu" if dev.is_gpu else "cpu")
    kind = {True: "gpu", False: "cpu"}.get(gpu, gpu)  # type: ignore[arg-type]
    if kind not in GEMM_KINDS:
        raise ValueError(f"unknown GEMM kernel family {kind!r}; expected one of {GEMM_KINDS}")
    dt = out.dtype.name
    sab, sam, sak = a.strides
    sbb, sbk, sbn = b.strides
    scb, scm, scn = out.strides
    b_unit = sbn == 1
    c_unit = scn == 1
    a_kfast = sak == 1 or sam != 1
    if kind == "gpu_simple":
        key: tuple = ("gemm", dt, "gpu_simple")
    elif kind == "gpu":
        key = ("gemm", dt, "gpu", a_kfast, b_unit)
    else:
        key = ("gemm", dt, "cpu", b_unit, c_unit)
    args = [a.buffer.mem, a.offset, sab, sam, sak, b.buffer.mem, b.offset, sbb, sbk, sbn,
            out.buffer.mem, out.offset, scb, scm, scn, m, n, k]

    def src() -> str:
        return gemm_source(dt, kind, b_unit, c_unit, a_kfast).source

    main = dev.kernel(key, "gemm_main", src, [dt], _ARG_TYPES)
    q = dev.queue
    if kind != "cpu":
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


_ENV_KIND = os.environ.get("PORTAGRAD_OPENCL_GEMM") or None
