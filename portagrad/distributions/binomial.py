"""The binomial distribution."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._creation import arange
from .._ops.elementwise import exp, floor
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.functional import logsigmoid
from . import constraints
from .._ops.gammafn import lgamma
from ._host import _lgamma, sample_by_inversion
from ._counts import TrialCounts

__all__ = ["Binomial"]


def _binomial_log_pmf(ks: np.ndarray, n: float, p: float) -> np.ndarray:
    if p <= 0.0:
        return np.where(ks == 0, 0.0, -np.inf)
    if p >= 1.0:
        return np.where(ks == n, 0.0, -np.inf)
    lg = np.asarray(_lgamma(ks + 1), np.float64) + np.asarray(_lgamma(n - ks + 1), np.float64)
    return math.lgamma(n + 1) - lg + ks * math.log(p) + (n - ks) * math.log1p(-p)


class Binomial(TrialCounts):
    """Successes in ``total_count`` independent trials of success probability ``probs`` (or
    log-odds ``logits``). ``log_prob`` is differentiable w.r.t. ``probs``/``logits``; samples are
    drawn exactly by CDF inversion on the host."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        super().__init__(total_count, probs, logits, validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Binomial:
        return self._expand_into(self._get_checked_instance(Binomial, _instance), batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return floor((self.total_count + 1) * self.probs).clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            n = self.total_count.detach().numpy(force=True).astype(np.float64)
            p = self.probs.detach().numpy(force=True).astype(np.float64)
            return sample_by_inversion(shape, [n, p], lambda n_, p_: int(n_), _binomial_log_pmf,
                                       self._param)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = lgamma(self.total_count + 1)
        log_factorial_k = lgamma(value + 1)
        log_factorial_nmk = lgamma(self.total_count - value + 1)
        # k log p + (n - k) log(1 - p) = k * logits - n * softplus(logits), with softplus written
        # as -logsigmoid(-logits): stable for large |logits| and with the right gradient (1/2) at
        # logits == 0, where max(x, 0) + log1p(exp(-|x|)) has a kink in its autograd graph
        logits = self.logits
        normalize = -self.total_count * logsigmoid(-logits) - log_factorial_n
        return value * logits - log_factorial_k - log_factorial_nmk - normalize

    def entropy(self) -> Tensor:
        total = int(self.total_count.max().item())
        if not int(self.total_count.min().item()) == total:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        total = int(self.total_count.max().item())
        if not int(self.total_count.min().item()) == total:
            raise NotImplementedError("Inhomogeneous total count not supported by "
                                      "`enumerate_support`.")
        values = arange(1 + total, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

