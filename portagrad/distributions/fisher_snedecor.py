"""The Fisher-Snedecor (F) distribution."""
from __future__ import annotations

import math
import numbers
from typing import Any

from .._ops.elementwise import clamp, log, log1p, where
from .._ops.gammafn import lgamma
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .._ops.sampling import smallest_normal
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """F distribution with ``df1`` and ``df2`` degrees of freedom: the ratio of two scaled
    chi-squared variables."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=False)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=False)
        batch_shape = Size() if isinstance(df1, numbers.Number) and isinstance(
            df2, numbers.Number) else self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> FisherSnedecor:
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        df2 = where(self.df2 > 2, self.df2, math.nan)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return where(self.df1 > 2, mode, math.nan)

    @property
    def variance(self) -> Tensor:
        df2 = where(self.df2 > 4, self.df2, math.nan)
        return (2 * df2.pow(2) * (self.df1 + df2 - 2)
                / (self.df1 * (df2 - 2).pow(2) * (df2 - 4)))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        x1 = self._gamma1.rsample(sample_shape)
        x2 = self._gamma2.rsample(sample_shape)
        x2 = clamp(x2, min=smallest_normal(x2))
        y = x1 / x2
        return clamp(y, min=smallest_normal(y))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = lgamma(ct1 + ct2) - lgamma(ct1) - lgamma(ct2)
        t2 = ct1 * log(ct3) + (ct1 - 1) * log(value)
        t3 = (ct1 + ct2) * log1p(ct3 * value)
        return t1 + t2 - t3  # type: ignore[no-any-return]
