"""The base of the half distributions: ``|X|`` for ``X`` of a location-0, scale-``scale``
family symmetric about 0 (``HalfNormal``, ``HalfCauchy``)."""
from __future__ import annotations

import math
from typing import Any

from .._ops.elementwise import where
from .._tensor import Tensor
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["Half"]


class Half(TransformedDistribution):
    """``|X|`` with ``X ~ family(0, scale)``; a subclass names the family (``_family``) and gives
    its ``mean``, ``variance`` and ``expand``."""

    _family: Any = None
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative  # type: ignore[assignment]
    has_rsample = True  # type: ignore[assignment]

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        base = self._family(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale  # type: ignore[attr-defined, no-any-return]

    @property
    def mode(self) -> Tensor:
        return self.scale * 0

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)
