"""``linear`` as one autograd node: ``x @ w.T + b`` with one GEMM each way.

Composed from single ops, ``linear`` records ~7 nodes (transpose, reshapes, batched matmul, bias
add), each costing Python time in forward and backward; here it is one node whose forward calls
``_raw``'s primitives and whose backward is written with ops, so it runs on every backend and can
be differentiated again.
"""
from __future__ import annotations

from typing import Any

from ... import _raw
from ..._shape import check_expandable
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from .. import matmul
from .. import reduction
from ..shape import reshape, t
from .._common import call, check_same_device, sparse_fallback
from ._common import as_rows

__all__ = ["linear"]


class _Linear(Function):
    _backward_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
        # x's gradient needs w, w's needs x: each saved only when needed (as PyTorch's addmm)
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              w if ctx.needs_input_grad[0] else None)
        ctx.shapes = (x._v.shape, w._v.shape)
        x2 = as_rows(x)
        n, k = x2._v.shape
        wv = w._v
        o = wv.shape[0]
        # (the bias added to each row by the product's call: no tensor outlives the call)
        out = _raw.mm(x2, w, bv=_raw.bare_view(wv, (k, o), (wv.strides[1], wv.strides[0])),
                      bias=None if b is None else b._v)
        if len(x._v.shape) == 2:
            return out
        shape = tuple(x._v.shape[:-1]) + (o,)
        return _raw.moved(out, shape, _raw.strides_for(shape))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, w = ctx.saved_tensors
        x_shape, (o, k) = ctx.shapes
        need = ctx.needs_input_grad
        if not is_grad_enabled():
            # nothing records: the GEMMs and the bias sum on raw views, one primitive each
            g2 = as_rows(g)
            gs = g2._v.strides
            n = g2._v.shape[0]
            gx = gw = gb = None
            if need[0]:
                gx = _mm(g2, (n, o), gs, w)
                if len(x_shape) != 2:
                    gx = _raw.moved(gx, x_shape, _raw.strides_for(x_shape))
            if need[1]:
                gw = _mm(g2, (o, n), (gs[1], gs[0]), as_rows(x))  # g2.T @ x2
            if len(need) > 2 and need[2]:
                gb = _raw.reduce("sum", g2, (0,), False)
            return gx, gw, gb
        g2 = g if g.dim() == 2 else reshape(g, (-1, o))
        gx = gw = None
        # (the 2-D matmul node straight away: shapes, dtypes and devices are known to agree)
        if ctx.needs_input_grad[0]:
            gx = call(matmul._MM, g2, w)
            gx = gx if len(x_shape) == 2 else reshape(gx, x_shape)
        if ctx.needs_input_grad[1]:
            x2 = x if x.dim() == 2 else reshape(x, (-1, k))
            gw = call(matmul._MM, t(g2), x2)
        gb = reduction.sum(g2, 0) if len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2] else None
        return gx, gw, gb


def _mm(a: Tensor, shape: tuple[int, int], strides: tuple[int, ...], b: Tensor) -> Tensor:
    """``a'' @ b`` for ``a''`` the 2-D raw view ``(shape, strides)`` of ``a`` (a transpose is
    swapped strides) and 2-D ``b``: a new contiguous (M, N) tensor."""
    return _raw.mm(a, b, av=_raw.bare_view(a._v, shape, tuple(strides)))


def linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """``x @ w.T + b`` as one recorded node (``x`` of any rank >= 1, ``w`` 2-D, ``b`` 1-D)."""
    try:
        check_same_device(x, w, "linear")
    except AttributeError:  # not dense tensors: a sparse weight (x @ w.T), or re-raised
        return sparse_fallback("linear", linear, x, w, b)
    if b is not None:
        check_same_device(x, b, "linear")
    if x.dtype is not w.dtype or (b is not None and b.dtype is not w.dtype):
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {x.dtype} and "
                           f"{w.dtype}")
    if not w.dtype.is_floating_point:
        # composed: matmul's node has the complex (conjugating) gradients; integers multiply
        # with wrapping as PyTorch's CPU addmm does (they never require grad), and bool is
        # refused by matmul unless the product is empty
        y = x.matmul(w.t())
        return y if b is None else y + b
    if b is not None:
        check_expandable(b.shape, tuple(x.shape[:-1]) + (w.shape[0],))
    return call(_Linear, x, w, b)
