"""Helpers shared by the distributions (``torch.distributions.utils``)."""
from __future__ import annotations

import numbers
from typing import Any, Generic, TypeVar
from collections.abc import Callable

from .._creation import tensor as _tensor
from .._dtype import finfo, get_default_dtype
from .._ops.elementwise import clamp, log, log1p, sigmoid
from .._tensor import Tensor
from ..nn.functional import softmax

__all__ = ["broadcast_all", "lazy_property", "logits_to_probs", "probs_to_logits",
           "clamp_probs"]

T = TypeVar("T")
R = TypeVar("R")


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors of one broadcast shape from tensors and numbers (numbers take the dtype and device
    of the first tensor, or the default dtype)."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor "
                         "or objects implementing __torch_function__.")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    if like is None:
        dt = get_default_dtype()
        values = tuple(_tensor(float(v), dtype=dt) for v in values)
    else:
        values = tuple(v if isinstance(v, Tensor) else _tensor(v, dtype=like.dtype,
                                                                device=like.device)
                       for v in values)
    shape = _broadcast(*(v.shape for v in values))
    return tuple(v if tuple(v.shape) == shape else v.expand(shape) for v in values)


def _broadcast(*shapes: Any) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        sizes = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0} - {1}
        if len(sizes) > 1:
            raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single shape: "
                               f"{[tuple(s) for s in shapes]}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` clamped to ``[eps, 1 - eps]`` (eps of its dtype: a 16-bit float's 1 - eps must
    stay below 1; an integer dtype raises ``finfo``'s TypeError, as PyTorch)."""
    eps = finfo(probs.dtype).eps
    return clamp(probs, eps, 1.0 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: sigmoid for a binary variable, softmax on the last dim else."""
    if is_binary:
        return sigmoid(logits)
    return softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities (clamped away from 0 and 1 first, like PyTorch)."""
    ps = clamp_probs(probs)
    if is_binary:
        return log(ps) - log1p(-ps)
    return log(ps)


class lazy_property(Generic[T, R]):
    """A property computed once on first access and then stored on the instance."""

    def __init__(self, wrapped: Callable[[T], R]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance: T | None, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
