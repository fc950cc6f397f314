"""``torch.storage``: :class:`UntypedStorage`, the bytes under a tensor, as a value to inspect.

``tensor.untyped_storage()`` gives the storage every view of that memory shares: its size in bytes,
device, whether it is pinned or shared, and equality by identity of the memory (how code tells
whether two tensors alias). portagrad's tensors own their memory through backend buffers, so a
storage cannot be created free-standing or resized here; those raise ``NotImplementedError``.
:class:`TypedStorage` (``tensor.storage()``) is the same memory counted in elements of a dtype,
and the legacy per-dtype classes (``FloatStorage`` ...) are what ``tensor.storage_type()`` names.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

from . import _dtype
from ._storage import Storage

__all__ = ["UntypedStorage", "TypedStorage", "buffer_address", "FloatStorage", "DoubleStorage",
           "HalfStorage", "BFloat16Storage", "LongStorage", "IntStorage", "ShortStorage",
           "CharStorage", "ByteStorage", "BoolStorage", "LEGACY_STORAGE_CLASSES"]

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

    def clone(self) -> UntypedStorage:
        """A new storage on the same device holding a copy of these bytes."""
        # a storage record cannot allocate: a uint8 tensor over these bytes is cloned
        from . import _creation

        t = _creation.empty(0, dtype=_dtype.uint8, device=self.device)
        return t.set_(self, 0, (self.nbytes(),), (1,)).clone().untyped_storage()

    def __copy__(self) -> UntypedStorage:  # as PyTorch's storages: a copy of the memory
        return self.clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> UntypedStorage:
        # one copy per storage, however many wrappers of it the copied object holds
        seen = memo.setdefault(id(UntypedStorage), {})
        new = seen.get(id(self._storage))
        if new is None:
            new = seen[id(self._storage)] = self.clone()
            memo.setdefault(id(memo), []).append(self._storage)  # keep the id alive (copy's rule)
        return new

    def __repr__(self) -> str:
        return f"UntypedStorage(nbytes={self.nbytes()}, device={self.device})"


class TypedStorage:
    """The memory under a tensor seen as elements of the tensor's dtype (``tensor.storage()``,
    deprecated in PyTorch in favour of ``untyped_storage()``): the same memory as the
    :class:`UntypedStorage`, with sizes counted in elements."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("TypedStorage(...): portagrad storages are made by tensors; "
                                  "use tensor.untyped_storage()")

    @classmethod
    def _wrap(cls, storage: Storage, dtype: Any) -> TypedStorage:
        self = object.__new__(cls)
        self._untyped = UntypedStorage._wrap(storage)
        self.dtype = dtype
        return self

    _untyped: UntypedStorage
    dtype: Any

    def untyped(self) -> UntypedStorage:
        """The same memory as bytes."""
        return self._untyped

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return int(self.dtype.itemsize)

    def size(self) -> int:
        """The number of elements of the dtype the memory holds."""
        return self._untyped.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        """The size in bytes."""
        return self._untyped.nbytes()

    @property
    def device(self) -> Any:
        """The device the memory is on."""
        return self._untyped.device

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self, device: Any = "cuda") -> bool:
        return self._untyped.is_pinned(device)

    def is_shared(self) -> bool:
        return self._untyped.is_shared()

    def data_ptr(self) -> int:
        """The number of the first byte, as :meth:`UntypedStorage.data_ptr`."""
        return self._untyped.data_ptr()

    def pickle_storage_type(self) -> str:
        """The legacy class name of the dtype (``'FloatStorage'``), as PyTorch's checkpoints
        record it."""
        return _LEGACY_NAMES[self.dtype.name]

    def resize_(self, size: int) -> TypedStorage:
        """Not supported: a storage's size is fixed by the tensors that own it here."""
        raise NotImplementedError("TypedStorage.resize_: portagrad storages cannot be resized")

    def clone(self) -> TypedStorage:
        """A new storage of the same dtype and device holding a copy of this memory."""
        return TypedStorage._wrap(self._untyped.clone()._storage, self.dtype)

    def __copy__(self) -> TypedStorage:
        return self.clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> TypedStorage:
        return TypedStorage._wrap(self._untyped.__deepcopy__(memo)._storage, self.dtype)

    def __repr__(self) -> str:
        return f"TypedStorage(size={self.size()}, dtype={self.dtype}, device={self.device})"


# the legacy per-dtype storage classes (tensor.storage_type()): a TypedStorage of that dtype is
# an instance of the class of its dtype, as in PyTorch
_LEGACY_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                 "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
                 "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
                 "bool": "BoolStorage"}


class _LegacyStorageMeta(type):
    dtype: Any

    def __instancecheck__(cls, instance: Any) -> bool:
        if type(instance) is TypedStorage:
            return bool(instance.dtype == cls.dtype)
        return type.__instancecheck__(cls, instance)


def _legacy_class(name: str, dtype_name: str) -> type[TypedStorage]:
    cls: type[TypedStorage] = _LegacyStorageMeta(name, (TypedStorage,), {  # type: ignore[assignment]
        "__doc__": f"The legacy storage class of ``{dtype_name}`` tensors "
                   f"(``tensor.storage_type()``); not constructed here.",
        "dtype": getattr(_dtype, dtype_name), "__module__": "portagrad"})
    return cls


FloatStorage = _legacy_class("FloatStorage", "float32")
DoubleStorage = _legacy_class("DoubleStorage", "float64")
HalfStorage = _legacy_class("HalfStorage", "float16")
BFloat16Storage = _legacy_class("BFloat16Storage", "bfloat16")
LongStorage = _legacy_class("LongStorage", "int64")
IntStorage = _legacy_class("IntStorage", "int32")
ShortStorage = _legacy_class("ShortStorage", "int16")
CharStorage = _legacy_class("CharStorage", "int8")
ByteStorage = _legacy_class("ByteStorage", "uint8")
BoolStorage = _legacy_class("BoolStorage", "bool")
LEGACY_STORAGE_CLASSES: dict[str, type[TypedStorage]] = {
    dtype_name: globals()[name] for dtype_name, name in _LEGACY_NAMES.items()}
