"""The generalized Pareto distribution."""
from __future__ import annotations

import math
import numbers
from typing import Any

from .._ops.elementwise import abs as _abs
from .._ops.elementwise import exp, expm1, log, log1p, where
from .._random import rand
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


def _is_zero(c: Tensor) -> Tensor:
    """``isclose(c, 0)`` with PyTorch's default tolerances (``atol = 1e-8``)."""
    return _abs(c) <= 1e-8


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution of location ``loc``, scale ``scale`` and shape
    ``concentration`` (0: exponential tail; negative: bounded support)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        batch_shape = Size() if all(isinstance(v, numbers.Number)
                                    for v in (loc, scale, concentration)) else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> GeneralizedPareto:
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _z(self, x: Tensor) -> Tensor:
        return (x - self.loc) / self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero = _is_zero(self.concentration)
        safe_conc = where(eq_zero, 1.0, self.concentration)
        y = 1 / safe_conc + 1.0
        where_nonzero = where(y == 0, y, y * log1p(safe_conc * z))
        return -log(self.scale) - where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """``log(1 - cdf(value))``."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero = _is_zero(self.concentration)
        safe_conc = where(eq_zero, 1.0, self.concentration)
        return where(eq_zero, -z, -log1p(safe_conc * z) / safe_conc)

    def log_cdf(self, value: Tensor) -> Tensor:
        """``log(cdf(value))``."""
        return log1p(-exp(self.log_survival_function(value)))

    def cdf(self, value: Tensor) -> Tensor:
        return exp(self.log_cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        eq_zero = _is_zero(self.concentration)
        safe_conc = where(eq_zero, 1.0, self.concentration)
        logu = log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * expm1(-safe_conc * logu)
        return where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        safe_conc = where(valid, self.concentration, 0.5)
        return where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        safe_conc = where(valid, self.concentration, 0.25)
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return where(valid, result, math.nan)

    def entropy(self) -> Tensor:
        ans = log(self.scale) + self.concentration + 1
        return ans.expand(tuple(self._batch_shape)) if tuple(ans.shape) != tuple(
            self._batch_shape) else ans

    @property
    def mode(self) -> Tensor:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        lower = self.loc
        neg = self.concentration < 0
        upper = where(neg, lower - self.scale / where(neg, self.concentration, -1.0), math.inf)
        return constraints.interval(lower, upper)
