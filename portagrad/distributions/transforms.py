"""Invertible transforms of random variables (``torch.distributions.transforms``), for
:class:`~portagrad.distributions.TransformedDistribution`."""
from __future__ import annotations

import math
import numbers
from typing import Any

from .._ops.elementwise import abs as _abs
from .._ops.elementwise import exp, log, log1p, sigmoid, tanh
from .._tensor import Tensor
from ..nn.functional import softplus
from . import constraints
from .utils import _broadcast, clamp_probs

__all__ = ["Transform", "ComposeTransform", "ExpTransform", "AffineTransform",
           "SigmoidTransform", "TanhTransform", "AbsTransform", "PowerTransform",
           "identity_transform"]


def _sum_rightmost(value: Any, dim: int) -> Any:
    if dim == 0 or not isinstance(value, Tensor):
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


class Transform:
    """A transform ``y = f(x)`` with its inverse and ``log |det J|``; ``.inv`` is the inverse
    transform. ``domain``/``codomain`` are constraints; ``bijective`` says whether ``f`` is
    invertible; ``sign`` (+1/-1) is that of the derivative for monotone transforms."""

    bijective = False
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y: tuple[Any, Any] = (None, None)
        self._inv: Transform | None = None

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform."""
        inv = self._inv
        if inv is None:
            inv = self._inv = _InverseTransform(self)
        return inv

    @property
    def sign(self) -> int:
        """The sign of the derivative (monotone bijective transforms)."""
        raise NotImplementedError

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |dy/dx|`` elementwise (summed over the transform's event dimensions)."""
        raise NotImplementedError

    def forward_shape(self, shape: Any) -> Any:
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        return shape

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        assert self._inv is not None
        return self._inv.codomain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        assert self._inv is not None
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        assert self._inv is not None
        return self._inv.bijective

    @property
    def sign(self) -> int:
        assert self._inv is not None
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        assert self._inv is not None
        return self._inv

    def __call__(self, x: Tensor) -> Tensor:
        assert self._inv is not None
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        assert self._inv is not None
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"


class ComposeTransform(Transform):
    """The transforms ``parts`` applied in order."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> int:
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    def _call(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y: Tensor) -> Tensor:
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Any:
        if not self.parts:
            return x * 0
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms: Any = 0.0
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms = terms + _sum_rightmost(part.log_abs_det_jacobian(a, b),
                                           event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return terms

    def __repr__(self) -> str:
        return "ComposeTransform(" + ", ".join(repr(p) for p in self.parts) + ")"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True

    @property
    def sign(self) -> int:
        return 1

    def _call(self, x: Tensor) -> Tensor:
        return exp(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return log(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class SigmoidTransform(Transform):
    """``y = sigmoid(x)``."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True

    @property
    def sign(self) -> int:
        return 1

    def _call(self, x: Tensor) -> Tensor:
        return clamp_probs(sigmoid(x))

    def _inverse(self, y: Tensor) -> Tensor:
        y = clamp_probs(y)
        return log(y) - log1p(-y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True

    @property
    def sign(self) -> int:
        return 1

    def _call(self, x: Tensor) -> Tensor:
        return tanh(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return 0.5 * (log1p(y) - log1p(-y))  # atanh

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse picks the non-negative root)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return _abs(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x`` (``event_dim`` trailing dimensions form one event)."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.domain

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = x.shape
        scale = self.scale
        if isinstance(scale, numbers.Real):
            result = x.new_full(shape, math.log(abs(scale)))
        else:
            result = log(_abs(scale)).expand(shape) if tuple(scale.shape) != tuple(shape) \
                else log(_abs(scale))
        if self._event_dim:
            result = _sum_rightmost(result, self._event_dim)
        return result

    def __repr__(self) -> str:
        return f"AffineTransform(loc={self.loc}, scale={self.scale})"


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    @property
    def sign(self) -> Any:
        if isinstance(self.exponent, numbers.Real):
            return 1 if float(self.exponent) > 0 else -1 if float(self.exponent) < 0 else 0
        return self.exponent.sign()

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        e = self.exponent
        log_e = math.log(abs(e)) if isinstance(e, numbers.Real) else log(_abs(e))
        return log_e + log(y / x)  # type: ignore[no-any-return]

    def forward_shape(self, shape: Any) -> Any:
        return _broadcast_shape(shape, getattr(self.exponent, "shape", ()))

    def inverse_shape(self, shape: Any) -> Any:
        return _broadcast_shape(shape, getattr(self.exponent, "shape", ()))

    def __repr__(self) -> str:
        return f"PowerTransform(exponent={self.exponent})"


def _broadcast_shape(a: Any, b: Any) -> tuple[int, ...]:
    return _broadcast(tuple(a), tuple(b))
