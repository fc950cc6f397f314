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


def philox4x32(counter: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    """Ten Philox rounds on 64-bit counters ``counter`` (uint64) with a 64-bit ``seed``.

    Returns the four uint32 output words ``r0..r3`` as arrays of ``counter``'s shape.
    """
    counter = counter.astype(np.uint64, copy=False)
    # every word is kept in a uint64 array holding a 32-bit value: a 32x32-bit product is exact
    # in 64 bits, and the rounds need no dtype conversion until the words are returned
    c0 = counter & _MASK
    c1 = counter >> _S32
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    seed &= 0xFFFFFFFFFFFFFFFF
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for _ in range(10):
        p0 = c0 * _M0
        p1 = c2 * _M1
        hi1 = p1 >> _S32
        hi1 ^= c1
        hi1 ^= np.uint64(k0)
        hi0 = p0 >> _S32
        hi0 ^= c3
        hi0 ^= np.uint64(k1)
        p0 &= _MASK
        p1 &= _MASK
        c0, c1, c2, c3 = hi1, p1, hi0, p0
        k0 = (k0 + 0x9E3779B9) & 0xFFFFFFFF
        k1 = (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def _u53(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    return ((hi >> 5).astype(np.float64) * 67108864.0 + (lo >> 6).astype(np.float64)) * (2.0 ** -53)


def uniform(n: int, seed: int, offset: int, low: float, high: float, np_dtype: DTypeLike) -> np.ndarray:
    """``n`` uniform numbers in ``[low, high)`` of ``np_dtype`` for counters ``offset..offset+n-1``."""
    counter = np.arange(n, dtype=np.uint64) + np.uint64(offset)
    r0, r1, _, _ = philox4x32(counter, seed)
    dt: np.dtype[Any] = np.dtype(np_dtype)
    if dt == np.float64:
        u = _u53(r0, r1)
    else:
        u = ((r0 >> 8).astype(np.float32) * np.float32(2.0 ** -24)).astype(dt)
    return (dt.type(low) + dt.type(high - low) * u).astype(dt, copy=False)


def normal(n: int, seed: int, offset: int, mean: float, std: float, np_dtype: DTypeLike) -> np.ndarray:
    """``n`` normal numbers (Box-Muller in float64) for counters ``offset..offset+n-1``."""
    counter = np.arange(n, dtype=np.uint64) + np.uint64(offset)
    r0, r1, r2, r3 = philox4x32(counter, seed)
    u1 = ((r0 >> 5).astype(np.float64) * 67108864.0 + (r1 >> 6).astype(np.float64) + 1.0) * (2.0 ** -53)
    u2 = _u53(r2, r3)
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return (mean + std * z).astype(np_dtype)
