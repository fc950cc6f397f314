"""``torch.storage``: :class:`UntypedStorage`, the bytes under a tensor, as a value to inspect.

``tensor.untyped_storage()`` gives the storage every view of that memory shares: its size in bytes,
device, whether it is pinned or shared, and equality by identity of the memory (how code tells
whether two tensors alias). portagrad's tensors own their memory through backend buffers, so a
storage cannot be created free-standing or resized here; those raise ``NotImplementedError``.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

from ._storage import Storage

__all__ = ["UntypedStorage", "TypedStorage", "buffer_address"]

# Each buffer gets a range of its own in a virtual address space, handed out in increasing order
# with a gap, so the numbers of distinct buffers' bytes never coincide (as real addresses of
# live allocations do not); the ranges are not reused while a buffer lives.
_PAGE = 1 << 12
_BASES: dict[int, int] = {}  # id(buffer) -> base, dropped when the buffer is freed
_LOCK = threading.Lock()
_top = _PAGE


def buffer_address(buffer: Any, nbytes: int) -> int:
    """The virtual address of ``buffer``'s first byte (what ``data_ptr()`` reports): stable for
    the buffer's life, and distinct buffers' ranges of ``nbytes`` never overlap."""
    global _top
    with _LOCK:
        base = _BASES.get(id(buffer))
        if base is None:
            base = _top
            _top += (nbytes + 2 * _PAGE - 1) // _PAGE * _PAGE  # at least one page of gap
            _BASES[id(buffer)] = base
            weakref.finalize(buffer, _BASES.pop, id(buffer), None)
        return base


class UntypedStorage:
    """The memory of one or more tensors (``tensor.untyped_storage()``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("UntypedStorage(...): portagrad storages are made by tensors; "
                                  "use tensor.untyped_storage()")

    @classmethod
    def _wrap(cls, storage: Storage) -> UntypedStorage:
        self = object.__new__(cls)
        self._storage = storage
        return self

    _storage: Storage

    def nbytes(self) -> int:
        """The size in bytes."""
        return int(self._storage.nbytes)

    def size(self) -> int:
        """The size in bytes (an untyped storage counts bytes)."""
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        """1: an untyped storage holds bytes."""
        return 1

    @property
    def device(self) -> Any:
        """The device the memory is on."""
        return self._storage.device

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self, device: Any = "cuda") -> bool:
        """Whether the memory is page-locked host memory."""
        return bool(self._storage.pinned)

    def is_shared(self) -> bool:
        """Whether the memory is shared between processes."""
        return bool(self._storage.shared)

    def data_ptr(self) -> int:
        """A number that identifies the memory: equal for tensors that share it, and the
        ranges of different storages never overlap. It is not an address to hand to C code
        (device buffers have none on the host)."""
        return buffer_address(self._storage.buffer, self._storage.nbytes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UntypedStorage) and (
            self._storage is other._storage or self._storage.buffer is other._storage.buffer)

    def __hash__(self) -> int:
        return id(self._storage.buffer)

    def resize_(self, size: int) -> UntypedStorage:
        """Not supported: a storage's size is fixed by the tensors that own it here."""
        raise NotImplementedError("UntypedStorage.resize_: portagrad storages cannot be resized")

    def __repr__(self) -> str:
        return f"UntypedStorage(nbytes={self.nbytes()}, device={self.device})"


class TypedStorage(UntypedStorage):
    """PyTorch's older storage class name; never returned by portagrad."""
