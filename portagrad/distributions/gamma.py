"""The gamma distribution, and the Marsaglia-Tsang sampler the gamma family shares."""
from __future__ import annotations

import math
import numbers
from typing import Any

from .._ops.elementwise import clamp, log, logical_and, logical_or, where
from .._ops.gammafn import digamma, igamma, lgamma
from .._ops.sampling import smallest_normal, standard_gamma
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution of shape ``concentration`` and inverse scale ``rate``. ``rsample`` is
    differentiable w.r.t. both (implicit reparameterisation for ``concentration``)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = Size() if isinstance(concentration, numbers.Number) and isinstance(
            rate, numbers.Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        ExponentialFamily.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return clamp(value, min=smallest_normal(value))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        # xlogy(c - 1, value): 0 where c is 1 and value is <= 0 or infinite (outside the
        # support when validation is off, as PyTorch); its gradient log(value) elsewhere
        safe = where(logical_and(c == 1, logical_or(value <= 0, value == math.inf)), 1.0, value)
        return c * log(r) + (c - 1) * log(safe) - r * value - lgamma(c)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - log(self.rate) + lgamma(c) + (1.0 - c) * digamma(c)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, *natural_params: Any) -> Tensor:
        x, y = natural_params
        return lgamma(x + 1) + (x + 1) * log(-y.reciprocal())  # type: ignore[no-any-return]

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return igamma(self.concentration, self.rate * value)

