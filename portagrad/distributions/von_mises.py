"""The von Mises distribution on the circle."""
from __future__ import annotations

import math
import numbers
from typing import Any

from .._creation import zeros
from .._ops.elementwise import cos, isfinite, log, logical_and, logical_not, logical_or, where
from .._ops.special import acos
from .._random import rand
from .._storage import Size
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# polynomial approximations of the modified Bessel functions I0 and I1 (Abramowitz & Stegun
# 9.8.1-9.8.4), the ones PyTorch uses, so that values agree
_I0_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_LARGE = [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1,
             0.2635537e-1, -0.1647633e-1, 0.392377e-2]
_I1_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]
_I1_LARGE = [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1,
             0.2282967e-1, -0.2895312e-1, 0.1787654e-1, -0.420059e-2]


def _eval_poly(y: Tensor, coef: list[float]) -> Tensor:
    result: Any = coef[-1]
    for c in reversed(coef[:-1]):
        result = result * y + c
    return result  # type: ignore[no-any-return]


def _log_modified_bessel_fn(x: Tensor, order: int = 0) -> Tensor:
    """``log(I_order(x))`` for ``x > 0``, ``order`` 0 or 1."""
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order}")
    y = (x / 3.75) ** 2
    small = _eval_poly(y, _I0_SMALL if order == 0 else _I1_SMALL)
    if order == 1:
        small = x.abs() * small
    small = log(small)
    safe = where(x < 3.75, 3.75, x)  # keeps the unused branch finite (and its gradient)
    large = safe - 0.5 * log(safe) + log(_eval_poly(3.75 / safe, _I0_LARGE if order == 0
                                                    else _I1_LARGE))
    return where(x < 3.75, small, large)


class VonMises(Distribution):
    """Circular distribution of mean direction ``loc`` and concentration ``concentration``.
    ``log_prob`` is differentiable; samples come from Best and Fisher's rejection sampler,
    vectorised with tensor ops on the parameters' device (``rsample`` is not available, as in
    PyTorch)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        batch_shape = Size() if isinstance(loc, numbers.Number) and isinstance(
            concentration, numbers.Number) else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> VonMises:
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * cos(value - self.loc)
        return (log_prob - math.log(2 * math.pi)  # type: ignore[no-any-return]
                - _log_modified_bessel_fn(self.concentration, order=0))

    @lazy_property
    def _proposal_r(self) -> Tensor:
        kappa = self.concentration.detach()
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        proposal_r = (1 + rho ** 2) / (2 * rho)
        return where(kappa < 1e-5, 1 / kappa + kappa, proposal_r)  # small-kappa Taylor form

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            dt, dev = self.loc.dtype, self.loc.device
            kappa = self.concentration.detach().expand(shape)
            r = self._proposal_r.expand(shape)
            # a NaN, infinite or non-positive concentration never accepts: NaN samples
            invalid = logical_not(logical_and(isfinite(kappa), kappa > 0))
            x = where(invalid, math.nan, zeros(shape, dtype=dt, device=dev))
            done = invalid
            while not bool(done.all().item()):
                u1 = rand(shape, dtype=dt, device=dev)
                u2 = rand(shape, dtype=dt, device=dev)
                u3 = rand(shape, dtype=dt, device=dev)
                z = cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                safe_u2 = where(u2 > 0, u2, 1.0)
                accept = logical_or(c * (2 - c) - u2 > 0, log(c / safe_u2) + 1 - c >= 0)
                new = (u3 - 0.5).sign() * acos(f.clamp(-1.0, 1.0))
                x = where(logical_and(accept, logical_not(done)), new, x)
                done = logical_or(done, accept)
            return (x + math.pi + self.loc.detach()) % (2 * math.pi) - math.pi

    @property
    def mean(self) -> Tensor:
        """The circular mean (``loc``)."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:  # type: ignore[override]
        """The circular variance ``1 - I1(k) / I0(k)``."""
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()
