"""The sharded parameter of fully sharded data parallelism: this rank's dim-0 rows of a
parameter, a :class:`~portagrad.nn.Parameter` that knows the whole tensor's shape and where its
rows sit in it.

PyTorch's ``fully_shard`` makes every parameter a ``DTensor`` with placement ``Shard(0)``; here a
sharded parameter is a plain parameter holding the local rows (what ``DTensor.to_local()``
returns), with ``full_tensor()`` (a collective: every rank of the group calls it) and the shard's
metadata. Rows are split as ``torch.chunk`` splits them: ``ceil(rows / world)`` per rank, so the
last ranks may hold fewer rows, or none.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from ... import _creation
from ..._ops.joining import cat
from ..._tensor import Tensor
from ...nn.parameter import Parameter
from .._collectives_more import all_gather_into_tensor
from .._group import ProcessGroup

__all__ = ["ShardedParameter", "ShardInfo", "shard_rows", "shard_info"]


class ShardInfo(NamedTuple):
    """Where a shard's rows sit: ``global_shape`` of the whole tensor, ``offset`` of its first
    row (a 0-d tensor is sharded as a 1-element vector)."""

    global_shape: tuple[int, ...]
    offset: int


def shard_info(t: Any) -> ShardInfo | None:
    """The :class:`ShardInfo` of a sharded parameter or of a tensor detached from one (what
    ``state_dict()`` holds), else ``None``."""
    return t.__dict__.get("_shard_info") if isinstance(t, Tensor) else None


def shard_rows(rows: int, world: int, rank: int) -> tuple[int, int, int]:
    """``(chunk, lo, hi)``: rows per rank (padded), and the rows ``[lo, hi)`` ``rank`` holds."""
    chunk = max(1, math.ceil(rows / world))
    lo = min(rank * chunk, rows)
    return chunk, lo, min(lo + chunk, rows)


class ShardedParameter(Parameter):
    """This rank's rows of a parameter sharded on dim 0 over a process group (see the module
    doc). A 0-d parameter is sharded as a 1-element vector; ``global_shape`` keeps its shape."""

    # set by :meth:`_shard`; a Tensor's instance attributes live in its ``__dict__``
    global_shape: tuple[int, ...]
    shard_offset: int
    chunk_rows: int
    group: ProcessGroup

    @classmethod
    def _shard(cls, full: Tensor, group: ProcessGroup, requires_grad: bool) -> ShardedParameter:
        shape = tuple(full.shape)
        flat = full.detach().reshape((1,) if not shape else shape)
        chunk, lo, hi = shard_rows(flat.shape[0], group.size(), group.rank())
        local = flat[lo:hi].clone()
        p = cls(local, requires_grad=requires_grad)
        p.global_shape = shape
        p.shard_offset = lo
        p.chunk_rows = chunk
        p.group = group
        p.__dict__["_shard_info"] = ShardInfo(shape, lo)
        return p

    def detach(self) -> Tensor:
        """The local rows, detached; they keep the shard's :class:`ShardInfo` (so that the
        tensors of ``state_dict()`` can be saved and loaded by ``distributed.checkpoint``)."""
        t = super().detach()
        t.__dict__["_shard_info"] = self.__dict__["_shard_info"]
        return t

    @property
    def rows(self) -> int:
        """The rows of the whole parameter (1 for a 0-d one)."""
        return self.global_shape[0] if self.global_shape else 1

    def _padded(self, t: Tensor) -> Tensor:
        """``t`` (this shard's shape) padded with zero rows to ``chunk_rows``."""
        short = self.chunk_rows - t.shape[0]
        if short == 0:
            return t
        pad = _creation.zeros((short, *t.shape[1:]), dtype=t.dtype, device=t.device)
        return cat([t, pad]) if t.shape[0] else pad

    def full_tensor(self) -> Tensor:
        """The whole parameter, gathered from every rank of the group (a collective; not
        differentiable: ``fully_shard``'s forward gathers with autograd)."""
        local = self._padded(self.detach())
        out = _creation.empty((self.chunk_rows * self.group.size(), *local.shape[1:]),
                              dtype=self.dtype, device=self.device)
        all_gather_into_tensor(out, local.contiguous(), group=self.group)
        return out[:self.rows].reshape(self.global_shape)

    def to_local(self) -> Tensor:
        """This rank's rows (the parameter itself, detached)."""
        return self.detach()

    def __reduce_ex__(self, protocol: Any) -> Any:
        return Parameter(self.detach(), self.requires_grad).__reduce_ex__(protocol)

    def __repr__(self) -> str:
        return (f"ShardedParameter(rows [{self.shard_offset}, {self.shard_offset + self.shape[0]})"
                f" of {tuple(self.global_shape)}):\n" + Tensor.__repr__(self))

    __str__ = __repr__
