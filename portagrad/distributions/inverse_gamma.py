"""The inverse-gamma distribution: ``1 / X`` for ``X ~ Gamma(concentration, rate)``."""
from __future__ import annotations

import math
from typing import Any

from .._ops.elementwise import log, where
from .._ops.gammafn import digamma, lgamma
from .._tensor import Tensor
from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """``1 / X`` with ``X ~ Gamma(concentration, rate)``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive  # type: ignore[assignment]
    has_rsample = True  # type: ignore[assignment]

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base.rate.new_ones(())
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> InverseGamma:
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration  # type: ignore[attr-defined, no-any-return]

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate  # type: ignore[attr-defined, no-any-return]

    @property
    def mean(self) -> Tensor:
        c = self.concentration
        return where(c > 1, self.rate / where(c > 1, c - 1, 1.0), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        safe = where(c > 2, c, 3.0)
        return where(c > 2, self.rate.pow(2) / ((safe - 1).pow(2) * (safe - 2)), math.inf)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c + log(self.rate) + lgamma(c) - (1 + c) * digamma(c)
