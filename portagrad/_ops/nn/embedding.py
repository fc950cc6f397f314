"""``embedding``'s gradient options: ``scale_grad_by_freq`` divides the gradient reaching each row
of the table by how often its index occurs in the batch (PyTorch's rule for word embeddings).

The rows are picked with ``index_select``, whose gradient adds into the table; this node sits
between the picked rows and the output and scales each row's incoming gradient.
"""
from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...autograd.function import Function
from .._common import call

__all__ = ["scale_grad"]


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
