"""``portagrad.softmax`` / ``log_softmax`` (and the Tensor methods): ``nn.functional``'s
implementation with PyTorch's top-level signature (``dim`` required, ``dtype`` optional)."""
from __future__ import annotations

from typing import Any

from ._tensor import Tensor
from .nn import functional as F

__all__ = ["softmax", "log_softmax"]


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` when given)."""
    return F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` (computed in ``dtype`` when given)."""
    return F.log_softmax(input, dim, dtype=dtype)
