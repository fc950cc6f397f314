"""The Kumaraswamy distribution on ``[0, 1]``."""
from __future__ import annotations

import math
from typing import Any

from .._ops.elementwise import exp, log, logical_or, where
from .._ops.gammafn import digamma, lgamma
from .._tensor import Tensor
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]

_EULER_GAMMA = 0.57721566490153286060


def _moments(a: Tensor, b: Tensor, n: int) -> Tensor:
    """``E[X ** n]`` of ``Kumaraswamy(a, b)``: ``b B(1 + n / a, b)``."""
    arg1 = 1 + n / a
    log_value = lgamma(arg1) + lgamma(b) - lgamma(arg1 + b)
    return b * exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy distribution of concentrations ``concentration1`` (a) and
    ``concentration0`` (b): ``(1 - U ** (1 / b)) ** (1 / a)`` for ``U ~ Uniform(0, 1)``."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval  # type: ignore[assignment]
    has_rsample = True  # type: ignore[assignment]

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(self.concentration0.new_zeros(self.concentration0.shape),
                       self.concentration0.new_ones(self.concentration0.shape),
                       validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        shape = tuple(batch_shape)
        new.concentration1 = self.concentration1.expand(shape)
        new.concentration0 = self.concentration0.expand(shape)
        base = self.base_dist.expand(shape)
        transforms = [PowerTransform(exponent=new.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=new.concentration1.reciprocal())]
        TransformedDistribution.__init__(new, base, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        # ((a - 1) / (a b - 1)) ** (1 / a), defined when a >= 1 and b >= 1 (not both 1)
        a, b = self.concentration1, self.concentration0
        log_mode = (log((a - 1) / (a * b - 1))) / a
        return where(logical_or(a < 1, b < 1), math.nan, exp(log_mode))

    @property
    def variance(self) -> Tensor:
        return (_moments(self.concentration1, self.concentration0, 2)
                - self.mean.pow(2))

    def entropy(self) -> Tensor:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = digamma(self.concentration0 + 1) + _EULER_GAMMA
        return t0 + t1 * h0 - log(self.concentration1) - log(self.concentration0)
