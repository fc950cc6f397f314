"""Pinned (page-locked) host memory: ``CL_MEM_ALLOC_HOST_PTR`` buffers mapped into host memory.

The numpy array handed out has a :class:`PinnedHolder` in its ``.base`` chain; the holder keeps the
OpenCL buffer and the mapping alive for as long as any view of the array exists, and is how
:func:`is_pinned` recognises pinned memory (no global registry needed).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["PinnedHolder", "is_pinned", "pin_memory"]


class PinnedHolder:
    """Owner of a mapped host-visible buffer; exposes it through ``__array_interface__``."""

    def __init__(self, buffer: Any, mapped: np.ndarray, queue: Any) -> None:
        self.buffer = buffer
        self.mapped = mapped
        self._queue = queue
        self.__array_interface__ = mapped.__array_interface__

    def __del__(self) -> None:
        try:  # unmap before the buffer goes; harmless if the queue is already gone
            self.mapped.base.release(self._queue)  # type: ignore[union-attr]  # base: pyopencl's MemoryMap
        except Exception:  # the queue or the interpreter may already be gone
            pass


def pin_memory(context: Any, queue: Any, nbytes: int) -> np.ndarray:
    """A 1-D ``uint8`` array of ``nbytes`` backed by a mapped ``ALLOC_HOST_PTR`` buffer."""
    import pyopencl as cl

    size = max(int(nbytes), 1)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
    buf = cl.Buffer(context, flags, size)
    # pyopencl's stubs: the OR of two map_flags is an int to them, and they want a dtype object
    mapped, _ = cl.enqueue_map_buffer(  # type: ignore[type-var, misc]
        queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0,  # type: ignore[arg-type]
        (size,), np.uint8, is_blocking=True)
    holder = PinnedHolder(buf, mapped, queue)
    arr = np.asarray(holder)
    return arr[:nbytes] if nbytes != size else arr


def is_pinned(array: Any) -> bool:
    """Whether ``array`` or an array it views came from :func:`pin_memory`."""
    seen = 0
    a = array
    while a is not None and seen < 64:  # base chains are short; the bound guards against cycles
        if isinstance(a, PinnedHolder):
            return True
        a = getattr(a, "base", None)
        seen += 1
    return False
