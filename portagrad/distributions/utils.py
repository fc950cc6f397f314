"""Helpers shared by the distributions (``torch.distributions.utils``)."""
from __future__ import annotations

import math
import numbers
from typing import Any, Generic, TypeVar
from collections.abc import Callable

import numpy as np

from .._creation import tensor as _tensor
from .._dtype import finfo, get_default_dtype, int64
from .._ops.elementwise import clamp, log, log1p, sigmoid
from .._tensor import Tensor
from ..nn.functional import softmax

__all__ = ["broadcast_all", "lazy_property", "logits_to_probs", "probs_to_logits",
           "clamp_probs", "euler_constant", "tril_matrix_to_vec", "vec_to_tril_matrix"]

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


euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def _tril_flat_index(n: int, diag: int, device: Any) -> Tensor:
    """Row-major flat indices, in an ``n x n`` matrix, of the lower triangle below ``diag``."""
    rows, cols = np.tril_indices(n, k=diag)
    return _tensor((rows * n + cols).tolist(), dtype=int64, device=device)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (from the ``diag``-th diagonal down) of the last two dimensions of
    ``mat``, row by row, as one vector."""
    n = mat.shape[-1]
    if mat.dim() < 2 or mat.shape[-2] != n:
        raise IndexError(f"The shape of the mask [{n}, {n}] at index 0 does not match the shape "
                         f"of the indexed tensor {list(mat.shape[-2:])} at index 0")
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat.flatten(-2).index_select(-1, _tril_flat_index(n, diag, mat.device))


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: a square matrix, zero above the ``diag``-th
    diagonal, whose lower triangle is the last dimension of ``vec``."""
    length = vec.shape[-1]
    # the size n solves count(n) = length, count being the triangle's size (with, as PyTorch,
    # no clamping of the diagonals above the matrix); a root rounded up cannot fit
    b = 1 + 2 * diag
    root = (-b + math.sqrt(b * b + 8 * length + 4 * abs(diag) * (diag + 1))) / 2
    n = round(root)
    if n > root:
        raise ValueError(f"The size of last dimension is {length} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    index = _tril_flat_index(n, diag, vec.device)
    if index.numel() != length and length == 1:  # one value broadcasts over the triangle
        vec = vec.expand(tuple(vec.shape[:-1]) + (index.numel(),))
    elif index.numel() != length:
        raise RuntimeError(f"shape mismatch: value tensor of shape [{length}] cannot be "
                           f"broadcast to indexing result of shape [{index.numel()}]")
    out = vec.new_zeros(tuple(vec.shape[:-1]) + (n * n,))
    return out.index_copy(-1, index, vec).unflatten(-1, (n, n))
