"""Checked collectives: before moving data, the ranks exchange a small header (the collective,
its root and reduction, the tensor's dtype and shape) with one ``MPI_Allgather`` of 12 integers
per rank, so a rank that passes a mismatched tensor, or calls another collective, gets an error
that names every rank's arguments instead of corrupted data or a hang.

The exchange costs one small-message latency per collective (measured in
``benchmarks/distributed.py``); DDP's bucket reductions skip it, because their layout is checked
once when the model is wrapped. ``PORTAGRAD_DISTRIBUTED_CHECKS=0`` turns it off.
"""
from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ._reduce_op import ReduceOp

__all__ = ["enabled", "exchange", "header", "OPS"]

OPS = ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
       "reduce_scatter_tensor", "gather", "scatter", "barrier", "send", "all_to_all_single")
_DTYPES = [d.name for d in _dtype.ALL_DTYPES]
_NDIM = 6
SIZE = 6 + _NDIM


def enabled() -> bool:
    """Whether collectives exchange and compare headers (on unless
    ``PORTAGRAD_DISTRIBUTED_CHECKS=0``)."""
    return os.environ.get("PORTAGRAD_DISTRIBUTED_CHECKS", "1") not in ("0", "false", "False", "off")


_HEADERS: dict[tuple, np.ndarray] = {}  # a cache: a training loop repeats the same few calls


def header(op: str, t: Tensor | None, root: int = -1, redop: Any = -1) -> np.ndarray:
    """The header of collective ``op`` on tensor ``t`` (12 int64; do not modify it); ``redop``: a
    ReduceOp or -1."""
    key = (op, root, redop) if t is None else (op, root, redop, t._v.shape, t._v.dtype)
    h = _HEADERS.get(key)
    if h is None:
        if len(_HEADERS) > 4096:
            _HEADERS.clear()
        h = _HEADERS[key] = _make_header(op, t, root, redop)
    return h


def _make_header(op: str, t: Tensor | None, root: int, redop: Any) -> np.ndarray:
    h = np.full(SIZE, -1, np.int64)
    h[0] = OPS.index(op)
    h[1] = redop.value if isinstance(redop, ReduceOp) else redop
    h[2] = root
    if t is not None:
        shape = t._v.shape
        h[3] = _DTYPES.index(t._v.dtype.name)
        h[4] = len(shape)
        h[5] = t.numel()
        for i, s in enumerate(shape[:_NDIM]):
            h[6 + i] = s
    return h


def describe(h: np.ndarray) -> str:
    """``all_reduce(float32 tensor of shape (3, 4), op SUM, root 0)``-style text of a header."""
    op = OPS[int(h[0])] if 0 <= h[0] < len(OPS) else f"op#{int(h[0])}"
    parts = []
    if h[3] >= 0:
        nd = int(h[4])
        dims = [int(x) for x in h[6:6 + min(nd, _NDIM)]]
        shape = "(" + ", ".join(map(str, dims)) + ("," if nd == 1 else "") + \
            (", ..." if nd > _NDIM else "") + ")"
        parts.append(f"{_DTYPES[int(h[3])]} tensor of shape {shape}")
    if h[1] >= 0:
        parts.append(f"op {ReduceOp(int(h[1])).name}")
    if h[2] >= 0:
        parts.append(f"root {int(h[2])}")
    return f"{op}({', '.join(parts)})"


# The receive buffers of exchange(), by group size, one set per thread: a collective on the
# communication thread (async_op) and a synchronous one in the caller, on two groups of the same
# size, exchange headers at the same time, and a shared buffer would mix their headers up.
_local = threading.local()


def exchange(comm: Any, h: np.ndarray, global_ranks: list[int], me: int) -> None:
    """Allgather the headers; raise ``RuntimeError`` naming each rank's call when they differ."""
    n = comm.Get_size()
    mine: dict[int, np.ndarray] | None = getattr(_local, "gathered", None)
    if mine is None:
        mine = _local.gathered = {}
    everyone = mine.get(n)
    if everyone is None:
        everyone = mine[n] = np.empty((n, SIZE), np.int64)
    comm.Allgather(h, everyone)
    if everyone.tobytes() == h.tobytes() * n:  # (faster than numpy's == and all() on 12 ints)
        return
    everyone = everyone.copy()
    lines = [f"  rank {global_ranks[i]}: {describe(row)}" for i, row in enumerate(everyone)]
    raise RuntimeError(f"[rank {global_ranks[me]}] mismatched collective: the ranks of the group "
                       f"called\n" + "\n".join(lines))
