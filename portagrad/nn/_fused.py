"""Fused Functions for the hottest layers: ``linear`` and ``cross_entropy`` with class indices.

Composed from single ops, ``linear`` records ~7 nodes (transpose, reshapes, batched matmul, bias
add) and ``cross_entropy`` ~15; each node costs Python time in forward and backward. Here each is
one node whose forward calls the backend primitives directly and whose backward is still written
with public portagrad ops (so it runs on every backend and can be differentiated again: with
``create_graph`` the softmax is recomputed from the input rather than read from the saved value).
"""
from __future__ import annotations

from typing import Any

from .. import _creation, _dtype, _raw
from .._ops import elementwise as E
from .._ops import linalg as L
from .._ops import reduction as R
from .._ops import shape as S
from .._ops._common import call, check_same_device
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled

__all__ = ["linear", "cross_entropy_indices", "conv"]


def _view(t: Tensor, shape: tuple, strides: tuple, offset: int | None = None) -> Tensor:
    """A raw (unrecorded) view of ``t``'s storage."""
    return Tensor._make(t._storage, t._v.offset if offset is None else offset, shape, strides,
                        t._v.dtype, t._vc)


def _rows(x: Tensor) -> Tensor:
    """``x`` as a 2-D (rows, features) raw view, copying only if the strides do not allow it."""
    k = x._v.shape[-1] if x._v.shape else 1
    n = x.numel() // k if k else 0
    strides = S.compute_view_strides(x._v.shape, x._v.strides, (n, k))
    if strides is None:
        x = _raw.contiguous(x)
        strides = _raw.strides_for((n, k))
    return _view(x, (n, k), strides)


class _Linear(Function):
    _backward_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
        ctx.save_for_backward(x, w)
        x2 = _rows(x)
        n, k = x2._v.shape
        o = w._v.shape[0]
        a3 = _view(x2, (1, n, k), (0,) + x2._v.strides)
        w3 = _view(w, (1, k, o), (0, w._v.strides[1], w._v.strides[0]))  # w.T without a copy
        out = _raw.bmm(a3, w3) if k else _raw.fill(_raw.new_like(x, (1, n, o)), 0)
        if b is not None:
            bv = _view(b, (1, n, o), (0, 0, b._v.strides[0]))
            out._storage.backend.binary("add", out._v, bv._v, out._v)
        shape = tuple(x._v.shape[:-1]) + (o,)
        return Tensor._make(out._storage, 0, shape, _raw.strides_for(shape), out._v.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, w = ctx.saved_tensors
        o, k = w.shape
        g2 = S.reshape(g, (-1, o))
        gx = S.reshape(L.matmul(g2, w), x.shape) if ctx.needs_input_grad[0] else None
        gw = L.matmul(S.t(g2), S.reshape(x, (-1, k))) if ctx.needs_input_grad[1] else None
        gb = R.sum(g2, 0) if len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2] else None
        return gx, gw, gb


def linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """``x @ w.T + b`` as one recorded node (``x`` of any rank >= 1, ``w`` 2-D, ``b`` 1-D)."""
    check_same_device(x, w, "linear")
    if b is not None:
        check_same_device(x, b, "linear")
    if x.dtype is not w.dtype or (b is not None and b.dtype is not w.dtype):
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {x.dtype} and "
                           f"{w.dtype}")
    if not w.dtype.is_floating_point:
        raise RuntimeError(f"linear: integer and bool tensors are not supported (got {w.dtype})")
    return call(_Linear, x, w, b)


_ARANGE: dict = {}


def _class_ids(n: int, like: Tensor) -> Tensor:
    key = (n, like.device)
    t = _ARANGE.get(key)
    if t is None:
        t = _ARANGE[key] = _creation.arange(n, device=like.device)
    return t


class _CrossEntropy(Function):
    _backward_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, target: Tensor, ignore_index: int, reduction: str) -> Tensor:
        n, c = x._v.shape
        dt = x._v.dtype
        m = _raw.reduce("max", x, (1,), True)
        sh = _raw.binary("sub", x, _view(m, (n, c), (m._v.strides[0], 0)), dt)
        s = _raw.reduce("sum", _raw.unary("exp", sh), (1,), True)
        lse = _raw.unary("log", s)
        logp = _raw.binary("sub", sh, _view(lse, (n, c), (lse._v.strides[0], 0)), dt)
        ids = _class_ids(c, x)
        tcol = _view(target, (n, c), (target._v.strides[0], 0))
        mask = _raw.binary("eq", tcol, _view(ids, (n, c), (0, ids._v.strides[0])), _dtype.bool,
                           like=x)
        valid = _raw.cast(_raw.binary("ne", target, ignore_index, _dtype.bool), dt)
        picked = _raw.reduce("sum", _raw.where(mask, logp, 0.0, dt, x), (1,), False)
        loss = _raw.binary("mul", picked, valid, dt)
        _raw.binary("mul", loss, -1.0, dt, out=loss)
        denom = None
        if reduction == "mean":
            denom = _raw.reduce("sum", valid, (0,), False)
            loss = _raw.binary("div", _raw.reduce("sum", loss, (0,), False), denom, dt)
        elif reduction == "sum":
            loss = _raw.reduce("sum", loss, (0,), False)
        ctx.reduction = reduction
        ctx.save_for_backward(x, logp, mask, valid, denom)
        return loss

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, logp, mask, valid, denom = ctx.saved_tensors
        # d loss_i / d x_ij = (softmax_ij - [j == t_i]) * valid_i
        p = _softmax_rows(x) if is_grad_enabled() else E.exp(logp)
        d = E.mul(E.sub(p, C_to(mask, p)), S.unsqueeze(valid, 1))
        if ctx.reduction == "mean":
            d = E.mul(d, E.div(g, denom))
        elif ctx.reduction == "sum":
            d = E.mul(d, g)
        else:
            d = E.mul(d, S.unsqueeze(g, 1))
        return d, None, None, None


def C_to(mask: Tensor, like: Tensor) -> Tensor:
    from .._ops.conversion import to

    return to(mask, dtype=like.dtype)


def _softmax_rows(x: Tensor) -> Tensor:
    m = R.amax(x, 1, keepdim=True).detach()
    e = E.exp(E.sub(x, m))
    return E.div(e, R.sum(e, 1, keepdim=True))


def cross_entropy_indices(x: Tensor, target: Tensor, ignore_index: int, reduction: str) -> Tensor:
    """Cross entropy of (N, C) logits against int64 class indices (N,), as one recorded node."""
    check_same_device(x, target, "cross_entropy")
    n, c = x.shape
    if target.numel():
        # out-of-range targets must not silently pick nothing: checked on every device (on the
        # cpu the host view is free; elsewhere it costs one small read)
        if target.device.type == "cpu":
            t = target.detach()._host()
        else:
            lo = int(_raw.reduce("min", target, (0,), False).item())
            hi = int(_raw.reduce("max", target, (0,), False).item())
            t = target.detach()._host() if lo < 0 or hi >= c else None
        if t is not None:
            bad = t[(t != ignore_index) & ((t < 0) | (t >= c))]
            if bad.size:
                raise IndexError(f"Target {int(bad[0])} is out of bounds.")
    return call(_CrossEntropy, x, target, ignore_index, reduction)


class _Conv(Function):
    """Convolution with ``groups == 1`` as one node: im2col gather, one GEMM, bias.

    The output is a (N, O, *spatial) view of the (N, L, O) GEMM result, as the composition gave."""

    _backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, b: Tensor | None, p: Any) -> Tensor:
        from ._im2col import _unfold_raw

        n = x._v.shape[0]
        o = w._v.shape[0]
        ck = p.C * p.K
        cols = _unfold_raw(_raw.contiguous(x), p, 0.0)  # (N, L, C*K), contiguous
        rows = n * p.L
        a3 = _view(cols, (1, rows, ck), (0, ck, 1))
        w2 = _raw.contiguous(w)
        w3 = _view(w2, (1, ck, o), (0, 1, ck))  # w.T as a view
        out = _raw.bmm(a3, w3) if ck else _raw.fill(_raw.new_like(x, (1, rows, o)), 0)
        if b is not None:
            bv = _view(b, (1, rows, o), (0, 0, b._v.strides[0]))
            out._storage.backend.binary("add", out._v, bv._v, out._v)
        ctx.plan = p
        ctx.save_for_backward(x, w, cols)
        sp = p.out_spatial
        sp_strides = _raw.strides_for(tuple(sp) + (o,))[:-1]
        return Tensor._make(out._storage, 0, (n, o) + tuple(sp), (p.L * o, 1) + sp_strides,
                            out._v.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        from ._im2col import fold_cols, unfold_cols

        x, w, cols = ctx.saved_tensors
        p = ctx.plan
        n, o = g.shape[0], g.shape[1]
        ck = p.C * p.K
        g2 = S.reshape(S.movedim(g, 1, -1), (n * p.L, o))  # (N*L, O)
        w2 = S.reshape(w, (o, ck))
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = fold_cols(S.reshape(L.matmul(g2, w2), (n, p.L, ck)), p)
        if ctx.needs_input_grad[1]:
            # under create_graph the windows are re-gathered from x so that gw depends on x
            c = unfold_cols(x, p) if is_grad_enabled() else cols
            gw = S.reshape(L.matmul(S.t(g2), S.reshape(c, (n * p.L, ck))), tuple(w.shape))
        if len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2]:
            gb = R.sum(g2, 0)
        return gx, gw, gb, None


def conv(x: Tensor, w: Tensor, b: Tensor | None, p: Any) -> Tensor:
    """``groups == 1`` convolution of batched ``x`` with window plan ``p`` as one node."""
    check_same_device(x, w, "conv")
    if b is not None:
        check_same_device(x, b, "conv")
    return call(_Conv, x, w, b, p)
