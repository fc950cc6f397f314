"""The Dirichlet distribution over the probability simplex."""
from __future__ import annotations

import math
from typing import Any

from .._ops.elementwise import log, logical_and, logical_or, where
from .._ops.gammafn import digamma, lgamma
from .._storage import Size
from .._tensor import Tensor
from ..nn.functional import one_hot
from . import constraints
from .exp_family import ExponentialFamily
from .._ops.sampling import standard_gamma

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution of concentration ``concentration`` (last dimension: the categories).
    Samples are normalised Marsaglia-Tsang gamma draws, differentiable w.r.t. the concentration
    by implicit reparameterisation."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if not isinstance(concentration, Tensor) or concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Dirichlet:
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        ExponentialFamily.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        g = standard_gamma(self.concentration.expand(shape))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        # xlogy(c - 1, value): 0 where c is 1 and value is <= 0 or infinite (outside the
        # support when validation is off, as PyTorch); its gradient log(value) elsewhere
        safe = where(logical_and(c == 1, logical_or(value <= 0, value == math.inf)), 1.0, value)
        return (((c - 1.0) * log(safe)).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        # every concentration below 1: the density is largest at the corner of the largest one
        corner = one_hot(mode.argmax(-1), cm1.shape[-1]).to(mode.dtype)
        mask = (self.concentration < 1).all(-1, keepdim=True)
        return where(mask, corner, mode)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.size(-1)
        a0 = c.sum(-1)
        return (lgamma(c).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0)
                - ((c - 1.0) * digamma(c)).sum(-1))

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.concentration,)

    def _log_normalizer(self, *natural_params: Any) -> Tensor:
        (x,) = natural_params
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))  # type: ignore[no-any-return]
