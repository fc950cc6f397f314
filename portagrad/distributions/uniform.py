"""The continuous uniform distribution on ``[low, high)``."""
from __future__ import annotations

import numbers
from typing import Any

from .._ops.elementwise import log
from .._random import rand
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform distribution on the half-open interval ``[low, high)``."""

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        batch_shape = Size() if isinstance(low, numbers.Number) and isinstance(
            high, numbers.Number) else self.low.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and not bool((self.low < self.high).all().item()):
            raise ValueError("Uniform is not defined when low>= high")

    def expand(self, batch_shape: Any, _instance: Any = None) -> Uniform:
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.low = self.low.expand(batch_shape)
        new.high = self.high.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return self.high * float("nan")

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).to(self.low.dtype)
        ub = self.high.gt(value).to(self.low.dtype)
        return log(lb * ub) - log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return log(self.high - self.low)
