"""How tensors cross process boundaries.

* Plain pickling (``pickle.dumps``, ``pg.save(..., weights_only=False)``) sends values, dtype,
  device and ``requires_grad`` — never a handle that outlives the file.
* Through :mod:`portagrad.multiprocessing` (queues, pipes, process arguments: Python's
  ``ForkingPickler``), a CPU tensor whose storage is in shared memory (``share_memory_()``,
  ``Module.share_memory()``) is sent as a *handle* (the shared-memory block's name and its view):
  the receiver maps the same memory, so updates are seen by both (Hogwild training), and its
  ``.grad`` travels the same way. Other tensors are sent by value. Device tensors (OpenCL contexts
  cannot be shared between processes) are copied through the host and rebuilt on the same device;
  ``share_memory_()`` refuses them (the backends have no inter-process memory handles).

The process that called ``share_memory_()`` owns the block (named ``pg_<pid>_<random>``) and unlinks
it when the storage is freed; receivers only map it and never register or unlink it. If the owner
is killed, its resource tracker unlinks the block once no process using that tracker is left (a
process started by :mod:`multiprocessing` shares its parent's tracker). A block the owner freed
before a receiver got the handle raises :class:`SharedBlockFreedError` on receipt.
"""
from __future__ import annotations

import contextlib
import importlib
import mmap
import os
import secrets
import weakref
from multiprocessing import shared_memory
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from .. import _creation, _device, _dtype
from .._storage import AllocatedStorage, Storage
from .._tensor import Tensor
from ..backends.interface import View
from ..nn.parameter import Parameter

__all__ = ["reduce_tensor", "rebuild_tensor", "reduce_tensor_shared", "rebuild_shared",
           "share_storage", "init_reductions", "share_memory_", "SharedBlockFreedError",
           "SHM_PREFIX"]


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
    """Pickle by value. A non-leaf that requires grad pickles as a leaf that requires grad, as
    PyTorch's ``pickle.dumps`` does (only sending it to another process refuses it:
    :func:`reduce_tensor_shared`)."""
    arr = np.array(t.detach().numpy(force=True), order="C", copy=True)
    return (rebuild_tensor, (type(t), arr, str(t.device), t._requires_grad, t._grad, _extra(t)))


# ------------------------------------------------------------------- shared memory
try:  # POSIX: map blocks ourselves, so that receiving one never touches the resource tracker
    _posixshmem: Any = importlib.import_module("_posixshmem")
except ImportError:  # Windows: no resource tracker; a block lives while a handle is open
    _posixshmem = None

#: Every block this package creates is named ``pg_<creator pid>_<random>``, so leaks are easy to
#: spot (``ls /dev/shm/pg_*``) and to attribute to a process.
SHM_PREFIX = "pg_"


class SharedBlockFreedError(RuntimeError):
    """A shared tensor arrived after the process that owned its memory freed the block."""


def _new_block(size: int) -> shared_memory.SharedMemory:
    """Create a block named ``pg_<pid>_<random>``. On POSIX, ``SharedMemory(create=True)``
    registers it with this process's resource tracker, which unlinks it if the process dies
    without doing so (SIGKILL, a crash), so a killed owner does not leak it."""
    while True:
        name = f"{SHM_PREFIX}{os.getpid()}_{secrets.token_hex(6)}"
        try:
            return shared_memory.SharedMemory(name=name, create=True, size=size)
        except FileExistsError:  # pragma: no cover - 48 random bits collided
            continue


def _release(shm: shared_memory.SharedMemory, owner_pid: int, sid: int) -> None:
    """The owner's storage died: unlink the block (mappings elsewhere stay valid). A forked child
    holds a copy of this finalizer but is not the owner, so it leaves the block alone."""
    if _SHM.get(sid) == shm.name:
        del _SHM[sid]
    if os.getpid() != owner_pid:
        return
    with contextlib.suppress(BufferError):  # an array still exported: it keeps its mapping
        shm.close()
    with contextlib.suppress(FileNotFoundError):
        shm.unlink()  # also unregisters it from the resource tracker


def _forget(name: str, sid: int, keep: Any) -> None:
    """A receiver's storage died (``keep`` held the handle that the mapping needs, if any)."""
    if _SHM.get(sid) == name:
        del _SHM[sid]


def share_storage(t: Tensor) -> None:
    """Move ``t``'s CPU storage into a new shared-memory block (no-op if already shared).

    Views of the storage taken *before* this call keep pointing at the old memory: share a
    tensor before making views of it (as ``Module.share_memory()`` does for parameters)."""
    st = t._storage
    if st.device.type != "cpu":
        # PyTorch shares CUDA memory through CUDA IPC handles; a backend without such handles
        # cannot, and a tensor that claimed to be shared would be copied on every send: a Hogwild
        # child's updates would silently never reach the parent
        raise RuntimeError(
            f"share_memory_(): cannot share a tensor on device '{st.device}' between processes: "
            f"the {st.device.type} backend has no inter-process memory handles. Share cpu tensors "
            f"instead (model.to('cpu').share_memory()), and move data to the device inside each "
            f"process.")
    if st.shared:
        return
    shm = _new_block(max(st.nbytes, 1))
    if st.__class__ is AllocatedStorage:  # its flags are class-level, read-only False
        st.__class__ = Storage  # (same layout): a plain Storage, whose slots hold them
        st.pinned = st.shared = False
    buf = np.ndarray((st.nbytes,), np.uint8, shm.buf)
    old = st.buffer
    if st.nbytes:
        buf[:] = np.ndarray((st.nbytes,), np.uint8, old)
    st.buffer = buf
    st.shared = True
    st.pinned = False
    _SHM[id(st)] = shm.name
    weakref.finalize(st, _release, shm, os.getpid(), id(st))
    v = t._v
    t._v = View(buf, v.offset, v.shape, v.strides, v.dtype)


_SHM: dict[int, str] = {}


def _freed(name: str) -> SharedBlockFreedError:
    return SharedBlockFreedError(
        f"cannot receive a shared tensor: its shared-memory block {name!r} no longer exists. The "
        f"sending process freed it (the tensor's last reference there went away, or the process "
        f"exited) before this process received it; keep the tensor alive in the sender until "
        f"the receiver has it.")


def _attach(name: str, nbytes: int) -> tuple[np.ndarray, Any]:
    """Map the block ``name`` as ``nbytes`` bytes, without registering it anywhere: the sender
    owns it (Python < 3.13's ``SharedMemory(name=...)`` registers it with this process's resource
    tracker, and unregistering it again races with the owner's own registration when the tracker
    is shared, as it is with children started by multiprocessing: ``KeyError`` tracebacks).
    Returns the array and what must stay referenced while the storage lives."""
    keep: Any = None
    if _posixshmem is None:
        try:
            shm = shared_memory.SharedMemory(name=name)
        except FileNotFoundError:
            raise _freed(name) from None
        mem: Any = shm.buf
        size, keep = shm.size, shm
    else:
        try:
            fd = _posixshmem.shm_open("/" + name, os.O_RDWR, mode=0o600)
        except FileNotFoundError:
            raise _freed(name) from None
        try:
            size = os.fstat(fd).st_size
            mem = mmap.mmap(fd, size) if size else b""
        finally:
            os.close(fd)
    if size < nbytes:
        raise RuntimeError(f"cannot receive a shared tensor: its shared-memory block {name!r} has "
                           f"{size} bytes, but the tensor's storage needs {nbytes}")
    # the array keeps the mapping alive; it is unmapped when the last array over it goes away
    return np.ndarray((nbytes,), np.uint8, mem), keep


def rebuild_shared(cls: type[Tensor], name: str, nbytes: int, offset: int, shape: tuple, strides: tuple,
                   dtype_name: str, requires_grad: bool, grad: Any, extra: Any) -> Tensor:
    """Map a shared-memory block sent by another process."""
    buf, keep = _attach(name, nbytes)
    concrete, backend, index = _device.resolve(_device.device("cpu"))
    st = Storage(buf, nbytes, concrete, backend, index)
    st.shared = True
    _SHM[id(st)] = name
    weakref.finalize(st, _forget, name, id(st), keep)
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
