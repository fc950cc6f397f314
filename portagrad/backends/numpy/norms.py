"""numpy fast paths for softmax, layer/batch normalisation and cross-entropy (optional methods).

Mixed into :class:`~portagrad.backends.numpy.backend.NumpyBackend`. The contract (shapes, which
outputs may be ``None``, what the core guarantees) is in :mod:`portagrad.backends.interface`,
section "normalisation fast paths". Each method is a handful of whole-array numpy calls (no
Python loop over rows), with the row or channel statistics kept as small keepdim arrays and, where
the dtype allows, the output computed in place; bfloat16 and float16 compute in float32 and round
once (as the other primitives).
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ... import _dtype
from ..interface import View
from . import jit
from .arrays import BFLOAT16, nd, round_into

__all__ = ["NormsMixin"]

# IEEE results (inf, nan) are what tensors compute, as in PyTorch: numpy's floating-point warnings
# from this module are noise (as in the backend module)
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


#: the 16-bit floats, computed in float32 and rounded once into their outputs
_HALF16 = (BFLOAT16, _dtype.float16)


def _a(v: View | None) -> np.ndarray | None:
    """The array of ``v`` in its computation dtype (16-bit floats read as float32, as PyTorch's
    kernels compute them), or ``None``."""
    if v is None:
        return None
    a = nd(v)
    return a.astype(np.float32) if v.dtype in _HALF16 else a


def _put(v: View | None, value: Any) -> None:
    """Write ``value`` into ``v`` (rounding to its dtype), unless ``v`` is ``None``."""
    if v is not None:
        round_into(nd(v), value)


def _softmax(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    z = x - np.max(x, axis, keepdims=True)
    e = np.exp(z)
    s = np.sum(e, axis, keepdims=True)
    if log:
        return z - np.log(s)
    return e / s


class NormsMixin:
    """softmax / softmax_backward / layer_norm(_backward) / batch_norm(_backward) /
    cross_entropy(_backward) on numpy arrays."""

    # ------------------------------------------------------------- softmax
    def softmax(self, x: View, axis: int, out: View, log: bool) -> None:
        """(Log-)softmax of ``x`` along ``axis`` into ``out`` (max-subtracted)."""
        if 0 in x.shape:
            return
        if not log and _bf16_rows(axis, x, out):
            # with numba: each row widened, computed and rounded in the cache (one pass)
            jit.bf16_softmax_rows(nd(x), nd(out))
            return
        xa = _a(x)
        assert xa is not None
        if out.dtype in _HALF16:
            _put(out, _softmax(xa, axis, log))
            return
        o = nd(out)  # computed in place: four passes over the data
        if not log and axis == xa.ndim - 1 and _jit_rows(xa, o) and xa.dtype == np.float32:
            # with numba: one pass per row (in the cache)
            jit.softmax_rows32(xa.reshape(-1, xa.shape[-1]), o.reshape(-1, xa.shape[-1]))
            return
        # a row holding NaN or +inf, or only -inf, gives NaN through inf - inf, as in PyTorch
        np.subtract(xa, np.max(xa, axis, keepdims=True), out=o)
        if log:
            s = np.sum(np.exp(o), axis, keepdims=True)
            np.subtract(o, np.log(s, out=s), out=o)
        else:
            np.exp(o, out=o)
            np.divide(o, np.sum(o, axis, keepdims=True), out=o)

    def softmax_backward(self, g: View, y: View, axis: int, out: View, log: bool) -> None:
        """Gradient of (log-)softmax from its output ``y`` and the incoming gradient ``g``."""
        if 0 in y.shape:
            return
        if not log and _bf16_rows(axis, y, out, g):
            jit.bf16_softmax_backward_rows(nd(g), nd(y), nd(out))
            return
        ga, ya = _a(g), _a(y)
        assert ga is not None and ya is not None
        if out.dtype in _HALF16:
            if log:
                r = ga - np.exp(ya) * np.sum(ga, axis, keepdims=True)
            else:
                r = ya * (ga - np.sum(ga * ya, axis, keepdims=True))
            _put(out, r)
            return
        o = nd(out)
        if log:
            np.exp(ya, out=o)
            np.multiply(o, np.sum(ga, axis, keepdims=True), out=o)
            np.subtract(ga, o, out=o)
        elif axis == ya.ndim - 1 and _jit_rows(ya, o, ga):
            n = ya.shape[-1]
            jit.softmax_backward_rows(ga.reshape(-1, n), ya.reshape(-1, n), o.reshape(-1, n))
        else:
            np.multiply(ga, ya, out=o)
            np.subtract(ga, np.sum(o, axis, keepdims=True), out=o)
            np.multiply(o, ya, out=o)

    # ---------------------------------------------------------- layer norm
    @property
    def layer_norm_half_dtypes(self) -> tuple[str, ...]:
        # bfloat16 rows with numba: widened, normalised and rounded a row at a time (the float32
        # copies of x, weight and bias and the rounding cost three times the norm on a decode
        # step's rows)
        return ("bfloat16",) if jit.available() else ()

    def layer_norm(self, x: View, weight: View | None, bias: View | None, eps: float, out: View,
                   mean: View | None, rstd: View | None) -> None:
        """Normalise each row of the (M, N) ``x`` into ``out``; row statistics into ``mean`` and
        ``rstd`` (M,) when given. A bfloat16 ``x`` (``layer_norm_half_dtypes``, no statistics)
        is computed in float32 and rounded once."""
        if x.dtype is BFLOAT16:
            if 0 not in x.shape:
                jit.bf16_layer_norm_rows(nd(x), _nd_or_none(weight), _nd_or_none(bias), eps,
                                         nd(out))
            return
        xa = _a(x)
        assert xa is not None
        M, N = xa.shape
        if M == 0:
            return
        if N and _in_place(out, xa):
            _layer_norm_in_place(xa, nd(out), weight, bias, eps, mean, rstd)
            return
        mu = np.mean(xa, 1, keepdims=True) if N else np.zeros((M, 1), xa.dtype)
        xc = xa - mu
        var = np.mean(xc * xc, 1, keepdims=True) if N else np.zeros((M, 1), xa.dtype)
        r = 1 / np.sqrt(var + np.asarray(eps, xa.dtype))
        y = xc * r
        wa, ba = _a(weight), _a(bias)
        if wa is not None:
            y *= wa
        if ba is not None:
            y += ba
        _put(out, y)
        _put(mean, mu[:, 0])
        _put(rstd, r[:, 0])

    def layer_norm_backward(self, g: View, x: View, weight: View | None, mean: View, rstd: View,
                            grad_x: View | None, grad_weight: View | None,
                            grad_bias: View | None) -> None:
        """Gradients of :meth:`layer_norm` (each output that is not ``None``)."""
        ga, xa, wa, mu, r = _a(g), _a(x), _a(weight), _a(mean), _a(rstd)
        assert ga is not None and xa is not None and mu is not None and r is not None
        M, N = xa.shape
        if grad_x is not None and M and N and _in_place(grad_x, xa, ga):
            _layer_norm_backward_in_place(ga, xa, wa, mu, r, nd(grad_x), grad_weight, grad_bias)
            return
        xhat = (xa - mu[:, None]) * r[:, None]
        if grad_x is not None and M and N:
            gw = ga * wa if wa is not None else ga
            c1 = np.mean(gw, 1, keepdims=True)
            c2 = np.mean(gw * xhat, 1, keepdims=True)
            _put(grad_x, (gw - c1 - xhat * c2) * r[:, None])
        if grad_weight is not None:
            _put(grad_weight, np.sum(ga * xhat, 0))
        if grad_bias is not None:
            _put(grad_bias, np.sum(ga, 0))

    # ---------------------------------------------------------- batch norm
    def batch_norm(self, x: View, weight: View | None, bias: View | None,
                   running_mean: View | None, running_var: View | None, momentum: float,
                   eps: float, out: View, mean: View, rstd: View) -> None:
        """Training-mode batch normalisation of the (N, C, L) ``x`` over (N, L) per channel."""
        xa = _a(x)
        assert xa is not None
        n = xa.shape[0] * xa.shape[2]
        if _in_place(out, xa):
            _batch_norm_in_place(self, xa, nd(out), weight, bias, running_mean, running_var,
                                 momentum, eps, mean, rstd)
            return
        mu = np.mean(xa, (0, 2), keepdims=True)
        xc = xa - mu
        var = np.mean(xc * xc, (0, 2), keepdims=True)
        r = 1 / np.sqrt(var + np.asarray(eps, xa.dtype))
        y = xc * r
        wa, ba = _a(weight), _a(bias)
        if wa is not None:
            y *= wa[None, :, None]
        if ba is not None:
            y += ba[None, :, None]
        _put(out, y)
        _put(mean, mu.reshape(-1))
        _put(rstd, r.reshape(-1))
        for rv, stat in ((running_mean, mu), (running_var, var * (n / max(n - 1, 1)))):
            ra = _a(rv)
            if ra is not None:
                _put(rv, ra * (1 - momentum) + stat.reshape(-1) * momentum)

    def batch_norm_backward(self, g: View, x: View, weight: View | None, mean: View, rstd: View,
                            grad_x: View | None, grad_weight: View | None,
                            grad_bias: View | None) -> None:
        """Gradients of training-mode :meth:`batch_norm` (each output that is not ``None``)."""
        ga, xa, wa, mu, r = _a(g), _a(x), _a(weight), _a(mean), _a(rstd)
        assert ga is not None and xa is not None and mu is not None and r is not None
        n = xa.shape[0] * xa.shape[2]
        if grad_x is not None and n and _in_place(grad_x, xa, ga):
            _batch_norm_backward_in_place(ga, xa, wa, mu, r, nd(grad_x), grad_weight, grad_bias)
            return
        xhat = (xa - mu[None, :, None]) * r[None, :, None]
        sg = np.sum(ga, (0, 2))
        sgx = np.sum(ga * xhat, (0, 2))
        if grad_x is not None and n:
            k = r if wa is None else r * wa
            gx = (ga - (sg / n)[None, :, None] - xhat * (sgx / n)[None, :, None]) * k[None, :, None]
            _put(grad_x, gx)
        _put(grad_weight, sgx)
        _put(grad_bias, sg)

    # ------------------------------------------------------- cross entropy
    def cross_entropy(self, x: View, target: View, weight: View | None, ignore_index: int,
                      loss: View, lse: View, row_weight: View) -> None:
        """Per-row cross entropy of the (N, C) logits ``x`` against int64 class indices."""
        xa, wa = _a(x), _a(weight)
        assert xa is not None
        t = nd(target)
        n, c = xa.shape
        if n == 0:
            return
        if c and xa.dtype.kind == "f" and _jit_rows(xa, wa, *(nd(v) for v in (
                loss, lse, row_weight))) and t.dtype == np.int64 and t.flags.c_contiguous:
            # with numba: one pass per row, no temporaries (a target that is not a class gives
            # NaN there; the core raises for it before any value is read)
            jit.cross_entropy_rows(xa, t, wa, ignore_index, nd(loss), nd(lse), nd(row_weight))
            return
        # (N, C) is small in a training step (a batch of class scores): the cost is numpy calls,
        # so the row sums run on a temporary used in place, and the usual case (no class
        # weights, no ignored row) skips the selects; the values are those of the general path
        m = np.maximum.reduce(xa, axis=1)
        z = np.subtract(xa, m[:, None])
        np.exp(z, out=z)
        s = np.add.reduce(z, axis=1)
        np.log(s, out=s)
        s += m
        valid = t != ignore_index
        if wa is None and valid.all():
            picked = xa[_rows(n), t]
            _put(lse, s)
            _put(row_weight, 1)
            _put(loss, np.subtract(s, picked, out=picked))
            return
        ti = np.where(valid, t, 0)
        picked = xa[_rows(n), ti]
        rw = np.where(valid, 1 if wa is None else wa[ti], 0).astype(xa.dtype)
        _put(lse, s)
        _put(row_weight, rw)
        _put(loss, np.where(valid, rw * (s - picked), 0))

    def cross_entropy_backward(self, x: View, target: View, lse: View, coef: View,
                               grad_x: View) -> None:
        """``grad_x[i, j] = coef[i] * (softmax(x)[i, j] - [j == target[i]])``."""
        xa, s, k = _a(x), _a(lse), _a(coef)
        assert xa is not None and s is not None and k is not None
        t = nd(target)
        n, c = xa.shape
        if n == 0 or c == 0:
            return
        o = nd(grad_x)
        if xa.dtype.kind == "f" and _jit_rows(xa, o, s, k) and t.dtype == np.int64 and \
                t.flags.c_contiguous:
            jit.cross_entropy_backward_rows(xa, t, s, k, o)
            return
        p = o if o.dtype == xa.dtype and o.flags.c_contiguous else np.empty_like(xa)
        np.subtract(xa, s[:, None], out=p)
        np.exp(p, out=p)
        # rows whose target is a class (not an ignored one): one unsigned comparison for both
        # bounds (negative values wrap above every class count)
        ok = t.view(np.uint64) < c
        if ok.all():
            p[_rows(n), t] -= 1
        else:
            rows = np.flatnonzero(ok)
            p[rows, t[rows]] -= 1
        p *= k[:, None]
        if p is not o:
            _put(grad_x, p)


_ROWS: dict[int, np.ndarray] = {}


def _rows(n: int) -> np.ndarray:
    """``arange(n)`` (int64), kept per length: the row index of a gather by class."""
    r = _ROWS.get(n)
    if r is None:
        if len(_ROWS) > 64:
            _ROWS.clear()
        r = _ROWS[n] = np.arange(n)
    return r


def _in_place(out: View, xa: np.ndarray, *others: np.ndarray) -> bool:
    """Whether a normalisation can compute straight into ``out``: float32/float64 (no rounding
    on the way out, accumulation in the dtype as the whole-array path does), the output a
    contiguous array of ``xa``'s dtype, and the other inputs of that dtype too; the output
    overlaps none of them (it is overwritten before they are all read)."""
    if out.dtype in _HALF16 or xa.dtype.kind != "f" or xa.dtype.itemsize < 4:
        return False
    o = nd(out)
    ins = (xa,) + others
    return (o.dtype == xa.dtype and o.flags.c_contiguous and
            all(a.dtype == xa.dtype and not np.shares_memory(o, a) for a in ins))


def _sum_nl(a: np.ndarray) -> np.ndarray:
    """Per-channel sum of an (N, C, L) array: each contiguous row of L as a dot product with
    ones (BLAS; a ufunc reduction pays a per-row cost at every (n, c)), then over N."""
    return np.vecdot(a, np.ones(a.shape[2], a.dtype)).sum(0)


def _batch_norm_in_place(be: Any, xa: np.ndarray, o: np.ndarray, weight: View | None,
                         bias: View | None, running_mean: View | None,
                         running_var: View | None, momentum: float, eps: float,
                         mean: View, rstd: View) -> None:
    """:meth:`NormsMixin.batch_norm` for float32/float64, in five passes over the data and no
    full-size temporary: the centred input is built in ``out`` and scaled there."""
    N, C, L = xa.shape
    n = N * L
    mu = _sum_nl(xa) / xa.dtype.type(n) if n else np.zeros(C, xa.dtype)
    np.subtract(xa, mu[None, :, None], out=o)
    # the squared deviations summed per (sample, channel) row, then over the batch
    var = np.vecdot(o, o).sum(0) / xa.dtype.type(n) if n else np.zeros(C, xa.dtype)
    r = 1 / np.sqrt(var + np.asarray(eps, xa.dtype))
    wa, ba = _a(weight), _a(bias)
    np.multiply(o, (r if wa is None else r * wa)[None, :, None], out=o)
    if ba is not None:
        np.add(o, ba[None, :, None], out=o)
    _put(mean, mu)
    _put(rstd, r)
    for rv, stat in ((running_mean, mu), (running_var, var * (n / max(n - 1, 1)))):
        ra = _a(rv)
        if ra is not None:
            _put(rv, ra * (1 - momentum) + stat * momentum)


def _batch_norm_backward_in_place(ga: np.ndarray, xa: np.ndarray, wa: np.ndarray | None,
                                  mu: np.ndarray, r: np.ndarray, o: np.ndarray,
                                  grad_weight: View | None, grad_bias: View | None) -> None:
    """:meth:`NormsMixin.batch_norm_backward` for float32/float64 with ``grad_x``, computed in
    ``grad_x``'s memory: ``grad_x = k * (g - sum(g)/n - (x - mu) * r**2 * sum(g * (x - mu))/n)``
    with ``k = r * weight``."""
    N, C, L = xa.shape
    if L and C and _jit_rows(xa, ga, wa, mu, r, o):
        # with numba: the sums and the gradient in two passes (the sums reassociated)
        sg, sgx = np.empty(C, xa.dtype), np.empty(C, xa.dtype)
        jit.batch_norm_backward_planes(ga, xa, wa, mu, r, o, sg, sgx)
        _put(grad_weight, sgx)
        _put(grad_bias, sg)
        return
    n = xa.dtype.type(N * L)
    np.subtract(xa, mu[None, :, None], out=o)  # x - mu
    sg = _sum_nl(ga)
    sgc = np.vecdot(ga, o).sum(0)  # sum(g * (x - mu))
    sgx = sgc * r  # sum(g * xhat)
    k = r if wa is None else r * wa
    # four in-place passes, no temporary of the input's size
    np.multiply(o, (-(sgx * r) / n)[None, :, None], out=o)
    np.add(o, ga, out=o)
    np.subtract(o, (sg / n)[None, :, None], out=o)
    np.multiply(o, k[None, :, None], out=o)
    _put(grad_weight, sgx)
    _put(grad_bias, sg)


def _nd_or_none(v: View | None) -> np.ndarray | None:
    return None if v is None else nd(v)


def _bf16_rows(axis: int, *views: View) -> bool:
    """Whether numba's bfloat16 row kernels take a softmax (forward or backward) of ``views``
    along ``axis``: numba there, the last axis, every view bfloat16 and C-contiguous."""
    if not jit.available() or any(v.dtype is not BFLOAT16 for v in views) \
            or axis != len(views[0].shape) - 1:
        return False
    return all(nd(v).flags.c_contiguous for v in views)


def _jit_rows(xa: np.ndarray, *others: np.ndarray | None) -> bool:
    """Whether layer norm's numba kernels take ``xa`` and the other operands (``None``: absent):
    numba there, every array C-contiguous and of ``xa``'s dtype."""
    return jit.available() and all(
        a is None or (a.dtype == xa.dtype and a.flags.c_contiguous) for a in (xa,) + others)


def _layer_norm_in_place(xa: np.ndarray, o: np.ndarray, weight: View | None, bias: View | None,
                         eps: float, mean: View | None, rstd: View | None) -> None:
    """:meth:`NormsMixin.layer_norm` for float32/float64: the centred rows built in ``out`` and
    scaled there (no full-size temporary); with numba one pass per row (``jit.layer_norm_rows``)."""
    wa, ba = _a(weight), _a(bias)
    ma, ra = _nd_or_none(mean), _nd_or_none(rstd)  # written: their own arrays, never a copy
    if _jit_rows(xa, o, wa, ba, ma, ra):
        jit.layer_norm_rows(xa, wa, ba, eps, o, ma, ra)
        return
    N = xa.shape[1]
    mu = np.vecdot(xa, np.ones(N, xa.dtype)) / xa.dtype.type(N)
    np.subtract(xa, mu[:, None], out=o)
    var = np.vecdot(o, o) / xa.dtype.type(N)
    r = 1 / np.sqrt(var + np.asarray(eps, xa.dtype))
    np.multiply(o, r[:, None], out=o)
    if wa is not None:
        np.multiply(o, wa, out=o)
    if ba is not None:
        np.add(o, ba, out=o)
    _put(mean, mu)
    _put(rstd, r)


def _layer_norm_backward_in_place(ga: np.ndarray, xa: np.ndarray, wa: np.ndarray | None,
                                  mu: np.ndarray, r: np.ndarray, o: np.ndarray,
                                  grad_weight: View | None, grad_bias: View | None) -> None:
    """:meth:`NormsMixin.layer_norm_backward` for float32/float64 with ``grad_x``, computed in
    ``grad_x``'s memory: ``grad_x = r * (gw - mean(gw) - xhat * mean(gw * xhat))`` with
    ``gw = g * weight``; with numba one pass per row (``jit.layer_norm_backward_rows``)."""
    gwa, gba = _nd_or_none(grad_weight), _nd_or_none(grad_bias)
    if _jit_rows(xa, o, ga, wa, mu, r, gwa, gba):
        jit.layer_norm_backward_rows(ga, xa, wa, mu, r, o, gwa, gba)
        return
    N = xa.shape[1]
    n = xa.dtype.type(N)
    np.subtract(xa, mu[:, None], out=o)
    np.multiply(o, r[:, None], out=o)  # xhat
    if grad_weight is not None:
        _put(grad_weight, np.einsum("mn,mn->n", ga, o))
    if grad_bias is not None:
        _put(grad_bias, np.sum(ga, 0))
    gw = ga * wa if wa is not None else ga
    c1 = np.vecdot(gw, np.ones(N, xa.dtype)) / n
    c2 = np.vecdot(gw, o) / n
    # four in-place passes: o = xhat -> r * (gw - c1 - xhat * c2)
    np.multiply(o, -c2[:, None], out=o)
    np.add(o, gw, out=o)
    np.subtract(o, c1[:, None], out=o)
    np.multiply(o, r[:, None], out=o)
