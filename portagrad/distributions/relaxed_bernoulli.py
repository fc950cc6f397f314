"""Relaxed (Concrete / Gumbel-softmax) Bernoulli distributions: differentiable samples in
``(0, 1)`` that approach Bernoulli samples as the temperature goes to 0."""
from __future__ import annotations

import math
import numbers
from typing import Any

from .._ops.elementwise import log, log1p
from .._random import rand
from .._storage import Size
from .._tensor import Tensor
from ..nn.functional import softplus
from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a :class:`RelaxedBernoulli` sample, with ``temperature`` and ``probs`` or
    ``logits`` (exactly one)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.temperature = temperature
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._param, scalar = self.probs, isinstance(probs, numbers.Number)
        else:
            (self.logits,) = broadcast_all(logits)
            self._param, scalar = self.logits, isinstance(logits, numbers.Number)
        super().__init__(Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LogitRelaxedBernoulli:
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.temperature = self.temperature
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self) -> Tensor:  # type: ignore[override]
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:  # type: ignore[override]
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(rand(shape, dtype=probs.dtype, device=probs.device))
        return (log(u) - log1p(-u) + log(probs) - log1p(-probs)) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        log_t = math.log(self.temperature) if isinstance(self.temperature, numbers.Real) \
            else log(self.temperature)
        return log_t + diff - 2 * softplus(diff)


class RelaxedBernoulli(TransformedDistribution):
    """Relaxed Bernoulli of ``temperature`` and ``probs`` or ``logits``: samples in ``(0, 1)``,
    reparameterised (``rsample`` is differentiable)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval  # type: ignore[assignment]
    has_rsample = True  # type: ignore[assignment]

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> RelaxedBernoulli:
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def temperature(self) -> Any:
        return self.base_dist.temperature  # type: ignore[attr-defined]

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits  # type: ignore[attr-defined, no-any-return]

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs  # type: ignore[attr-defined, no-any-return]
