"""Reuse of large host buffers: the numpy backend's answer to page faults.

A fresh large numpy allocation is a fresh ``mmap`` (or heap memory glibc has just trimmed): the
kernel maps and zeroes every page on its first write, which costs about as much as writing the
page itself. A training step allocates the same large buffers every step (activations,
gradients, im2col columns), so :class:`BufferPool` keeps the buffers it handed out and gives one
back out again once nothing references it any more.

"Nothing references it" is read from the reference count: a buffer is only ever reached through
Python references (a Storage, the numpy views over it, a DLPack capsule, an exported array all
keep one), so a buffer whose only reference is the pool's is free. The count a free buffer shows
is measured when the module loads, with the same code path the pool uses; where that measurement
is not conclusive (another Python implementation) the pool stays off.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

__all__ = ["BufferPool"]


def _count(blocks: list[np.ndarray], i: int) -> int:
    return sys.getrefcount(blocks[i])


def _calibrate() -> int | None:
    """The reference count :func:`_count` reports for a buffer only the pool holds, or None."""
    blocks = [np.empty(1, np.uint8)]
    free = _count(blocks, 0)
    held = blocks[0]
    busy = _count(blocks, 0)
    del held
    if busy != free + 1 or _count(blocks, 0) != free:
        return None
    return free


_FREE = _calibrate()
_U8 = np.dtype(np.uint8)  # a dtype object: np.empty converts a scalar type on every call


class BufferPool:
    """Keeps ``uint8`` buffers of at least ``min_bytes`` for reuse, up to ``max_bytes`` in all and
    ``per_size`` of one size (an allocation scans the buffers of its size for a free one, so the
    scan stays short when a program holds thousands of equal buffers)."""

    def __init__(self, min_bytes: int = 1 << 20, max_bytes: int = 1 << 30,
                 per_size: int = 64) -> None:
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.per_size = per_size
        self._blocks: dict[int, list[np.ndarray]] = {}
        self._total = 0
        self._lock = threading.Lock()

    def allocate(self, nbytes: int) -> np.ndarray:
        """An uninitialised buffer of ``nbytes`` bytes: a free pooled one when there is one."""
        if nbytes < self.min_bytes or _FREE is None:
            return np.empty(nbytes, _U8)
        with self._lock:
            blocks = self._blocks.get(nbytes)
            if blocks is None:
                blocks = self._blocks[nbytes] = []
            for i in range(len(blocks)):
                if _count(blocks, i) == _FREE:
                    return blocks[i]
            a = np.empty(nbytes, np.uint8)
            if self._total + nbytes > self.max_bytes:
                self._release_free()
            if self._total + nbytes <= self.max_bytes and len(blocks) < self.per_size:
                blocks.append(a)
                self._total += nbytes
            return a

    def _release_free(self) -> None:
        for n, blocks in list(self._blocks.items()):
            keep = [blocks[i] for i in range(len(blocks)) if _count(blocks, i) != _FREE]
            self._total -= n * (len(blocks) - len(keep))
            if keep:
                self._blocks[n] = keep
            else:
                del self._blocks[n]

    def release_free(self) -> None:
        """Drop every pooled buffer that is not in use (``empty_cache``)."""
        with self._lock:
            self._release_free()

    @property
    def pooled_bytes(self) -> int:
        """Bytes of the buffers the pool tracks, in use or free."""
        return self._total
