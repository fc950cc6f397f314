"""The half-Cauchy distribution: ``|X|`` for ``X ~ Cauchy(0, scale)``."""
from __future__ import annotations

import math
from typing import Any

from .._tensor import Tensor
from ._half import Half
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(Half):
    """``|X|`` with ``X ~ Cauchy(0, scale)``."""

    _family = Cauchy

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        super().__init__(scale, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> HalfCauchy:
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def mean(self) -> Tensor:
        return self.scale.new_full(tuple(self._extended_shape()), math.inf)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance  # infinite
