"""Losses as single nodes: cross entropy against class indices (one backend call each way where
the backend has the optional ``cross_entropy`` primitives) and binary cross entropy with
PyTorch's derivative; and the range checks that keep a bad target from giving a wrong loss.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ... import _creation, _dtype, _raw
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ..elementwise import clamp, eq, log, log1p, ne
from ..indexing import where
from ..shape import unsqueeze
from .._common import call, check_same_device
from ._common import NORM_DTYPES, tensor_like
from .softmax import softmax_rows

__all__ = ["cross_entropy_indices", "check_class_targets", "ce_weight_fast", "check_unit_interval",
           "binary_cross_entropy", "value_range", "ctc_infinite_nan"]


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
    def forward(ctx: Any, x: Tensor, target: Tensor, ignore_index: int, reduction: str,
                weight: Tensor | None = None, all_valid: bool = False) -> Tensor:
        ctx.reduction = reduction
        ctx.fast = fast = weight is not None or _ce_prims(x)
        if fast:
            return _ce_forward_prims(ctx, x, target, ignore_index, reduction, weight, all_valid)
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
        logp = tensor_like(x, nc)
        binary("sub", sh, bare_view(lse, nc, col), logp._v)
        tv = target._v
        mask = new(nc, _dtype.bool)
        ids = _class_ids(c, x)._v
        binary("eq", bare_view(tv, nc, (tv.strides[0], 0)), bare_view(ids, nc, (0, ids.strides[0])),
               mask)
        onehot = tensor_like(x, nc)
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
        wcol = tensor_like(x, (n, 1))
        w = bare_view(wcol._v, (n,), (1,))
        if reduction == "mean":
            denom = new((1,), dt)
            reduce("sum", valid, (0,), denom)
            # every row ignored: NaN loss (0 / 0), yet a gradient of 0 as PyTorch's, so the
            # rows' factor divides by a stand-in 1 and the NaN is set apart
            some_valid = new((1,), _dtype.bool)
            binary("ne", denom, 0.0, some_valid)
            safe = new((1,), dt)
            ws.where(some_valid, denom, 1.0, safe)
            binary("div", valid, bare_view(safe, (n,), (0,)), w)
        else:
            ws.copy(valid, w)
        if reduction == "none":
            loss = tensor_like(x, (n,))
            binary("mul", picked, valid, loss._v)
            binary("mul", loss._v, -1.0, loss._v)
        else:
            binary("mul", picked, w, picked)
            loss = tensor_like(x, ())
            lv = bare_view(loss._v, (1,), (1,))
            reduce("sum", picked, (0,), lv)
            binary("mul", loss._v, -1.0, loss._v)
            if reduction == "mean":
                ws.where(some_valid, lv, math.nan, lv)  # (in place: out may only be a)
        ctx.reduction = reduction
        ctx.save_for_backward(x, logp, onehot, wcol)
        return loss

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        if ctx.fast:
            return _ce_backward_prims(ctx, g), None, None, None, None, None
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
                    None, None, None)
        p = softmax_rows(x)
        coef = wcol * (g if ctx.reduction != "none" else unsqueeze(g, 1))  # (N, 1)
        return (p - onehot) * coef, None, None, None, None, None


def _ce_prims(x: Tensor) -> bool:
    """Whether ``x``'s backend has the fused cross-entropy primitives for its dtype."""
    return x._v.dtype in NORM_DTYPES and _raw.has_prims(x, "cross_entropy",
                                                          "cross_entropy_backward")


def _ce_forward_prims(ctx: Any, x: Tensor, target: Tensor, ignore_index: int, reduction: str,
                      weight: Tensor | None, all_valid: bool = False) -> Tensor:
    """Cross entropy through the backend's ``cross_entropy``: per-row losses, log-sum-exps and
    row weights in one call, then the reduction. ``all_valid``: every target is known to be a
    class (checked, none ignored), so that without class weights every row weighs 1."""
    n = x._v.shape[0]
    dt = x._v.dtype
    st = x._storage
    xc, tc = _raw.contiguous(x), _raw.contiguous(target)
    rows, lse, rw = (_raw.new_on(st, (n,), dt) for _ in range(3))
    _raw.cross_entropy(xc, tc, None if weight is None else _raw.contiguous(weight), ignore_index,
                       rows, lse, rw)
    if reduction == "none":
        loss, coef = rows, rw
    elif reduction == "mean" and weight is None and all_valid:
        # every row weighs 1: the mean is the sum over n, and each row's factor in backward is
        # g / n (as PyTorch's nll_loss: grad_output / total_weight), with no reduction of the
        # row weights nor a per-row division here
        loss = _raw.binary("div", _raw.reduce("sum", rows, (0,), False), float(n), dt)
        ctx.save_for_backward(x, target, lse, None)
        ctx.rows = n
        return loss
    else:
        loss = _raw.reduce("sum", rows, (0,), False)
        coef = rw
        if reduction == "mean":  # sum(w_i * l_i) / sum(w_i), as PyTorch (NaN when all ignored)
            denom = _raw.reduce("sum", rw, (0,), False)
            loss = _raw.binary("div", loss, denom._v, dt)
            # the rows' factors divide by a stand-in 1 where the weights sum to 0: the ignored
            # rows' gradient stays 0 (as PyTorch's), not 0 / 0
            safe = _raw.where(_raw.binary("eq", denom, 0.0, _dtype.bool), 1.0, denom, dt, denom)
            coef = _raw.binary("div", rw, _raw.expand_view(safe, (n,)), dt)
    ctx.save_for_backward(x, target, lse, coef)
    return loss


def _ce_backward_prims(ctx: Any, g: Tensor) -> Tensor:
    """The gradient of :func:`_ce_forward_prims` w.r.t. the logits: one backend call while
    nothing records, else composed from public ops (differentiable again)."""
    x, target, lse, coef = ctx.saved_tensors
    prims = not is_grad_enabled() and _ce_prims(x)
    if coef is None:  # "mean", every row weighing 1: each row's factor is g / n
        n = ctx.rows
        if prims and g._v.dtype is x._v.dtype:
            k = _raw.binary("div", _raw.expand_view(g, (n,)), float(n), g._v.dtype)
            return _raw.cross_entropy_backward(_raw.contiguous(x), _raw.contiguous(target), lse,
                                               k, _raw.new_like(x))
        coef = (g / n).expand(n)
    elif prims and g._v.dtype is coef._v.dtype:
        # nothing records: the per-row factor by one primitive call (g is 0-d, or (N,) for
        # reduction="none"), the gradient by one backend call
        gv = g if g._v.shape else _raw.expand_view(g, coef._v.shape)
        k = _raw.binary("mul", _raw.contiguous(coef), gv, coef._v.dtype)
        return _raw.cross_entropy_backward(_raw.contiguous(x), _raw.contiguous(target), lse, k,
                                           _raw.new_like(x))
    else:
        coef = coef * g  # (N,): g is 0-d, or (N,) for reduction="none"
    c = x.shape[1]
    onehot = eq(unsqueeze(target, 1), unsqueeze(_class_ids(c, x), 0)).to(x.dtype)
    return (softmax_rows(x) - onehot) * unsqueeze(coef, 1)


def check_class_targets(target: Tensor, c: int, ignore_index: int) -> bool:
    """Raise PyTorch's ``IndexError: Target T is out of bounds.`` when a class index of ``target``
    other than ``ignore_index`` lies outside ``[0, c)``.

    The same code on every device: out-of-range targets would otherwise pick no class and give a
    wrong loss silently. Ignored values outside the range are zeroed first, then the range costs
    one small reduction and one host read (``_raw.min_max``, with the valid range so that a
    captured step checks it again on replay). Only on error is the whole target read back, to
    name the first bad value in order, as PyTorch does. On a device that reads asynchronously
    (``_raw.defers_checks``: OpenCL) the read is not waited for: the error comes at the device's
    next read or synchronisation (the fused loss kernel gives NaN for a bad target meanwhile,
    the composed forms pick no class; neither reads out of bounds).

    True when every target is known to be a class, none ignored (eager only: a captured step's
    replay may see other targets), else False.
    """
    if not target.numel():
        return False
    # a device that reads asynchronously: the check is enqueued and reports at the next read
    # of the device (waiting for it would stall the host on the forward pass every step)
    if _raw.defers_checks(target):
        t = target.detach()
        late = t if 0 <= ignore_index < c else t * ne(t, ignore_index)
        _raw.min_max_later(late, functools.partial(_late_class_check, t, c, ignore_index))
        return False
    if not 0 <= ignore_index < c and _raw.CHECK_HOOK is None:
        # eager: targets all in range (no ignored entry among them) pass at once (read through
        # target itself: an alias tensor costs more than the cpu's read); a captured step keeps
        # the one check below, which its replay repeats
        lo, hi = _raw.min_max(target)
        if lo >= 0 and hi < c:
            return True
    t = target.detach()
    if not 0 <= ignore_index < c:
        t = t * ne(t, ignore_index)  # ignored entries -> class 0, which is in range
    lo, hi = _raw.min_max(t, (0, c - 1), late=True)
    if lo >= 0 and hi < c:
        return False
    bad = _first_bad_target(target, c, ignore_index)
    if bad is not None:
        raise IndexError(f"Target {bad} is out of bounds.")
    return False


def _first_bad_target(target: Tensor, c: int, ignore_index: int) -> int | None:
    """The first target in memory order that is neither a class nor ignored (PyTorch names it),
    read from the device; None if there is none."""
    h = target.detach()._host()
    bad = h[(h != ignore_index) & ((h < 0) | (h >= c))]
    return int(bad.reshape(-1)[0]) if bad.size else None


def _late_class_check(target: Tensor, c: int, ignore_index: int, lo: int, hi: int) -> None:
    """The deferred form of :func:`check_class_targets`' range check: ``lo``/``hi`` bound the
    targets with ignored entries as class 0. On error, names the first bad target in order as
    PyTorch does (the target read now: if it was changed since, the bound that failed)."""
    if lo >= 0 and hi < c:
        return
    bad = _first_bad_target(target, c, ignore_index)
    raise IndexError(f"Target {(lo if lo < 0 else hi) if bad is None else bad} is out of bounds.")


def cross_entropy_indices(x: Tensor, target: Tensor, ignore_index: int, reduction: str,
                          weight: Tensor | None = None) -> Tensor:
    """Cross entropy of (N, C) logits against int64 class indices (N,), as one recorded node.
    Class ``weight`` only where :func:`ce_weight_fast` says so."""
    check_same_device(x, target, "cross_entropy")
    all_valid = check_class_targets(target, x.shape[1], ignore_index)
    return call(_CrossEntropy, x, target, ignore_index, reduction, weight, all_valid)


def ce_weight_fast(x: Tensor, weight: Tensor) -> bool:
    """Whether :func:`cross_entropy_indices` takes class weights ``weight`` for logits ``x``: the
    backend's fused primitives exist and ``weight`` is a (C,) tensor of ``x``'s dtype and device
    that needs no gradient (PyTorch has none for it); otherwise the caller composes."""
    return (_ce_prims(x) and weight._v.dtype is x._v.dtype and not weight.requires_grad
            and tuple(weight._v.shape) == (x._v.shape[1],)
            and weight._storage.device == x._storage.device)


def check_unit_interval(x: Tensor, what: str) -> None:
    # one reduction pair and one host read; NaN fails both comparisons, as in PyTorch
    if x.numel():
        lo, hi = _raw.min_max(x)
        if not (lo >= 0 and hi <= 1):
            raise RuntimeError(f"all elements of {what} should be between 0 and 1")


# PyTorch's epsilon of the BCE gradient (a float32 1e-12: 1 / eps is 1.000000004e12, not 1e12)
_BCE_EPS = float(np.float32(1e-12))


class _BinaryCrossEntropy(Function):
    """Unreduced ``-(t log x + (1 - t) log(1 - x))``, logs clamped at -100, with PyTorch's
    derivative ``(x - t) / max((1 - x) x, eps)``: finite where ``x`` is exactly 0 or 1, where the
    derivative of the clamped log would be ``0 * inf = nan``."""

    _backward_name = "BinaryCrossEntropyBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, t: Tensor) -> Tensor:
        ctx.save_for_backward(x, t)
        lx = clamp(log(x), -100.0, None)
        # log1p(-x), as PyTorch: log(1 - x) rounds 1 - x to 1 for a tiny x (a loss of 0, not x)
        l1x = clamp(log1p(-x), -100.0, None)
        # this order of the terms gives PyTorch's signed zeros (+0.0 for x == t == 0)
        return (t - 1.0) * l1x - t * lx

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, t = ctx.saved_tensors
        gx = g * (x - t) / clamp((1.0 - x) * x, _BCE_EPS, None)
        # d/dt = log(1 - x) - log(x) (infinite at 0 and 1, as PyTorch's -logit(x))
        gt = g * (log1p(-x) - log(x))
        return gx, gt


def binary_cross_entropy(x: Tensor, t: Tensor) -> Tensor:
    """The unreduced binary cross entropy of probabilities ``x`` against targets ``t``."""
    return call(_BinaryCrossEntropy, x, t)


def value_range(t: Tensor) -> tuple[Any, Any]:
    """The smallest and largest element of a non-empty ``t`` as Python numbers (one host read)."""
    return _raw.min_max(t)


class _CtcInfiniteNan(Function):
    """``loss`` (N,) as it is, with PyTorch's gradient for an impossible alignment (an infinite
    loss, ``zero_infinity`` off): NaN for every log-probability of that sequence within its
    input length (whatever the incoming gradient), nothing through the loss itself."""

    _backward_name = "CtcLossBackward0"

    @staticmethod
    def forward(ctx: Any, lp: Tensor, loss: Tensor, within: Tensor) -> Tensor:
        inf = _raw.unary("isinf", loss, _dtype.bool)
        ctx.save_for_backward(inf, within)
        ctx.lp_shape = tuple(lp._v.shape)
        out = _raw.new_like(loss)
        _raw.copy_into(out, loss)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        inf, within = ctx.saved_tensors
        mask = within.logical_and(unsqueeze(unsqueeze(inf, 0), 2))  # (T, N, 1)
        glp = where(mask, float("nan"), 0.0).to(g.dtype).expand(ctx.lp_shape)
        return glp, where(inf, 0.0, g), None


def ctc_infinite_nan(lp: Tensor, loss: Tensor, within: Tensor) -> Tensor:
    """See :class:`_CtcInfiniteNan`; ``within`` (T, N, 1) bool: ``t < input_length``."""
    return call(_CtcInfiniteNan, lp, loss, within)
