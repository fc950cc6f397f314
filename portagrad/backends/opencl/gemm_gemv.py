"""Few-row GEMM for OpenCL devices (GEMM family "gemv"): ``out = a @ b`` with at most
:data:`GEMV_ROWS` rows per launch, streaming ``b`` once.

A decoding step multiplies one activation row (or a handful, one per sequence) by every weight
matrix of the model. With so few rows the product is bound by reading ``b`` from memory, and the
register-blocked families waste it: "cpu" hands every block of fewer than 8 rows to its
one-element-per-work-item edge kernel (each work-item rereads the whole of ``a`` and walks one
column of ``b`` with scalar loads), and "packed" copies ``b`` before reading it. This family
compiles the row count into the kernel (``rm`` accumulators per column, ``rm <= 8``; more rows
run as several launches of at most 8) and walks ``b`` along its unit-stride axis with vector loads:

* **k-fast** ``b`` (``b.strides[k] == 1``: the transposed view ``W.T`` of a ``Linear`` weight
  ``W[N, K]``, the layout that matters for inference): a work-item owns :data:`_KF_COLS` ``[rm]``
  output columns, i.e. rows of ``W``, and reads each of them contiguously ``w`` values at a time,
  multiplying by the same ``w`` values of every row of ``a`` into ``rm x cols`` vector
  accumulators that are summed across lanes once at the end (the ``K % w`` tail in scalars);
* otherwise (``b`` row-major ``[K, N]``, or any strides): a work-item owns ``v * w`` adjacent
  columns and walks ``k``, a vector of ``b`` per step (gathered when ``b``'s columns are not unit
  stride) times one scalar of each row of ``a``; the ragged last block takes a scalar loop.

Accumulation is in float32 (float64 for float64; 16-bit operands read in place and widened on
load, as in the other families), and each output is rounded once. Any strides and offsets work:
vector loads are used only along unit-stride axes (``vloadn`` needs element alignment only).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .kernels import CTYPE, HALF16, half16_helpers
from .vectors import direct_typedefs, vload, vstore

__all__ = ["GEMV_ROWS", "gemv_source", "kernel_head", "lane_sum", "launch_gemv", "operand_types",
           "vector_width"]

#: the most rows of ``out`` one launch computes (the row count is compiled into the kernel)
GEMV_ROWS = 8
_I64 = np.int64
_ARGS = ("__global const {t}* A, long ao, long sab, long sam, long sak, "
         "__global const {t}* B, long bo, long sbb, long sbk, long sbn, "
         "__global {t}* C, long co, long scb, long scm, long scn, long N, long K")
_ARG_TYPES = [None, _I64, _I64, _I64, _I64, None, _I64, _I64, _I64, _I64,
              None, _I64, _I64, _I64, _I64, _I64, _I64]
_LANES = "0123456789abcdef"
#: columns per work-item of the k-fast kernel, by row count: on PoCL more columns per work-item
#: ran faster (16 columns: 2x the GB/s of 4 at one row) even past the 16 vector registers of
#: AVX2, so the block shrinks only as the ``rm x cols`` accumulators grow
_KF_COLS = {1: 16, 2: 8, 3: 4, 4: 4, 5: 2, 6: 2, 7: 2, 8: 2}
#: vectors of ``w`` columns per work-item of the n-fast kernel: on PoCL 4 (32 float32 columns)
#: read a [768, 3072] or [768, 50257] row-major ``b`` at 2x the GB/s of 2, at 1 and 3 rows
_NF_VECS = 4
#: work-group size of every launch: the driver's choice (a fixed 1, as "cpu" uses, was no faster
#: on PoCL and would starve a GPU)
_LOCAL = None


def vector_width(dtype: str) -> int:
    """Lanes of the 32-byte vectors of ``dtype``'s compute type (16-bit floats compute in float)."""
    return 4 if dtype == "float64" else 8


def operand_types(dtype: str) -> tuple[str, str, str, str]:
    """``(storage type, compute type, load, store)``; load/store are "" unless 16-bit."""
    if dtype in HALF16:
        return CTYPE[dtype], "float", HALF16[dtype][0], HALF16[dtype][1]
    return CTYPE[dtype], CTYPE[dtype], "", ""


def kernel_head(dtype: str, direct: bool) -> str:
    """The start of a program of 32-byte vector kernels for ``dtype`` (this family's and
    :mod:`.gemm_dot`'s): contraction on, fp64 enabled for float64, the direct vector typedefs
    (``direct``, see :mod:`.vectors`) and the 16-bit conversion helpers."""
    head = "#pragma OPENCL FP_CONTRACT ON\n"  # a*b+c may fuse: GEMM is not bit-exact anyway
    if dtype == "float64":
        head += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    if direct:
        head += direct_typedefs(CTYPE[dtype], [vector_width(dtype)])
    if dtype in HALF16:
        head += half16_helpers(dtype, [vector_width(dtype)])
    return head


def lane_sum(v: str, w: int) -> str:
    """OpenCL C summing the ``w`` lanes of vector ``v`` (halves folded pairwise)."""
    if w == 8:
        v = f"({v}.lo + {v}.hi)"
    return f"({v}.s0 + {v}.s1 + {v}.s2 + {v}.s3)"


def _kfast_kernel(dtype: str, rm: int, a_unit: bool, direct: bool) -> str:
    t, ct, ld, st = operand_types(dtype)
    w = vector_width(dtype)
    nc = _KF_COLS[rm]
    vt = f"{ct}{w}"
    vld = f"{ld}_{w}" if ld else ""
    rows, cols = range(rm), range(nc)
    acc = " ".join(f"{vt} c{i}_{j} = 0;" for i in rows for j in cols)
    bl = " ".join(f"{vt} b{j} = {vld}({vload(t, w, f'b{j}p + k', direct)});" for j in cols)
    if a_unit:
        al = " ".join(f"{vt} a{i} = {vld}({vload(t, w, f'ap + {i} * sam + k', direct)});"
                      for i in rows)
    else:
        al = " ".join(f"{vt} a{i} = ({vt})(" + ", ".join(
            f"{ld}(ap[{i} * sam + (k + {l}) * sak])" for l in range(w)) + ");" for i in rows)
    fma = " ".join(f"c{i}_{j} += a{i} * b{j};" for i in rows for j in cols)
    sums = " ".join(f"{ct} s{i}_{j} = {lane_sum(f'c{i}_{j}', w)};" for i in rows for j in cols)
    tb = " ".join(f"{ct} b{j} = {ld}(b{j}p[k]);" for j in cols)
    ta = " ".join(f"{ct} a{i} = {ld}(ap[{i} * sam + k * sak]);" for i in rows)
    tf = " ".join(f"s{i}_{j} += a{i} * b{j};" for i in rows for j in cols)
    # the last work-item's columns past N read column N - 1 again (in bounds) and store nothing
    ptrs = " ".join(f"__global const {t}* b{j}p = bp + min(col + {j}, N - 1) * sbn;" for j in cols)
    stores = " ".join(
        f"if (col + {j} < N) C[co + bt * scb + {i} * scm + (col + {j}) * scn] = {st}(s{i}_{j});"
        for j in cols for i in rows)
    return f"""
__kernel void gemv_kfast({_ARGS.format(t=t)})
{{
    long col = get_global_id(0) * {nc}, bt = get_global_id(2);
    __global const {t}* ap = A + ao + bt * sab;
    __global const {t}* bp = B + bo + bt * sbb;
    {ptrs}
    {acc}
    long k = 0;
    for (; k + {w} <= K; k += {w}) {{
        {bl}
        {al}
        {fma}
    }}
    {sums}
    for (; k < K; ++k) {{
        {tb} {ta} {tf}
    }}
    {stores}
}}
"""


def _nfast_kernel(dtype: str, rm: int, b_unit: bool, c_unit: bool, direct: bool) -> str:
    t, ct, ld, st = operand_types(dtype)
    w = vector_width(dtype)
    v = _NF_VECS
    nb = v * w
    vt = f"{ct}{w}"
    vld = f"{ld}_{w}" if ld else ""
    rows, vecs = range(rm), range(v)
    acc = " ".join(f"{vt} c{i}_{j} = 0;" for i in rows for j in vecs)
    if b_unit:
        bl = " ".join(f"{vt} b{j} = {vld}({vload(t, w, f'bk + {j * w}', direct)});" for j in vecs)
    else:
        bl = " ".join(f"{vt} b{j} = ({vt})(" + ", ".join(
            f"{ld}(bk[{j * w + l} * sbn])" for l in range(w)) + ");" for j in vecs)
    al = " ".join(f"{ct} a{i} = {ld}(ap[{i} * sam + k * sak]);" for i in rows)
    fma = " ".join(f"c{i}_{j} += a{i} * b{j};" for i in rows for j in vecs)
    stores: list[str] = []
    for i in rows:
        for j in vecs:
            if c_unit and not ld:
                stores.append(vstore(t, w, f"c{i}_{j}", f"cp + {i} * scm + {j * w}", direct))
            else:
                stores.extend(f"cp[{i} * scm + {j * w + l} * scn] = {st}(c{i}_{j}.s{_LANES[l]});"
                              for l in range(w))
    racc = " ".join(f"{ct} r{i} = 0;" for i in rows)
    rfma = " ".join(f"r{i} += {ld}(ap[{i} * sam + k * sak]) * bv;" for i in rows)
    rst = " ".join(f"C[co + bt * scb + {i} * scm + n * scn] = {st}(r{i});" for i in rows)
    return f"""
__kernel void gemv_nfast({_ARGS.format(t=t)})
{{
    long col = get_global_id(0) * {nb}, bt = get_global_id(2);
    __global const {t}* ap = A + ao + bt * sab;
    __global const {t}* bp = B + bo + bt * sbb;
    if (col + {nb} <= N) {{
        __global const {t}* bk = bp + col * sbn;
        {acc}
        for (long k = 0; k < K; ++k) {{
            {bl}
            {al}
            {fma}
            bk += sbk;
        }}
        __global {t}* cp = C + co + bt * scb + col * scn;
        {" ".join(stores)}
    }} else {{  // the ragged last block: one column at a time
        for (long n = col; n < N; ++n) {{
            {racc}
            for (long k = 0; k < K; ++k) {{
                {ct} bv = {ld}(bp[k * sbk + n * sbn]);
                {rfma}
            }}
            {rst}
        }}
    }}
}}
"""


def gemv_source(dtype: str, rm: int, kfast: bool, a_unit: bool, b_unit: bool,
                c_unit: bool, direct: bool = False) -> str:
    """Source of the few-row kernel for ``dtype`` with ``rm`` (1..:data:`GEMV_ROWS`) rows: the
    k-fast kernel ``gemv_kfast`` (``b`` read along ``k``; specialised on ``a_unit``) when
    ``kfast``, else ``gemv_nfast`` (``b`` read along ``n``; specialised on ``b_unit`` and
    ``c_unit``). ``direct``: vector loads and stores through pointers (see :mod:`.vectors`)."""
    if not 1 <= rm <= GEMV_ROWS:
        raise ValueError(f"gemv kernels take 1 to {GEMV_ROWS} rows, got {rm}")
    body = (_kfast_kernel(dtype, rm, a_unit, direct) if kfast
            else _nfast_kernel(dtype, rm, b_unit, c_unit, direct))
    return kernel_head(dtype, direct) + body


def launch_gemv(dev: Any, a: Any, b: Any, out: Any) -> None:
    """Enqueue ``out = a @ b`` (floating views of shapes (B, M, K), (B, K, N), (B, M, N), any
    ``M``) as launches of at most :data:`GEMV_ROWS` rows each."""
    bsz, m, n = out.shape
    k = a.shape[2]
    if out.numel == 0:
        return
    dt = out.dtype.name
    sab, sam, sak = a.strides
    sbb, sbk, sbn = b.strides
    scb, scm, scn = out.strides
    # b's k axis is contiguous (a transposed Linear weight): read along k, unless k is trivial
    kfast = sbk == 1 and k > 1 and (sbn != 1 or n == 1)
    a_unit, b_unit, c_unit = sak == 1, sbn == 1, scn == 1
    q = dev.queue
    direct = dev.direct_vectors
    for r0 in range(0, m, GEMV_ROWS):
        rm = min(GEMV_ROWS, m - r0)
        if kfast:
            key: tuple = ("gemm", dt, "gemv", "kfast", rm, a_unit, direct)
            name = "gemv_kfast"
            gx = -(-n // _KF_COLS[rm])
        else:
            key = ("gemm", dt, "gemv", "nfast", rm, b_unit, c_unit, direct)
            name = "gemv_nfast"
            gx = -(-n // (_NF_VECS * vector_width(dt)))
        kern = dev.kernel(key, name, lambda rm=rm: gemv_source(dt, rm, kfast, a_unit, b_unit,
                                                               c_unit, direct), [dt], _ARG_TYPES)
        kern(q, (gx, 1, bsz), _LOCAL, a.buffer.mem, a.offset + r0 * sam, sab, sam, sak,
             b.buffer.mem, b.offset, sbb, sbk, sbn, out.buffer.mem, out.offset + r0 * scm,
             scb, scm, scn, n, k)
