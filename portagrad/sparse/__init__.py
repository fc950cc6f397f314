"""``portagrad.sparse``: operations on sparse COO tensors (``layout=portagrad.sparse_coo``)."""
from __future__ import annotations

from .._ops.sparse import SparseCooTensor
from .._ops.sparse import sparse_addmm as addmm
from .._ops.sparse import sparse_log_softmax as log_softmax
from .._ops.sparse import sparse_mm as mm
from .._ops.sparse import sparse_softmax as softmax
from .._ops.sparse import sparse_sum as sum

__all__ = ["SparseCooTensor", "addmm", "log_softmax", "mm", "softmax", "sum"]
