"""Window gathers: the one mechanism behind conv (im2col), pooling, ``F.pad``, ``F.interpolate``,
``F.unfold`` and ``F.fold``.

A :class:`Plan` describes, for an input of ``C`` channels and ``P`` spatial positions, ``L`` output
positions each reading ``K`` input positions (``-1``: outside the input, reads a fill value). It
precomputes, once per geometry, two flat int64 index tables and keeps them on each device:

- ``idx`` (``L*C*K``): for the forward gather ``cols[n, l, c*K + k] = x[n, c, pix[l, k]]``, reading
  from the input flattened per sample with one extra fill column (the sentinel ``C*P``);
- ``inv`` (``C*P*M``): its adjoint as a gather too: for every input position the (at most ``M``)
  column positions that read it, padded with a sentinel pointing at an extra zero column. So the
  backward (``fold``, a sum of overlapping windows) is one gather plus a sum over ``M``, with no
  scatter-add (slow with ``np.add.at``, and it would need atomics on devices).

:class:`_Unfold` and :class:`_Fold` are each other's derivative, so higher-order gradients work.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np

from ... import _creation, _raw
from .._common import call
from ..._tensor import Tensor
from ...autograd.function import Function

__all__ = ["Plan", "plan", "unfold_cols", "fold_cols", "unfold_raw", "combine", "conv_pix", "out_size",
           "window_plan"]

_CACHE: OrderedDict[tuple, Plan] = OrderedDict()
_CACHE_SIZE = 512


class Plan:
    """Index tables of one window geometry (see the module docstring)."""

    def __init__(self, C: int, in_spatial: tuple[int, ...], out_spatial: tuple[int, ...],
                 pix: np.ndarray) -> None:
        self.C = C
        self.in_spatial = tuple(in_spatial)
        self.out_spatial = tuple(out_spatial)
        P = math.prod(in_spatial)
        L, K = pix.shape
        self.P, self.L, self.K = P, L, K
        pix = pix.astype(np.int64)
        self.pix = pix
        ch = np.arange(C, dtype=np.int64)[None, :, None] * P
        full = np.where(pix[:, None, :] >= 0, ch + pix[:, None, :], C * P)  # (L, C, K)
        idx = np.ascontiguousarray(full.reshape(-1))
        valid = idx < C * P
        pos = np.nonzero(valid)[0]
        tgt = idx[valid]
        order = np.argsort(tgt, kind="stable")
        tgt, pos = tgt[order], pos[order]
        counts = np.bincount(tgt, minlength=C * P)
        M = int(max(counts.max() if counts.size else 0, 1))
        starts = np.cumsum(counts) - counts
        rank = np.arange(tgt.size) - starts[tgt]
        inv = np.full((C * P, M), L * C * K, np.int64)
        inv[tgt, rank] = pos
        self.M = M
        self._host = {"idx": idx, "inv": np.ascontiguousarray(inv.reshape(-1))}
        self._host_float: dict[str, np.ndarray] = {}
        self._dev: dict[tuple, Tensor] = {}

    def table(self, name: str, like: Tensor) -> Tensor:
        """The index table ``name`` on ``like``'s device (uploaded once)."""
        key = (name, str(like.device))
        t = self._dev.get(key)
        if t is None:
            t = _creation.from_host(self._host[name], device=like.device)
            self._dev[key] = t
        return t

    def table_pix(self, like: Tensor) -> Tensor:
        """The (L, K) window positions (``-1`` outside) on ``like``'s device."""
        key = ("pix", str(like.device))
        t = self._dev.get(key)
        if t is None:
            t = _creation.from_host(np.ascontiguousarray(self.pix), device=like.device)
            self._dev[key] = t
        return t

    def table_first_inside(self, like: Tensor) -> Tensor:
        """The (L,) int64 index of each window's first position inside the input."""
        key = ("first_inside", str(like.device))
        t = self._dev.get(key)
        if t is None:
            first = np.argmax(np.asarray(self.pix) >= 0, axis=1).astype(np.int64)
            t = _creation.from_host(np.ascontiguousarray(first), device=like.device)
            self._dev[key] = t
        return t

    def float_table(self, name: str, build: Any, like: Tensor) -> Tensor:
        """A float table (divisors, interpolation weights) in ``like``'s dtype and device."""
        key = (name, str(like.device), like.dtype.name)
        t = self._dev.get(key)
        if t is None:
            if name not in self._host_float:
                self._host_float[name] = build()
            arr = np.ascontiguousarray(self._host_float[name].astype(like.dtype.numpy))
            t = _creation.from_host(arr, device=like.device)
            self._dev[key] = t
        return t


def plan(key: tuple, build: Any) -> Plan:
    """The cached plan for ``key`` (``build()`` makes it on a miss)."""
    p = _CACHE.get(key)
    if p is None:
        p = build()
        _CACHE[key] = p
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return p


def _view(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A raw reshape of a contiguous tensor."""
    return _raw.view(t, shape, _raw.strides_for(shape))


def _padded_rows(x: Tensor, row: int, fill: Any) -> Tensor:
    """``x`` (N, ...) with ``prod(...) == row`` as a contiguous (N, row + 1) tensor whose last
    column is ``fill``."""
    N = x._v.shape[0]
    out = _raw.new_like(x, (N, row + 1))
    inner = _raw.strides_for(tuple(x._v.shape[1:]))
    _raw.copy_into(_raw.view(out, tuple(x._v.shape), (row + 1,) + inner), x)
    _raw.fill(_raw.view(out, (N,), (row + 1,), row), fill)
    return out


def _expand_rows(idx: Tensor, N: int) -> Tensor:
    return _raw.expand_view(idx, (N, idx._v.shape[0]))


def unfold_raw(x: Tensor, p: Plan, fill: Any) -> Tensor:
    N = x._v.shape[0]
    xf = _padded_rows(x, p.C * p.P, fill)
    out = _raw.gather(xf, 1, _expand_rows(p.table("idx", x), N))
    return _view(out, (N, p.L, p.C * p.K))


def _fold_raw(cols: Tensor, p: Plan) -> Tensor:
    N = cols._v.shape[0]
    gf = _padded_rows(cols, p.L * p.C * p.K, 0)
    g = _raw.gather(gf, 1, _expand_rows(p.table("inv", cols), N))
    if p.M > 1:
        g = _raw.reduce("sum", _view(g, (N, p.C * p.P, p.M)), (2,), False)
    return _view(g, (N, p.C) + p.in_spatial)


class _Unfold(Function):
    """``x`` (N, C, *in_spatial) -> windows (N, L, C*K)."""

    _backward_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, p: Plan, fill: Any) -> Tensor:
        ctx.plan = p
        return unfold_raw(x, p, fill)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return call(_Fold, g, ctx.plan), None, None


class _Fold(Function):
    """Windows (N, L, C*K) -> (N, C, *in_spatial), overlapping windows summed."""

    _backward_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx: Any, cols: Tensor, p: Plan) -> Tensor:
        ctx.plan = p
        return _fold_raw(cols, p)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return call(_Unfold, g, ctx.plan, 0.0), None


def unfold_cols(x: Tensor, p: Plan, fill: Any = 0.0) -> Tensor:
    """Differentiable ``(N, C, *spatial) -> (N, L, C*K)``; positions outside read ``fill``."""
    dt = x._v.dtype
    if dt.is_floating_point:
        fill = float(fill)
    elif dt._kind == 0:
        fill = fill > 0  # bool: -inf reads False (never wins a max), +inf True
    elif not math.isfinite(fill):
        # an infinite fill means "never wins a max/min": the dtype's extreme, not 0
        info = np.iinfo(dt.numpy)
        fill = int(info.min if fill < 0 else info.max)
    else:
        fill = int(fill)
    return call(_Unfold, x, p, fill)


def fold_cols(cols: Tensor, p: Plan) -> Tensor:
    """Differentiable ``(N, L, C*K) -> (N, C, *spatial)`` (sums overlapping windows)."""
    return call(_Fold, cols, p)


# ------------------------------------------------------------------ geometries
def out_size(n: int, k: int, s: int, pad_lo: int, pad_hi: int, d: int, ceil_mode: bool = False
             ) -> int:
    """Output length of a window sweep (PyTorch's formula, incl. ``ceil_mode``)."""
    eff = d * (k - 1) + 1
    span = n + pad_lo + pad_hi - eff
    if ceil_mode:
        o = -(-span // s) + 1
        if (o - 1) * s >= n + pad_lo:  # the last window must start inside input or left padding
            o -= 1
        return o
    return span // s + 1


def combine(per_dim: list[np.ndarray], in_sp: tuple[int, ...],
            weights: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The (L, K) flat-position table of an n-d window sweep from each dimension's (o_i, k_i)
    table of positions along that dimension (``-1`` or out of range: outside): output positions
    and window taps both in row-major order. With ``weights`` (one (o_i, k_i) table per
    dimension) also their (L, K) products."""
    nd = len(per_dim)
    pix: np.ndarray = np.zeros((1,) * (2 * nd), np.int64)
    valid: np.ndarray = np.ones((1,) * (2 * nd), bool)
    w: np.ndarray | None = np.ones((1,) * (2 * nd)) if weights is not None else None
    for i, r in enumerate(per_dim):
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = r.shape
        ri = r.reshape(shape)
        pix = pix * in_sp[i] + ri
        valid = valid & (ri >= 0) & (ri < in_sp[i])
        if weights is not None and w is not None:
            w = w * weights[i].reshape(shape)
    L = math.prod(r.shape[0] for r in per_dim)
    K = math.prod(r.shape[1] for r in per_dim)
    pix = np.where(valid, pix, -1).reshape(L, K)
    return pix, (None if w is None else np.broadcast_to(w, valid.shape).reshape(L, K))


def conv_pix(in_sp: tuple[int, ...], k: tuple[int, ...], s: tuple[int, ...],
             pad_lo: tuple[int, ...], d: tuple[int, ...], out_sp: tuple[int, ...]) -> np.ndarray:
    """(L, K) flat input positions of every window (``-1`` outside), in any number of dims."""
    per_dim = [(np.arange(out_sp[i]) * s[i] - pad_lo[i])[:, None] + (np.arange(k[i]) * d[i])[None, :]
               for i in range(len(in_sp))]
    return combine(per_dim, in_sp)[0]


def window_plan(C: int, in_sp: tuple[int, ...], k: tuple[int, ...], s: tuple[int, ...],
                pad_lo: tuple[int, ...], pad_hi: tuple[int, ...], d: tuple[int, ...],
                ceil_mode: bool = False) -> Plan:
    """The cached plan of a conv/pool window sweep."""
    key = ("win", C, in_sp, k, s, pad_lo, pad_hi, d, ceil_mode)

    def build() -> Plan:
        out_sp = tuple(out_size(in_sp[i], k[i], s[i], pad_lo[i], pad_hi[i], d[i], ceil_mode)
                       for i in range(len(in_sp)))
        return Plan(C, in_sp, out_sp, conv_pix(in_sp, k, s, pad_lo, d, out_sp))

    return plan(key, build)
