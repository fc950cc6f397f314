"""``ReduceOp``: the reductions of ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor``."""
from __future__ import annotations

import enum
from typing import Any

from .. import _dtype

__all__ = ["ReduceOp", "mpi_op", "PremulSum", "_make_nccl_premul_sum"]


class ReduceOp(enum.Enum):
    """How collectives combine the ranks' tensors (``torch.distributed.ReduceOp``).

    ``AVG`` is a sum divided by the group size (integers: truncated, as NCCL does); on ``bool``
    tensors ``SUM``/``MAX``/``BOR`` are a logical or and ``PRODUCT``/``MIN``/``BAND`` a logical and,
    as in PyTorch. ``PREMUL_SUM`` is used through ``_make_nccl_premul_sum(factor)``: each rank's
    tensor is multiplied by ``factor`` before the sum."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"


_BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.MAX: "LOR", ReduceOp.BOR: "LOR", ReduceOp.PRODUCT: "LAND",
             ReduceOp.MIN: "LAND", ReduceOp.BAND: "LAND", ReduceOp.BXOR: "LXOR"}
_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
        ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}


class PremulSum:
    """``ReduceOp.PREMUL_SUM`` with its factor, as ``_make_nccl_premul_sum`` makes it: the
    collectives multiply each rank's input by ``factor`` (in the tensor's dtype), then sum."""

    op = ReduceOp.PREMUL_SUM

    def __init__(self, factor: float) -> None:
        self.factor = factor

    def __repr__(self) -> str:
        return f"<RedOpType.PREMUL_SUM: 8 (factor {self.factor!r})>"


def _make_nccl_premul_sum(factor: Any) -> PremulSum:
    """``ReduceOp.PREMUL_SUM`` scaled by ``factor`` (a number or a one-element tensor)."""
    if hasattr(factor, "numel"):
        if factor.numel() != 1:
            raise ValueError(f"the factor of PREMUL_SUM must have one element, got shape "
                             f"{tuple(factor.shape)}")
        factor = factor.item()
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise TypeError(f"the factor of PREMUL_SUM must be a number or a one-element tensor, got "
                        f"{type(factor).__name__}")
    return PremulSum(float(factor))


def mpi_op(MPI: Any, op: Any, dtype: _dtype.dtype) -> tuple[Any, bool]:
    """``(MPI.Op, divide_by_group_size)`` for ``op`` on tensors of ``dtype``; ``ValueError`` for an
    op that does not apply to the dtype."""
    if isinstance(op, PremulSum) or op is ReduceOp.PREMUL_SUM:
        raise ValueError("ReduceOp.PREMUL_SUM is reduced by all_reduce, reduce, "
                         "reduce_scatter_tensor and reduce_scatter, with a factor "
                         "(_make_nccl_premul_sum(factor))")
    if not isinstance(op, ReduceOp):
        raise ValueError(f"op must be a portagrad.distributed.ReduceOp, got {op!r}")
    if dtype is _dtype.bool:
        if op is ReduceOp.AVG:
            raise ValueError("ReduceOp.AVG is not supported for bool tensors")
        return getattr(MPI, _BOOL_OPS[op]), False
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.is_floating_point:
        raise ValueError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {dtype}")
    return getattr(MPI, _OPS[op]), op is ReduceOp.AVG
