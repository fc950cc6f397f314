"""The continuous Bernoulli distribution on ``[0, 1]`` (Loaiza-Ganem and Cunningham, 2019)."""
from __future__ import annotations

import math
import numbers
from typing import Any

from .._ops.elementwise import abs as _abs
from .._ops.elementwise import expm1, le, log, log1p, logical_or, gt, ge, where
from .._random import rand
from .._storage import Size
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.functional import softplus
from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Continuous Bernoulli of parameter ``probs`` (or ``logits``): density proportional to
    ``probs ** x (1 - probs) ** (1 - x)`` on ``[0, 1]``. Near ``probs = 0.5`` (inside ``lims``)
    the normaliser and moments use their Taylor expansions, as in PyTorch."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 lims: tuple[float, float] = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all().item()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
            param = self.probs
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        self._param = param
        self._lims = lims
        super().__init__(Size() if is_scalar else param.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> ContinuousBernoulli:
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        batch_shape = Size(tuple(batch_shape))
        new._lims = self._lims
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        ExponentialFamily.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self) -> Tensor:
        return logical_or(le(self.probs, self._lims[0]), gt(self.probs, self._lims[1]))

    def _cut_probs(self) -> Tensor:
        return where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self) -> Tensor:
        cut = self._cut_probs()
        below = where(le(cut, 0.5), cut, 0.0)
        above = where(ge(cut, 0.5), cut, 1.0)
        log_norm = (log(_abs(log1p(-cut) - log(cut)))
                    - where(le(cut, 0.5), log1p(-2.0 * below), log(2.0 * above - 1.0)))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (log1p(-cut) - log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        vs = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / (log1p(-cut) - log(cut)).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._outside_unstable_region(), vs, taylor)

    @lazy_property
    def logits(self) -> Tensor:  # type: ignore[override]
        """Log-odds of the parameter."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:  # type: ignore[override]
        """The parameter, in ``(0, 1)``."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # minus binary cross-entropy with logits
        return value * logits - softplus(logits) + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = where(self._outside_unstable_region(), cdfs, value)
        return where(le(value, 0.0), 0.0, where(ge(value, 1.0), 1.0, unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        return where(self._outside_unstable_region(),
                     (log1p(-cut + value * (2.0 * cut - 1.0)) - log1p(-cut))
                     / (log(cut) - log1p(-cut)), value)

    def entropy(self) -> Tensor:
        log_probs0 = log1p(-self.probs)
        log_probs1 = log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.logits,)

    def _log_normalizer(self, *natural_params: Any) -> Tensor:
        (x,) = natural_params
        outside = logical_or(le(x, self._lims[0] - 0.5), gt(x, self._lims[1] - 0.5))
        cut = where(outside, x, self._lims[0] - 0.5)
        log_norm = log(_abs(expm1(cut))) - log(_abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return where(outside, log_norm, taylor)
