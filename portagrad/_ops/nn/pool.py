"""Max pooling's nodes: the max over a window axis with PyTorch's index rules, and 2-D max pooling
through the backend's optional ``max_pool2d`` primitives.
"""
from __future__ import annotations

import math
from typing import Any

from ... import _creation, _dtype, _raw
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ..elementwise import eq, isnan
from ..indexing import scatter_into_zeros, where
from ..reduction import amax
from ..shape import reshape, squeeze, unsqueeze
from .._common import call

__all__ = ["max_last", "max_pool_fast_path", "max_pool_fused"]


# ------------------------------------------------------------------ pooling
class _MaxLast(Function):
    """Max over the last axis with its first argmax; the gradient goes to that element only."""

    _backward_name = "MaxPoolBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, first_inside: Tensor | None = None) -> Any:
        ax = x.dim() - 1
        idx = _raw.arg_reduce("argmax", x, ax, True)
        if x._v.dtype.is_floating_point:
            # PyTorch's pooling rules (those of the backends' max_pool2d fast path): the last
            # NaN of a window is the one pointed at, and a window whose maximum is -inf points
            # at its first position inside the input (``first_inside``), never at padding
            ar = _creation.arange(x._v.shape[-1], device=x.device)
            last_nan = amax(where(isnan(x), ar, -1), ax, keepdim=True)
            idx = where(last_nan >= 0, last_nan, idx)
            if first_inside is not None:
                at_ninf = eq(_raw.gather(x, ax, idx), -math.inf)
                idx = where(at_ninf, first_inside, idx)
        vals = _raw.gather(x, ax, idx)
        ctx.K = x._v.shape[-1]
        ctx.save_for_backward(idx)
        vals = _raw._drop_axes(vals, (ax,))
        idx = _raw._drop_axes(idx, (ax,))
        ctx.mark_non_differentiable(idx)
        ctx.set_materialize_grads(False)  # (as _MaxPool2d)
        return vals, idx

    @staticmethod
    def backward(ctx: Any, g: Tensor, gi: Any) -> Any:
        (idx,) = ctx.saved_tensors
        ar = _creation.arange(ctx.K, device=g.device)
        return where(eq(idx, ar), unsqueeze(g, -1), 0.0), None


def max_pool_fast_path(x: Tensor) -> bool:
    """Whether ``x``'s backend has the optional max-pool fast paths (forward and backward)."""
    be = x._storage.backend
    return (x._v.dtype.is_floating_point and getattr(be, "max_pool2d", None) is not None and
            getattr(be, "max_pool2d_grad_input", None) is not None)


class _MaxPool2d(Function):
    """Max pooling of (N, C, H, W) as one node through the backend's ``max_pool2d`` fast path.

    Returns the values and the int64 flat positions ``h * W + w`` of each window's first maximum
    (PyTorch's ``return_indices``). The backward puts ``g`` at those positions (summing where
    windows overlap): one ``max_pool2d_grad_input`` call, or under ``create_graph`` a public
    scatter-add (whose derivative, a gather at the same positions, gives second derivatives)."""

    _backward_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, out_sp: tuple, k: tuple, s: tuple, pd: tuple, d: tuple
                ) -> Any:
        x = _raw.contiguous(x)
        N, Cc = x._v.shape[:2]
        shape = (N, Cc) + tuple(out_sp)
        vals = _raw.new_like(x, shape)
        idx = _raw.new_like(x, shape, _dtype.int64)
        _raw.max_pool2d(x, vals, idx, k, s, pd, d)
        ctx.geom = (k, s, pd, d)
        ctx.in_shape = tuple(x._v.shape)
        ctx.save_for_backward(idx)
        ctx.mark_non_differentiable(idx)
        # the indices never get a gradient: no zeros made for them (g is never None here, the
        # engine skips the node when no gradient reaches it)
        ctx.set_materialize_grads(False)
        return vals, idx

    @staticmethod
    def backward(ctx: Any, g: Tensor, gi: Any) -> Any:
        (idx,) = ctx.saved_tensors
        N, Cc, H, W = ctx.in_shape
        if is_grad_enabled():
            L = idx.shape[2] * idx.shape[3]
            gx = scatter_into_zeros(reshape(g, (N, Cc, L)), 2, reshape(idx, (N, Cc, L)),
                                      (N, Cc, H * W))
            return reshape(gx, ctx.in_shape), None, None, None, None, None
        g = _raw.contiguous(g)
        gx = _raw.new_like(g, ctx.in_shape)
        _raw.max_pool2d_grad_input(g, idx, gx, *ctx.geom)
        return gx, None, None, None, None, None


def max_pool_fused(x: Tensor, p: Any, k: tuple, s: tuple, pd: tuple, d: tuple, nd: int
                    ) -> tuple[Tensor, Tensor]:
    """Values and indices through :class:`_MaxPool2d` (1-D pooling as height-1 2-D pooling)."""
    if nd == 2:
        return call(_MaxPool2d, x, tuple(p.out_spatial), k, s, pd, d)
    x4 = unsqueeze(x, 2)
    vals, idx = call(_MaxPool2d, x4, (1,) + tuple(p.out_spatial), (1,) + k, (1,) + s,
                     (0,) + pd, (1,) + d)
    return squeeze(vals, 2), squeeze(idx, 2)


def max_last(x: Tensor, first_inside: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The maximum over the last axis of ``x`` and its index (see :class:`_MaxLast`)."""
    return call(_MaxLast, x, first_inside)
