"""``ReduceOp``: the reductions of ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor``."""
from __future__ import annotations

import enum
from typing import Any

from .. import _dtype

__all__ = ["ReduceOp", "mpi_op"]


class ReduceOp(enum.Enum):
    """How collectives combine the ranks' tensors (``torch.distributed.ReduceOp``).

    ``AVG`` is a sum divided by the group size (integers: truncated, as NCCL does); on ``bool``
    tensors ``SUM``/``MAX``/``BOR`` are a logical or and ``PRODUCT``/``MIN``/``BAND`` a logical and,
    as in PyTorch."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"


_BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.MAX: "LOR", ReduceOp.BOR: "LOR", ReduceOp.PRODUCT: "LAND",
             ReduceOp.MIN: "LAND", ReduceOp.BAND: "LAND", ReduceOp.BXOR: "LXOR"}
_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
        ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}


def mpi_op(MPI: Any, op: Any, dtype: _dtype.dtype) -> tuple[Any, bool]:
    """``(MPI.Op, divide_by_group_size)`` for ``op`` on tensors of ``dtype``; ``ValueError`` for an
    op that does not apply to the dtype."""
    if not isinstance(op, ReduceOp):
        raise ValueError(f"op must be a portagrad.distributed.ReduceOp, got {op!r}")
    if dtype is _dtype.bool:
        if op is ReduceOp.AVG:
            raise ValueError("ReduceOp.AVG is not supported for bool tensors")
        return getattr(MPI, _BOOL_OPS[op]), False
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.is_floating_point:
        raise ValueError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {dtype}")
    return getattr(MPI, _OPS[op]), op is ReduceOp.AVG
