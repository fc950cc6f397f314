"""In-place random fills beyond the primitives' uniform and normal draws: ``cauchy_``,
``log_normal_``, ``geometric_`` (each transforms uniform or normal numbers)."""
from __future__ import annotations

import math
from typing import Any

from .. import _random
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from .elementwise import add, ceil, div, exp, log, maximum, mul, rsub, sub, tan
from .conversion import copy_

__all__ = ["cauchy_", "log_normal_", "geometric_"]


def _floating(name: str, x: Tensor) -> None:
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name} expects a floating point tensor, got {x.dtype}")


def cauchy_(x: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None
            ) -> Tensor:
    """Fill with Cauchy numbers: ``median + sigma * tan(pi (u - 1/2))``."""
    _floating("cauchy_", x)
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    with _no_grad():
        u = _random.rand(x.shape, dtype=x.dtype, device=x.device, generator=generator)
        v = add(mul(tan(mul(sub(u, 0.5), math.pi)), sigma), median)
    return copy_(x, v)


def log_normal_(x: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Any = None
                ) -> Tensor:
    """Fill with ``exp(N(mean, std))`` numbers."""
    _floating("log_normal_", x)
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    with _no_grad():
        n = _random.randn(x.shape, dtype=x.dtype, device=x.device, generator=generator)
        v = exp(add(mul(n, std), mean))
    return copy_(x, v)


def geometric_(x: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    with _no_grad():
        u = _random.rand(x.shape, device=x.device, generator=generator)
        # u in [0, 1): 1 - u in (0, 1] keeps the log finite
        v = ceil(div(log(rsub(u, 1.0)), math.log1p(-p)))
        v = maximum(v, 1.0)
    return copy_(x, v.to(x.dtype))
