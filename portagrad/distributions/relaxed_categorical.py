"""Relaxed one-hot categorical (Concrete / Gumbel-softmax) distributions: differentiable samples
on the simplex that approach one-hot samples as the temperature goes to 0."""
from __future__ import annotations

import math
import numbers
from typing import Any

from .._ops.elementwise import log
from .._ops.reduction import logsumexp
from .._random import rand
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a :class:`RelaxedOneHotCategorical` sample (values whose ``exp`` sums to 1)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> ExpRelaxedCategorical:
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -log(-log(u))
        scores = (self.logits + gumbels) / self.temperature
        return scores - logsumexp(scores, dim=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        log_t = math.log(self.temperature) if isinstance(self.temperature, numbers.Real) \
            else log(self.temperature)
        log_scale = math.lgamma(k) + (k - 1) * log_t  # lgamma of the constant K
        score = self.logits - value * self.temperature
        score = (score - logsumexp(score, dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """Relaxed one-hot categorical of ``temperature`` and ``probs`` or ``logits``: samples on
    the simplex, reparameterised (``rsample`` is differentiable)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.simplex  # type: ignore[assignment]
    has_rsample = True  # type: ignore[assignment]

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> RelaxedOneHotCategorical:
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
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
