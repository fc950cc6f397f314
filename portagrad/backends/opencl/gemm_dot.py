"""GEMM as blocks of dot products along ``k`` (GEMM family "dot", CPU devices).

``x @ W.T`` -- every ``Linear`` forward -- has both operands contiguous along ``k``: ``a`` is
``x[M, K]`` and ``b`` is the transposed view of ``W[N, K]``. The "cpu" family walks ``k`` one
step at a time and needs ``b`` contiguous along ``n``, so for this layout it gathers ``V * W``
scalars of ``b`` per step (``nb`` strided loads and lane inserts for ``V`` vector FMAs), and
"packed" first copies both operands into panels. Here a work-item owns an ``RM x RN`` block of
``out`` and keeps one ``W``-lane vector accumulator per output: each step loads ``W``
consecutive ``k`` of its ``RM`` rows of ``a`` and ``RN`` rows of ``W``, ``RM + RN`` vector loads
for ``RM * RN`` vector FMAs, and the lanes are summed once at the end (the ``K % W`` tail in
scalars). The block (4 x 3 vectors, 12 accumulators) fits the 16 vector registers of AVX2 with
room for the operands: 3 x 4 and 4 x 4 ran at half its speed on PoCL.

Ragged edges need no second kernel: the rows and columns past ``M`` and ``N`` read the last row
or column again (in bounds) and store nothing. An operand that is not contiguous along ``k``
(only when the family is forced) is gathered lane by lane. Accumulation is in float32 (float64
for float64), 16-bit operands read in place and widened on load, each output rounded once.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .gemm_gemv import kernel_head, lane_sum, operand_types, vector_width
from .vectors import vload

__all__ = ["DOT_BLOCK", "dot_source", "launch_dot"]

#: (rows, columns) of ``out`` per work-item
DOT_BLOCK = (4, 3)
_I64 = np.int64
_ARGS = ("__global const {t}* A, long ao, long sab, long sam, long sak, "
         "__global const {t}* B, long bo, long sbb, long sbk, long sbn, "
         "__global {t}* C, long co, long scb, long scm, long scn, long M, long N, long K")
_ARG_TYPES = [None] + [_I64] * 4 + [None] + [_I64] * 4 + [None] + [_I64] * 7


def dot_source(dtype: str, a_unit: bool, b_unit: bool, direct: bool) -> str:
    """Source of kernel ``gemm_dot`` for ``dtype``: vector loads along ``k`` of ``a`` when
    ``a_unit`` (``a.strides[k] == 1``) and of ``b`` when ``b_unit`` (``b.strides[k] == 1``), else
    lane-by-lane gathers; ``direct``: vector loads through pointers (see :mod:`.vectors`)."""
    t, ct, ld, st = operand_types(dtype)
    w = vector_width(dtype)
    vt = f"{ct}{w}"
    rm, rn = DOT_BLOCK
    rows, cols = range(rm), range(rn)
    vld = f"{ld}_{w}" if ld else ""

    def load(p: str, unit: bool, stride: str) -> str:
        if unit:
            return f"{vld}({vload(t, w, p, direct)})"
        return f"({vt})(" + ", ".join(f"{ld}(({p})[{lane} * {stride}])" for lane in range(w)) + ")"

    ptrs = " ".join(
        [f"__global const {t}* a{i} = A + ao + bt * sab + min(row + {i}, M - 1) * sam;" for i in rows]
        + [f"__global const {t}* b{j} = B + bo + bt * sbb + min(col + {j}, N - 1) * sbn;"
           for j in cols])
    acc = " ".join(f"{vt} c{i}_{j} = 0;" for i in rows for j in cols)
    # unit strides are compiled in (the loads need them), so the addresses are plain offsets
    al = " ".join(f"{vt} va{i} = {load(f'a{i} + k' if a_unit else f'a{i} + k * sak', a_unit, 'sak')};"
                  for i in rows)
    bl = " ".join(f"{vt} vb{j} = {load(f'b{j} + k' if b_unit else f'b{j} + k * sbk', b_unit, 'sbk')};"
                  for j in cols)
    fma = " ".join(f"c{i}_{j} += va{i} * vb{j};" for i in rows for j in cols)
    sums = " ".join(f"{ct} s{i}_{j} = {lane_sum(f'c{i}_{j}', w)};" for i in rows for j in cols)
    ta = " ".join(f"{ct} ta{i} = {ld}(a{i}[k * sak]);" for i in rows)
    tb = " ".join(f"{ct} tb{j} = {ld}(b{j}[k * sbk]);" for j in cols)
    tf = " ".join(f"s{i}_{j} += ta{i} * tb{j};" for i in rows for j in cols)
    stores = "\n    ".join(
        f"if (row + {i} < M && col + {j} < N) "
        f"C[co + bt * scb + (row + {i}) * scm + (col + {j}) * scn] = {st}(s{i}_{j});"
        for i in rows for j in cols)
    return kernel_head(dtype, direct) + f"""
__kernel void gemm_dot({_ARGS.format(t=t)})
{{
    long col = get_global_id(0) * {rn}, row = get_global_id(1) * {rm}, bt = get_global_id(2);
    {ptrs}
    {acc}
    long k = 0;
    for (; k + {w} <= K; k += {w}) {{
        {al}
        {bl}
        {fma}
    }}
    {sums}
    for (; k < K; ++k) {{
        {ta} {tb} {tf}
    }}
    {stores}
}}
"""


def launch_dot(dev: Any, a: Any, b: Any, out: Any) -> None:
    """Enqueue ``out = a @ b`` (floating views of shapes (B, M, K), (B, K, N), (B, M, N))."""
    bsz, m, n = out.shape
    k = a.shape[2]
    if out.numel == 0:
        return
    dt = out.dtype.name
    a_unit, b_unit = a.strides[2] == 1, b.strides[1] == 1
    direct = dev.direct_vectors
    kern = dev.kernel(("gemm", dt, "dot", a_unit, b_unit, direct), "gemm_dot",
                      lambda: dot_source(dt, a_unit, b_unit, direct), [dt], _ARG_TYPES)
    rm, rn = DOT_BLOCK
    kern(dev.queue, (-(-n // rn), -(-m // rm), bsz), None, a.buffer.mem, a.offset, *a.strides,
         b.buffer.mem, b.offset, *b.strides, out.buffer.mem, out.offset, *out.strides, m, n, k)
