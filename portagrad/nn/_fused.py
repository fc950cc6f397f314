"""Fused Functions for the hottest layers: ``linear``, ``cross_entropy`` with class indices,
``layer_norm`` and training-mode ``batch_norm``.

Composed from single ops, ``linear`` records ~7 nodes (transpose, reshapes, batched matmul, bias
add) and ``cross_entropy`` ~15; each node costs Python time in forward and backward. Here each is
one node whose forward calls ``_raw``'s primitives directly and whose backward is still written
with public portagrad ops (so it runs on every backend and can be differentiated again: with
``create_graph`` the softmax is recomputed from the input rather than read from the saved value).
Where the backend has the optional normalisation primitives (``layer_norm``, ``batch_norm``,
``cross_entropy`` and their ``*_backward``), forward and backward are one backend call each while
nothing records; under ``create_graph`` the backward is composed from public ops.
"""
from __future__ import annotations

import math
from typing import Any

from .. import _creation, _dtype, _raw
from .._ops import elementwise as E
from .._ops import linalg as L
from .._ops import reduction as R
from .._ops import shape as S
from .._ops._common import call, check_same_device
from .._shape import check_expandable
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ._im2col import _unfold_raw, fold_cols, unfold_cols

__all__ = ["linear", "cross_entropy_indices", "check_class_targets", "conv", "norm_fast_path",
           "layer_norm", "batch_norm", "ce_weight_fast"]


def _tensor_like(x: Tensor, shape: tuple) -> Tensor:
    """A new contiguous tensor of ``x``'s dtype on its device."""
    return _raw.new_on(x._storage, shape, x._v.dtype)


def _rows(x: Tensor) -> Tensor:
    """``x`` as a 2-D (rows, features) raw view, copying only if the strides do not allow it
    (``x`` itself when it is 2-D already)."""
    if len(x._v.shape) == 2:
        return x
    k = x._v.shape[-1] if x._v.shape else 1
    n = math.prod(x._v.shape[:-1])  # not numel // k: that is 0 for k == 0, whatever the rows
    strides = S.compute_view_strides(x._v.shape, x._v.strides, (n, k))
    if strides is None:
        x = _raw.contiguous(x)
        strides = _raw.strides_for((n, k))
    return _raw.view(x, (n, k), strides)


class _Linear(Function):
    _backward_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
        # x's gradient needs w, w's needs x: each saved only when needed (as PyTorch's addmm)
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              w if ctx.needs_input_grad[0] else None)
        ctx.shapes = (x._v.shape, w._v.shape)
        x2 = _rows(x)
        n, k = x2._v.shape
        o = w._v.shape[0]
        a3 = _raw.view(x2, (1, n, k), (0,) + x2._v.strides)
        w3 = _raw.view(w, (1, k, o), (0, w._v.strides[1], w._v.strides[0]))  # w.T without a copy
        out = _raw.bmm(a3, w3)  # zeros when k == 0
        if b is not None:  # (the bias broadcast as a bare View: no tensor outlives the call)
            _raw.binary("add", out, _raw.bare_expand(b._v, (1, n, o)), out._v.dtype, out=out)
        shape = tuple(x._v.shape[:-1]) + (o,)
        return _raw.view(out, shape, _raw.strides_for(shape))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, w = ctx.saved_tensors
        x_shape, (o, k) = ctx.shapes
        need = ctx.needs_input_grad
        if not is_grad_enabled():
            # nothing records: the GEMMs and the bias sum on raw views, one primitive each
            g2 = _rows(g)
            gs = g2._v.strides
            n = g2._v.shape[0]
            gx = gw = gb = None
            if need[0]:
                gx = _mm(g2, (n, o), gs, w)
                if len(x_shape) != 2:
                    gx = _raw.moved(gx, x_shape, _raw.strides_for(x_shape))
            if need[1]:
                gw = _mm(g2, (o, n), (gs[1], gs[0]), _rows(x))  # g2.T @ x2
            if len(need) > 2 and need[2]:
                gb = _raw.reduce("sum", g2, (0,), False)
            return gx, gw, gb
        g2 = g if g.dim() == 2 else S.reshape(g, (-1, o))
        gx = gw = None
        # (the 2-D matmul node straight away: shapes, dtypes and devices are known to agree)
        if ctx.needs_input_grad[0]:
            gx = call(L._MM, g2, w)
            gx = gx if len(x_shape) == 2 else S.reshape(gx, x_shape)
        if ctx.needs_input_grad[1]:
            x2 = x if x.dim() == 2 else S.reshape(x, (-1, k))
            gw = call(L._MM, S.t(g2), x2)
        gb = R.sum(g2, 0) if len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2] else None
        return gx, gw, gb


def _mm(a: Tensor, shape: tuple[int, int], strides: tuple[int, ...], b: Tensor) -> Tensor:
    """``a'' @ b`` for ``a''`` the 2-D raw view ``(shape, strides)`` of ``a`` (a transpose is
    swapped strides) and 2-D ``b``: a new contiguous (M, N) tensor."""
    m, k = shape
    n = b._v.shape[1]
    out = _raw.bmm(_raw.view(a, (1, m, k), (0,) + tuple(strides)),
                   _raw.view(b, (1, k, n), (0,) + b._v.strides))  # zeros when k == 0
    return _raw.moved(out, (m, n), (n, 1))


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
    if b is not None:
        check_expandable(b.shape, tuple(x.shape[:-1]) + (w.shape[0],))
    return call(_Linear, x, w, b)


_ARANGE: dict = {}
#: dtypes the normalisation primitives are used for (others compose)
_NORM_DTYPES = (_dtype.float32, _dtype.float64)


def _class_ids(n: int, like: Tensor) -> Tensor:
    key = (n, like.device)
    t = _ARANGE.get(key)
    if t is None:
        t = _ARANGE[key] = _creation.arange(n, device=like.device)
    return t


class _CrossEntropy(Function):
    _backward_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, target: Tensor, ignore_index: int, reduction: str,
                weight: Tensor | None = None) -> Tensor:
        ctx.reduction = reduction
        ctx.fast = fast = weight is not None or _ce_prims(x)
        if fast:
            return _ce_forward_prims(ctx, x, target, ignore_index, reduction, weight)
        # ~17 primitive calls on small (N, C) arrays: temporaries are bare Views (no Storage or
        # Tensor objects), which halves the Python cost per call; only results become tensors
        n, c = x._v.shape
        dt = x._v.dtype
        ws = _raw.Scratch(x)
        new, binary, reduce = ws.new, ws.binary, ws.reduce
        bare_view = _raw.bare_view
        nc = (n, c)
        xv = x._v
        m = new((n, 1), dt)
        reduce("max", xv, (1,), m)
        sh = new(nc, dt)
        col = (1, 0)  # the strides of an (N, 1) column broadcast along the classes
        binary("sub", xv, bare_view(m, nc, col), sh)
        e = new(nc, dt)
        ws.unary("exp", sh, e)
        lse = new((n, 1), dt)
        reduce("sum", e, (1,), lse)
        ws.unary("log", lse, lse)
        logp = _tensor_like(x, nc)
        binary("sub", sh, bare_view(lse, nc, col), logp._v)
        tv = target._v
        mask = new(nc, _dtype.bool)
        ids = _class_ids(c, x)._v
        binary("eq", bare_view(tv, nc, (tv.strides[0], 0)), bare_view(ids, nc, (0, ids.strides[0])),
               mask)
        onehot = _tensor_like(x, nc)
        ws.copy(mask, onehot._v)
        valid_b = new((n,), _dtype.bool)
        binary("ne", tv, ignore_index, valid_b)
        valid = new((n,), dt)
        ws.copy(valid_b, valid)
        # sh is free again: the target's log-probability, the others 0 (a select, not
        # logp * onehot, whose 0 * -inf would make a row with a -inf logit NaN)
        ws.where(mask, logp._v, 0.0, sh)
        picked = new((n,), dt)
        reduce("sum", sh, (1,), bare_view(picked, (n, 1), (1, 1)))
        # per-row weight of the gradient: valid_i (/ the number of valid rows for "mean")
        wcol = _tensor_like(x, (n, 1))
        w = bare_view(wcol._v, (n,), (1,))
        if reduction == "mean":
            denom = new((1,), dt)
            reduce("sum", valid, (0,), denom)
            binary("div", valid, bare_view(denom, (n,), (0,)), w)
        else:
            ws.copy(valid, w)
        if reduction == "none":
            loss = _tensor_like(x, (n,))
            binary("mul", picked, valid, loss._v)
            binary("mul", loss._v, -1.0, loss._v)
        else:
            binary("mul", picked, w, picked)
            loss = _tensor_like(x, ())
            reduce("sum", picked, (0,), bare_view(loss._v, (1,), (1,)))
            binary("mul", loss._v, -1.0, loss._v)
        ctx.reduction = reduction
        ctx.save_for_backward(x, logp, onehot, wcol)
        return loss

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        if ctx.fast:
            return _ce_backward_prims(ctx, g), None, None, None, None
        x, logp, onehot, wcol = ctx.saved_tensors
        # d loss_i / d x_ij = (softmax_ij - [j == t_i]) * valid_i (/ n_valid for "mean")
        if not is_grad_enabled():
            # nothing records: four primitive calls, written into the one fresh result
            n, c = logp._v.shape
            dt = logp._v.dtype
            p = _raw.unary("exp", logp)
            _raw.binary("sub", p, onehot, dt, out=p)
            gv = g._v
            gcol = _raw.view(g, (n, 1), (0, 0) if ctx.reduction != "none" else (gv.strides[0], 0))
            coef = _raw.binary("mul", wcol, gcol, dt)  # (N, 1)
            return (_raw.binary("mul", p, _raw.expand_view(coef, (n, c)), dt, out=p), None, None,
                    None, None)
        p = _softmax_rows(x)
        coef = E.mul(wcol, g if ctx.reduction != "none" else S.unsqueeze(g, 1))  # (N, 1)
        return E.mul(E.sub(p, onehot), coef), None, None, None, None


def _ce_prims(x: Tensor) -> bool:
    """Whether ``x``'s backend has the fused cross-entropy primitives for its dtype."""
    return x._v.dtype in _NORM_DTYPES and _raw.has_prims(x, "cross_entropy",
                                                          "cross_entropy_backward")


def _ce_forward_prims(ctx: Any, x: Tensor, target: Tensor, ignore_index: int, reduction: str,
                      weight: Tensor | None) -> Tensor:
    """Cross entropy through the backend's ``cross_entropy``: per-row losses, log-sum-exps and
    row weights in one call, then the reduction."""
    n = x._v.shape[0]
    dt = x._v.dtype
    st = x._storage
    xc, tc = _raw.contiguous(x), _raw.contiguous(target)
    rows, lse, rw = (_raw.new_on(st, (n,), dt) for _ in range(3))
    _raw.cross_entropy(xc, tc, None if weight is None else _raw.contiguous(weight), ignore_index,
                       rows, lse, rw)
    if reduction == "none":
        loss, coef = rows, rw
    else:
        loss = _raw.reduce("sum", rows, (0,), False)
        coef = rw
        if reduction == "mean":  # sum(w_i * l_i) / sum(w_i), as PyTorch (NaN when all ignored)
            denom = _raw.reduce("sum", rw, (0,), False)
            loss = _raw.binary("div", loss, denom._v, dt)
            coef = _raw.binary("div", rw, _raw.expand_view(denom, (n,)), dt)
    ctx.save_for_backward(x, target, lse, coef)
    return loss


def _ce_backward_prims(ctx: Any, g: Tensor) -> Tensor:
    """The gradient of :func:`_ce_forward_prims` w.r.t. the logits: one backend call while
    nothing records, else composed from public ops (differentiable again)."""
    x, target, lse, coef = ctx.saved_tensors
    coef = E.mul(coef, g)  # (N,): g is 0-d, or (N,) for reduction="none"
    if not is_grad_enabled() and _ce_prims(x):
        return _raw.cross_entropy_backward(_raw.contiguous(x), _raw.contiguous(target), lse,
                                           _raw.contiguous(coef), _raw.new_like(x))
    c = x.shape[1]
    onehot = E.eq(S.unsqueeze(target, 1), S.unsqueeze(_class_ids(c, x), 0)).to(x.dtype)
    return E.mul(E.sub(_softmax_rows(x), onehot), S.unsqueeze(coef, 1))


def _softmax_rows(x: Tensor) -> Tensor:
    m = R.amax(x, 1, keepdim=True).detach()
    e = E.exp(E.sub(x, m))
    return E.div(e, R.sum(e, 1, keepdim=True))


def check_class_targets(target: Tensor, c: int, ignore_index: int) -> None:
    """Raise PyTorch's ``IndexError: Target T is out of bounds.`` when a class index of ``target``
    other than ``ignore_index`` lies outside ``[0, c)``.

    The same code on every device: out-of-range targets would otherwise pick no class and give a
    wrong loss silently. Ignored values outside the range are zeroed first, then the range costs
    one small reduction and one host read (``_raw.min_max``, with the valid range so that a
    captured step checks it again on replay). Only on error is the whole target read back, to
    name the first bad value in order, as PyTorch does.
    """
    if not target.numel():
        return
    t = target.detach()
    if not 0 <= ignore_index < c:
        if _raw.CHECK_HOOK is None:
            # eager: targets all in range (no ignored entry among them) pass at once; a
            # captured step keeps the one check below, which its replay repeats
            lo, hi = _raw.min_max(t)
            if lo >= 0 and hi < c:
                return
        t = E.mul(t, E.ne(t, ignore_index))  # ignored entries -> class 0, which is in range
    lo, hi = _raw.min_max(t, (0, c - 1))
    if lo >= 0 and hi < c:
        return
    h = target.detach()._host()
    bad = h[(h != ignore_index) & ((h < 0) | (h >= c))]
    if bad.size:
        raise IndexError(f"Target {int(bad.reshape(-1)[0])} is out of bounds.")


def cross_entropy_indices(x: Tensor, target: Tensor, ignore_index: int, reduction: str,
                          weight: Tensor | None = None) -> Tensor:
    """Cross entropy of (N, C) logits against int64 class indices (N,), as one recorded node.
    Class ``weight`` only where :func:`ce_weight_fast` says so."""
    check_same_device(x, target, "cross_entropy")
    check_class_targets(target, x.shape[1], ignore_index)
    return call(_CrossEntropy, x, target, ignore_index, reduction, weight)


def ce_weight_fast(x: Tensor, weight: Tensor) -> bool:
    """Whether :func:`cross_entropy_indices` takes class weights ``weight`` for logits ``x``: the
    backend's fused primitives exist and ``weight`` is a (C,) tensor of ``x``'s dtype and device
    that needs no gradient (PyTorch has none for it); otherwise the caller composes."""
    return (_ce_prims(x) and weight._v.dtype is x._v.dtype and not weight.requires_grad
            and tuple(weight._v.shape) == (x._v.shape[1],)
            and weight._storage.device == x._storage.device)


def conv_fast_path(x: Tensor) -> bool:
    """Whether ``x``'s backend has the optional convolution fast paths (all three)."""
    return x._v.dtype.is_floating_point and _raw.has_prims(
        x, "conv2d", "conv2d_grad_input", "conv2d_grad_weight")


def _as4d(t: Tensor, nd: int) -> Tensor:
    """A contiguous raw (N, C, H, W) view of a 1-D (N, C, L) or 2-D (N, C, H, W) tensor."""
    t = _raw.contiguous(t)
    if nd == 2:
        return t
    shape = t._v.shape[:2] + (1,) + t._v.shape[2:]
    return _raw.view(t, shape, _raw.strides_for(shape))


def _geom4(geom: Any, nd: int) -> Any:
    s, lo, d, groups = geom
    if nd == 1:
        return (1,) + tuple(s), (0,) + tuple(lo), (1,) + tuple(d), groups
    return tuple(s), tuple(lo), tuple(d), groups


def _fast_grad_input(g: Tensor, w: Tensor, x_shape: tuple, geom: Any, nd: int) -> Tensor:
    s, lo, d, groups = _geom4(geom, nd)
    out = _raw.new_like(g, tuple(x_shape))
    _raw.conv2d_grad_input(_as4d(g, nd), _as4d(w, nd), _as4d(out, nd), s, lo, d, groups)
    return out


def _fast_grad_weight(x: Tensor, g: Tensor, w_shape: tuple, geom: Any, nd: int) -> Tensor:
    s, lo, d, groups = _geom4(geom, nd)
    out = _raw.new_like(g, tuple(w_shape))
    _raw.conv2d_grad_weight(_as4d(x, nd), _as4d(g, nd), _as4d(out, nd), s, lo, d, groups)
    return out


class _Conv(Function):
    """Convolution as one node.

    With the backend's optional ``conv2d`` / ``conv2d_grad_input`` / ``conv2d_grad_weight`` fast
    paths (any ``groups``; 1-D convolutions run as 2-D ones of height 1) forward and backward are
    one backend call each. Otherwise (``groups == 1`` only): im2col gather, one GEMM, bias; the
    output is then a (N, O, *spatial) view of the (N, L, O) GEMM result, as the composition gave.
    Under ``create_graph`` the backward is composed from public ops, so it can be differentiated
    again, on every backend."""

    _backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, b: Tensor | None, p: Any, geom: Any) -> Tensor:
        n = x._v.shape[0]
        o = w._v.shape[0]
        nd = len(p.in_spatial)
        ctx.plan = p
        ctx.geom = geom
        if geom[3] != 1 or conv_fast_path(x):
            s, lo, d, groups = _geom4(geom, nd)
            out = _raw.new_like(x, (n, o) + tuple(p.out_spatial))
            _raw.conv2d(_as4d(x, nd), _as4d(w, nd), _as4d(out, nd), s, lo, d, groups)
            if b is not None:
                bshape = (n, o) + tuple(p.out_spatial)
                bv = _raw.view(b, bshape, (0, b._v.strides[0]) + (0,) * nd)  # b along axis 1
                _raw.binary("add", out, bv, out._v.dtype, out=out)
            ctx.fast = True
            ctx.save_for_backward(x, w, None)
            return out
        ck = p.C * p.K
        cols = _unfold_raw(_raw.contiguous(x), p, 0.0)  # (N, L, C*K), contiguous
        rows = n * p.L
        a3 = _raw.view(cols, (1, rows, ck), (0, ck, 1))
        w2 = _raw.contiguous(w)
        w3 = _raw.view(w2, (1, ck, o), (0, 1, ck))  # w.T as a view
        out = _raw.bmm(a3, w3)  # zeros when ck == 0
        if b is not None:
            _raw.binary("add", out, _raw.expand_view(b, (1, rows, o)), out._v.dtype, out=out)
        ctx.fast = False
        ctx.save_for_backward(x, w, cols)
        sp = p.out_spatial
        sp_strides = _raw.strides_for(tuple(sp) + (o,))[:-1]
        # PyTorch's output is contiguous NCHW (scripts ``.view()`` it): one copy of the result
        return _raw.contiguous(_raw.view(out, (n, o) + tuple(sp), (p.L * o, 1) + sp_strides))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, w, cols = ctx.saved_tensors
        p = ctx.plan
        nd = len(p.in_spatial)
        need = ctx.needs_input_grad
        gx = gw = gb = None
        recording = is_grad_enabled()
        if len(need) > 2 and need[2]:
            axes = (0,) + tuple(range(2, g.dim()))
            # nothing records: the bias sum as one primitive on the raw gradient
            gb = R.sum(g, axes) if recording else _raw.reduce("sum", g, axes, False)
        if not recording and ctx.fast:
            # nothing records: one backend call per gradient
            if need[0]:
                gx = _fast_grad_input(g, w, tuple(x.shape), ctx.geom, nd)
            if need[1]:
                gw = _fast_grad_weight(x, g, tuple(w.shape), ctx.geom, nd)
            return gx, gw, gb, None, None
        return _conv_backward_composed(g, x, w, cols, p, ctx.geom[3], need) + (gb, None, None)


def _conv_backward_composed(g: Tensor, x: Tensor, w: Tensor, cols: Tensor | None, p: Any,
                            groups: int, need: Any) -> tuple:
    """Input and weight gradients from public ops (im2col / col2im and matmuls)."""
    n, o = g.shape[0], g.shape[1]
    ck = p.C * p.K
    G = groups
    og, cgk = o // G, ck // G
    g2 = S.reshape(S.movedim(g, 1, -1), (n * p.L, o))  # (N*L, O)
    gx = gw = None
    if need[0]:
        if G == 1:
            gc = L.matmul(g2, S.reshape(w, (o, ck)))
        else:  # per group: (G, N*L, O/G) @ (G, O/G, C/G*K)
            gg = S.transpose(S.reshape(g2, (n * p.L, G, og)), 0, 1)
            gc = L.matmul(gg, S.reshape(w, (G, og, cgk)))
            gc = S.reshape(S.transpose(gc, 0, 1), (n * p.L, ck))
        gx = fold_cols(S.reshape(gc, (n, p.L, ck)), p)
    if need[1]:
        # under create_graph (or without a saved gather) the windows are re-gathered from x so
        # that gw depends on x
        c = unfold_cols(x, p) if (is_grad_enabled() or cols is None) else cols
        c2 = S.reshape(c, (n * p.L, ck))
        if G == 1:
            gw = S.reshape(L.matmul(S.t(g2), c2), tuple(w.shape))
        else:
            gg = S.permute(S.reshape(g2, (n * p.L, G, og)), (1, 2, 0))  # (G, O/G, N*L)
            cg = S.transpose(S.reshape(c2, (n * p.L, G, cgk)), 0, 1)  # (G, N*L, C/G*K)
            gw = S.reshape(L.matmul(gg, cg), tuple(w.shape))
    return gx, gw


def conv(x: Tensor, w: Tensor, b: Tensor | None, p: Any, geom: Any = None) -> Tensor:
    """Convolution of batched ``x`` with window plan ``p`` as one node. ``geom`` is
    ``(stride, padding_lo, dilation, groups)``; ``groups != 1`` needs the backend fast paths."""
    check_same_device(x, w, "conv")
    if b is not None:
        check_same_device(x, b, "conv")
    return call(_Conv, x, w, b, p, geom)


# ------------------------------------------------------------------ normalisation
def norm_fast_path(x: Tensor, name: str, *others: Tensor | None, shape: tuple) -> bool:
    """Whether ``name`` (``"layer_norm"``/``"batch_norm"``) can run as the backend's primitive and
    its ``*_backward``: ``x`` float32/float64, every operand in ``others`` ``None`` or a
    contiguous tensor of ``shape`` with ``x``'s dtype and device (else the caller composes, which
    also reports mismatches as PyTorch does)."""
    dt = x._v.dtype
    if dt not in _NORM_DTYPES or not _raw.has_prims(x, name, name + "_backward"):
        return False
    dev = x._storage.device
    for t in others:
        if t is not None and (t._v.dtype is not dt or tuple(t._v.shape) != tuple(shape)
                              or t._storage.device != dev or not t._v.is_contiguous()):
            return False
    return True


def _flat(t: Tensor, shape: tuple) -> Tensor:
    """A raw contiguous view of ``t`` with ``shape`` (same number of elements)."""
    return _raw.view(_raw.contiguous(t), shape, _raw.strides_for(shape))


def _flat_or_none(t: Tensor | None, n: int) -> Tensor | None:
    return None if t is None else _flat(t, (n,))


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
        _raw.layer_norm(_flat(x, (m, n)), _flat_or_none(w, n), _flat_or_none(b, n), eps,
                        _flat(out, (m, n)), mean, rstd)
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
            _raw.layer_norm_backward(_flat(g, (m, n)), _flat(x, (m, n)), _flat_or_none(w, n), mean,
                                     rstd, None if gx is None else _flat(gx, (m, n)), _flat_or_none(gw, n),
                                     _flat_or_none(gb, n))
            return gx, gw, gb, None, None
        axes = tuple(range(x.dim() - k, x.dim()))
        xhat, r = _normalised(x, axes, ctx.eps)
        gx, gw, gb = _norm_grads(g, xhat, r, w, axes, lead, lambda t: t)
        return gx, gw if need[1] else None, gb if len(need) > 2 and need[2] else None, None, None


def _normalised(x: Tensor, axes: tuple, eps: float) -> tuple[Tensor, Tensor]:
    """``(x - mean) * rstd`` and ``rstd`` over ``axes`` (keepdim), from public ops."""
    mu = R.mean(x, axes, keepdim=True)
    xc = E.sub(x, mu)
    r = E.rsqrt(E.add(R.mean(E.mul(xc, xc), axes, keepdim=True), eps))
    return E.mul(xc, r), r


def _norm_grads(g: Tensor, xhat: Tensor, r: Tensor, w: Tensor | None, axes: tuple, wsum: tuple,
                wview: Any) -> tuple[Tensor, Tensor | None, Tensor]:
    """Gradients of ``xhat * w + b`` (``xhat`` normalised over ``axes``) from public ops:
    ``(grad_x, grad_w, grad_b)``, the parameter gradients summed over ``wsum``; ``wview`` shapes
    ``w`` to broadcast against ``g``."""
    gw_ = g if w is None else E.mul(g, wview(w))
    gx = E.mul(r, E.sub(E.sub(gw_, R.mean(gw_, axes, keepdim=True)),
                        E.mul(xhat, R.mean(E.mul(gw_, xhat), axes, keepdim=True))))
    gxh = E.mul(g, xhat)
    gw = (R.sum(gxh, wsum) if wsum else gxh) if w is not None else None
    gb = R.sum(g, wsum) if wsum else g
    return gx, gw, gb


def layer_norm(x: Tensor, ns: tuple, w: Tensor | None, b: Tensor | None, eps: float) -> Tensor:
    """Layer norm over the trailing dimensions ``ns`` as one node (after
    :func:`norm_fast_path`)."""
    return call(_LayerNorm, x, w, b, tuple(ns), float(eps))


class _BatchNorm(Function):
    """Training-mode batch norm of (N, C, *) as one node: the backend's ``batch_norm`` (which
    also updates the running statistics) and ``batch_norm_backward``; composed under
    ``create_graph``."""

    _backward_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor | None, b: Tensor | None, running: tuple,
                momentum: float, eps: float) -> Tensor:
        shape = x._v.shape
        c = shape[1]
        s3 = (shape[0], c, math.prod(shape[2:]))
        out = _raw.new_like(x)
        mean, rstd = _raw.new_like(x, (c,)), _raw.new_like(x, (c,))
        _raw.batch_norm(_flat(x, s3), w, b, running[0], running[1], momentum, eps,
                        _flat(out, s3), mean, rstd)
        ctx.eps = eps
        ctx.save_for_backward(x, w, mean, rstd)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, w, mean, rstd = ctx.saved_tensors
        need = ctx.needs_input_grad
        nd = x.dim()
        if not is_grad_enabled():
            shape = tuple(x.shape)
            c = shape[1]
            s3 = (shape[0], c, math.prod(shape[2:]))
            gx = _raw.new_like(x) if need[0] else None
            gw = _raw.new_like(x, (c,)) if w is not None and need[1] else None
            gb = _raw.new_like(x, (c,)) if len(need) > 2 and need[2] else None
            _raw.batch_norm_backward(_flat(g, s3), _flat(x, s3), w, mean, rstd,
                                     None if gx is None else _flat(gx, s3), gw, gb)
            return gx, gw, gb, None, None, None
        axes = (0,) + tuple(range(2, nd))
        xhat, r = _normalised(x, axes, ctx.eps)
        bshape = (1, x.shape[1]) + (1,) * (nd - 2)
        gx, gw, gb = _norm_grads(g, xhat, r, w, axes, axes, lambda t: S.reshape(t, bshape))
        return (gx, gw if need[1] else None, gb if len(need) > 2 and need[2] else None, None,
                None, None)


def batch_norm(x: Tensor, w: Tensor | None, b: Tensor | None, running_mean: Tensor | None,
               running_var: Tensor | None, momentum: float, eps: float) -> Tensor:
    """Training-mode batch norm as one node (after :func:`norm_fast_path`); the running
    statistics are updated in place by the backend call."""
    return call(_BatchNorm, x, w, b, (running_mean, running_var), float(momentum), float(eps))
