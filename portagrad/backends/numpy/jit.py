"""numba kernels of the numpy backend, for work numpy would do in many passes (optional).

With numba installed (the ``fast`` extra) and ``PORTAGRAD_NUMBA`` not ``0``, these single-threaded
loops replace whole-array numpy compositions on the cpu device:

- :func:`erf32`: the float32 error function of ``backends/erf32.py`` (the same polynomials, in the
  same order) in one pass. Both branches are computed and one is kept per element, so that the
  loop vectorises; the exponential is ``exp_neg`` of :mod:`._jit_kernels` (Cody-Waite reduction,
  a degree-5 polynomial, the power of two built from its bits), within an ulp of numpy's ``exp``
  (which LLVM cannot vectorise without a vector maths library), so the results may differ from
  the numpy path's in the last bit (both are pinned against ``math.erf`` by the tests).
- :func:`gelu32` / :func:`gelu32_backward`: exact GELU and its gradient, the operations of the
  core's composition in its order, in one pass each.
- :func:`layer_norm_rows` / :func:`layer_norm_backward_rows`, :func:`softmax_rows32` /
  :func:`softmax_backward_rows`: one pass per row (in the cache) instead of four to six numpy
  passes over the whole array; the row sums may be reassociated (vectorised), so the last bits
  differ from numpy's sums.
- :func:`cross_entropy_rows` / :func:`cross_entropy_backward_rows`: the per-row losses and
  log-sum-exps of class logits and their gradient, one pass per row (a training step's (N, C)
  scores are small: numpy's per-call cost was most of the loss's time).
- :func:`plane_scatter_add`: a max pooling's input gradient, each plane's gradients added at
  their recorded positions in one pass (numpy zero-filled, offset the indices and scattered).
- :func:`batch_norm_backward_planes`: batch norm's input, weight and bias gradients in two
  passes over the data (numpy: seven).
- :func:`keep_or_zero`: ``cond ? a : 0`` in one pass (a ReLU's gradient; numpy's masked copy
  runs at a fraction of that speed).
- :func:`philox_uniform32`: float32 uniform numbers of the Philox stream, bit for bit
  ``backends/philox.py``'s (dropout's masks).
- :func:`bf16_matmul_rows`: a float32 ``(M, K)`` times a bfloat16 ``(K, N)`` (a decoder's weights,
  few rows ``M``), the weights widened a cache-sized block at a time inside the loop: the product
  reads 2 bytes per weight, where widening then calling BLAS moved 10.
- :func:`bf16_binary_rows`: add, sub, mul and div of bfloat16 arrays (a bias or residual add of a
  bfloat16 model) over their bit patterns, in float32 and rounded once as ml_dtypes' loops do,
  about 8x faster than those loops from a few thousand elements.
- :func:`attention_rows`: scaled dot-product attention for a few query rows (a decode step's
  one), a row at a time against keys and values read in place (bfloat16 ones widened as they are
  read): numpy's batched products of tiny matrices, its masking and softmax passes cost several
  times the arithmetic there, and a bfloat16 cache was widened whole on every call.
- :func:`index_add_rows`: ``out[index[i]] += src[i]`` row by row, in the order of ``index`` (as
  ``np.add.at``, so the sums are the same), for embedding gradients.

Without numba each caller keeps its numpy composition: :func:`available` says which.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ... import _dtype

_BF16 = _dtype.bfloat16.numpy

__all__ = ["attention_rows", "available", "batch_norm_backward_planes", "bf16_binary_rows",
           "bf16_layer_norm_rows", "bf16_matmul_rows",
           "BF16_CAST_MIN", "bf16_cast", "bf16_gelu", "bf16_gelu_backward", "bf16_scalar_op",
           "bf16_softmax_backward_rows", "bf16_softmax_rows", "build_once",
           "cross_entropy_backward_rows",
           "cross_entropy_rows", "erf32", "gelu32", "gelu32_backward", "keep_or_zero",
           "plane_scatter_add",
           "index_add_rows", "layer_norm_backward_rows", "layer_norm_rows", "numba_allowed",
           "philox_uniform32", "softmax_backward_rows", "softmax_rows32"]

_STATE: list[Any] = []  # [kernels or None] once looked up
_T = TypeVar("_T")

_F = np.float32


def _build() -> dict[str, Callable[..., Any]]:
    """The kernels as numba functions (numba imported here, so that this module imports without
    it; numba compiles them on their first call, then reads its on-disk cache)."""
    from . import _jit_kernels as k  # imports numba: ImportError without it

    return {name: getattr(k, name) for name in k.__all__}


def numba_allowed(*switches: str) -> bool:
    """Whether the environment leaves a numba path on: neither ``PORTAGRAD_NUMBA`` (every numba
    path of the backend) nor any of the path's own ``switches`` (variable names) is ``0``."""
    return all(os.environ.get(v, "1") != "0" for v in ("PORTAGRAD_NUMBA", *switches))


def build_once(state: list[Any], build: Callable[[], _T], *switches: str) -> _T | None:
    """A numba path's kernels, looked up once into ``state`` (an empty list at first):
    ``build()`` (which imports numba) when :func:`numba_allowed` says so and numba imports, else
    None; every later call returns the first answer."""
    if not state:
        k = None
        if numba_allowed(*switches):
            try:
                k = build()  # numba imported here; compiling waits for the first call
            except ImportError:  # not installed, or a numba that refuses this numpy
                k = None
        state.append(k)
    return state[0]


def _kernels() -> dict[str, Callable[..., Any]] | None:
    return build_once(_STATE, _build)


def available() -> bool:
    """Whether the kernels can run: numba importable and ``PORTAGRAD_NUMBA`` not ``0`` (looked
    up once, on first use)."""
    return _kernels() is not None


def _kernel(name: str) -> Callable[..., Any]:
    k = _kernels()
    if k is None:
        raise RuntimeError("the numba kernels are not available (see jit.available())")
    return k[name]


def erf32(x: np.ndarray, out: np.ndarray) -> None:
    """``out = erf(x)``, both 1-D contiguous float32 arrays of one size."""
    _kernel("erf32")(x, out)


def gelu32(x: np.ndarray, out: np.ndarray) -> None:
    """``out = x * Phi(x)`` (exact GELU), both 1-D contiguous float32 arrays of one size."""
    _kernel("gelu32")(x, out)


def gelu32_backward(g: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """``out = g * gelu'(x)``, all 1-D contiguous float32 arrays of one size."""
    _kernel("gelu32_backward")(g, x, out)


def index_add_rows(out: np.ndarray, index: np.ndarray, src: np.ndarray) -> None:
    """``out[index[i]] += src[i]`` for each ``i`` in order: ``out`` (R, C) and ``src`` (N, C) of
    one floating dtype, ``index`` (N,) integers in ``[0, R)``."""
    _kernel("index_add_rows")(out, index, src)


def philox_uniform32(out: np.ndarray, seed: int, offset: int, low: float, high: float) -> None:
    """``out`` (1-D contiguous float32) = the stream's uniform numbers in ``[low, high)`` from slot
    ``offset`` on, bit for bit ``backends/philox.py``'s ``uniform`` (one slot an element)."""
    _kernel("philox_uniform32")(out, np.uint64(seed & 0xFFFFFFFFFFFFFFFF),
                                np.uint64(offset & 0xFFFFFFFFFFFFFFFF), _F(low), _F(high - low))


def layer_norm_rows(x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, eps: float,
                    out: np.ndarray, mean: np.ndarray | None, rstd: np.ndarray | None) -> None:
    """Layer norm of the rows of the C-contiguous (M, N) ``x`` (N >= 1) into ``out``, float32 or
    float64 throughout; ``w``/``b`` (N,) or ``None``; the row statistics into ``mean``/``rstd``
    (M,) when both are given."""
    t = x.dtype.type
    empty = np.empty(0, x.dtype)
    stats = mean is not None and rstd is not None
    _kernel("layer_norm_rows")(x, empty if w is None else w, empty if b is None else b, t(eps),
                               t(x.shape[1]), t(1), out, mean if stats else empty,
                               rstd if stats else empty, w is not None, b is not None, stats)


def layer_norm_backward_rows(g: np.ndarray, x: np.ndarray, w: np.ndarray | None,
                             mean: np.ndarray, rstd: np.ndarray, gx: np.ndarray,
                             gw: np.ndarray | None, gb: np.ndarray | None) -> None:
    """The gradients of :func:`layer_norm_rows` for the (M, N) ``g`` (M, N >= 1): ``gx``, and the
    column sums ``gw`` = sum(g * xhat), ``gb`` = sum(g) when given; all C-contiguous, one dtype."""
    empty = np.empty(0, x.dtype)
    _kernel("layer_norm_backward_rows")(g, x, empty if w is None else w, mean, rstd,
                                        x.dtype.type(x.shape[1]), gx,
                                        empty if gw is None else gw, empty if gb is None else gb,
                                        w is not None, gw is not None, gb is not None)


def softmax_rows32(x: np.ndarray, out: np.ndarray) -> None:
    """Softmax of the rows of the C-contiguous float32 (M, N) ``x`` (N >= 1) into ``out``."""
    _kernel("softmax_rows32")(x, out)


def softmax_backward_rows(g: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """``out = y * (g - sum(g * y))`` per row of the C-contiguous (M, N) arrays (N >= 1), one
    float dtype."""
    _kernel("softmax_backward_rows")(g, y, out)


def cross_entropy_rows(x: np.ndarray, t: np.ndarray, weight: np.ndarray | None,
                       ignore_index: int, loss: np.ndarray, lse: np.ndarray,
                       row_weight: np.ndarray) -> None:
    """Per row of the C-contiguous (N, C) float32 or float64 ``x`` (C >= 1) against the int64
    class indices ``t`` (N,): ``lse`` = log-sum-exp, ``row_weight`` = ``weight[t]`` (1 without
    class weights), ``loss`` = ``row_weight * (lse - x[t])``; a row whose target is
    ``ignore_index`` 0 and 0, one whose target is not a class NaN and 0 (no read out of bounds).
    ``weight`` (C,) contiguous; outputs (N,) contiguous; all of ``x``'s dtype."""
    _kernel("cross_entropy_rows")(x, t, x[0] if weight is None else weight, weight is not None,
                                  int(ignore_index), loss, lse, row_weight,
                                  np.empty(x.shape[1], x.dtype))


def cross_entropy_backward_rows(x: np.ndarray, t: np.ndarray, lse: np.ndarray, k: np.ndarray,
                                out: np.ndarray) -> None:
    """``out[i, j] = (exp(x[i, j] - lse[i]) - [j == t[i]]) * k[i]``, nothing subtracted in a
    row whose target is not a class; arrays as in :func:`cross_entropy_rows`."""
    _kernel("cross_entropy_backward_rows")(x, t, lse, k, out)


def keep_or_zero(cond: np.ndarray, a: np.ndarray, out: np.ndarray) -> None:
    """``out = cond ? a : 0`` for 1-D contiguous arrays of one size (``cond`` bool, ``a`` and
    ``out`` of one dtype): one vectorised pass (a ReLU's gradient)."""
    _kernel("keep_or_zero")(cond, a, out)


def plane_scatter_add(g: np.ndarray, ind: np.ndarray, out: np.ndarray) -> None:
    """``out`` (R, P) zeroed, then ``out[r, ind[r, l]] += g[r, l]`` in order: C-contiguous ``g``
    (R, L) and ``out`` of one float dtype, int64 ``ind`` (R, L); indices outside ``[0, P)`` are
    skipped."""
    _kernel("plane_scatter_add")(g, ind, out)


def batch_norm_backward_planes(g: np.ndarray, x: np.ndarray, w: np.ndarray | None,
                               mu: np.ndarray, r: np.ndarray, o: np.ndarray, sg: np.ndarray,
                               sgx: np.ndarray) -> None:
    """Training-mode batch norm's gradients of the C-contiguous (N, C, L) ``g`` and ``x``
    (N, L >= 1) into ``o``: per channel ``sg = sum(g)``, ``sgx = sum(g * xhat)`` and
    ``o = k * (g - sg/n - xhat * sgx/n)``, ``k = r * w``; two passes over the data (the sums of
    each plane reassociated, vectorised). All arrays of one float dtype; ``w`` (C,) or None."""
    t = x.dtype.type
    _kernel("batch_norm_backward_planes")(g, x, x[0, 0] if w is None else w, w is not None, mu,
                                          r, t(x.shape[0] * x.shape[2]), o, sg, sgx)


_BF16_BINARY_OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3}


def _bf16_rows(x: np.ndarray, o: np.ndarray) -> np.ndarray | None:
    """``x`` (broadcast to ``o``'s shape) as ``(R, N)`` or ``(1, N)`` uint16 rows of ``o``'s
    ``(R, N)`` (``N`` its last dimension): a C-contiguous ``x`` of ``o``'s shape, or one
    contiguous row broadcast over every other dimension (a bias); None otherwise."""
    n = o.shape[-1]
    if x.shape == o.shape and x.flags.c_contiguous:
        return x.reshape(-1, n).view(np.uint16)
    if x.ndim and x.shape[-1] == n and (n == 1 or x.strides[-1] == x.itemsize):
        lead = x.shape[:-1]
        strides = x.strides[:-1]
        if all(st == 0 or k == 1 for st, k in zip(strides, lead)):
            return x[(0,) * (x.ndim - 1)].reshape(1, n).view(np.uint16)
    return None


def bf16_binary_rows(op: str, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """``out = a op b`` (``op`` add, sub, mul or div) of bfloat16 arrays, each element computed in
    float32 and rounded once to bfloat16 (bit for bit ml_dtypes' loops, NaN payloads aside), in
    one vectorised pass: ``out`` C-contiguous of at least one dimension, ``a`` and ``b`` of its
    shape and C-contiguous, or one row broadcast over the others. False (nothing done) for
    other operands or ops."""
    code = _BF16_BINARY_OPS.get(op)
    if code is None or out.ndim == 0 or out.size == 0 or not out.flags.c_contiguous:
        return False
    ra, rb = _bf16_rows(a, out), _bf16_rows(b, out)
    if ra is None or rb is None:
        return False
    _kernel("bf16_binary_rows")(code, ra, rb, out.reshape(-1, out.shape[-1]).view(np.uint16))
    return True


def bf16_scalar_op(op: str, a: Any, b: Any, out: np.ndarray) -> bool:
    """``out = a op b`` (``op`` add, sub, mul or div) of a bfloat16 array and a real scalar
    (either side; its float32 value is the operand, as PyTorch takes a scalar for these ops on
    bfloat16), each element computed in float32 and rounded once to bfloat16 (the float32 copy
    and its rounding it replaces give the same bits, NaN payloads aside), in one pass: the
    array and ``out`` C-contiguous of one shape. False (nothing done) otherwise."""
    code = _BF16_BINARY_OPS.get(op)
    first = not isinstance(a, np.ndarray)
    arr, s = (b, a) if first else (a, b)
    if code is None or not isinstance(arr, np.ndarray) or isinstance(s, np.ndarray) \
            or not isinstance(s, (float, int, np.floating, np.integer)) or isinstance(s, bool) \
            or arr.shape != out.shape or not arr.flags.c_contiguous \
            or not out.flags.c_contiguous or out.size == 0:
        return False
    with np.errstate(over="ignore"):
        s32 = np.float32(s)
    _kernel("bf16_scalar_op")(code, arr.reshape(-1).view(np.uint16), s32, first,
                              out.reshape(-1).view(np.uint16))
    return True


#: from this many elements a float32 <-> bfloat16 copy takes numba's loop (below, numpy's call
#: costs less than numba's)
BF16_CAST_MIN = 4096


def bf16_cast(src: np.ndarray, dst: np.ndarray) -> bool:
    """``dst = src`` for float32 ``src`` into bfloat16 ``dst`` (rounded to the nearest even,
    4x faster than ml_dtypes' cast) or bfloat16 into float32 (exact, 5x faster): both
    C-contiguous, of one shape, at least ``BF16_CAST_MIN`` elements, numba there. False (nothing
    done) otherwise."""
    if (src.__class__ is not np.ndarray or src.size < BF16_CAST_MIN or src.shape != dst.shape
            or not src.flags.c_contiguous or not dst.flags.c_contiguous or not available()):
        return False
    if src.dtype == np.float32 and dst.dtype == _BF16:
        _kernel("bf16_round")(src.reshape(-1), dst.reshape(-1).view(np.uint16))
        return True
    if dst.dtype == np.float32 and src.dtype == _BF16:
        _kernel("bf16_widen")(src.reshape(-1).view(np.uint16), dst.reshape(-1))
        return True
    return False


def bf16_gelu(x: np.ndarray, out: np.ndarray) -> None:
    """:func:`gelu32` of bfloat16 ``x`` into bfloat16 ``out`` (both C-contiguous, one shape):
    computed in float32 and rounded once, a block at a time in the cache."""
    _kernel("bf16_gelu")(x.reshape(-1).view(np.uint16), out.reshape(-1).view(np.uint16))


def bf16_gelu_backward(g: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """:func:`gelu32_backward` of bfloat16 arrays (C-contiguous, one shape), as
    :func:`bf16_gelu`."""
    _kernel("bf16_gelu_backward")(g.reshape(-1).view(np.uint16),
                                  x.reshape(-1).view(np.uint16), out.reshape(-1).view(np.uint16))


def bf16_softmax_rows(x: np.ndarray, out: np.ndarray) -> None:
    """:func:`softmax_rows32` along the last axis of bfloat16 ``x`` into ``out`` (C-contiguous,
    one shape): each row widened, computed in float32 and rounded once."""
    n = x.shape[-1]
    _kernel("bf16_softmax_rows")(x.reshape(-1, n).view(np.uint16), out.reshape(-1, n).view(np.uint16))


def bf16_softmax_backward_rows(g: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """:func:`softmax_backward_rows` of bfloat16 rows, as :func:`bf16_softmax_rows`."""
    n = y.shape[-1]
    _kernel("bf16_softmax_backward_rows")(g.reshape(-1, n).view(np.uint16),
                                          y.reshape(-1, n).view(np.uint16),
                                          out.reshape(-1, n).view(np.uint16))


def bf16_matmul_rows(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """``out = a @ b`` for the C-contiguous float32 ``a`` (M, K), the bfloat16 ``b`` (K, N) given
    as its uint16 bit patterns and the C-contiguous float32 ``out`` (M, N): each output one
    float32 dot product over all of K. ``b`` either C-contiguous or the transpose of a
    C-contiguous (N, K) (``W.T``); False (nothing done) for other layouts."""
    if b.T.flags.c_contiguous:
        _kernel("bf16_rows_nt")(a, b.T, out)
    elif b.flags.c_contiguous:
        _kernel("bf16_rows_nn")(a, b, out)
    else:
        return False
    return True


def attention_rows(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None,
                   causal: bool, scale: float, out: np.ndarray, lse: np.ndarray) -> None:
    """Fused attention (the numpy backend's ``attention`` contract) of C-contiguous ``q`` (*, L,
    D), ``k`` (*, S, D), ``v`` (*, S, E), all float32, all float64 or all bfloat16, with ``mask``
    ``None`` or bool / of their dtype broadcast to (*, L, S); into ``out`` (*, L, E) of their
    dtype and the float32/float64 ``lse`` (*, L), both C-contiguous."""
    L, D = q.shape[-2:]
    S, E = v.shape[-2:]
    half = q.dtype == _BF16
    ct = np.float32 if half else q.dtype.type
    q3, k3, v3 = q.reshape(-1, L, D), k.reshape(-1, S, D), v.reshape(-1, S, E)
    if half:
        q3, k3, v3 = q3.view(np.uint16), k3.view(np.uint16), v3.view(np.uint16)
    n = q3.shape[0]
    if mask is None:
        m3, kind = np.zeros((1, 1, 1), np.bool_), 0
    else:
        m3 = np.broadcast_to(mask, q.shape[:-1] + (S,)).reshape(n, L, S)
        kind = 1 if m3.dtype == np.bool_ else 2
        if half and kind == 2:
            m3 = m3.view(np.uint16)
    o3 = np.empty((n, L, E), ct) if half else out.reshape(n, L, E)
    _kernel("attention_rows")(q3, k3, v3, m3, kind, causal, ct(scale), o3, lse.reshape(n, L),
                              np.empty(D, ct), np.empty(max(S, 1), ct))
    if half:
        _kernel("bf16_round")(o3.reshape(-1), out.reshape(-1).view(np.uint16))


def bf16_layer_norm_rows(x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None,
                         eps: float, out: np.ndarray) -> None:
    """:func:`layer_norm_rows` of the C-contiguous bfloat16 (M, N) ``x`` (N >= 1) into bfloat16
    ``out``, ``w``/``b`` (N,) bfloat16 or float32 or ``None``: each row widened, computed in
    float32 and rounded once (no statistics)."""
    n = x.shape[1]

    def bits(a: np.ndarray | None) -> np.ndarray:
        if a is None:
            return np.empty(0, np.float32)
        return a.view(np.uint16) if a.dtype == _BF16 else a
    _kernel("bf16_layer_norm_rows")(x.view(np.uint16).reshape(-1, n), bits(w), bits(b),
                                    np.float32(eps), out.view(np.uint16).reshape(-1, n),
                                    w is not None, b is not None)
