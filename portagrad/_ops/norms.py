"""Norm-based ops composed from reductions: ``cdist``, ``dist``, ``renorm``.

Each is written with ops that already have derivatives, so gradients come from those.
"""
from __future__ import annotations



from .. import _creation, _dtype
from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .._shape import wrap_dim
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad, is_grad_enabled
from . import reduction
from .shape import (
    unsqueeze,
)
from .elementwise import _type_name
from .indexing import where

__all__ = ["cdist", "dist", "renorm"]


# ------------------------------------------------------------------------------- distances
_CDIST_MODES = (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """Pairwise ``p``-norm distances between the rows of ``x1`` (``..., P, M``) and ``x2``
    (``..., R, M``): ``(..., P, R)``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "cdist", cdist, x1, x2=x2, p=p, compute_mode=compute_mode)) is not _SKIP:
        return _ac_out
    if compute_mode not in _CDIST_MODES:  # (None: the default, as leaving it out)
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D"
                           if x1.dim() < 2 else
                           f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_type_name(x.dtype)}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(x1.dtype)} but found "
                           f"{_type_name(x2.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.dtype not in (_dtype.float32, _dtype.float64) and x1.device.type == "cpu":
        # PyTorch's CPU kernel has no 16-bit version (its CUDA one has, as OpenCL here)
        raise NotImplementedError(f"\"cdist\" not implemented for '{_type_name(x1.dtype)}'")
    diff = unsqueeze(x1, -2) - unsqueeze(x2, -3)
    out = reduction.norm(diff, p, -1)
    if p == 0 and diff.requires_grad and is_grad_enabled():
        # the count of nonzeros is flat: a zero gradient (not none), as PyTorch
        take = _creation.ones(tuple(out.shape), dtype=_dtype.bool, device=out.device)
        out = where(take, out, reduction.sum(diff, -1))
    return out


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("dist", dist, input, other=other, p=p)) is not _SKIP:
        return _ac_out
    return reduction.norm(input - other, p)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` rescaled so that its ``p``-norm is at most ``maxnorm``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "renorm", renorm, input, p=p, dim=dim, maxnorm=maxnorm)) is not _SKIP:
        return _ac_out
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    d = wrap_dim(dim, input.dim())
    others = [k for k in range(input.dim()) if k != d]
    with _no_grad():
        norms = reduction.norm(input, p, others, keepdim=True)
    over = norms > maxnorm
    if input.requires_grad and is_grad_enabled():
        # the gradient reaches the norms of the rescaled slices only, as PyTorch's select: a
        # slice left as it is (a NaN norm among them) passes g unchanged, where the norm's own
        # derivative would turn 0 * NaN into NaN
        norms = reduction.norm(where(over, input, 0.0), p, others, keepdim=True)
    # PyTorch's scale: maxnorm / (norm + 1e-7) where the norm exceeds maxnorm
    scale = where(over, maxnorm / (norms + 1e-7), 1.0)
    return input * scale.to(input.dtype)
