"""The geometric distribution: the number of failures before the first success."""
from __future__ import annotations

import numbers
from typing import Any

from .._creation import zeros_like
from .._ops.elementwise import floor, log, log1p, where
from .._random import rand
from .._storage import Size
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.functional import binary_cross_entropy_with_logits
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]

_TINY = {4: 1.1754943508222875e-38, 8: 2.2250738585072014e-308}


class Geometric(Distribution):
    """Failures before the first success of Bernoulli trials of success probability ``probs``
    (or log-odds ``logits``), values ``0, 1, 2, ...``."""

    arg_constraints = {"probs": constraints.interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param, scalar = self.probs, isinstance(probs, numbers.Number)
        else:
            (self.logits,) = broadcast_all(logits)
            param, scalar = self.logits, isinstance(logits, numbers.Number)
        super().__init__(Size() if scalar else param.size(), validate_args=validate_args)
        if self._validate_args and probs is not None:
            if not bool((self.probs > 0).all().item()):
                raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of "
                                 f"shape {tuple(self.probs.shape)}) of distribution {self!r} to "
                                 f"be positive but found invalid values:\n{self.probs}")

    def expand(self, batch_shape: Any, _instance: Any = None) -> Geometric:
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = Size(tuple(batch_shape))
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self) -> Tensor:  # type: ignore[override]
        """Log-odds of success."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:  # type: ignore[override]
        """Probability of success."""
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            u = rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=_TINY[self.probs.dtype.itemsize])
            return floor(log(u) / log1p(-self.probs))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # 0 * log(0) = 0 where probs is 1 and the value 0 (the sure first success)
        probs = where((probs == 1) & (value == 0), 0.0, probs)
        return value * log1p(-probs) + log(self.probs)

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs,
                                                reduction="none") / self.probs
