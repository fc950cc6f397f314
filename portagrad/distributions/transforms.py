"""Invertible transforms of random variables (``torch.distributions.transforms``), for
:class:`~portagrad.distributions.TransformedDistribution`."""
from __future__ import annotations

import copy
import math
import numbers
from typing import Any

import numpy as np

from .._dtype import finfo
from .._ops.elementwise import abs as _abs
from .._creation import eye, from_host
from .._ops.linalg import cholesky
from .._ops.diagonal import diag_embed, diagonal
from .._ops.elementwise import clamp, exp, expm1, log, log1p, sigmoid, tanh
from .._ops.joining import cat, stack, tril
from .._ops.scan import cumsum
from .._ops.scan import cumprod
from .._tensor import Tensor
from ..nn.functional import logsigmoid, pad, softplus
from . import constraints
from .utils import _broadcast

__all__ = ["Transform", "ComposeTransform", "ExpTransform", "AffineTransform",
           "SigmoidTransform", "TanhTransform", "AbsTransform", "PowerTransform",
           "identity_transform", "SoftplusTransform", "SoftmaxTransform", "StickBreakingTransform",
           "LowerCholeskyTransform", "ReshapeTransform", "IndependentTransform", "CatTransform",
           "StackTransform", "CumulativeDistributionTransform", "PositiveDefiniteTransform",
           "CorrCholeskyTransform"]


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

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with a cache of ``cache_size`` (0 or 1) entries: ``self`` when it
        already has that cache size, else a copy with an empty cache."""
        if self._cache_size == cache_size:
            return self
        new = copy.copy(self)
        Transform.__init__(new, cache_size=cache_size)
        return new

    def forward_shape(self, shape: Any) -> Any:
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        return shape

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    # Equality says whether two transforms are the same map (``kl_divergence`` of two
    # transformed distributions needs it). A transform with parameters compares them; one
    # without (``ExpTransform``) sets ``_equal_if_same_type``; any other is equal only to itself.
    _equal_if_same_type = False

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(self) is not type(other):
            return False
        return self._same_map(other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def _same_map(self, other: Transform) -> bool:
        """Whether ``other`` (of the same type) is the same map as ``self``."""
        return self._equal_if_same_type


def _same_param(a: Any, b: Any) -> bool:
    """Whether two transform parameters (numbers or tensors) are equal everywhere."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        equal = a == b if isinstance(a, Tensor) else b == a
        return bool(equal.all().item())
    return bool(a == b)


class _InverseTransform(Transform):
    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    def _same_map(self, other: Transform) -> bool:
        return self._inv == other._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        assert self._inv is not None
        return self._inv.with_cache(cache_size).inv

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

    def forward_shape(self, shape: Any) -> Any:
        assert self._inv is not None
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        assert self._inv is not None
        return self._inv.forward_shape(shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        assert self._inv is not None
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"


class ComposeTransform(Transform):
    """The transforms ``parts`` applied in order."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        if cache_size:  # a cached composition caches every step
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def _same_map(self, other: Transform) -> bool:
        return self.parts == other.parts  # type: ignore[attr-defined, no-any-return]

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

    def forward_shape(self, shape: Any) -> Any:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        return "ComposeTransform(" + ", ".join(repr(p) for p in self.parts) + ")"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """``y = exp(x)``."""

    _equal_if_same_type = True

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


def _clamp_unit(y: Tensor) -> Tensor:
    """``y`` clamped to ``[tiny, 1 - eps]`` of its dtype: the lower end keeps sigmoid's tiny
    outputs (``sigmoid(-30)`` is 9e-14, not eps) while staying away from log(0)."""
    info = finfo(y.dtype)
    return clamp(y, info.tiny, 1.0 - info.eps)


class SigmoidTransform(Transform):
    """``y = sigmoid(x)``."""

    _equal_if_same_type = True

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True

    @property
    def sign(self) -> int:
        return 1

    def _call(self, x: Tensor) -> Tensor:
        return _clamp_unit(sigmoid(x))

    def _inverse(self, y: Tensor) -> Tensor:
        y = _clamp_unit(y)
        return log(y) - log1p(-y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)``."""

    _equal_if_same_type = True

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

    _equal_if_same_type = True

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

    def _same_map(self, other: Transform) -> bool:
        # event_dim is not compared, as in PyTorch
        return (_same_param(self.loc, other.loc)  # type: ignore[attr-defined]
                and _same_param(self.scale, other.scale))  # type: ignore[attr-defined]

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

    def _same_map(self, other: Transform) -> bool:
        return _same_param(self.exponent, other.exponent)  # type: ignore[attr-defined]

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


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``."""

    _equal_if_same_type = True

    domain = constraints.real
    codomain = constraints.positive
    bijective = True

    @property
    def sign(self) -> int:
        return 1

    def _call(self, x: Tensor) -> Tensor:
        return softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return log(-expm1(-y)) + y  # type: ignore[no-any-return]

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x)


class SoftmaxTransform(Transform):
    """``y = softmax(x)`` over the last dimension (not bijective: the inverse is ``log y``, one
    of the many preimages)."""

    _equal_if_same_type = True

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        probs = exp(x - x.max(-1, keepdim=True)[0])
        return probs / probs.sum(-1, keepdim=True)  # type: ignore[no-any-return]

    def _inverse(self, y: Tensor) -> Tensor:
        return log(y)

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


def _clipped_sigmoid(x: Tensor) -> Tensor:
    tiny = 1.1754943508222875e-38 if x.dtype.itemsize == 4 else 2.2250738585072014e-308
    eps = 1.1920928955078125e-07 if x.dtype.itemsize == 4 else 2.220446049250313e-16
    return clamp(sigmoid(x), min=tiny, max=1.0 - eps)


class StickBreakingTransform(Transform):
    """A bijection from ``R^(n-1)`` onto the ``n``-simplex by stick breaking: each coordinate,
    through a shifted sigmoid, takes a fraction of what remains of the stick."""

    _equal_if_same_type = True

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        n = x.shape[-1]
        offset = n + 1 - cumsum(x.new_ones(n), -1)
        z = _clipped_sigmoid(x - log(offset))
        z_cumprod = cumprod(1 - z, -1)
        return pad(z, [0, 1], value=1) * pad(z_cumprod, [1, 0], value=1)  # type: ignore

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        offset = y.shape[-1] - cumsum(y.new_ones(y_crop.shape[-1]), -1)
        tiny = 1.1754943508222875e-38 if y.dtype.itemsize == 4 else 2.2250738585072014e-308
        sf = clamp(1 - cumsum(y_crop, -1), min=tiny)
        return log(y_crop) - log(sf) + log(offset)  # type: ignore[no-any-return]

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        n = x.shape[-1]
        offset = n + 1 - cumsum(x.new_ones(n), -1)
        x = x - log(offset)
        return (-x + logsigmoid(x) + log(y[..., :-1])).sum(-1)  # type: ignore[no-any-return]

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """A square matrix to a lower-triangular one with a positive diagonal: the strictly lower
    triangle is kept and the diagonal exponentiated (not bijective)."""

    _equal_if_same_type = True

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x: Tensor) -> Tensor:
        return tril(x, -1) + diag_embed(exp(diagonal(x, 0, -2, -1)))  # type: ignore

    def _inverse(self, y: Tensor) -> Tensor:
        return tril(y, -1) + diag_embed(log(diagonal(y, 0, -2, -1)))  # type: ignore


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dimensions to ``out_shape`` (same number of
    elements); the Jacobian's determinant is 1."""

    bijective = True

    def __init__(self, in_shape: Any, out_shape: Any, cache_size: int = 0) -> None:
        self.in_shape = tuple(in_shape)
        self.out_shape = tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x: Tensor) -> Tensor:
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + self.out_shape)

    def _inverse(self, y: Tensor) -> Tensor:
        batch_shape = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + self.in_shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.new_zeros(batch_shape)

    def forward_shape(self, shape: Any) -> Any:
        return _reshape_shape(tuple(shape), self.in_shape, self.out_shape)

    def inverse_shape(self, shape: Any) -> Any:
        return _reshape_shape(tuple(shape), self.out_shape, self.in_shape)


def _reshape_shape(shape: tuple[int, ...], src: tuple[int, ...],
                   dst: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) < len(src):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(src)
    if shape[cut:] != src:
        raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {src}")
    return shape[:cut] + dst


class IndependentTransform(Transform):
    """Wraps ``base_transform`` so that ``reinterpreted_batch_ndims`` more rightmost dimensions
    belong to the event: ``log_abs_det_jacobian`` sums over them."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size) if cache_size \
            else base_transform
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(result, self.reinterpreted_batch_ndims)  # type: ignore

    def forward_shape(self, shape: Any) -> Any:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return (f"IndependentTransform({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")


class CatTransform(Transform):
    """Applies the transforms ``tseq`` to consecutive pieces of ``dim`` (of sizes ``lengths``,
    1 each by default) and concatenates the results."""

    def __init__(self, tseq: Any, dim: int = 0, lengths: Any = None,
                 cache_size: int = 0) -> None:
        self.transforms = list(tseq)
        if not all(isinstance(t, Transform) for t in self.transforms):
            raise TypeError("CatTransform: every element of tseq must be a Transform")
        if cache_size:
            self.transforms = [t.with_cache(cache_size) for t in self.transforms]
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: one length is needed for each transform")
        self.dim = dim
        super().__init__(cache_size=cache_size)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size=cache_size)

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def _check(self, x: Tensor) -> None:
        if not -x.dim() <= self.dim < x.dim():
            raise IndexError(f"CatTransform: dim {self.dim} out of range for an input of "
                             f"{x.dim()} dimensions")
        if x.size(self.dim) != self.length:
            raise ValueError(f"CatTransform: expected size {self.length} at dim {self.dim}, "
                             f"got {x.size(self.dim)}")

    def _call(self, x: Tensor) -> Tensor:
        self._check(x)
        out, start = [], 0
        for trans, length in zip(self.transforms, self.lengths):
            out.append(trans(x.narrow(self.dim, start, length)))
            start += length
        return cat(out, self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        self._check(y)
        out, start = [], 0
        for trans, length in zip(self.transforms, self.lengths):
            out.append(trans.inv(y.narrow(self.dim, start, length)))
            start += length
        return cat(out, self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        self._check(x)
        self._check(y)
        parts, start = [], 0
        for trans, length in zip(self.transforms, self.lengths):
            xs, ys = x.narrow(self.dim, start, length), y.narrow(self.dim, start, length)
            ladj = trans.log_abs_det_jacobian(xs, ys)
            if trans.event_dim < self.event_dim:
                ladj = _sum_rightmost(ladj, self.event_dim - trans.event_dim)
            parts.append(ladj)
            start += length
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim = dim + self.event_dim
        if dim < 0:
            return cat(parts, dim)
        return sum(parts[1:], parts[0])

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies the transforms ``tseq`` to the slices of ``dim`` and stacks the results."""

    def __init__(self, tseq: Any, dim: int = 0, cache_size: int = 0) -> None:
        self.transforms = list(tseq)
        if not all(isinstance(t, Transform) for t in self.transforms):
            raise TypeError("StackTransform: every element of tseq must be a Transform")
        if cache_size:
            self.transforms = [t.with_cache(cache_size) for t in self.transforms]
        self.dim = dim
        super().__init__(cache_size=cache_size)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size=cache_size)

    def _slices(self, x: Tensor) -> list[Tensor]:
        if not -x.dim() <= self.dim < x.dim():
            raise IndexError(f"StackTransform: dim {self.dim} out of range for an input of "
                             f"{x.dim()} dimensions")
        if x.size(self.dim) != len(self.transforms):
            raise ValueError(f"StackTransform: expected size {len(self.transforms)} at dim "
                             f"{self.dim}, got {x.size(self.dim)}")
        return [x.select(self.dim, i) for i in range(x.size(self.dim))]

    def _call(self, x: Tensor) -> Tensor:
        return stack([t(v) for v, t in zip(self._slices(x), self.transforms)], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return stack([t.inv(v) for v, t in zip(self._slices(y), self.transforms)], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        xs, ys = self._slices(x), self._slices(y)
        return stack([t.log_abs_det_jacobian(a, b)
                      for a, b, t in zip(xs, ys, self.transforms)], self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: a bijection from the distribution's support onto
    ``[0, 1]`` (the inverse is its ``icdf``)."""

    bijective = True
    codomain = constraints.unit_interval

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.distribution.support  # type: ignore[no-any-return]

    @property
    def sign(self) -> int:
        return 1

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)  # type: ignore[no-any-return]

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)  # type: ignore[no-any-return]

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)  # type: ignore[no-any-return]


class PositiveDefiniteTransform(Transform):
    """A square matrix to a positive-definite one: ``L L^T`` with ``L`` its
    :class:`LowerCholeskyTransform` image (not bijective)."""

    _equal_if_same_type = True

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x: Tensor) -> Tensor:
        low = LowerCholeskyTransform()(x)
        return low @ low.mT  # type: ignore[no-any-return]

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(cholesky(y))


def _tril_selector(n: int, like: Tensor) -> Tensor:
    """``(n * n, n (n - 1) / 2)`` 0/1 matrix taking the flattened strictly lower triangle
    (row by row) to its vector: ``mat.flatten @ S`` picks it, ``vec @ S.T`` scatters it back."""
    rows, cols = np.tril_indices(n, -1)
    sel = np.zeros((n * n, rows.size), dtype=like.dtype.numpy)
    sel[rows * n + cols, np.arange(rows.size)] = 1.0
    return from_host(sel, device=like.device)


def _tril_size(num: int) -> int:
    d = round((0.25 + 2 * num) ** 0.5 + 0.5)
    if d * (d - 1) // 2 != num:
        raise ValueError("Input is not a flattend lower-diagonal number")
    return d


class CorrCholeskyTransform(Transform):
    """A real vector of length ``D (D - 1) / 2`` to the Cholesky factor of a ``D x D``
    correlation matrix: ``tanh`` into ``(-1, 1)``, then stick breaking on the squares, row by
    row. ``log_abs_det_jacobian`` is that of ``x`` and the strictly lower triangle of ``y``."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        eps = 1.1920928955078125e-07 if x.dtype.itemsize == 4 else 2.220446049250313e-16
        x = clamp(tanh(x), min=-1 + eps, max=1 - eps)
        d = _tril_size(x.shape[-1])
        r = (x @ _tril_selector(d, x).mT).reshape(tuple(x.shape[:-1]) + (d, d))
        z1m_cumprod_sqrt = cumprod((1 - r ** 2).sqrt(), -1)
        r = r + eye(d, dtype=r.dtype, device=r.device)  # unit diagonal before the scaling
        return r * pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)  # type: ignore

    def _inverse(self, y: Tensor) -> Tensor:
        d = y.shape[-1]
        sel = _tril_selector(d, y)
        flat = tuple(y.shape[:-2]) + (d * d,)
        y_cumsum = 1 - cumsum(y * y, -1)
        y_cumsum_shifted = pad(y_cumsum[..., :-1], [1, 0], value=1)
        y_vec = y.reshape(flat) @ sel
        t = y_vec / (y_cumsum_shifted.reshape(flat) @ sel).sqrt()
        return (log1p(t) - log1p(-t)) / 2  # type: ignore[no-any-return]

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        d = y.shape[-1]
        y1m_cumsum = 1 - cumsum(y * y, -1)
        # the entries strictly below the first subdiagonal: no shift of the cumsum needed
        rows, cols = np.tril_indices(d, -2)
        sel = np.zeros((d * d, rows.size), dtype=y.dtype.numpy)
        sel[rows * d + cols, np.arange(rows.size)] = 1.0
        tril = y1m_cumsum.reshape(tuple(y.shape[:-2]) + (d * d,)) @ from_host(sel,
                                                                               device=y.device)
        stick_breaking_logdet = 0.5 * log(tril).sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet  # type: ignore[no-any-return]

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        d = _tril_size(shape[-1])
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape: Any) -> Any:
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)
