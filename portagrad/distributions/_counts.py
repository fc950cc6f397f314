"""The base of the distributions of counts over trials with a success probability given as
``probs`` or as log-odds ``logits`` (``Binomial``, ``NegativeBinomial``)."""
from __future__ import annotations

from typing import Any

from .._storage import Size
from .._tensor import Tensor
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["TrialCounts"]


class TrialCounts(Distribution):
    """``total_count`` broadcast with exactly one of ``probs`` / ``logits``; the other is derived
    on first use, as in PyTorch."""

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
            param = self.logits
        self._param = param
        super().__init__(param.size(), validate_args=validate_args)

    def _expand_into(self, new: Any, batch_shape: Any) -> Any:
        """``expand``'s work on ``new`` (from ``_get_checked_instance`` of the subclass)."""
        batch_shape = Size(tuple(batch_shape))
        new.total_count = self.total_count.expand(batch_shape)
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
        """Log-odds of success."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:  # type: ignore[override]
        """Probability of success."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()
