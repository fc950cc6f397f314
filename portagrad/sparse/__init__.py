"""``portagrad.sparse``: operations on sparse COO tensors (``layout=portagrad.sparse_coo``)."""
from __future__ import annotations

from .._ops.sparse import SparseCooTensor, sparse_mm as mm, sparse_sum as sum

__all__ = ["SparseCooTensor", "mm", "sum"]
