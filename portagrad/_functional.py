"""Top-level functions PyTorch also has in ``torch.nn.functional`` (``portagrad.softmax``,
``portagrad.dropout`` ...): ``nn.functional``'s implementations with the top-level signatures
(``dim`` of softmax required, ``dropout(input, p, train)``)."""
from __future__ import annotations

from typing import Any

from ._tensor import Tensor
from .nn import functional as F

__all__ = ["softmax", "log_softmax", "dropout", "hardshrink", "prelu", "threshold", "selu",
           "celu", "cosine_similarity", "pairwise_distance"]


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` when given)."""
    return F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` (computed in ``dtype`` when given)."""
    return F.log_softmax(input, dim, dtype=dtype)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero each element with probability ``p`` (scaling the rest by ``1/(1-p)``) when
    ``train``."""
    return F.dropout(input, p, train)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0."""
    return F.hardshrink(input, lambd)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``max(0, x) + weight * min(0, x)`` (``weight`` per channel, dimension 1)."""
    return F.prelu(input, weight)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    return F.threshold(input, threshold, value)


def selu(input: Tensor) -> Tensor:
    return F.selu(input)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    return F.celu(input, alpha)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``."""
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dimension."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)
