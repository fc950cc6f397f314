"""How tensors cross process boundaries.

* Plain pickling (``pickle.dumps``, ``pg.save(..., weights_only=False)``) sends values, dtype,
  device and ``requires_grad`` — never a handle that outlives the file.
* Through :mod:`portagrad.multiprocessing` (queues, pipes, process arguments: Python's
  ``ForkingPickler``), a CPU tensor whose storage is in shared memory (``share_memory_()``,
  ``Module.share_memory()``) is sent as a *handle* (the shared-memory block's name and its view):
  the receiver maps the same memory, so updates are seen by both (Hogwild training), and its
  ``.grad`` travels the same way. Other tensors are sent by value. Device tensors (OpenCL contexts
  cannot be shared between processes) are copied through the host and rebuilt on the same device.

The process that called ``share_memory_()`` owns the block and unlinks it when the storage is freed;
receivers only map it.
"""
from __future__ import annotations

import weakref
from multiprocessing import resource_tracker, shared_memory
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from .. import _creation, _device, _dtype
from .._storage import Storage
from .._tensor import Tensor
from ..backends.interface import View
from ..nn.parameter import Parameter

__all__ = ["reduce_tensor", "rebuild_tensor", "reduce_tensor_shared", "rebuild_shared",
           "share_storage", "init_reductions", "share_memory_"]


def _check_leaf(t: Tensor) -> None:
    if t._grad_fn is not None and t._requires_grad:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If you "
                           "just want to transfer the data, call detach() on the tensor before "
                           "serializing (e.g., putting it on the queue).")


def _extra(t: Tensor) -> dict:
    return {k: v for k, v in t.__dict__.items() if not k.startswith("_accum")}


def rebuild_tensor(cls: type[Tensor], array: np.ndarray, device: str, requires_grad: bool,
                   grad: Any = None, extra: Any = None) -> Tensor:
    """Rebuild a tensor sent by value."""
    t = _creation.from_host(array, device=device)
    if cls is not type(t):
        t = cls._from_tensor(t)
    if requires_grad:
        t.requires_grad_(True)
    if grad is not None:
        t._grad = grad
    if extra:
        t.__dict__.update(extra)
    return t


def reduce_tensor(t: Tensor) -> Any:
    """Pickle by value."""
    _check_leaf(t)
    arr = np.array(t.detach().numpy(force=True), order="C", copy=True)
    return (rebuild_tensor, (type(t), arr, str(t.device), t._requires_grad, t._grad, _extra(t)))


# ------------------------------------------------------------------- shared memory
def _unlink(shm: shared_memory.SharedMemory) -> None:
    try:
        shm.close()
        shm.unlink()
    except (FileNotFoundError, BufferError):  # already gone, or still exported: the OS cleans up
        pass


def share_storage(t: Tensor) -> None:
    """Move ``t``'s CPU storage into a new shared-memory block (no-op if already shared).

    Views of the storage taken *before* this call keep pointing at the old memory: share a
    tensor before making views of it (as ``Module.share_memory()`` does for parameters)."""
    st = t._storage
    if st.shared:
        return
    if st.device.type != "cpu":
        st.shared = True  # device storage: nothing to move (sent through the host)
        return
    shm = shared_memory.SharedMemory(create=True, size=max(st.nbytes, 1))
    buf = np.ndarray((st.nbytes,), np.uint8, shm.buf)
    old = st.buffer
    if st.nbytes:
        buf[:] = np.ndarray((st.nbytes,), np.uint8, old)
    st.buffer = buf
    st.shared = True
    st.pinned = False
    _SHM[id(st)] = shm.name
    weakref.finalize(st, _unlink, shm)
    v = t._v
    t._v = View(buf, v.offset, v.shape, v.strides, v.dtype)


_SHM: dict[int, str] = {}


def rebuild_shared(cls: type[Tensor], name: str, nbytes: int, offset: int, shape: tuple, strides: tuple,
                   dtype_name: str, requires_grad: bool, grad: Any, extra: Any) -> Tensor:
    """Map a shared-memory block sent by another process."""
    shm = shared_memory.SharedMemory(name=name)
    try:  # the sender owns the block: do not let this process's tracker unlink it at exit
        resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
    except Exception:
        pass
    buf = np.ndarray((nbytes,), np.uint8, shm.buf)
    concrete, backend, index = _device.resolve(_device.device("cpu"))
    st = Storage(buf, nbytes, concrete, backend, index)
    st.shared = True
    _SHM[id(st)] = name
    weakref.finalize(st, shm.close)
    t = Tensor._make(st, offset, tuple(shape), tuple(strides), _dtype.as_dtype(dtype_name))
    if cls is not Tensor:
        t = cls._from_tensor(t)
    t._requires_grad = requires_grad
    if grad is not None:
        t._grad = grad
    if extra:
        t.__dict__.update(extra)
    return t


def reduce_tensor_shared(t: Tensor) -> Any:
    """ForkingPickler's reducer: a handle for shared CPU storage, values otherwise."""
    _check_leaf(t)
    st = t._storage
    name = _SHM.get(id(st))
    if not (st.shared and st.device.type == "cpu" and name is not None):
        return reduce_tensor(t)
    v = t._v
    return (rebuild_shared, (type(t), name, st.nbytes, v.offset, v.shape, v.strides, v.dtype.name,
                             t._requires_grad, t._grad, _extra(t)))


def init_reductions() -> None:
    """Register the shared-memory reducer with multiprocessing's pickler (idempotent)."""
    ForkingPickler.register(Tensor, reduce_tensor_shared)
    ForkingPickler.register(Parameter, reduce_tensor_shared)


def share_memory_(t: Tensor) -> Tensor:
    """Move ``t``'s storage to shared memory: through ``portagrad.multiprocessing`` other processes
    then map the same memory (a no-op if already shared). Its ``.grad``, if any, is shared too."""
    init_reductions()
    share_storage(t)
    if t._grad is not None:
        share_storage(t._grad)
    return t
