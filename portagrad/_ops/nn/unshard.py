"""The node of fully sharded data parallelism: sharded parameters in, whole parameters out.

The op layer cannot reach the distributed package (it lies above), so the caller passes the two
collectives: ``gather()`` returns the whole parameters (an all-gather of every process's shards)
and ``reduce(grads)`` returns each shard's gradient given the whole parameters' gradients (a
reduce-scatter; ``None`` for an unused output). The derivative of "concatenate every process's
rows" is "each process takes its rows of the sum", which is what ``reduce`` computes across the
processes; every process of the group must run the forward, and the backward, in the same order,
as with any collective.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..._tensor import Tensor
from ...autograd.function import Function

__all__ = ["unshard"]

Gather = Callable[[], Sequence[Tensor]]
Reduce = Callable[[list[Any]], Sequence[Any]]


class _Unshard(Function):
    @staticmethod
    def forward(ctx: Any, gather: Gather, reduce: Reduce, *shards: Tensor) -> tuple[Tensor, ...]:
        ctx.reduce = reduce
        return tuple(gather())

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        return (None, None, *ctx.reduce(list(grads)))


def unshard(shards: Sequence[Tensor], gather: Gather, reduce: Reduce) -> list[Tensor]:
    """The whole parameters ``gather()`` returns, recorded as a function of ``shards`` whose
    backward is ``reduce`` (see the module doc)."""
    return list(_Unshard.apply(gather, reduce, *shards))
