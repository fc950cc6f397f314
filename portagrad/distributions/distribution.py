"""The base class of the distributions (``torch.distributions.Distribution``)."""
from __future__ import annotations

import warnings
from typing import Any

from .._ops.elementwise import exp
from .._ops.reduction import all as _all
from .._storage import Size
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _as_size(shape: Any) -> Size:
    if isinstance(shape, int):
        return Size((shape,))
    return Size(tuple(shape))


class Distribution:
    """Abstract base class for probability distributions.

    ``batch_shape`` is the shape over which parameters are batched, ``event_shape`` the shape of
    one sample. ``validate_args`` (default: on, like ``assert``; see
    :meth:`set_default_validate_args`) checks parameters against ``arg_constraints`` and values
    given to ``log_prob`` against ``support``, raising ``ValueError``.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution created afterwards."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = (), event_shape: Any = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = _as_size(batch_shape)
        self._event_shape = _as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue  # not built yet: the parametrisation given was the other one
                value = getattr(self, param)
                if not bool(_all(constraint.check(value)).item()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """A new distribution with the batch dimensions expanded to ``batch_shape``."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """Argument name -> the constraint it must satisfy."""
        raise NotImplementedError

    @property
    def support(self) -> Any:
        """The constraint the distribution's values satisfy."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A sample of shape ``sample_shape + batch_shape + event_shape`` (not differentiable)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterised sample (differentiable w.r.t. the parameters)."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """``n`` samples (deprecated in PyTorch: use ``sample((n,))``)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density or mass function at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution's support, along dimension 0."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, of shape ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return exp(self.entropy())

    def _extended_shape(self, sample_shape: Any = ()) -> Size:
        return Size(tuple(_as_size(sample_shape)) + tuple(self._batch_shape)
                    + tuple(self._event_shape))

    def _validate_sample(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual = tuple(value.shape)
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{value.size()} vs {Size(expected)}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        assert support is not None
        valid = support.check(value)
        if not bool(_all(valid).item()):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{value}")

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ is not cls.__init__:  # type: ignore[misc]
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that "
                                      "defines a custom __init__ method must also define a "
                                      "custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        names = [k for k, _ in self.arg_constraints.items() if k in self.__dict__]
        args = ", ".join(f"{p}: {_brief(self.__dict__[p])}" for p in names)
        return self.__class__.__name__ + "(" + args + ")"


def _brief(value: Tensor) -> Any:
    """A parameter in a repr: its value if it has one element, else its shape."""
    return value if value.numel() == 1 else value.size()
