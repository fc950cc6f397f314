"""Storage: a backend buffer plus where it lives. Tensors are views of a storage."""
from __future__ import annotations

from typing import Any

__all__ = ["Storage", "AllocatedStorage", "Size"]


class Storage:
    """One backend buffer of ``nbytes`` bytes on ``device`` (served by ``backend``, device ``index``)."""

    __slots__ = ("buffer", "nbytes", "device", "backend", "index", "pinned", "shared", "_epoch",
                 "__weakref__")

    def __init__(self, buffer: Any, nbytes: int, device: Any, backend: Any, index: int,
                 pinned: bool = False) -> None:
        self.buffer = buffer
        self.nbytes = nbytes
        self.device = device
        self.backend = backend
        self.index = index
        self.pinned = pinned
        self.shared = False
        self._epoch: int | None = None

    # ``_epoch`` is the ownership stamp: only ``_raw.new_on`` sets it (to the allocation epoch
    # current then, see ``_raw.open_epoch``). It is cleared as soon as the storage can be reached
    # another way: a second tensor made over it (``Tensor._make``, ``_set_from``, the ``data``
    # setter), memory handed out (``Tensor.numpy``), or ``_raw.disown`` by the backward engine.
    # ``None``, the default of every other storage (wrapped host memory, pinned and shared
    # storages, copies between devices), reads as "not owned": autograd never adopts such memory
    # as a ``.grad`` without copying it.

    def __repr__(self) -> str:
        return f"Storage(nbytes={self.nbytes}, device={self.device})"


class AllocatedStorage(Storage):
    """A storage whose buffer ``_raw.new_on`` got from ``Backend.allocate`` (or
    ``allocate_array``) for it alone (outputs of ops); it carries the allocation epoch
    (``_epoch``). Made by ``Tensor._fresh`` and ``_raw.binary_views``: ``AllocatedStorage()``,
    then setters.

    Such memory is never pinned nor shared: ``pinned`` and ``shared`` are class-level ``False``
    (read-only on the instance), so a result costs no store for them. Code that makes the memory
    shared (``multiprocessing.reductions.share_storage``) first turns the object into a plain
    :class:`Storage` (``__class__`` assignment: the layouts are the same), whose slots then
    hold the flags."""

    __slots__ = ()
    pinned = False  # shadows Storage's slot: nothing sets it on this class
    shared = False
    # no arguments, no Python __init__: ``AllocatedStorage()`` runs in C only (cheaper than
    # ``object.__new__(AllocatedStorage)``, a call through a generic wrapper)
    __init__ = object.__init__

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        # (copy.copy) the slots' state without the flags: they are the class's, and read-only
        return None, {k: getattr(self, k) for k in _STATE}


_STATE = ("buffer", "nbytes", "device", "backend", "index", "_epoch")


class Size(tuple):
    """A tensor shape: a tuple of ints (``torch.Size``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"portagrad.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        """Product of the sizes (1 for a zero-dim shape)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item: Any) -> Any:  # slicing keeps the type
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r
