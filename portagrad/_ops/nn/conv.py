"""Convolution as one node: the backend's optional ``conv2d`` primitives, or im2col and one GEMM.
"""
from __future__ import annotations

from typing import Any

from ... import _raw
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ..matmul import matmul
from .. import complexnum, reduction
from .._common import call, check_same_device
from .im2col import fold_cols, unfold_cols, unfold_raw

__all__ = ["conv_fast_path", "conv"]


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
        cols = unfold_raw(_raw.contiguous(x), p, 0.0)  # (N, L, C*K), contiguous
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
        if x.dtype.is_complex:
            # bilinear: PyTorch's (conjugate Wirtinger) gradients correlate g with conj(w) and
            # conj(x)
            x, w = complexnum.conj_physical(x), complexnum.conj_physical(w)
            cols = None if cols is None else complexnum.conj_physical(cols)
        p = ctx.plan
        nd = len(p.in_spatial)
        need = ctx.needs_input_grad
        gx = gw = gb = None
        recording = is_grad_enabled()
        if len(need) > 2 and need[2]:
            axes = (0,) + tuple(range(2, g.dim()))
            # nothing records: the bias sum as one primitive on the raw gradient
            gb = reduction.sum(g, axes) if recording else _raw.reduce("sum", g, axes, False)
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
    g2 = g.movedim(1, -1).reshape((n * p.L, o))  # (N*L, O)
    gx = gw = None
    if need[0]:
        if G == 1:
            gc = matmul(g2, w.reshape((o, ck)))
        else:  # per group: (G, N*L, O/G) @ (G, O/G, C/G*K)
            gg = g2.reshape((n * p.L, G, og)).transpose(0, 1)
            gc = matmul(gg, w.reshape((G, og, cgk)))
            gc = gc.transpose(0, 1).reshape((n * p.L, ck))
        gx = fold_cols(gc.reshape((n, p.L, ck)), p)
    if need[1]:
        # under create_graph (or without a saved gather) the windows are re-gathered from x so
        # that gw depends on x
        c = unfold_cols(x, p) if (is_grad_enabled() or cols is None) else cols
        c2 = c.reshape((n * p.L, ck))
        if G == 1:
            gw = matmul(g2.t(), c2).reshape(tuple(w.shape))
        else:
            gg = g2.reshape((n * p.L, G, og)).permute((1, 2, 0))  # (G, O/G, N*L)
            cg = c2.reshape((n * p.L, G, cgk)).transpose(0, 1)  # (G, N*L, C/G*K)
            gw = matmul(gg, cg).reshape(tuple(w.shape))
    return gx, gw


def conv(x: Tensor, w: Tensor, b: Tensor | None, p: Any, geom: Any = None) -> Tensor:
    """Convolution of batched ``x`` with window plan ``p`` as one node. ``geom`` is
    ``(stride, padding_lo, dilation, groups)``; ``groups != 1`` needs the backend fast paths."""
    check_same_device(x, w, "conv")
    if b is not None:
        check_same_device(x, b, "conv")
    return call(_Conv, x, w, b, p, geom)
