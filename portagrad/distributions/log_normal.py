"""The log-normal distribution: ``exp(X)`` for ``X ~ Normal(loc, scale)``."""
from __future__ import annotations

from typing import Any

from .._ops.elementwise import exp
from .._tensor import Tensor
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """``exp(X)`` with ``X ~ Normal(loc, scale)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive  # type: ignore[assignment]
    has_rsample = True  # type: ignore[assignment]

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LogNormal:
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc  # type: ignore[attr-defined, no-any-return]

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale  # type: ignore[attr-defined, no-any-return]

    @property
    def mean(self) -> Tensor:
        return exp(self.loc + self.scale.pow(2) / 2)

    @property
    def mode(self) -> Tensor:
        return exp(self.loc - self.scale.square())

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * exp(2 * self.loc + scale_sq)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc
