"""numpy fused scaled dot-product attention (the optional ``attention``/``attention_backward``).

Mixed into :class:`~portagrad.backends.numpy.backend.NumpyBackend`; the contract is in
:mod:`portagrad.backends.interface` ("fused scaled dot-product attention"). Blocked over query
rows: each block of ``_BLOCK`` rows computes its (block, S) scores with one batched BLAS matmul,
so the extra memory at any moment is block x S per batch entry, never the whole L x S matrix;
the backward recomputes each block's probabilities from ``q``, ``k`` and the saved log-sum-exps
(flash-attention 2) and accumulates ``dk``/``dv`` over blocks.
"""
from __future__ import annotations

import warnings

import numpy as np

from ... import _dtype
from ..interface import View
from . import jit
from .arrays import BFLOAT16, nd

__all__ = ["AttentionMixin"]

# exp(-inf - -inf) and friends are dealt with explicitly below: numpy's warnings are noise
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)

#: query rows per block: large enough for BLAS to run at speed, small enough that the (block, S)
#: scores of a GPT-sized batch stay in cache-friendly tens of MiB
_BLOCK = 128

_HALF16 = (BFLOAT16, _dtype.float16)

#: forwards of at most this many query rows run numba's row kernel (``jit.attention_rows``)
_FEW_ROWS = 8
_ROW_DTYPES = (_dtype.float32, _dtype.float64, BFLOAT16)


def _by_rows(q: View, k: View, v: View, mask: View | None, L: int) -> bool:
    """Whether the forward takes ``jit.attention_rows``: few query rows, numba there, one dtype
    it computes in, and ``q``/``k``/``v`` C-contiguous (the core's node passes them so)."""
    if L > _FEW_ROWS or q.dtype not in _ROW_DTYPES or not jit.available():
        return False
    return all(nd(t).flags.c_contiguous for t in (q, k, v))


def _a(v: View) -> np.ndarray:
    a = nd(v)
    return a.astype(np.float32) if v.dtype in _HALF16 else a


def _scores(qb: np.ndarray, kt: np.ndarray, mask: np.ndarray | None, causal: bool,
            scale: float, r0: int) -> np.ndarray:
    """The scores of the query rows ``r0 ...`` of block ``qb``: ``qb k^T * scale``, masked."""
    s = np.matmul(qb, kt)
    s *= scale
    if causal:
        rows = np.arange(r0, r0 + qb.shape[-2])[:, None]
        np.putmask(s, np.broadcast_to(np.arange(kt.shape[-1])[None, :] > rows, s.shape), -np.inf)
    if mask is not None:
        mb = mask[..., r0:r0 + qb.shape[-2], :]
        if mb.dtype == np.bool_:
            s = np.where(mb, s, -np.inf)
        else:
            s += mb
    return s


def _cols(mask: np.ndarray | None, c: int) -> np.ndarray | None:
    """The first ``c`` key columns of the mask (or ``None``)."""
    return None if mask is None else mask[..., :c]


class AttentionMixin:
    """attention / attention_backward on numpy arrays, blocked over query rows."""

    def attention(self, q: View, k: View, v: View, mask: View | None, causal: bool,
                  scale: float, out: View, lse: View) -> None:
        """``out = softmax(q k^T * scale + mask) v`` and the row log-sum-exps into ``lse``."""
        if _by_rows(q, k, v, mask, q.shape[-2]):
            jit.attention_rows(nd(q), nd(k), nd(v), None if mask is None else nd(mask), causal,
                               scale, nd(out), nd(lse))
            return
        qa, ka, va = _a(q), _a(k), _a(v)
        ma = None if mask is None else nd(mask)
        if ma is not None and ma.dtype != np.bool_:
            ma = ma.astype(qa.dtype, copy=False)
        o, la = nd(out), nd(lse)
        L, S = qa.shape[-2], ka.shape[-2]
        kt = np.swapaxes(ka, -1, -2)
        for r0 in range(0, L, _BLOCK):
            r1 = min(L, r0 + _BLOCK)
            # causal: keys from r1 on are masked for every row of the block, so are not computed
            c = min(r1, S) if causal else S
            s = _scores(qa[..., r0:r1, :], kt[..., :c], _cols(ma, c), causal, scale, r0)
            m = np.max(s, -1, keepdims=True) if s.shape[-1] else np.full(
                s.shape[:-1] + (1,), -np.inf, s.dtype)
            m[m == -np.inf] = 0  # a row with nothing to attend to: exp(-inf - 0) = 0
            np.subtract(s, m, out=s)
            np.exp(s, out=s)
            ssum = np.sum(s, -1, keepdims=True)
            ob = np.matmul(s, va[..., :c, :])
            with np.errstate(divide="ignore", invalid="ignore"):
                # a sum of 0 is a row with nothing to attend to (0); a NaN score makes the sum
                # NaN, which reaches the output (PyTorch's math path), not 0
                ob = np.where(ssum == 0, 0, ob / ssum)
                lb = (m + np.log(ssum))[..., 0]
            np.copyto(o[..., r0:r1, :], ob, casting="unsafe")
            np.copyto(la[..., r0:r1], lb, casting="unsafe")

    def attention_backward(self, g: View, q: View, k: View, v: View, out: View, lse: View,
                           mask: View | None, causal: bool, scale: float, dq: View, dk: View,
                           dv: View) -> None:
        """Gradients of :meth:`attention`, probabilities recomputed per query block."""
        ga, qa, ka, va, oa = _a(g), _a(q), _a(k), _a(v), _a(out)
        la = nd(lse).astype(qa.dtype, copy=False)
        ma = None if mask is None else nd(mask)
        if ma is not None and ma.dtype != np.bool_:
            ma = ma.astype(qa.dtype, copy=False)
        # lse = -inf (nothing attended): +inf makes every exp(s - lse) exactly 0
        la = np.where(la == -np.inf, np.inf, la)
        L, S = qa.shape[-2], ka.shape[-2]
        kt, vt = np.swapaxes(ka, -1, -2), np.swapaxes(va, -1, -2)
        gk = np.zeros(ka.shape, qa.dtype)
        gv = np.zeros(va.shape, qa.dtype)
        gq = np.empty(qa.shape, qa.dtype)
        delta = np.sum(ga * oa, -1)  # rowsum(g * out) = rowsum(dp * p)
        for r0 in range(0, L, _BLOCK):
            r1 = min(L, r0 + _BLOCK)
            qb, gb = qa[..., r0:r1, :], ga[..., r0:r1, :]
            c = min(r1, S) if causal else S  # as in the forward: later keys take no part
            p = _scores(qb, kt[..., :c], _cols(ma, c), causal, scale, r0)
            np.subtract(p, la[..., r0:r1, None], out=p)
            np.exp(p, out=p)
            gv[..., :c, :] += np.matmul(np.swapaxes(p, -1, -2), gb)
            dp = np.matmul(gb, vt[..., :c])
            np.subtract(dp, delta[..., r0:r1, None], out=dp)
            np.multiply(dp, p, out=dp)
            dp *= scale
            gq[..., r0:r1, :] = np.matmul(dp, ka[..., :c, :])
            gk[..., :c, :] += np.matmul(np.swapaxes(dp, -1, -2), qb)
        for view, val in ((dq, gq), (dk, gk), (dv, gv)):
            np.copyto(nd(view), val, casting="unsafe")
