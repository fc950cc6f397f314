"""``layer_norm`` and training-mode ``batch_norm`` as one node each: one backend call each way
where the backend has the optional normalisation primitives and nothing records; under
``create_graph`` the backward is composed from ops.
"""
from __future__ import annotations

import math
from typing import Any

from ... import _dtype, _raw
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ..elementwise import rsqrt
from .. import reduction
from ..shape import reshape
from .._common import call
from ._common import NORM_DTYPES, flat, flat_or_none

__all__ = ["norm_fast_path", "half_batch_norm_fast_path", "layer_norm", "batch_norm",
           "half_layer_norm_unrecorded"]

#: 16-bit inputs the batch-norm node takes with float32 parameters (computed in float32)
_HALF = _dtype.HALF_FLOATS


# ------------------------------------------------------------------ normalisation
def norm_fast_path(x: Tensor, name: str, *others: Tensor | None, shape: tuple) -> bool:
    """Whether ``name`` (``"layer_norm"``/``"batch_norm"``) can run as the backend's primitive and
    its ``*_backward``: ``x`` float32/float64, every operand in ``others`` ``None`` or a
    contiguous tensor of ``shape`` with ``x``'s dtype and device (else the caller composes, which
    also reports mismatches as PyTorch does)."""
    dt = x._v.dtype
    if dt not in NORM_DTYPES or not _raw.has_prims(x, name, name + "_backward"):
        return False
    dev = x._storage.device
    for t in others:
        if t is not None and (t._v.dtype is not dt or tuple(t._v.shape) != tuple(shape)
                              or t._storage.device != dev or not t._v.is_contiguous()):
            return False
    return True


def half_batch_norm_fast_path(x: Tensor, *others: Tensor | None, shape: tuple) -> bool:
    """Whether a 16-bit ``x`` can run training-mode batch norm as one node in float32: the
    float32 primitives exist and every operand in ``others`` is ``None`` or a contiguous float32
    tensor of ``shape`` on ``x``'s device."""
    if x._v.dtype not in _HALF or not _raw.has_prims(x, "batch_norm", "batch_norm_backward"):
        return False
    dev = x._storage.device
    return all(t is None or (t._v.dtype is _dtype.float32 and tuple(t._v.shape) == tuple(shape)
                             and t._storage.device == dev and t._v.is_contiguous())
               for t in others)


class _LayerNorm(Function):
    """Layer norm over the trailing ``ns`` dimensions as one node: the backend's ``layer_norm``
    forward (row statistics saved) and ``layer_norm_backward``; composed under ``create_graph``."""

    _backward_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor | None, b: Tensor | None, ns: tuple,
                eps: float) -> Tensor:
        shape = x._v.shape
        n = math.prod(ns)
        m = math.prod(shape[:len(shape) - len(ns)])
        out = _raw.new_like(x)
        mean = rstd = None
        if True in ctx.needs_input_grad:  # statistics only for a backward
            mean, rstd = _raw.new_like(x, (m,)), _raw.new_like(x, (m,))
        _raw.layer_norm(flat(x, (m, n)), flat_or_none(w, n), flat_or_none(b, n), eps,
                        flat(out, (m, n)), mean, rstd)
        ctx.ns, ctx.eps = ns, eps
        ctx.save_for_backward(x, w, mean, rstd)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, w, mean, rstd = ctx.saved_tensors
        ns, need = ctx.ns, ctx.needs_input_grad
        k = len(ns)
        lead = tuple(range(x.dim() - k))
        if not is_grad_enabled():
            n = math.prod(ns)
            m = x.numel() // n if n else math.prod(x.shape[:x.dim() - k])
            gx = _raw.new_like(x) if need[0] else None
            gw = _raw.new_like(x, ns) if w is not None and need[1] else None
            gb = _raw.new_like(x, ns) if len(need) > 2 and need[2] else None
            _raw.layer_norm_backward(flat(g, (m, n)), flat(x, (m, n)), flat_or_none(w, n), mean,
                                     rstd, None if gx is None else flat(gx, (m, n)), flat_or_none(gw, n),
                                     flat_or_none(gb, n))
            return gx, gw, gb, None, None
        axes = tuple(range(x.dim() - k, x.dim()))
        xhat, r = _normalised(x, axes, ctx.eps)
        gx, gw, gb = _norm_grads(g, xhat, r, w, axes, lead, lambda t: t)
        return gx, gw if need[1] else None, gb if len(need) > 2 and need[2] else None, None, None


def _normalised(x: Tensor, axes: tuple, eps: float) -> tuple[Tensor, Tensor]:
    """``(x - mean) * rstd`` and ``rstd`` over ``axes`` (keepdim), from public ops."""
    mu = reduction.mean(x, axes, keepdim=True)
    xc = x - mu
    r = rsqrt(reduction.mean(xc * xc, axes, keepdim=True) + eps)
    return xc * r, r


def _norm_grads(g: Tensor, xhat: Tensor, r: Tensor, w: Tensor | None, axes: tuple, wsum: tuple,
                wview: Any) -> tuple[Tensor, Tensor | None, Tensor]:
    """Gradients of ``xhat * w + b`` (``xhat`` normalised over ``axes``) from public ops:
    ``(grad_x, grad_w, grad_b)``, the parameter gradients summed over ``wsum``; ``wview`` shapes
    ``w`` to broadcast against ``g``."""
    gw_ = g if w is None else g * wview(w)
    gx = r * (gw_ - reduction.mean(gw_, axes, keepdim=True)
              - xhat * reduction.mean(gw_ * xhat, axes, keepdim=True))
    gxh = g * xhat
    gw = (reduction.sum(gxh, wsum) if wsum else gxh) if w is not None else None
    gb = reduction.sum(g, wsum) if wsum else g
    return gx, gw, gb


def layer_norm(x: Tensor, ns: tuple, w: Tensor | None, b: Tensor | None, eps: float) -> Tensor:
    """Layer norm over the trailing dimensions ``ns`` as one node (after
    :func:`norm_fast_path`)."""
    return call(_LayerNorm, x, w, b, tuple(ns), float(eps))


def half_layer_norm_unrecorded(x: Tensor, ns: tuple, w: Tensor | None, b: Tensor | None,
                               eps: float) -> Tensor | None:
    """Layer norm of a 16-bit ``x`` when nothing records (inference): float32 copies of the
    operands, the float32 node, one rounding, as PyTorch's kernel computes it, with raw casts
    where each public ``.to()`` is an op of its own (several times the norm's cost on a decode
    step's rows). None when autograd records or the primitives do not apply (the caller then
    composes, with PyTorch's errors)."""
    if x._v.dtype not in _HALF or (is_grad_enabled() and any(
            t is not None and t._requires_grad for t in (x, w, b))):
        return None
    if _half_as_is(x, w, b, tuple(ns)):  # the backend takes the 16-bit rows as they are
        return call(_LayerNorm, x, w, b, tuple(ns), float(eps))  # (nothing records it)
    x32, w32, b32 = (None if t is None else _raw.cast(t, _dtype.float32) for t in (x, w, b))
    assert x32 is not None
    if not norm_fast_path(x32, "layer_norm", w32, b32, shape=tuple(ns)):
        return None
    return _raw.cast(call(_LayerNorm, x32, w32, b32, tuple(ns), float(eps)), x._v.dtype)


def _half_as_is(x: Tensor, w: Tensor | None, b: Tensor | None, ns: tuple) -> bool:
    """Whether the backend's ``layer_norm`` takes 16-bit ``x`` as it is (its
    ``layer_norm_half_dtypes``), with ``w``/``b`` each ``None`` or of ``ns``'s shape, ``x``'s
    dtype or float32 and ``x``'s device."""
    be = x._storage.backend
    if x._v.dtype.name not in getattr(be, "layer_norm_half_dtypes", ()) or not _raw.has_prims(
            x, "layer_norm", "layer_norm_backward"):
        return False
    dev = x._storage.device
    return all(t is None or (t._v.dtype in (x._v.dtype, _dtype.float32)
                             and tuple(t._v.shape) == ns and t._storage.device == dev)
               for t in (w, b))


class _BatchNorm(Function):
    """Training-mode batch norm of (N, C, *) as one node: the backend's ``batch_norm`` (which
    also updates the running statistics) and ``batch_norm_backward``; composed under
    ``create_graph``. A 16-bit ``x`` (float32 parameters) is widened to float32 for each call and
    the result rounded once to its type, as PyTorch's kernels do; the node keeps the 16-bit ``x``
    for backward, not its float32 copy, so autocast's activations stay half the size."""

    _backward_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor | None, b: Tensor | None, running: tuple,
                momentum: float, eps: float) -> Tensor:
        shape = x._v.shape
        c = shape[1]
        s3 = (shape[0], c, math.prod(shape[2:]))
        x32 = _raw.cast(x, _dtype.float32) if x._v.dtype in _HALF else x
        out = _raw.new_like(x32)
        mean, rstd = _raw.new_like(x32, (c,)), _raw.new_like(x32, (c,))
        _raw.batch_norm(flat(x32, s3), w, b, running[0], running[1], momentum, eps,
                        flat(out, s3), mean, rstd)
        ctx.eps = eps
        ctx.save_for_backward(x, w, mean, rstd)
        return out if x32 is x else _raw.cast(out, x._v.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, w, mean, rstd = ctx.saved_tensors
        need = ctx.needs_input_grad
        nd = x.dim()
        half = x.dtype if x.dtype in _HALF else None
        if not is_grad_enabled():
            if half is not None:
                x, g = _raw.cast(x, _dtype.float32), _raw.cast(g, _dtype.float32)
            shape = tuple(x.shape)
            c = shape[1]
            s3 = (shape[0], c, math.prod(shape[2:]))
            gx = _raw.new_like(x) if need[0] else None
            gw = _raw.new_like(x, (c,)) if w is not None and need[1] else None
            gb = _raw.new_like(x, (c,)) if len(need) > 2 and need[2] else None
            _raw.batch_norm_backward(flat(g, s3), flat(x, s3), w, mean, rstd,
                                     None if gx is None else flat(gx, s3), gw, gb)
            if half is not None and gx is not None:
                gx = _raw.cast(gx, half)
            return gx, gw, gb, None, None, None
        if half is not None:  # composed (create_graph): the same float32 arithmetic, recorded
            x, g = x.to(_dtype.float32), g.to(_dtype.float32)
        axes = (0,) + tuple(range(2, nd))
        xhat, r = _normalised(x, axes, ctx.eps)
        bshape = (1, x.shape[1]) + (1,) * (nd - 2)
        gx, gw, gb = _norm_grads(g, xhat, r, w, axes, axes, lambda t: reshape(t, bshape))
        if half is not None:
            gx = gx.to(half)
        return (gx, gw if need[1] else None, gb if len(need) > 2 and need[2] else None, None,
                None, None)


def batch_norm(x: Tensor, w: Tensor | None, b: Tensor | None, running_mean: Tensor | None,
               running_var: Tensor | None, momentum: float, eps: float) -> Tensor:
    """Training-mode batch norm as one node (after :func:`norm_fast_path`); the running
    statistics are updated in place by the backend call."""
    return call(_BatchNorm, x, w, b, (running_mean, running_var), float(momentum), float(eps))
