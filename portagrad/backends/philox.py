"""Reference Philox4x32-10 in numpy: the random-number algorithm every backend reproduces.

See :mod:`portagrad.backends.interface` (section "Random numbers") for how counters map to elements.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["philox4x32", "uniform", "normal"]

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)

# Counters per pass: the six word arrays of a chunk (uint64) stay in the L2 cache, where every
# ufunc pass over them costs a fraction of one over full-size arrays (and nothing is allocated
# per round).
_CHUNK = 16384


def _rounds(counter: np.ndarray, seed: int, words: int) -> tuple[np.ndarray, ...]:
    """Ten Philox rounds on one chunk of uint64 ``counter``; the first ``words`` output words
    (uint64 arrays holding 32-bit values, possibly views of scratch buffers).

    Every word is kept in a uint64 array holding a 32-bit value: a 32x32-bit product is exact in
    64 bits. The words c1 and c3 are only ever the low halves of the previous round's products
    (or of the counter), c0 and c2 only their high halves xor-ed with those and the key.
    """
    m = counter.size
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    p0 = np.empty(m, np.uint64)
    p1 = np.empty(m, np.uint64)
    c0 = np.bitwise_and(counter, _MASK)
    c2 = np.empty(m, np.uint64)
    # round 1: c2 = c3 = 0, so c2 * M1 = 0 and the new c0 is c1 ^ k0, the new c1 0
    np.multiply(c0, _M0, out=p0)
    np.right_shift(counter, _S32, out=c0)
    c0 ^= np.uint64(k0)
    np.right_shift(p0, _S32, out=c2)
    c2 ^= np.uint64(k1)
    c1 = np.zeros(m, np.uint64)
    c3 = np.bitwise_and(p0, _MASK)
    for r in range(1, 10):
        k0 = (k0 + 0x9E3779B9) & 0xFFFFFFFF
        k1 = (k1 + 0xBB67AE85) & 0xFFFFFFFF
        last = r == 9
        np.multiply(c2, _M1, out=p1)
        if not (last and words <= 2):  # r2, r3 come from c0 * M0 in the last round
            np.multiply(c0, _M0, out=p0)
            np.right_shift(p0, _S32, out=c0)  # c0 becomes the new c2
            c0 ^= c3
            c0 ^= np.uint64(k1)
            np.bitwise_and(p0, _MASK, out=c3)
        np.right_shift(p1, _S32, out=c2)  # c2 becomes the new c0
        c2 ^= c1
        c2 ^= np.uint64(k0)
        if not (last and words == 1):
            np.bitwise_and(p1, _MASK, out=c1)
        c0, c2 = c2, c0
    return (c0, c1, c2, c3)[:words]


def _chunks(n: int) -> range:
    return range(0, n, _CHUNK)


def _counters(offset: int, start: int, stop: int) -> np.ndarray:
    c = np.arange(start, stop, dtype=np.uint64)
    c += np.uint64(offset & 0xFFFFFFFFFFFFFFFF)  # wraps modulo 2**64 like the counter
    return c


def philox4x32(counter: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    """Ten Philox rounds on 64-bit counters ``counter`` (uint64) with a 64-bit ``seed``.

    Returns the four uint32 output words ``r0..r3`` as arrays of ``counter``'s shape.
    """
    flat = np.ascontiguousarray(counter, np.uint64).reshape(-1)
    seed &= 0xFFFFFFFFFFFFFFFF
    outs = [np.empty(flat.size, np.uint32) for _ in range(4)]
    for i in _chunks(flat.size):
        for o, w in zip(outs, _rounds(flat[i:i + _CHUNK], seed, 4)):
            o[i:i + _CHUNK] = w
    return tuple(o.reshape(np.shape(counter)) for o in outs)


def _out(out: np.ndarray | None, n: int, dt: np.dtype[Any]) -> np.ndarray:
    if out is None:
        return np.empty(n, dt)
    if out.shape != (n,) or out.dtype != dt or not out.flags.c_contiguous:
        raise ValueError(f"philox: out must be a contiguous 1-D {dt} array of {n} elements, "
                         f"got {out.dtype} of shape {out.shape}")
    return out


def _u53(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    return ((hi >> 5).astype(np.float64) * 67108864.0 + (lo >> 6).astype(np.float64)) * (2.0 ** -53)


def uniform(n: int, seed: int, offset: int, low: float, high: float, np_dtype: DTypeLike,
            out: np.ndarray | None = None) -> np.ndarray:
    """``n`` uniform numbers in ``[low, high)`` of ``np_dtype`` for counters ``offset..offset+n-1``.

    ``out``: a contiguous 1-D array of ``n`` elements of ``np_dtype`` to fill and return (else a
    new one)."""
    dt: np.dtype[Any] = np.dtype(np_dtype)
    seed &= 0xFFFFFFFFFFFFFFFF
    out = _out(out, n, dt)
    lo, span = dt.type(low), dt.type(high - low)
    for i in _chunks(n):
        c = _counters(offset, i, min(i + _CHUNK, n))
        if dt == np.float64:
            r0, r1 = _rounds(c, seed, 2)
            u = _u53(r0, r1)
        else:
            (r0,) = _rounds(c, seed, 1)
            r0 >>= np.uint64(8)
            u = r0.astype(np.float32)
            u *= np.float32(2.0 ** -24)
            if dt != np.float32:
                u = u.astype(dt)
        u *= span
        np.add(lo, u, out=out[i:i + _CHUNK], casting="unsafe")
    return out


def normal(n: int, seed: int, offset: int, mean: float, std: float, np_dtype: DTypeLike,
           out: np.ndarray | None = None) -> np.ndarray:
    """``n`` normal numbers (Box-Muller in float64) for counters ``offset..offset+n-1``
    (``out`` as for :func:`uniform`)."""
    seed &= 0xFFFFFFFFFFFFFFFF
    out = _out(out, n, np.dtype(np_dtype))
    for i in _chunks(n):
        r0, r1, r2, r3 = _rounds(_counters(offset, i, min(i + _CHUNK, n)), seed, 4)
        u1 = ((r0 >> 5).astype(np.float64) * 67108864.0 + (r1 >> 6).astype(np.float64) + 1.0) * (2.0 ** -53)
        u2 = _u53(r2, r3)
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        np.copyto(out[i:i + _CHUNK], mean + std * z, casting="unsafe")
    return out
