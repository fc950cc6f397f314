"""The gamma distribution, and the Marsaglia-Tsang sampler the gamma family shares."""
from __future__ import annotations

import numbers
from typing import Any

from .._creation import zeros
from .._dtype import bool as _bool
from .._ops.elementwise import clamp, log, logical_and, logical_not, logical_or, where
from .._ops.gammafn import digamma, igamma, lgamma
from .._random import rand, randn
from .._storage import Size
from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled, no_grad
from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


def _tiny(t: Tensor) -> float:
    return 1.1754943508222875e-38 if t.dtype.itemsize == 4 else 2.2250738585072014e-308


def standard_gamma(alpha: Tensor) -> Tensor:
    """Samples of ``Gamma(alpha, 1)`` (one per element of ``alpha``) by Marsaglia and Tsang's
    squeeze-and-reject method, vectorised: every round draws a normal and a uniform for each
    element and keeps the first accepted proposal; rounds repeat until all are accepted (each
    accepts with probability above 0.95). ``alpha < 1`` is boosted to ``alpha + 1`` and scaled by
    ``U ** (1 / alpha)``. Drawn with portagrad's generator on ``alpha``'s device; no gradient."""
    with no_grad():
        alpha = alpha.detach()
        shape, dt, dev = tuple(alpha.shape), alpha.dtype, alpha.device
        boost = alpha < 1.0
        a = where(boost, alpha + 1.0, alpha)
        d = a - 1.0 / 3.0
        c = (9.0 * d).rsqrt()
        out = zeros(shape, dtype=dt, device=dev)
        done = zeros(shape, dtype=_bool, device=dev)
        while True:
            z = randn(shape, dtype=dt, device=dev)
            u = rand(shape, dtype=dt, device=dev)
            v = (1.0 + c * z) ** 3
            pos = v > 0
            safe_v = where(pos, v, 1.0)
            ok = logical_and(pos, log(u) < 0.5 * z * z + d - d * safe_v + d * log(safe_v))
            out = where(logical_and(ok, logical_not(done)), d * safe_v, out)
            done = logical_or(done, ok)
            if bool(done.all().item()):
                break
        u = rand(shape, dtype=dt, device=dev)
        out = where(boost, out * u ** alpha.reciprocal(), out)
        return clamp(out, min=_tiny(out))


def _no_concentration_grad(name: str, *concentrations: Tensor) -> None:
    """``rsample`` is reparameterised in the rates only: a gradient w.r.t. a concentration needs
    the implicit reparameterisation gradient, which portagrad does not implement."""
    if is_grad_enabled() and any(c.requires_grad for c in concentrations):
        raise NotImplementedError(
            f"{name}.rsample: gradients w.r.t. the concentration (implicit reparameterisation) "
            "are not implemented; use sample() with a score-function estimator or detach the "
            "concentration")


class Gamma(ExponentialFamily):
    """Gamma distribution of shape ``concentration`` and inverse scale ``rate``. ``rsample`` is
    differentiable w.r.t. ``rate``; a gradient w.r.t. ``concentration`` raises
    ``NotImplementedError``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = Size() if isinstance(concentration, numbers.Number) and isinstance(
            rate, numbers.Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        ExponentialFamily.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        _no_concentration_grad("Gamma", self.concentration)
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return clamp(value, min=_tiny(value))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        # xlogy(c - 1, value): 0 at value 0 when c is 1
        safe = where(logical_and(value == 0, c == 1), 1.0, value)
        return c * log(r) + (c - 1) * log(safe) - r * value - lgamma(c)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - log(self.rate) + lgamma(c) + (1.0 - c) * digamma(c)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, *natural_params: Any) -> Tensor:
        x, y = natural_params
        return lgamma(x + 1) + (x + 1) * log(-y.reciprocal())  # type: ignore[no-any-return]

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return igamma(self.concentration, self.rate * value)

