"""The Gumbel (type-I extreme value) distribution."""
from __future__ import annotations

import math
import numbers
from typing import Any

from .._ops.elementwise import exp, log
from .._random import rand
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, clamp_probs

__all__ = ["Gumbel"]

_EULER = 0.57721566490153286060


class Gumbel(Distribution):
    """Gumbel distribution of location ``loc`` and scale ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = Size() if isinstance(loc, numbers.Number) and isinstance(
            scale, numbers.Number) else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(rand(shape, dtype=self.loc.dtype, device=self.loc.device))
        return self.loc - self.scale * log(-log(u))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return (z - exp(z)) - log(self.scale)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return exp(-exp(-(value - self.loc) / self.scale))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc - self.scale * log(-log(value))

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * _EULER

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return log(self.scale) + (1 + _EULER)
