"""The Poisson distribution."""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .._ops.elementwise import exp, floor, log, where
from .._storage import Size
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from . import constraints
from .._ops.gammafn import lgamma
from ._host import _lgamma, sample_by_inversion
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


def _poisson_max(rate: float) -> int:
    return int(rate + 12.0 * math.sqrt(rate) + 30)


def _poisson_log_pmf(ks: np.ndarray, rate: float) -> np.ndarray:
    if rate == 0:
        return np.where(ks == 0, 0.0, -np.inf)
    return ks * math.log(rate) - rate - np.asarray(_lgamma(ks + 1), np.float64)


class Poisson(ExponentialFamily):
    """Counts of events at rate ``rate``. ``log_prob`` is differentiable w.r.t. ``rate``;
    samples are drawn exactly by CDF inversion on the host."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, numbers.Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Poisson:
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return floor(self.rate)

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            rate = self.rate.detach().numpy(force=True).astype(np.float64)
            return sample_by_inversion(shape, [rate], _poisson_max, _poisson_log_pmf, self.rate)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        # xlogy(value, rate): 0 where value is 0, even at rate 0 (with a finite gradient)
        safe_rate = where(value == 0, 1.0, rate)
        return value * log(safe_rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (log(self.rate),)

    def _log_normalizer(self, *natural_params: Any) -> Tensor:
        (x,) = natural_params
        return exp(x)
