"""The collectives and point-to-point calls of ``torch.distributed``, on MPI.

Each call works in place on the tensors given, as PyTorch's do, for every dtype and backend: the
data goes to MPI as host arrays (:mod:`._staging`: no copy for ``cpu`` tensors), results are written
back with a version bump. ``src``/``dst`` are global ranks (``group_src``/``group_dst``: ranks in
``group``). With ``async_op=True`` a call returns a :class:`Work` at once; otherwise it returns
``None`` after the data is in place (``recv``: the sender's rank). A rank outside ``group`` does
nothing and gets ``None``.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtype, _raw
from .._tensor import Tensor
from . import _checks, _staging as _st
from ._group import DistBackendError, ProcessGroup, Work
from ._mpi import mpi
from ._reduce_op import ReduceOp, mpi_op
from ._world import resolve

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter_tensor", "gather", "scatter", "barrier", "send", "recv", "isend",
           "irecv", "monitored_barrier"]


def _check_tensor(t: Any, name: str = "tensor") -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a portagrad Tensor, got {type(t).__name__}")
    if not t.is_contiguous():
        raise ValueError(f"Tensors must be contiguous ({name} has shape {tuple(t.shape)} and "
                         f"strides {t.stride()})")
    return t


def _check_list(ts: Any, like: Tensor, n: int, name: str,
                check: Callable[[Any, str], Tensor] = _check_tensor,
                like_name: str = "the tensor") -> list[Tensor]:
    """``ts``: one tensor per rank (each passing ``check``), of ``like``'s dtype and size."""
    if not isinstance(ts, (list, tuple)):
        raise TypeError(f"{name} must be a list of tensors, got {type(ts).__name__}")
    if len(ts) != n:
        raise ValueError(f"{name} must have one tensor per rank of the group: expected {n}, got "
                         f"{len(ts)}")
    for i, t in enumerate(ts):
        check(t, f"{name}[{i}]")
        if t.dtype is not like.dtype:
            raise TypeError(f"{name}[{i}] has dtype {t.dtype}, but {like_name} has {like.dtype}")
        if t.numel() != like.numel():
            raise ValueError(f"{name}[{i}] has shape {tuple(t.shape)} ({t.numel()} elements), "
                             f"but {like_name} has shape {tuple(like.shape)} ({like.numel()})")
    return list(ts)


def _root(pg: ProcessGroup, rank: int | None, group_rank: int | None, what: str) -> int:
    """The group rank of the root given as a global ``rank`` or as a ``group_rank``."""
    if group_rank is not None:
        if rank is not None and rank != 0:
            raise ValueError(f"Can not specify both {what} and group_{what}")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"group_{what}={group_rank} is not a rank of the group (size "
                             f"{pg.size()})")
        return group_rank
    r = 0 if rank is None else int(rank)
    if r not in pg._global:
        raise ValueError(f"Global rank {r} is not part of group {pg}")
    return pg._global[r]


def _divide(arr: np.ndarray, n: int) -> None:
    """``arr /= n`` in place (integers: truncated toward zero, as NCCL's average)."""
    if n == 1:
        return
    if arr.dtype.kind == "f":
        np.divide(arr, n, out=arr)
    else:
        np.copyto(arr, np.sign(arr) * (np.abs(arr) // n))


def _run(pg: ProcessGroup, name: str, h: np.ndarray, issue: Callable[[Any], None],
         finish: Callable[[], Any] | None, async_op: bool) -> Any:
    """Run the collective ``issue(comm)`` (a blocking MPI call) on ``pg``, after the header
    exchange of :mod:`._checks` unless it is turned off."""
    comm, checks, ranks, me = pg._comm, pg._checks, pg._ranks, pg._rank

    def body() -> None:
        if checks:
            _checks.exchange(comm, h, ranks, me)
        issue(comm)

    out = pg.run(name, body, finish, async_op)
    return out if async_op else None


def _write_rows(ts: Sequence[Tensor], rows: np.ndarray) -> None:
    for t, row in zip(ts, rows):
        _st.write_back(t, row, give=False)
    _st.pool.give(rows.reshape(-1), *[t._storage for t in ts])


def _host_rows(like: Tensor, n: int, ts: Sequence[Tensor]) -> np.ndarray:
    """A ``(n, like.numel())`` host array for ``n`` results (pinned if some target is a device
    tensor)."""
    shape = (n, like.numel())
    if all(_st.is_host(t) for t in ts):
        return np.empty(shape, like._v.dtype.numpy)
    return _st.pool.take(n * like.numel() * like._v.dtype.itemsize, like._v.dtype.numpy
                         ).reshape(shape)


_OPS: dict[tuple[Any, Any], tuple[Any, bool]] = {}  # (ReduceOp value, dtype) -> (MPI.Op, average)


def _fast_host(t: Any, pg: ProcessGroup | None, async_op: bool) -> np.ndarray | None:
    """For a synchronous call on a contiguous ``cpu`` tensor, with nothing queued on the group:
    the tensor's own memory as a flat array (the lean path of all_reduce and broadcast, where a
    small message costs about as much as the Python around it); else ``None``."""
    if (async_op or pg is None or pg._pending or t.__class__ is not Tensor
            or t._storage.device.type != "cpu"):
        return None
    arr = t._storage.backend.host_array(t._v)
    # (MPI takes the array in any shape; numpy's flag is cheaper than View.is_contiguous)
    if arr is None or not arr.flags.c_contiguous or _st.is_half(arr):
        return None  # (16-bit floats take the general path: see _Half)
    return arr


class _Half:
    """A reduction of 16-bit floats (float16, bfloat16), which MPI has no arithmetic for: each
    rank's values are widened to float32, MPI reduces the float32 arrays, ``AVG`` divides them
    in float32, and the result is rounded to the tensor's dtype once (round to nearest even).
    gloo reduces 16-bit tensors in their own precision, rounding after every step, so its sum
    of N ranks is within N-1 roundings of this one; MIN and MAX are exact either way."""

    def __init__(self, src: np.ndarray, out_elems: int) -> None:
        self.src = src.astype(np.float32)
        self.out = np.empty(out_elems, np.float32)

    def round_into(self, dst: np.ndarray, avg_by: int = 1) -> None:
        if avg_by > 1:
            np.divide(self.out, avg_by, out=self.out)
        dst.reshape(-1)[...] = self.out.astype(dst.dtype)


# ---------------------------------------------------------------- collectives
def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over the group with ``op``; every rank gets the result in ``tensor``."""
    if not isinstance(tensor, Tensor):
        _check_tensor(tensor)  # raises the TypeError
    pg = resolve(group)
    MPI = mpi()
    arr = _fast_host(tensor, pg, async_op)
    if arr is not None:
        assert pg is not None
        key = (getattr(op, "_value_", op), tensor._v.dtype)  # (an Enum's own hash is Python code)
        hit = _OPS.get(key)
        if hit is None:
            hit = _OPS[key] = mpi_op(MPI, op, tensor._v.dtype)
        mop, avg = hit
        h = _checks.header("all_reduce", tensor, -1, op) if pg._checks else None
        pg.run_inline("all_reduce", h, MPI.Comm.Allreduce, (MPI.IN_PLACE, arr, mop))
        if avg:
            _divide(arr, pg._size)
        _raw.bump(tensor)
        return None
    _check_tensor(tensor)
    if pg is None:
        return None
    mop, avg = mpi_op(MPI, op, tensor.dtype)
    src = _st.read(tensor)
    dst = src if _st.is_host(tensor) else _st.host_out(tensor)
    half = _Half(src, src.size) if _st.is_half(src) else None

    def issue(comm: Any) -> None:
        if half is not None:
            return comm.Allreduce(half.src, half.out, mop)
        if dst is src:
            return comm.Allreduce(MPI.IN_PLACE, dst, mop)
        return comm.Allreduce(src, dst, mop)

    def finish() -> None:
        if half is not None:
            half.round_into(dst, pg.size() if avg else 1)
        elif avg:
            _divide(dst, pg.size())
        _st.write_back(tensor, dst)

    return _run(pg, "all_reduce", _checks.header("all_reduce", tensor, -1, op), issue,
                finish, async_op)


def broadcast(tensor: Tensor, src: int | None = None, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy ``tensor`` of rank ``src`` into ``tensor`` of every rank of the group."""
    if not isinstance(tensor, Tensor):
        _check_tensor(tensor)  # raises the TypeError
    pg = resolve(group)
    arr = _fast_host(tensor, pg, async_op)
    if arr is not None:
        assert pg is not None
        root = _root(pg, src, group_src, "src")
        h = _checks.header("broadcast", tensor, root) if pg._checks else None
        pg.run_inline("broadcast", h, mpi().Comm.Bcast, (_st.wire(arr), root))
        if pg._rank != root:
            _raw.bump(tensor)
        return None
    _check_tensor(tensor)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src")
    is_root = pg.rank() == root
    buf = _st.read(tensor) if is_root else _st.host_out(tensor)

    def issue(comm: Any) -> None:
        return comm.Bcast(_st.wire(buf), root)

    def finish() -> None:
        if not is_root:
            _st.write_back(tensor, buf)

    return _run(pg, "broadcast", _checks.header("broadcast", tensor, root), issue, finish,
                async_op)


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOp = ReduceOp.SUM, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` over the group into ``tensor`` of rank ``dst`` (others are unchanged)."""
    _check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    MPI = mpi()
    root = _root(pg, dst, group_dst, "dst")
    mop, avg = mpi_op(MPI, op, tensor.dtype)
    is_root = pg.rank() == root
    src = _st.read(tensor)
    out = (src if _st.is_host(tensor) else _st.host_out(tensor)) if is_root else None
    half = _Half(src, src.size) if _st.is_half(src) else None

    def issue(comm: Any) -> None:
        if half is not None:
            return comm.Reduce(half.src, half.out if is_root else None, mop, root)
        if out is src:
            return comm.Reduce(MPI.IN_PLACE, out, mop, root)
        return comm.Reduce(src, out, mop, root)

    def finish() -> None:
        if out is not None:
            if half is not None:
                half.round_into(out, pg.size() if avg else 1)
            elif avg:
                _divide(out, pg.size())
            _st.write_back(tensor, out)

    return _run(pg, "reduce", _checks.header("reduce", tensor, root, op), issue, finish,
                async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Work | None:
    """``tensor_list[i]`` of every rank gets ``tensor`` of group rank ``i``."""
    _check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    outs = _check_list(tensor_list, tensor, pg.size(), "tensor_list")
    src = _st.read(tensor)
    rows = _host_rows(tensor, pg.size(), outs)

    def issue(comm: Any) -> None:
        return comm.Allgather(_st.wire(src), _st.wire(rows))

    return _run(pg, "all_gather", _checks.header("all_gather", tensor), issue,
                lambda: _write_rows(outs, rows), async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """``output_tensor`` (``world_size`` times ``input_tensor``'s size, stacked or concatenated
    along dim 0) gets every rank's ``input_tensor`` in rank order."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = resolve(group)
    if pg is None:
        return None
    if output_tensor.dtype is not input_tensor.dtype:
        raise TypeError(f"output tensor must have the same type as input tensor: "
                        f"{output_tensor.dtype} vs {input_tensor.dtype}")
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise ValueError(f"output tensor size must be equal to world_size times input tensor size:"
                         f" {output_tensor.numel()} != {pg.size()} * {input_tensor.numel()}")
    src = _st.read(input_tensor)
    dst = _st.host_out(output_tensor)
    if np.shares_memory(src, dst):
        src = src.copy()  # MPI forbids overlapping send and receive buffers

    def issue(comm: Any) -> None:
        return comm.Allgather(_st.wire(src), _st.wire(dst))

    return _run(pg, "all_gather_into_tensor", _checks.header("all_gather_into_tensor",
                                                             input_tensor), issue,
                lambda: _st.write_back(output_tensor, dst), async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,
                          group: Any = None, async_op: bool = False) -> Work | None:
    """Reduce ``input`` (``world_size`` times ``output``'s size) over the group; rank ``i`` gets
    the ``i``-th chunk of the result in ``output``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = resolve(group)
    if pg is None:
        return None
    MPI = mpi()
    if output.dtype is not input.dtype:
        raise TypeError(f"input tensor must have the same type as output tensor: {input.dtype} "
                        f"vs {output.dtype}")
    if input.numel() != pg.size() * output.numel():
        raise ValueError(f"input tensor must be the same size as output size times world size: "
                         f"{input.numel()} != {pg.size()} * {output.numel()}")
    mop, avg = mpi_op(MPI, op, output.dtype)
    src = _st.read(input)
    dst = _st.host_out(output)
    half = _Half(src, dst.size) if _st.is_half(src) else None
    if half is None and np.shares_memory(src, dst):
        src = src.copy()

    def issue(comm: Any) -> None:
        if half is not None:
            return comm.Reduce_scatter_block(half.src, half.out, mop)
        return comm.Reduce_scatter_block(src, dst, mop)

    def finish() -> None:
        if half is not None:
            half.round_into(dst, pg.size() if avg else 1)
        elif avg:
            _divide(dst, pg.size())
        _st.write_back(output, dst)

    h = _checks.header("reduce_scatter_tensor", output, -1, op)
    return _run(pg, "reduce_scatter_tensor", h, issue, finish, async_op)


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group: Any = None, async_op: bool = False, group_dst: int | None = None
           ) -> Work | None:
    """Rank ``dst`` gets every rank's ``tensor`` in ``gather_list`` (given on ``dst`` only)."""
    _check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst")
    src = _st.read(tensor)
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        outs = _check_list(gather_list, tensor, pg.size(), "gather_list")
        rows: np.ndarray | None = _host_rows(tensor, pg.size(), outs)
    else:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                             "ranks.")
        outs, rows = [], None

    def issue(comm: Any) -> None:
        return comm.Gather(_st.wire(src), None if rows is None else _st.wire(rows), root)

    def finish() -> None:
        if rows is not None:
            _write_rows(outs, rows)

    return _run(pg, "gather", _checks.header("gather", tensor, root), issue, finish, async_op)


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group: Any = None, async_op: bool = False, group_src: int | None = None
            ) -> Work | None:
    """``tensor`` of group rank ``i`` gets ``scatter_list[i]`` of rank ``src``."""
    _check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src")
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        ins = _check_list(scatter_list, tensor, pg.size(), "scatter_list")
        send: np.ndarray | None = np.concatenate([_st.read(t) for t in ins])
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
        send = None
    out = _st.host_out(tensor)
    if send is not None and np.shares_memory(send, out):
        send = send.copy()

    def issue(comm: Any) -> None:
        return comm.Scatter(None if send is None else _st.wire(send), _st.wire(out), root)

    return _run(pg, "scatter", _checks.header("scatter", tensor, root), issue,
                lambda: _st.write_back(tensor, out), async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every rank of the group has reached this call."""
    pg = resolve(group)
    if pg is None:
        return None
    return _run(pg, "barrier", _checks.header("barrier", None), lambda comm: comm.Barrier(),
                None, async_op)


def monitored_barrier(group: Any = None, timeout: Any = None, wait_all_ranks: bool = False) -> None:
    """A barrier bounded by ``timeout`` (default: the group's)."""
    pg = resolve(group)
    if pg is None:
        return
    work = barrier(group, async_op=True)
    assert work is not None
    work.wait(timeout)


# ------------------------------------------------------------- point to point
class _P2PWork(Work):
    """A send or receive: its MPI requests are issued at once by the caller (not queued behind
    collectives, so paired isend/irecv cannot deadlock), and progress in ``wait``/``is_completed``.
    ``step`` runs when the current requests are done and returns the next ones (``None``: done)."""

    def __init__(self, pg: ProcessGroup, name: str, reqs: list, step: Callable[[], list | None],
                 finish: Callable[[], Any] | None) -> None:
        super().__init__(pg, name, pg._seq, finish)
        self._reqs = reqs
        self._step = step

    def _poll(self) -> bool:
        MPI = mpi()
        try:
            while MPI.Request.Testall(self._reqs):
                nxt = self._step()
                if nxt is None:
                    self._done.set()
                    return True
                self._reqs = nxt
        except Exception as exc:
            self._exc = exc
            self._done.set()
            return True
        return False

    def is_completed(self) -> bool:
        if not self._done.is_set() and not self._poll():
            return False
        self._complete()
        return True

    def wait(self, timeout: Any = None) -> bool:
        limit = self._group._timeout if timeout is None else (
            timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout))
        deadline = time.monotonic() + limit
        n = 0
        while not self._done.is_set() and not self._poll():
            n += 1
            if n & 1023 == 0 and time.monotonic() > deadline:
                msg = (f"[rank {self._group._global_rank}] {self._name} timed out after {limit:g} s:"
                       f" the peer rank failed, was killed, or did not make the matching call")
                self._group._broken = msg
                raise DistBackendError(msg)
        self._complete()
        return True


def _peer(pg: ProcessGroup, rank: int | None, group_rank: int | None, what: str) -> int:
    r = _root(pg, rank, group_rank, what)
    if r == pg.rank():
        raise ValueError(f"Invalid {'destination' if what == 'dst' else 'source'} rank: should "
                         f"not be the same as the rank of the current process.")
    return r


def isend(tensor: Tensor, dst: int | None = None, group: Any = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Send ``tensor`` to rank ``dst`` without waiting; returns a :class:`Work`."""
    _check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    data_tag = pg._next_p2p_tag(peer)
    h = np.empty(_checks.SIZE + 1, np.int64)  # the header of _checks, then the data's tag
    h[:_checks.SIZE] = _checks.header("send", tensor, pg.rank())
    h[_checks.SIZE] = data_tag
    data = _st.wire(_st.read(tensor))
    reqs = [pg._comm.Isend(h, peer, tag), pg._p2p.Isend(data, peer, data_tag)]
    return _P2PWork(pg, "send", reqs, lambda: None, None)


def send(tensor: Tensor, dst: int | None = None, group: Any = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` (returns when the data has been sent)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def irecv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Receive into ``tensor`` from rank ``src`` (any rank if ``None``) without waiting.

    The header is received first (MPI matches receives from one peer with one tag in posting
    order); the data then comes on the group's point-to-point communicator under the tag the
    header names, so a later receive cannot take this one's data."""
    _check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    MPI = mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "src")
    mine = _checks.header("send", tensor)
    theirs = np.empty(_checks.SIZE + 1, np.int64)
    buf = _st.host_out(tensor)
    state: dict[str, Any] = {}

    def step() -> list | None:
        if "sender" in state:
            if "error" in state:
                raise RuntimeError(state["error"])
            return None
        sender = int(theirs[2])
        state["sender"] = sender
        data_tag = int(theirs[_checks.SIZE])
        head = theirs[:_checks.SIZE]
        if (head[3:] != mine[3:]).any():
            state["error"] = (f"[rank {pg._global_rank}] recv: rank {pg._ranks[sender]} sent "
                              f"{_checks.describe(head).replace('send(', '(')} but this rank "
                              f"receives into {_checks.describe(mine).replace('send(', '(')}")
            nbytes = int(head[5]) * _dtype_size(int(head[3]))
            state["scratch"] = np.empty(nbytes, np.uint8)  # take the message: the sender finishes
            return [pg._p2p.Irecv(state["scratch"], sender, data_tag)]
        return [pg._p2p.Irecv(_st.wire(buf), sender, data_tag)]

    def finish() -> int:
        _st.write_back(tensor, buf)
        return pg._ranks[state["sender"]]

    return _P2PWork(pg, "recv", [pg._comm.Irecv(theirs, peer, tag)], step, finish)


def _dtype_size(code: int) -> int:
    return _dtype.ALL_DTYPES[code].itemsize


def recv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank if ``None``); returns the sender's
    rank (``-1`` on a rank outside ``group``)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work._value
