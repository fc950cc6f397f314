"""Reference Philox4x32-10 in numpy: the random-number algorithm every backend reproduces.

See :mod:`portagrad.backends.interface` (section "Random numbers") for how the stream's words map to
elements: the stream is a sequence of 32-bit words (slots), four per Philox block, and an element
takes one, two or four consecutive slots (:func:`slots`).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["philox4x32", "words", "slots", "uniform", "normal"]

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)

# Counters per pass: the six word arrays of a chunk (uint64) stay in the L2 cache, where every
# ufunc pass over them costs a fraction of one over full-size arrays (and nothing is allocated
# per round).
_CHUNK = 16384


def _rounds(counter: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    """Ten Philox rounds on one chunk of uint64 ``counter``: the four output words (uint64 arrays
    holding 32-bit values).

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
    for _ in range(1, 10):
        k0 = (k0 + 0x9E3779B9) & 0xFFFFFFFF
        k1 = (k1 + 0xBB67AE85) & 0xFFFFFFFF
        np.multiply(c2, _M1, out=p1)
        np.multiply(c0, _M0, out=p0)
        np.right_shift(p0, _S32, out=c0)  # c0 becomes the new c2
        c0 ^= c3
        c0 ^= np.uint64(k1)
        np.bitwise_and(p0, _MASK, out=c3)
        np.right_shift(p1, _S32, out=c2)  # c2 becomes the new c0
        c2 ^= c1
        c2 ^= np.uint64(k0)
        np.bitwise_and(p1, _MASK, out=c1)
        c0, c2 = c2, c0
    return c0, c1, c2, c3


_C62 = (1 << 62) - 1


def slots(kind: str, np_dtype: DTypeLike) -> int:
    """The 32-bit words of the stream one element of ``kind`` in ``np_dtype`` takes: ``normal`` 4,
    float64 ``uniform`` 2, any other ``uniform`` 1 (bfloat16 draws its float32 stream)."""
    if kind == "normal":
        return 4
    return 2 if np.dtype(np_dtype) == np.float64 else 1


def _slot_words(total: int, seed: int, offset: int) -> Iterator[tuple[int, np.ndarray]]:
    """The stream's words at slots ``offset .. offset+total-1`` (mod 2**64), a chunk at a time:
    ``(k, words)`` with ``words`` (uint64 holding 32-bit values) the slots from ``offset + k``;
    every chunk but the last holds ``4 * _CHUNK`` slots (a whole number of elements of any kind).
    Slot ``g`` is word ``g & 3`` of the Philox block of counter ``g >> 2``."""
    g0 = offset & 0xFFFFFFFFFFFFFFFF
    skip = g0 & 3  # the same in every chunk: each starts a whole number of blocks later
    step = 4 * _CHUNK
    block = np.empty((min((skip + total + 3) >> 2, _CHUNK + 1), 4), np.uint64)
    for k in range(0, total, step):
        size = min(step, total - k)
        m = (skip + size + 3) >> 2
        first = (g0 + k) >> 2
        c = np.arange(m, dtype=np.uint64)
        c += np.uint64(first & _C62)
        if (first & _C62) + m > _C62:  # the counters wrap with the slots (2**64 slots, 2**62 blocks)
            c &= np.uint64(_C62)
        b = block[:m]
        for i, w in enumerate(_rounds(c, seed)):
            b[:, i] = w
        yield k, b.reshape(-1)[skip:skip + size]


def philox4x32(counter: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    """Ten Philox rounds on 64-bit counters ``counter`` (uint64) with a 64-bit ``seed``.

    Returns the four uint32 output words ``r0..r3`` as arrays of ``counter``'s shape.
    """
    flat = np.ascontiguousarray(counter, np.uint64).reshape(-1)
    seed &= 0xFFFFFFFFFFFFFFFF
    outs = [np.empty(flat.size, np.uint32) for _ in range(4)]
    for i in range(0, flat.size, _CHUNK):
        for o, w in zip(outs, _rounds(flat[i:i + _CHUNK], seed)):
            o[i:i + _CHUNK] = w
    return tuple(o.reshape(np.shape(counter)) for o in outs)


def words(n: int, seed: int, offset: int) -> np.ndarray:
    """The stream's ``n`` 32-bit words (uint32) at slots ``offset .. offset+n-1`` (mod 2**64):
    slot ``g`` is word ``g & 3`` of ``philox4x32(g >> 2, seed)``."""
    out = np.empty(n, np.uint32)
    for k, w in _slot_words(n, seed & 0xFFFFFFFFFFFFFFFF, offset):
        out[k:k + w.size] = w
    return out


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
    """``n`` uniform numbers in ``[low, high)`` of ``np_dtype`` from the stream's slots ``offset``
    on (one slot an element, two for float64; see :func:`slots`).

    ``out``: a contiguous 1-D array of ``n`` elements of ``np_dtype`` to fill and return (else a
    new one)."""
    dt: np.dtype[Any] = np.dtype(np_dtype)
    seed &= 0xFFFFFFFFFFFFFFFF
    out = _out(out, n, dt)
    lo, span = dt.type(low), dt.type(high - low)
    w = slots("uniform", dt)
    for k, ws in _slot_words(n * w, seed, offset):
        e = k // w
        if w == 2:
            u = _u53(ws[0::2], ws[1::2])
        else:
            ws >>= np.uint64(8)
            u = ws.astype(np.float32)
            u *= np.float32(2.0 ** -24)
            if dt != np.float32:
                u = u.astype(dt)
        u *= span
        np.add(lo, u, out=out[e:e + u.size], casting="unsafe")
    return out


def normal(n: int, seed: int, offset: int, mean: float, std: float, np_dtype: DTypeLike,
           out: np.ndarray | None = None) -> np.ndarray:
    """``n`` normal numbers (Box-Muller in float64) from the stream's slots ``offset`` on (four
    an element; ``out`` as for :func:`uniform`)."""
    seed &= 0xFFFFFFFFFFFFFFFF
    out = _out(out, n, np.dtype(np_dtype))
    for k, ws in _slot_words(4 * n, seed, offset):
        r0, r1, r2, r3 = (ws[i::4] for i in range(4))
        u1 = ((r0 >> 5).astype(np.float64) * 67108864.0 + (r1 >> 6).astype(np.float64) + 1.0) * (2.0 ** -53)
        u2 = _u53(r2, r3)
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        e = k // 4
        np.copyto(out[e:e + z.size], mean + std * z, casting="unsafe")
    return out
