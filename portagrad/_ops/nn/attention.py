"""Scaled dot-product attention as one node, on backends with the optional ``attention`` and
``attention_backward`` primitives (flash-attention style: the (L, S) attention matrix is never
kept; the forward saves the row log-sum-exps and the backward recomputes the probabilities from
``q``, ``k`` and them). ``portagrad.nn.functional`` composes where :func:`fused_ok` says no.
"""
from __future__ import annotations

import math
from typing import Any

from ... import _dtype, _raw
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ..indexing import where
from .._common import call
from .softmax import softmax

__all__ = ["fused_ok", "attention"]

#: dtypes the primitives take (16-bit ones computed in float32 and rounded once)
_DTYPES = (_dtype.float32, _dtype.float64) + tuple(_dtype.HALF_FLOATS)


def fused_ok(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float) -> bool:
    """Whether attention of these operands can run as the backend's fused primitives: no
    dropout, ``q``/``k``/``v`` of one floating dtype and device with the same leading (batch)
    shape and at least 2-D, ``k``/``v`` of one length, ``q``/``k`` of one head size, and a mask
    that is ``None``, bool or of that dtype, not requiring grad, and broadcastable to
    ``(*batch, L, S)`` (anything else composes, which also reports errors as PyTorch does); and
    the backend's ``fused_attention(index, scores)``, where it has one, True for the device and
    the number of scores (batch x L x S)."""
    if dropout_p > 0.0 or not _raw.has_prims(q, "attention", "attention_backward"):
        return False
    pref = getattr(q._storage.backend, "fused_attention", None)
    if pref is not None:
        n = 1
        for d in q.shape[:-1]:
            n *= d
        if not pref(q._storage.index, n * k.shape[-2]):
            return False  # the backend composes faster here
    dt = q._v.dtype
    if dt not in _DTYPES or k._v.dtype is not dt or v._v.dtype is not dt:
        return False
    if q.dim() < 2 or k.dim() != q.dim() or v.dim() != q.dim():
        return False
    dev = q._storage.device
    if k._storage.device != dev or v._storage.device != dev:
        return False
    qs, ks, vs = q.shape, k.shape, v.shape
    if qs[:-2] != ks[:-2] or ks[:-1] != vs[:-1] or qs[-1] != ks[-1]:
        return False
    if mask is None:
        return True
    if mask.requires_grad or mask._storage.device != dev or mask.dim() > q.dim():
        return False
    if mask._v.dtype is not _dtype.bool and mask._v.dtype is not dt:
        return False
    want = tuple(qs[:-1]) + (ks[-2],)
    got = (1,) * (len(want) - mask.dim()) + tuple(mask.shape)
    return all(a == b or a == 1 for a, b in zip(got, want))


def _mask_view(mask: Tensor | None, shape: tuple) -> Tensor | None:
    """``mask`` broadcast to ``shape`` as a raw view (zero strides; nothing is copied)."""
    if mask is None:
        return None
    return _raw.expand_view(mask, shape)


def _lse_dtype(dt: Any) -> Any:
    return _dtype.float32 if dt in _dtype.HALF_FLOATS else dt


class _Attention(Function):
    """``softmax(q k^T * scale + mask) v`` as one node: saves ``q``, ``k``, ``v``, the output and
    the (``*batch``, L) log-sum-exps (``-inf`` for a row that attends to nothing, whose output
    and gradients are 0); the backward is the backend's ``attention_backward`` while nothing
    records, else composed from ops (so it can be differentiated again)."""

    _backward_name = "ScaledDotProductFlashAttentionBackward0"

    @staticmethod
    def forward(ctx: Any, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool,
                scale: float) -> Tensor:
        q, k, v = _raw.contiguous(q), _raw.contiguous(k), _raw.contiguous(v)
        lead = tuple(q._v.shape[:-2])
        L, S = q._v.shape[-2], k._v.shape[-2]
        out = _raw.new_like(q, lead + (L, v._v.shape[-1]))
        lse = _raw.new_like(q, lead + (L,), _lse_dtype(q._v.dtype))
        mv = _mask_view(mask, lead + (L, S))
        _raw.attention(q, k, v, mv, causal, scale, out, lse)
        ctx.causal, ctx.scale = causal, scale
        ctx.save_for_backward(q, k, v, out, lse, mask)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        q, k, v, out, lse, mask = ctx.saved_tensors
        causal, scale = ctx.causal, ctx.scale
        need = ctx.needs_input_grad
        L, S = q.shape[-2], k.shape[-2]
        if not is_grad_enabled():
            if g._v.dtype is not q._v.dtype:
                g = _raw.cast(g, q._v.dtype)
            g = _raw.contiguous(g)
            dq, dk, dv = _raw.new_like(q), _raw.new_like(k), _raw.new_like(v)
            mv = _mask_view(mask, tuple(q._v.shape[:-2]) + (L, S))
            _raw.attention_backward(g, q, k, v, out, lse, mv, causal, scale, dq, dk, dv)
            return (dq if need[0] else None, dk if need[1] else None,
                    dv if need[2] else None, None, None, None)
        # create_graph: the same gradients from ops, the probabilities recomputed differentiably
        p = _probabilities(q, k, mask, causal, scale)
        dv = p.transpose(-2, -1) @ g
        dp = g @ v.transpose(-2, -1)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
        dq = (ds @ k) * scale
        dk = (ds.transpose(-2, -1) @ q) * scale
        return dq, dk, dv, None, None, None


def _probabilities(q: Tensor, k: Tensor, mask: Tensor | None, causal: bool,
                   scale: float) -> Tensor:
    """The attention weights from ops (rows that attend to nothing: 0), for ``create_graph``."""
    s = (q @ k.transpose(-2, -1)) * scale
    L, S = s.shape[-2], s.shape[-1]
    if causal:
        ones = _raw.new_like(q, (L, S), _dtype.bool)
        _raw.fill(ones, True)
        s = where(ones.tril(), s, -math.inf)
    if mask is not None:
        s = where(mask, s, -math.inf) if mask.dtype is _dtype.bool else s + mask
    none = s.amax(-1, keepdim=True).eq(-math.inf)
    return where(none, 0.0, softmax(where(none, 0.0, s), s.dim() - 1, False))


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool,
              scale: float) -> Tensor:
    """Fused scaled dot-product attention (:func:`fused_ok` first): ``q`` (*, L, D), ``k`` (*, S,
    D), ``v`` (*, S, Dv) -> (*, L, Dv); ``mask`` bool (True = take part) or additive, broadcast to
    (*, L, S); ``causal``: query i sees keys j <= i (PyTorch's top-left alignment)."""
    return call(_Attention, q, k, v, mask, causal, scale)
