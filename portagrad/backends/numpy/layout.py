"""Layout changes of the numpy backend's convolutions: (N, ...) <-> (..., N), batch innermost; the
extent of their zero-padded planes.

Transposing copies with a small N (a batch) run at a fraction of memcpy speed unless they are
blocked (a block of the strided side stays in the cache) and, for rows a multiple of 1 KiB long,
go through a row-padded copy (a stride of a multiple of 1 KiB thrashes the cache).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .arrays import scratch

__all__ = ["from_last", "padded_extent", "to_last"]


# Elements per block of a transposing copy between (N, R) and (R, N) with a small N (a batch):
# a block of R-columns stays in the L2 cache while the other side is written, where an unblocked
# copy fetches each cache line of the strided side once per element it holds, from memory once
# the array outgrows the cache.
_TBLOCK = 1 << 16


def to_last(a: np.ndarray) -> np.ndarray:
    """``a`` (N, ...) as a contiguous (..., N) array."""
    N = a.shape[0]
    rest = a.shape[1:]
    R = a.size // N if N else 0
    a2 = a.reshape(N, R)
    out = scratch((R, N), a.dtype)
    step = _TBLOCK // max(N, 1)
    if 0 < N <= 64 and step < R and a.nbytes > _TBLOCK * 16:
        for b in range(0, R, step):
            np.copyto(out[b:b + step], a2[:, b:b + step].T)
        return out.reshape(rest + (N,))
    if N >= 8 and (R * a.itemsize) % 512 == 0:
        # a direct transposing copy reads with a stride of the row length, which at multiples of
        # 1 KiB thrashes the cache; going through a row-padded copy avoids the aliasing
        padded = scratch((N, R + 16), a.dtype)
        padded[:, :R] = a2
        a2 = padded[:, :R]
    np.copyto(out, a2.T)
    return out.reshape(rest + (N,))


def from_last(r: np.ndarray, o: np.ndarray) -> None:
    """Write ``r`` (R, N) (batch innermost) into ``o`` (N, ...)."""
    R, N = r.shape
    step = _TBLOCK // max(N, 1)
    if 0 < N <= 64 and step < R and o.flags.c_contiguous and r.nbytes > _TBLOCK * 16:
        o2 = o.reshape(N, R)
        for b in range(0, R, step):
            np.copyto(o2[:, b:b + step], r[b:b + step].T)
        return
    if N >= 64 and (N * r.itemsize) % 512 == 0:  # the row-padded copy of _to_last, mirrored
        padded = scratch((R, N + 16), r.dtype)
        padded[:, :N] = r
        r = padded[:, :N]
    np.copyto(o, r.T.reshape(o.shape))  # splitting the strided axis is a view


def padded_extent(hw: Sequence[int], k: Sequence[int], osz: Sequence[int],
                  stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int]
                  ) -> tuple[int, int]:
    """(Hq, Wq): the height and width of an (H, W) plane padded so that every window of the
    output ``osz`` (and the plane itself, at offset ``padding``) lies inside it."""
    (H, W), (kh, kw), (OH, OW), (sh, sw), (ph, pw), (dh, dw) = hw, k, osz, stride, padding, \
        dilation
    return (max((OH - 1) * sh + (kh - 1) * dh + 1, ph + H),
            max((OW - 1) * sw + (kw - 1) * dw + 1, pw + W))
