"""The Laplace distribution."""
from __future__ import annotations

import numbers
from typing import Any

from .._ops.elementwise import log, log1p
from .._random import rand
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Laplace"]

class Laplace(Distribution):
    """Laplace distribution of location ``loc`` and scale ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = Size() if isinstance(loc, numbers.Number) and isinstance(
            scale, numbers.Number) else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Laplace:
        new = self._get_checked_instance(Laplace, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = 1.1920928955078125e-07 if self.loc.dtype.itemsize == 4 else 2.220446049250313e-16
        # u uniform in (-1, 1): the lower end nudged by eps so that log1p(-|u|) stays finite
        u = rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * log1p(-u.abs())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * (-(value - self.loc).abs()
                                                         / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * log1p(-2 * term.abs())

    def entropy(self) -> Tensor:
        return 1 + log(2 * self.scale)
