"""The exponential-family base class (``torch.distributions.ExponentialFamily``)."""
from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..autograd import grad as _grad
from ..autograd.grad_mode import enable_grad
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions with densities ``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``:
    subclasses give the natural parameters ``theta`` (``_natural_params``), the log-normaliser
    ``F`` (``_log_normalizer``) and ``E[k(x)]`` (``_mean_carrier_measure``); the entropy then
    follows as a Bregman divergence, ``F(theta) - <theta, grad F(theta)> - E[k(x)]``."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        """The natural parameters, as a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Any) -> Tensor:
        """The log-normaliser ``F`` as a function of the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> Any:
        """The expected carrier measure ``E[k(x)]``."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """Entropy through the Bregman divergence of the log-normaliser (autograd gives its
        gradient; ``create_graph`` keeps the result differentiable)."""
        result: Any = -self._mean_carrier_measure
        with enable_grad():
            nparams = [p.detach().requires_grad_() for p in self._natural_params]
            lg_normal = self._log_normalizer(*nparams)
            gradients = _grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for n, g in zip(nparams, gradients):
            result = result - (n * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result  # type: ignore[no-any-return]
