"""``embedding``'s gradient options: ``scale_grad_by_freq`` divides the gradient reaching each row
of the table by how often its index occurs in the batch (PyTorch's rule for word embeddings), and
``sparse`` gives the table a sparse COO gradient holding only the rows the batch picked.

The rows are picked with ``index_select``, whose gradient adds into the table; this node sits
between the picked rows and the output and scales each row's incoming gradient.
"""
from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...autograd.function import Function
from .._common import call
from ..indexing import nonzero
from ..sparse import SPARSE_GRADS, SparseCooTensor

__all__ = ["scale_grad", "sparse_rows"]


class _ScaleGrad(Function):
    """The identity forward; the backward multiplies the gradient by ``scale`` (no gradient for
    ``scale``)."""

    _backward_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, scale: Tensor) -> Tensor:
        ctx.save_for_backward(scale)
        return x

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (scale,) = ctx.saved_tensors
        return g * scale, None


def scale_grad(rows: Tensor, flat_index: Tensor, num_rows: int) -> Tensor:
    """``rows`` (one per entry of ``flat_index``), whose gradient is divided by the number of
    times each entry's index occurs in ``flat_index``."""
    ones = flat_index.new_ones(flat_index.shape, dtype=rows.dtype)
    counts = rows.new_zeros((num_rows,)).index_add(0, flat_index, ones)
    scale = (1.0 / counts.index_select(0, flat_index)).unsqueeze(1)
    return call(_ScaleGrad, rows, scale.detach())


class _SparseRows(Function):
    """``weight.index_select(0, flat)`` whose gradient for ``weight`` is a sparse COO tensor
    (``Embedding(sparse=True)``): one entry per picked row, uncoalesced, as PyTorch's
    ``embedding_sparse_backward``; the rows picked at ``padding_idx`` get no entry."""

    _backward_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Any, weight: Tensor, flat: Tensor, padding_idx: int | None,
                scale_grad_by_freq: bool) -> Tensor:
        ctx.flat = flat
        ctx.scale_grad_by_freq = scale_grad_by_freq
        ctx.padding_idx = padding_idx
        ctx.size = tuple(weight.shape)
        return weight.index_select(0, flat)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        if ctx.scale_grad_by_freq:  # (PyTorch refuses it at this point too, not in forward)
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with "
                               "sparse gradients")
        flat = ctx.flat
        if ctx.padding_idx is not None:
            keep = nonzero(flat.ne(ctx.padding_idx)).reshape((-1,))
            flat, g = flat.index_select(0, keep), g.index_select(0, keep)
        SPARSE_GRADS.made = True
        # (a gradient of at most one entry is coalesced, as PyTorch marks it)
        return (SparseCooTensor(flat.reshape((1, -1)), g, ctx.size, flat.shape[0] <= 1), None,
                None, None)


def sparse_rows(weight: Tensor, flat: Tensor, padding_idx: int | None,
                scale_grad_by_freq: bool = False) -> Tensor:
    """The rows of ``weight`` at ``flat``, with a sparse gradient for ``weight``."""
    return call(_SparseRows, weight, flat, padding_idx, scale_grad_by_freq)
