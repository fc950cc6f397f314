"""Tensor data as host arrays for MPI, and results written back into tensors.

``cpu`` tensors (the numpy backend) reach MPI without a copy: the backend's ``host_array`` is a
numpy array over the tensor's own memory, which mpi4py passes by the buffer protocol. Tensors of any
other backend are staged through the host with the backend contract's copy primitives alone:
``to_host`` reads a tensor (the contract's one device-to-host copy, which waits for the data), MPI
writes results into a page-locked host buffer (``pin_memory``), and ``from_host(...,
non_blocking=True)`` enqueues the copy back and returns, so the device copies while the next bucket
is reduced. Nothing here is MPI-specific to a backend, so a third-party backend gets distributed
collectives by implementing the contract.

A pinned buffer is reused only after the device that last copied out of it has finished that copy
(:meth:`PinnedPool.take` synchronizes it): work on one device is ordered, so a later blocking
``to_host`` or ``synchronize`` means the earlier non-blocking copy is done.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import _memory, _raw
from .._tensor import Tensor

__all__ = ["is_host", "read", "host_out", "write_back", "wire", "is_half", "PinnedPool", "pool"]


def is_half(arr: np.ndarray) -> bool:
    """Whether ``arr`` holds 16-bit floats (float16, or ml_dtypes' bfloat16, which the buffer
    protocol cannot describe: mpi4py refuses it with "cannot include dtype 'E' in a buffer")."""
    return arr.dtype.itemsize == 2 and arr.dtype.kind in "fV"


def wire(arr: np.ndarray) -> np.ndarray:
    """``arr`` as MPI moves it: 16-bit floats as their bits (a ``uint16`` view, no copy), so
    copies (broadcast, gather, send...) carry any 16-bit float format; anything else as is."""
    return arr.view(np.uint16) if is_half(arr) else arr


def is_host(t: Tensor) -> bool:
    """Whether ``t`` lives in host memory MPI can read and write in place (a contiguous tensor of
    a backend whose ``host_array`` shares memory, i.e. ``cpu``)."""
    st = t._storage
    return st.device.type == "cpu" and t._v.is_contiguous()


def _host_array(t: Tensor) -> np.ndarray:
    arr = t._storage.backend.host_array(t._v)
    if arr is None:  # a host backend that cannot share memory: read a copy
        arr = t._storage.backend.to_host(t._v)
    return arr.reshape(-1)


def read(t: Tensor) -> np.ndarray:
    """A flat host array with ``t``'s contents: ``t``'s own memory for a host tensor (no copy),
    a new array read from the device otherwise (waits for pending work on ``t``)."""
    if is_host(t):
        return _host_array(t)
    return t._storage.backend.to_host(t._v).reshape(-1)


def host_out(t: Tensor, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Where MPI writes the result destined for ``t``: ``t``'s own memory for a host tensor,
    else a pinned host buffer of ``t``'s dtype and ``shape`` (default: flat, ``t``'s size)."""
    n = t.numel()
    if shape is None:
        shape = (n,)
    if is_host(t) and int(np.prod(shape)) == n:
        return _host_array(t).reshape(shape)
    return pool.take(int(np.prod(shape)) * t._v.dtype.itemsize, t._v.dtype.numpy).reshape(shape)


def write_back(t: Tensor, arr: np.ndarray, give: bool = True) -> None:
    """Put ``arr`` (``t``'s number of elements and dtype) into ``t`` in place, bumping its
    version. For a host tensor whose memory ``arr`` already is, only the bump remains; a pinned
    ``arr`` goes back to the pool once its (non-blocking) copy has been enqueued."""
    st = t._storage
    if is_host(t):
        own = _host_array(t)
        if not np.shares_memory(own, arr):
            np.copyto(own, arr.reshape(-1), casting="no")
    elif t.numel():
        st.backend.from_host(t._v, np.ascontiguousarray(arr).reshape(t._v.shape), non_blocking=True)
    _raw.bump(t)
    if give:
        pool.give(arr, st)


class PinnedPool:
    """Page-locked host buffers, reused by size. Without a backend that can pin (a ``cpu``-only
    installation) plain numpy arrays serve."""

    def __init__(self) -> None:
        self._free: dict[int, list[tuple[np.ndarray, tuple]]] = {}
        self._out: dict[int, np.ndarray] = {}  # address -> buffer, for the arrays handed out
        self._lock = threading.Lock()
        self.allocated = 0  # bytes, for the benchmarks' report

    def take(self, nbytes: int, dtype: Any) -> np.ndarray:
        """A 1-D array of ``nbytes // itemsize`` elements of ``dtype``."""
        if nbytes == 0:
            return np.empty(0, dtype)
        with self._lock:
            free = self._free.get(nbytes)
            entry = free.pop() if free else None
        if entry is None:
            try:
                raw = _memory.pinned_buffer(max(nbytes, 1))[:nbytes]
            except RuntimeError:  # no backend can pin: the host copy is then an ordinary one
                raw = np.empty(max(nbytes, 1), np.uint8)[:nbytes]
            self.allocated += nbytes
        else:
            raw, last = entry
            for st in last:  # a device may still be copying out of it
                st.backend.synchronize(st.index)
        with self._lock:
            self._out[raw.ctypes.data] = raw
        return raw.view(dtype)

    def give(self, arr: np.ndarray, *storages: Any) -> None:
        """Return ``arr`` (if it came from :meth:`take`; anything else is ignored); ``storages``:
        the device storages that non-blocking copies out of it may still be writing."""
        with self._lock:
            raw = self._out.pop(arr.ctypes.data, None) if arr.size else None
            if raw is not None:
                last = {(id(st.backend), st.index): st for st in storages
                        if st.device.type != "cpu"}
                self._free.setdefault(raw.nbytes, []).append((raw, tuple(last.values())))


pool = PinnedPool()
