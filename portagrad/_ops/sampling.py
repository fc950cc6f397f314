"""Differentiable samplers: ``standard_gamma``, whose gradient w.r.t. ``alpha`` is the implicit
reparameterisation gradient (what ``Gamma``, ``Beta`` and ``Dirichlet``'s ``rsample`` build on)."""
from __future__ import annotations

import math
from typing import Any

from .._creation import zeros
from .._dtype import float64
from .._random import _fp64, rand, randn
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from .elementwise import clamp, exp, isfinite, log, logical_and, logical_not, logical_or, where
from .gammafn import igamma, lgamma

__all__ = ["standard_gamma", "smallest_normal"]


def smallest_normal(t: Tensor) -> float:
    """The smallest positive normal number of ``t``'s dtype (float32 or float64)."""
    return 1.1754943508222875e-38 if t.dtype.itemsize == 4 else 2.2250738585072014e-308


def _sample_standard_gamma(alpha: Tensor) -> Tensor:
    """Samples of ``Gamma(alpha, 1)`` (one per element of ``alpha``) by Marsaglia and Tsang's
    squeeze-and-reject method, vectorised: every round draws a normal and a uniform for each
    element and keeps the first accepted proposal; rounds repeat until all are accepted (each
    accepts with probability above 0.95). ``alpha < 1`` is boosted to ``alpha + 1`` and scaled by
    ``U ** (1 / alpha)``. Drawn with portagrad's generator on ``alpha``'s device."""
    with no_grad():
        alpha = alpha.detach()
        shape, dt, dev = tuple(alpha.shape), alpha.dtype, alpha.device
        boost = alpha < 1.0
        a = where(boost, alpha + 1.0, alpha)
        d = a - 1.0 / 3.0
        c = (9.0 * d).rsqrt()
        # a NaN, infinite or non-positive alpha never accepts: it is done, with a NaN sample
        invalid = logical_not(logical_and(isfinite(alpha), alpha > 0))
        out = where(invalid, math.nan, zeros(shape, dtype=dt, device=dev))
        done = invalid
        while not bool(done.all().item()):
            z = randn(shape, dtype=dt, device=dev)
            u = rand(shape, dtype=dt, device=dev)
            v = (1.0 + c * z) ** 3
            pos = v > 0
            safe_v = where(pos, v, 1.0)
            ok = logical_and(pos, log(u) < 0.5 * z * z + d - d * safe_v + d * log(safe_v))
            out = where(logical_and(ok, logical_not(done)), d * safe_v, out)
            done = logical_or(done, ok)
        u = rand(shape, dtype=dt, device=dev)
        out = where(boost, out * u ** alpha.reciprocal(), out)
        return clamp(out, min=smallest_normal(out))


def _standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """``dx/dalpha`` of a ``Gamma(alpha, 1)`` sample ``x`` held at a fixed quantile (implicit
    reparameterisation): ``-(dP/dalpha)(alpha, x) / p(x; alpha)``, ``P`` the regularised lower
    incomplete gamma and ``p`` the density. ``dP/dalpha`` is a central difference of ``igamma``
    with a relative step, in float64 where the device has it."""
    with no_grad():
        wide = float64 if _fp64(alpha.device) else alpha.dtype
        a, xx = alpha.detach().to(wide), x.detach().to(wide)
        h = a * (1e-5 if wide is float64 else 1e-2)
        dp_da = (igamma(a + h, xx) - igamma(a - h, xx)) / (2.0 * h)
        log_pdf = (a - 1.0) * log(xx) - xx - lgamma(a)
        return (-dp_da * exp(-log_pdf)).to(alpha.dtype)  # type: ignore[no-any-return]


class _StandardGamma(Function):
    """A standard-gamma sample whose gradient w.r.t. ``alpha`` is the implicit
    reparameterisation gradient (the backward pass itself is not differentiable)."""

    _backward_name = "StandardGammaBackward0"

    @staticmethod
    def forward(ctx: Any, alpha: Tensor) -> Tensor:
        x = _sample_standard_gamma(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        alpha, x = ctx.saved_tensors
        return g * _standard_gamma_grad(alpha, x)


def standard_gamma(alpha: Tensor) -> Tensor:
    """Samples of ``Gamma(alpha, 1)``, one per element of ``alpha`` (Marsaglia-Tsang, on
    ``alpha``'s device), differentiable w.r.t. ``alpha`` by implicit reparameterisation."""
    return _StandardGamma.apply(alpha)  # type: ignore[no-any-return]
