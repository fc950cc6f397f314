"""Log-beta and related helpers built on the differentiable gamma-function ops."""
from __future__ import annotations

from .._ops.gammafn import lgamma
from .._tensor import Tensor

__all__ = ["lbeta"]


def lbeta(a: Tensor, b: Tensor) -> Tensor:
    """``log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b)``."""
    return lgamma(a) + lgamma(b) - lgamma(a + b)  # type: ignore[no-any-return]
