"""The half-normal distribution: ``|X|`` for ``X ~ Normal(0, scale)``."""
from __future__ import annotations

import math
from typing import Any

from .._tensor import Tensor
from ._half import Half
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(Half):
    """``|X|`` with ``X ~ Normal(0, scale)``."""

    _family = Normal

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        super().__init__(scale, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> HalfNormal:
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)
