"""The collectives of ``torch.distributed`` beyond the core set of :mod:`._collectives`, and what
PyTorch scripts expect of the core set too: ``all_to_all_single`` (with split sizes),
``all_to_all``, ``reduce_scatter`` (list form), ``batch_isend_irecv``/``P2POp``,
``all_reduce_coalesced``/``all_gather_coalesced``; ``ReduceOp.PREMUL_SUM`` (a factor applied to
each rank's input before the sum, as NCCL's); ``Work.get_future()`` values (the output tensors);
and non-contiguous tensors where gloo takes them (through a contiguous copy, written back).

The public collectives here wrap those of :mod:`._collectives` without changing them, so their
lean synchronous path stays the same; ``all_to_all_single`` is the one new MPI call
(``MPI_Alltoallv``), and the list forms are built on the tensor forms (one message per call,
as PyTorch's gloo does by flattening).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _creation, _dtype
from .._ops.joining import cat
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from . import _checks, _collectives as _c, _staging as _st
from ._collectives import _check_tensor, _run
from ._group import Work
from ._mpi import mpi
from ._reduce_op import PremulSum, ReduceOp
from ._world import resolve

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter_tensor", "gather", "scatter", "barrier", "all_to_all_single",
           "all_to_all", "reduce_scatter", "all_reduce_coalesced", "all_gather_coalesced",
           "P2POp", "batch_isend_irecv"]


# ------------------------------------------------------------------- helpers
def _tensor(t: Any, name: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a portagrad Tensor, got {type(t).__name__}")
    return t


def _dense(t: Tensor) -> Tensor:
    """``t`` itself when contiguous, else a contiguous copy (outside autograd)."""
    if t.is_contiguous():
        return t
    with no_grad():
        return t.contiguous()


def _flat(ts: Sequence[Tensor]) -> Tensor:
    """One new contiguous 1-D tensor with the elements of ``ts`` in order."""
    with no_grad():
        if len(ts) == 1:
            return ts[0].reshape(-1).clone()
        return cat([t.reshape(-1) for t in ts])


def _copy_into(dst: Tensor, src: Tensor) -> None:
    """``dst[...] = src`` (same number of elements), outside autograd, bumping ``dst``'s version."""
    if dst is src:
        return
    with no_grad():
        dst.copy_(src.reshape(dst.shape))


def _then(work: Work | None, after: Callable[[], None], outputs: list | None) -> Work | None:
    """Run ``after`` once the results are in (now for a synchronous call, else when the work is
    waited on, before its ``wait`` returns) and record the work's output tensors."""
    if work is None:
        after()
        return None
    first = work._finish

    def finish() -> Any:
        value = first() if first is not None else None
        after()
        return value

    work._finish = finish
    work._outputs = outputs
    return work


def _outputs(work: Work | None, outputs: list) -> Work | None:
    if work is not None:
        work._outputs = outputs
    return work


def _premul(op: Any, t: Tensor, copy: bool) -> tuple[Any, Tensor]:
    """``(SUM, t * factor)`` for a PREMUL_SUM (``t`` scaled in place unless ``copy``), else
    ``(op, t)``."""
    if not isinstance(op, PremulSum):
        if op is ReduceOp.PREMUL_SUM:
            raise ValueError("ReduceOp.PREMUL_SUM needs its factor: pass "
                             "_make_nccl_premul_sum(factor) as op")
        return op, t
    if not t.dtype.is_floating_point:
        raise TypeError(f"ReduceOp.PREMUL_SUM needs a floating-point tensor, got {t.dtype}")
    with no_grad():
        if copy:
            return ReduceOp.SUM, t * op.factor
        t.mul_(op.factor)
    return ReduceOp.SUM, t


def _noncontiguous(t: Any) -> bool:
    """Whether ``t`` is a tensor the core collectives refuse for its layout alone (they do so
    before communicating, so the call can be made again on a contiguous copy)."""
    return isinstance(t, Tensor) and not t.is_contiguous()


def _member(group: Any) -> bool:
    return resolve(group) is not None


# ------------------------------------------------ the core set, as scripts use it
def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over the group with ``op``; every rank gets the result in ``tensor``
    (``op`` may be ``_make_nccl_premul_sum(factor)``; ``tensor`` may be non-contiguous)."""
    if op.__class__ is ReduceOp and not async_op:
        try:
            return _c.all_reduce(tensor, op, group)  # the lean path, unchanged
        except ValueError:  # raised before any communication
            if not _noncontiguous(tensor):
                raise
    _tensor(tensor, "tensor")
    if not _member(group):
        return None
    t = _dense(tensor)
    op, t = _premul(op, t, copy=False)
    return _then(_c.all_reduce(t, op, group, async_op), lambda: _copy_into(tensor, t), [tensor])


def broadcast(tensor: Tensor, src: int | None = None, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy ``tensor`` of rank ``src`` into ``tensor`` of every rank (non-contiguous allowed)."""
    if not async_op:
        try:
            return _c.broadcast(tensor, src, group, group_src=group_src)  # the lean path
        except ValueError:  # raised before any communication
            if not _noncontiguous(tensor):
                raise
    _tensor(tensor, "tensor")
    if not _member(group):
        return None
    t = _dense(tensor)
    return _then(_c.broadcast(t, src, group, async_op, group_src),
                 lambda: _copy_into(tensor, t), [tensor])


def reduce(tensor: Tensor, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` over the group into ``tensor`` of rank ``dst`` (others unchanged)."""
    _tensor(tensor, "tensor")
    if not _member(group):
        return None
    t = _dense(tensor)
    op, t = _premul(op, t, copy=True)  # a copy: the other ranks' tensors stay as they were
    pg = resolve(group)
    assert pg is not None
    root = _c._root(pg, dst, group_dst, "dst")
    after = (lambda: _copy_into(tensor, t)) if pg.rank() == root else (lambda: None)
    return _then(_c.reduce(t, dst, op, group, async_op, group_dst), after, [tensor])


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Work | None:
    """``tensor_list[i]`` of every rank gets ``tensor`` of group rank ``i``."""
    _tensor(tensor, "tensor")
    if not _member(group) or not isinstance(tensor_list, (list, tuple)):
        return _c.all_gather(tensor_list, tensor, group, async_op)  # (its errors)
    outs = [_dense(t) if isinstance(t, Tensor) else t for t in tensor_list]

    def after() -> None:
        for o, t in zip(tensor_list, outs):
            _copy_into(o, t)

    return _then(_c.all_gather(outs, _dense(tensor), group, async_op), after, list(tensor_list))


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """``output_tensor`` gets every rank's ``input_tensor``, in rank order (either may be
    non-contiguous)."""
    if not (_noncontiguous(output_tensor) or _noncontiguous(input_tensor)) or not _member(group):
        return _outputs(_c.all_gather_into_tensor(output_tensor, input_tensor, group, async_op),
                        [output_tensor])
    out = _dense(output_tensor)
    work = _c.all_gather_into_tensor(out, _dense(input_tensor), group, async_op)
    return _then(work, lambda: _copy_into(output_tensor, out), [output_tensor])


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: Any = ReduceOp.SUM,
                          group: Any = None, async_op: bool = False) -> Work | None:
    """Reduce ``input`` over the group; rank ``i`` gets the ``i``-th chunk in ``output`` (either
    may be non-contiguous; ``op`` may be ``_make_nccl_premul_sum(factor)``)."""
    if not _member(group):
        return _c.reduce_scatter_tensor(output, input, op, group, async_op)
    if isinstance(op, PremulSum) and isinstance(input, Tensor):
        op, input = _premul(op, _dense(input), copy=True)
    if not (_noncontiguous(output) or _noncontiguous(input)):
        return _outputs(_c.reduce_scatter_tensor(output, input, op, group, async_op), [output])
    out = _dense(output)
    work = _c.reduce_scatter_tensor(out, _dense(input), op, group, async_op)
    return _then(work, lambda: _copy_into(output, out), [output])


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group: Any = None, async_op: bool = False, group_dst: int | None = None
           ) -> Work | None:
    """Rank ``dst`` gets every rank's ``tensor`` in ``gather_list`` (given on ``dst`` only)."""
    _tensor(tensor, "tensor")
    if not _member(group):
        return None
    outs = [_dense(t) if isinstance(t, Tensor) else t for t in gather_list or []]

    def after() -> None:
        for o, t in zip(gather_list or [], outs):
            _copy_into(o, t)

    work = _c.gather(_dense(tensor), outs or gather_list, dst, group, async_op, group_dst)
    return _then(work, after, list(gather_list or []))


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group: Any = None, async_op: bool = False, group_src: int | None = None
            ) -> Work | None:
    """``tensor`` of group rank ``i`` gets ``scatter_list[i]`` of rank ``src``."""
    _tensor(tensor, "tensor")
    if not _member(group):
        return None
    ins = [_dense(t) if isinstance(t, Tensor) else t for t in scatter_list or []]
    t = _dense(tensor)
    work = _c.scatter(t, ins or scatter_list, src, group, async_op, group_src)
    return _then(work, lambda: _copy_into(tensor, t), [tensor])


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every rank of the group has reached this call."""
    return _outputs(_c.barrier(group, async_op, device_ids), [])


# ---------------------------------------------------------------- all to all
def _splits(sizes: Any, rows: int, n: int, what: str) -> list[int]:
    # (RuntimeError, as PyTorch's "Split sizes doesn't match total dim 0 size")
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise RuntimeError(f"{what} tensor's first dimension ({rows}) must be divisible by "
                               f"the group size ({n}) when no split sizes are given")
        return [rows // n] * n
    out = [int(s) for s in sizes]
    if len(out) != n:
        raise RuntimeError(f"{what}_split_sizes must have one entry per rank of the group: "
                           f"expected {n}, got {len(out)}")
    if any(s < 0 for s in out):
        raise RuntimeError(f"{what}_split_sizes must not be negative, got {out}")
    if sum(out) != rows:
        raise RuntimeError(f"Split sizes doesn't match total dim 0 size: {what}_split_sizes sum "
                           f"to {sum(out)}, but the {what} tensor's first dimension is {rows}")
    return out


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: Any = None,
                      async_op: bool = False) -> Work | None:
    """Split ``input`` along dim 0 (in equal parts, or by ``input_split_sizes``), send part ``i``
    to group rank ``i``, and concatenate what arrives, in rank order, into ``output`` (split by
    ``output_split_sizes``). ``input`` must be contiguous (as gloo's)."""
    _check_tensor(input, "input")
    _tensor(output, "output")
    pg = resolve(group)
    if pg is None:
        return None
    if output.dtype is not input.dtype:
        raise TypeError(f"output tensor must have the same type as input tensor: {output.dtype} "
                        f"vs {input.dtype}")
    n = pg.size()
    if input.dim() == 0 or output.dim() == 0:
        raise ValueError("all_to_all_single needs tensors of at least one dimension")
    in_rows, out_rows = input.shape[0], output.shape[0]
    in_row = input.numel() // in_rows if in_rows else 0
    out_row = output.numel() // out_rows if out_rows else 0
    ins = _splits(input_split_sizes, in_rows, n, "input")
    outs = _splits(output_split_sizes, out_rows, n, "output")
    if in_rows and out_rows and in_row != out_row:
        raise ValueError(f"input and output must have the same size past dim 0: "
                         f"{tuple(input.shape)} and {tuple(output.shape)}")
    item = input._v.dtype.itemsize
    # bytes, so that every dtype goes as MPI_BYTE (float16/bfloat16/bool have no MPI type)
    scounts = np.array([s * in_row * item for s in ins], np.int64)
    rcounts = np.array([s * out_row * item for s in outs], np.int64)
    sdispl = np.concatenate([[0], np.cumsum(scounts)[:-1]]).astype(np.int64)
    rdispl = np.concatenate([[0], np.cumsum(rcounts)[:-1]]).astype(np.int64)
    target = _dense(output)
    src = _st.read(input).view(np.uint8)
    dst_arr = _st.host_out(target)
    dst = dst_arr.view(np.uint8)
    if np.shares_memory(src, dst):
        src = src.copy()  # MPI forbids overlapping send and receive buffers
    MPI = mpi()
    h = _checks.header("all_to_all_single", None).copy()
    h[3] = _dtype_code(input)  # (the sizes differ from rank to rank: the dtype is checked)

    def issue(comm: Any) -> None:
        comm.Alltoallv([src, (scounts, sdispl), MPI.BYTE], [dst, (rcounts, rdispl), MPI.BYTE])

    def finish() -> None:
        _st.write_back(target, dst_arr)
        _copy_into(output, target)

    work = _run(pg, "all_to_all_single", h, issue, finish, async_op)
    return _outputs(work, [output])


def _dtype_code(t: Tensor) -> int:
    """The dtype field of a header (so that ranks passing different dtypes get an error)."""
    return [d.name for d in _dtype.ALL_DTYPES].index(t._v.dtype.name)


def all_to_all(output_tensor_list: list[Tensor], input_tensor_list: list[Tensor],
               group: Any = None, async_op: bool = False) -> Work | None:
    """``output_tensor_list[i]`` gets ``input_tensor_list[j]`` of group rank ``i``, where ``j`` is
    this rank's group rank (the tensors may differ in size from peer to peer)."""
    pg = resolve(group)
    for name, ts in (("output_tensor_list", output_tensor_list),
                     ("input_tensor_list", input_tensor_list)):
        if not isinstance(ts, (list, tuple)):
            raise TypeError(f"{name} must be a list of tensors, got {type(ts).__name__}")
        for i, t in enumerate(ts):
            _tensor(t, f"{name}[{i}]")
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all needs one tensor per rank of the group ({n}) in each list, "
                         f"got {len(output_tensor_list)} outputs and {len(input_tensor_list)} "
                         f"inputs")
    dtype = input_tensor_list[0].dtype
    for t in [*output_tensor_list, *input_tensor_list]:
        if t.dtype is not dtype:
            raise TypeError(f"all_to_all needs tensors of one dtype, got {dtype} and {t.dtype}")
    flat_in = _flat(input_tensor_list)
    with no_grad():
        flat_out = _creation.empty(sum(t.numel() for t in output_tensor_list), dtype=dtype,
                                   device=output_tensor_list[0].device)
    work = all_to_all_single(flat_out, flat_in, [t.numel() for t in output_tensor_list],
                             [t.numel() for t in input_tensor_list], group, async_op)

    def after() -> None:
        at = 0
        for o in output_tensor_list:
            _copy_into(o, flat_out[at:at + o.numel()])
            at += o.numel()

    return _then(work, after, list(output_tensor_list))


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: Any = ReduceOp.SUM,
                   group: Any = None, async_op: bool = False) -> Work | None:
    """Reduce the ranks' ``input_list`` elementwise; group rank ``i`` gets the reduction of
    ``input_list[i]`` in ``output``."""
    _tensor(output, "output")
    pg = resolve(group)
    if not isinstance(input_list, (list, tuple)):
        raise TypeError(f"input_list must be a list of tensors, got {type(input_list).__name__}")
    if pg is None:
        return None
    # (any layout: gloo takes non-contiguous inputs)
    _c._check_list(input_list, output, pg.size(), "input_list", check=_tensor, like_name="output")
    flat = _flat(input_list)
    op, flat = _premul(op, flat, copy=False)  # (a copy already)
    target = _dense(output)
    work = _c.reduce_scatter_tensor(target, flat, op, group, async_op)
    return _then(work, lambda: _copy_into(output, target), [output])


# ----------------------------------------------------------------- coalesced
def all_reduce_coalesced(tensors: Any, op: Any = ReduceOp.SUM, group: Any = None,
                         async_op: bool = False) -> Work | None:
    """``all_reduce`` of several tensors of one dtype in one message (deprecated in PyTorch,
    which warns so too)."""
    warnings.warn("`torch.distributed.all_reduce_coalesced` will be deprecated. If you must use "
                  "it, please revisit our documentation later at "
                  "https://pytorch.org/docs/main/distributed.html#collective-functions",
                  FutureWarning, stacklevel=2)
    ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    for i, t in enumerate(ts):
        _tensor(t, f"tensors[{i}]")
        if t.dtype is not ts[0].dtype:
            raise TypeError(f"all_reduce_coalesced needs tensors of one dtype, got "
                            f"{ts[0].dtype} and {t.dtype}")
    if not _member(group) or not ts:
        return None
    flat = _flat(ts)
    work = all_reduce(flat, op, group, async_op)

    def after() -> None:
        at = 0
        for t in ts:
            _copy_into(t, flat[at:at + t.numel()])
            at += t.numel()

    return _then(work, after, ts)


def all_gather_coalesced(output_tensor_lists: list[list[Tensor]], input_tensor_list: list[Tensor],
                         group: Any = None, async_op: bool = False) -> Work | None:
    """``output_tensor_lists[r][i]`` gets ``input_tensor_list[i]`` of group rank ``r``, in one
    message (deprecated in PyTorch, which warns so too)."""
    warnings.warn("`torch.distributed.all_gather_coalesced` will be deprecated. If you must use "
                  "it, please revisit our documentation later at "
                  "https://pytorch.org/docs/main/distributed.html#collective-functions",
                  FutureWarning, stacklevel=2)
    pg = resolve(group)
    if pg is None:
        return None
    if len(output_tensor_lists) != pg.size():
        raise ValueError(f"output_tensor_lists must have one list per rank of the group: expected "
                         f"{pg.size()}, got {len(output_tensor_lists)}")
    ins = [_tensor(t, f"input_tensor_list[{i}]") for i, t in enumerate(input_tensor_list)]
    for r, outs in enumerate(output_tensor_lists):
        if len(outs) != len(ins):
            raise ValueError(f"output_tensor_lists[{r}] has {len(outs)} tensors, but "
                             f"input_tensor_list has {len(ins)}")
        for i, (o, t) in enumerate(zip(outs, ins)):
            _tensor(o, f"output_tensor_lists[{r}][{i}]")
            if o.dtype is not t.dtype or o.numel() != t.numel():
                raise ValueError(f"output_tensor_lists[{r}][{i}] ({o.dtype}, {tuple(o.shape)}) "
                                 f"does not match input_tensor_list[{i}] ({t.dtype}, "
                                 f"{tuple(t.shape)})")
    if not ins:
        return None
    flat = _flat(ins)
    with no_grad():
        gathered = _creation.empty(pg.size() * flat.numel(), dtype=flat.dtype, device=flat.device)
    work = _c.all_gather_into_tensor(gathered, flat, group, async_op)

    def after() -> None:
        at = 0
        for outs in output_tensor_lists:
            for o in outs:
                _copy_into(o, gathered[at:at + o.numel()])
                at += o.numel()

    return _then(work, after, [o for outs in output_tensor_lists for o in outs])


# ------------------------------------------------------------ batched p2p
class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`: ``op`` is ``isend`` or
    ``irecv``, ``peer`` a global rank (``group_peer``: a rank of ``group``)."""

    def __init__(self, op: Callable, tensor: Tensor, peer: int | None = None, group: Any = None,
                 tag: int = 0, group_peer: int | None = None) -> None:
        if op not in (_c.isend, _c.irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``portagrad.distributed.isend`` or ``portagrad.distributed.irecv``.")
        _tensor(tensor, "tensor")
        if peer is None and group_peer is None:
            raise ValueError("P2POp needs peer or group_peer")
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group
        self.tag, self.group_peer = tag, group_peer

    def __repr__(self) -> str:
        return (f"P2POp(op={self.op.__name__}, peer={self.peer}, group_peer={self.group_peer}, "
                f"shape={tuple(self.tensor.shape)}, dtype={self.tensor.dtype})")


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Start every send and receive of ``p2p_op_list`` and return their works, in order (wait on
    each). The requests are all posted before any is waited on, so a ring exchange cannot
    deadlock."""
    if not isinstance(p2p_op_list, (list, tuple)) or not p2p_op_list or not all(
            isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``portagrad.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is _c.isend:
            w = _c.isend(p.tensor, p.peer, p.group, p.tag, p.group_peer)
        else:
            w = _c.irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer)
        if w is not None:
            works.append(w)
    return works
