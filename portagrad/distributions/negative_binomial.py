"""The negative binomial distribution."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._ops.elementwise import exp, floor, sigmoid, where
from .._ops.gammafn import lgamma
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.functional import logsigmoid
from . import constraints
from ._host import _lgamma, sample_by_inversion
from ._counts import TrialCounts

__all__ = ["NegativeBinomial"]


_MAX_TABLE = 2e7  # pmf entries tabulated per distinct parameter pair (160 MB of float64)


def _nb_max(r: float, p: float) -> int:
    if p <= 0.0:
        return 0
    mean = r * p / (1 - p)
    kmax = mean + 12.0 * math.sqrt(mean / (1 - p)) + 30
    if kmax > _MAX_TABLE:
        raise NotImplementedError(
            f"NegativeBinomial.sample: total_count={r:g}, probs={p:.10g} has a mean of {mean:g}; "
            f"sampling by inversion tabulates the pmf and supports means up to about "
            f"{_MAX_TABLE:g}")
    return int(kmax)


def _nb_log_pmf(ks: np.ndarray, r: float, p: float) -> np.ndarray:
    if p <= 0.0 or r == 0:
        return np.where(ks == 0, 0.0, -np.inf)
    lg = np.asarray(_lgamma(ks + r), np.float64) - np.asarray(_lgamma(ks + 1), np.float64)
    return lg - math.lgamma(r) + r * math.log1p(-p) + ks * math.log(p)


class NegativeBinomial(TrialCounts):
    """Number of successes (probability ``probs``, or log-odds ``logits``) before
    ``total_count`` failures. ``log_prob`` is differentiable w.r.t. every parameter; samples
    are drawn exactly by CDF inversion on the host."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        super().__init__(total_count, probs, logits, validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> NegativeBinomial:
        return self._expand_into(self._get_checked_instance(NegativeBinomial, _instance), batch_shape)

    @property
    def mean(self) -> Tensor:
        return self.total_count * exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return floor((self.total_count - 1) * exp(self.logits)).clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / sigmoid(-self.logits)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            r = self.total_count.detach().numpy(force=True).astype(np.float64)
            p = self.probs.detach().numpy(force=True).astype(np.float64)
            return sample_by_inversion(shape, [r, p], _nb_max, _nb_log_pmf, self._param)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        r = self.total_count
        log_unnormalized = r * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = -lgamma(r + value) + lgamma(1.0 + value) + lgamma(r)
        # total_count + value == 0: the probability of 0 with 0 failures is 1
        log_normalization = where(r + value == 0.0, 0.0, log_normalization)
        return log_unnormalized - log_normalization  # type: ignore[no-any-return]
