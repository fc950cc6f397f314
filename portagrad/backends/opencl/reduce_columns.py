"""Sums down the columns of a matrix on CPU devices: ``out[c] = sum_j x[j, c]`` with ``x``'s
columns contiguous (a bias gradient: the sum of ``(batch * seq, features)`` over its rows).

The general reduction (:func:`.kernels.reduce_source`) gives each output its own work-item, which
walks its column ``j`` by ``j`` at the row stride: every load is a new cache line, and a work-item
cannot use vectors. Here a work-item owns :data:`COLUMNS` adjacent columns and walks the rows
with one vector load and one vector add per row. Each column is still summed in row order from
zero, as the general kernel sums it, so the result is the same to the bit.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .kernels import CTYPE
from .vectors import direct_typedefs, vload

__all__ = ["COLUMNS", "colsum_source", "launch_colsum", "takes_colsum"]

#: adjacent columns per work-item (one 32-byte vector of float32)
COLUMNS = 8
_I64 = np.int64
_DTYPES = ("float32", "float64")


def takes_colsum(dev: Any, op: str, idt: str, odt: str, ksz: list[int], ks_x: list[int],
                 rsz: list[int], total: int) -> bool:
    """Whether this kernel serves a reduction: a float32/float64 sum on a CPU device over one
    (coalesced) reduced axis, keeping one axis of unit stride in ``x`` with enough columns for
    every compute unit."""
    return (op == "sum" and idt == odt and idt in _DTYPES and not dev.is_gpu
            and len(ksz) == 1 and len(rsz) == 1 and ks_x[0] == 1 and total > 1
            and ksz[0] >= COLUMNS * dev.properties.compute_units)


def colsum_source(dtype: str, direct: bool) -> str:
    """Kernel ``pg_colsum`` for ``dtype`` (``direct``: vector loads through pointers, see
    :mod:`.vectors`). Arguments: output (buffer, offset, stride), input (buffer, offset, row
    stride), columns, rows."""
    t = CTYPE[dtype]
    w = COLUMNS
    head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dtype == "float64" else ""
    if direct:
        head += direct_typedefs(t, [w])
    lanes = "\n        ".join(f"O[oo + (c0 + {i}) * os] = acc.s{i};" for i in range(w))
    return head + f"""
__kernel void pg_colsum(__global {t}* O, long oo, long os, __global const {t}* X, long xo,
                        long xr, long ncol, long nrow)
{{
    long c0 = get_global_id(0) * {w};
    if (c0 >= ncol) return;
    __global const {t}* x = X + xo + c0;
    if (c0 + {w} <= ncol) {{
        {t}{w} acc = 0;
        for (long j = 0; j < nrow; ++j) acc += {vload(t, w, "x + j * xr", direct)};
        {lanes}
    }} else {{  /* the ragged last columns, one at a time */
        for (long c = 0; c < ncol - c0; ++c) {{
            {t} a = 0;
            for (long j = 0; j < nrow; ++j) a += x[c + j * xr];
            O[oo + (c0 + c) * os] = a;
        }}
    }}
}}
"""


def launch_colsum(dev: Any, dtype: str, omem: Any, oo: int, os_: int, x: Any, xr: int,
                  ncol: int, nrow: int) -> None:
    """Enqueue ``pg_colsum`` (see :func:`takes_colsum` for when it applies)."""
    direct = dev.direct_vectors
    kern = dev.kernel(("colsum", dtype, direct), "pg_colsum", lambda: colsum_source(dtype, direct),
                      [dtype], [None, _I64, _I64, None, _I64, _I64, _I64, _I64])
    kern(dev.queue, (-(-ncol // COLUMNS),), None, omem, oo, os_, x.buffer.mem, x.offset, xr, ncol,
         nrow)
