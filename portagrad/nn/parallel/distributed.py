"""``nn.parallel.DistributedDataParallel``: one model replica per process, gradients averaged by
bucketed all-reduces that overlap backward (Li et al., "PyTorch Distributed", VLDB 2020).

At construction the ranks check that they wrap the same model (one allgather of a fingerprint of
the parameters' shapes and dtypes) and rank 0's parameters and buffers are broadcast, so every rank
starts equal. Parameters are assigned to buckets in reverse registration order (the order in which
backward usually produces their gradients), by device and dtype, at most ``bucket_cap_mb`` each
(the first one 1 MiB, to start communicating early). A post-accumulate-grad hook on each parameter
copies its gradient into its bucket; when a bucket is complete it is handed to the process
group's communication thread as an asynchronous all-reduce, while backward goes on computing.
Buckets are launched strictly in bucket order, so every rank issues the same collectives in the same
order whatever order its gradients arrive in. An end-of-backward callback (``queue_callback``)
waits for the buckets and writes the averaged gradients back into ``.grad``: ``backward()``
returns with the gradients reduced.

Device tensors (OpenCL or a third-party backend) are staged through the host with the backend
contract's primitives: each bucket is a flat device tensor the gradients are copied into on the
device, read with one ``to_host`` when complete, reduced by MPI into a pinned host buffer, and copied
back with a non-blocking ``from_host`` -- the device-to-host copy of one bucket overlaps the
reduction of the previous ones.
"""
from __future__ import annotations

import contextlib
import sys
import time
import weakref
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ... import _device, _raw
from ..._creation import empty, zeros
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.engine import queue_callback
from ...autograd.function import AccumulateGrad
from ...distributed import _staging as _st
from ...distributed._group import ProcessGroup, Work
from ...distributed._mpi import mpi
from ...distributed._world import resolve
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
_SWITCH_INTERVAL = 2e-4  # seconds: Python's thread switch interval during a synced backward


class _Bucket:
    """A contiguous run of parameters whose gradients are reduced together."""

    def __init__(self, index: int, params: list[int], numels: list[int], device: Any,
                 dtype: Any, host: bool) -> None:
        self.index = index
        self.params = params
        self.offsets = list(np.cumsum([0] + numels[:-1]))
        self.numels = numels
        self.total = int(sum(numels))
        self.dtype = dtype
        self.host = host
        if host:  # numpy backend: the bucket is a host array MPI reduces in place
            self.array = np.zeros(self.total, dtype.numpy)
        else:  # a flat device tensor, and the pinned buffer MPI writes the result into
            self.flat = zeros(self.total, dtype=dtype, device=device)
            self.array = _st.pool.take(self.total * dtype.itemsize, dtype.numpy)
        self.pending = 0
        self.work: Work | None = None


def _fingerprint(params: Sequence[Tensor]) -> np.ndarray:
    text = ";".join(f"{tuple(p.shape)}:{p.dtype}" for p in params)
    return np.array([len(params), zlib.crc32(text.encode())], np.int64)


def _tensors_in(obj: Any) -> Iterator[Tensor]:
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)


class DistributedDataParallel(Module):
    """Data parallelism across processes (``torch.nn.parallel.DistributedDataParallel``).

    Every rank wraps a replica of the same model; the gradients ``backward()`` leaves in ``.grad``
    are the average over the ranks. ``no_sync()`` skips the reduction for gradient accumulation;
    ``find_unused_parameters=True`` allows parameters that take no part in a forward pass (they are
    then reduced as zeros, or left alone when no rank used them). ``broadcast_buffers`` copies rank
    0's buffers (e.g. BatchNorm statistics) to every rank before each forward."""

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0, broadcast_buffers: bool = True,
                 process_group: Any = None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params: Any = None, param_to_hook_all_reduce: Any = None,
                 mixed_precision: Any = None, device_mesh: Any = None) -> None:
        super().__init__()
        for name, val in (("gradient_as_bucket_view", gradient_as_bucket_view),
                          ("static_graph", static_graph),
                          ("delay_all_reduce_named_params", delay_all_reduce_named_params),
                          ("param_to_hook_all_reduce", param_to_hook_all_reduce),
                          ("mixed_precision", mixed_precision), ("device_mesh", device_mesh)):
            if val:
                raise NotImplementedError(f"DistributedDataParallel({name}=...) is not supported "
                                          f"by portagrad")
        pg = resolve(process_group)
        if pg is None:
            raise ValueError("DistributedDataParallel needs a process group this rank belongs to")
        self.process_group: ProcessGroup = pg
        self.module = module
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        devices = {p.device for p in params}
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel's module must live on one device, found "
                             f"{sorted(map(str, devices))}")
        self.device = next(iter(devices))
        self.device_ids = self._check_device_ids(device_ids)
        self.output_device = output_device
        self._params = params
        cap = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        if cap <= 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.bucket_bytes_cap = int(cap * 1024 * 1024)
        self._verify_same_model()
        self._sync_states([*params, *module.buffers()])
        self._buckets, self._where = self._build_buckets()
        me = weakref.ref(self)
        self._hooks = [p.register_post_accumulate_grad_hook(self._hook(me, i))
                       for i, p in enumerate(params)]
        self._armed = False  # a forward with grad sync ran: the next backward reduces
        self._started = False
        self._ready: set[int] = set()
        self._unused: list[int] = []
        self._next_bucket = 0
        self._pending_error: str | None = None
        self._stats = {"iterations": 0, "comm_seconds": 0.0, "hidden_seconds": 0.0,
                       "wait_seconds": 0.0, "backward_seconds": 0.0,
                       "buckets": len(self._buckets)}
        self._t_first_hook = 0.0
        self._switch = sys.getswitchinterval()

    # --------------------------------------------------------------- construction
    def _check_device_ids(self, device_ids: Sequence[Any] | None) -> list[Any] | None:
        if device_ids is None:
            return None
        if self.device.type == "cpu":
            raise ValueError(f"DistributedDataParallel device_ids and output_device arguments only "
                             f"work with single-device accelerator modules, but got device_ids "
                             f"{list(device_ids)} for a module on {self.device}.")
        if len(device_ids) != 1:
            raise ValueError(f"device_ids can only be None or contain a single element, got "
                             f"{list(device_ids)}")
        d = device_ids[0]
        dev = _device.device(self.device.type, d) if isinstance(d, int) else _device.as_device(d)
        if dev != self.device:
            raise ValueError(f"device_ids[0]={d!r} ({dev}) is not the module's device {self.device}")
        return [dev]

    def _verify_same_model(self) -> None:
        pg = self.process_group
        mine = _fingerprint(self._params)
        everyone = np.empty((pg.size(), 2), np.int64)
        MPI = mpi()

        def body() -> None:
            pg._comm.Allgather([mine, MPI.INT64_T], [everyone, MPI.INT64_T])

        pg.run("DistributedDataParallel model check", body, None, False)
        for r, row in enumerate(everyone):
            if (row != mine).any():
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but rank {pg._ranks[pg.rank()]} has "
                    f"{mine[0]} parameters (shapes and dtypes fingerprint {mine[1]:#x}) while rank "
                    f"{pg._ranks[r]} has {row[0]} (fingerprint {row[1]:#x})")

    def _sync_states(self, tensors: Sequence[Tensor], async_op: bool = False) -> None:
        """Broadcast ``tensors`` from the group's first rank, one flat buffer per dtype."""
        pg = self.process_group
        if pg.size() == 1 or not tensors:
            return
        by_dtype: dict[Any, list[Tensor]] = {}
        for t in tensors:
            by_dtype.setdefault((t.device, t.dtype), []).append(t)
        for (_dev, dtype), ts in by_dtype.items():
            n = sum(t.numel() for t in ts)
            if pg.rank() == 0:
                buf = np.concatenate([_st.read(t.detach()) for t in ts]) if ts else np.empty(0)
            else:
                buf = np.empty(n, dtype.numpy)

            def body(b: np.ndarray = buf) -> None:
                pg._comm.Bcast(_st.wire(b), 0)  # (16-bit floats as their bits)

            pg.run("DistributedDataParallel broadcast", body, None, False)
            if pg.rank() != 0:
                off = 0
                for t in ts:
                    k = t.numel()
                    _st.write_back(t.detach(), buf[off:off + k], give=False)
                    off += k

    def _build_buckets(self) -> tuple[list[_Bucket], list[tuple[int, int]]]:
        order = list(range(len(self._params)))[::-1]
        buckets: list[_Bucket] = []
        where: list[tuple[int, int]] = [(0, 0)] * len(self._params)
        host = _st.is_host(self._params[0]) or self.device.type == "cpu"
        open_: dict[Any, tuple[list[int], int]] = {}

        def close(key: Any) -> None:
            idx, nbytes = open_.pop(key)
            b = _Bucket(len(buckets), idx, [self._params[i].numel() for i in idx], self.device,
                        key, host)
            for j, i in enumerate(idx):
                where[i] = (b.index, j)
            buckets.append(b)

        for i in order:
            p = self._params[i]
            key = p.dtype
            idx, nbytes = open_.get(key, ([], 0))
            idx.append(i)
            nbytes += p.numel() * p.dtype.itemsize
            open_[key] = (idx, nbytes)
            cap = _FIRST_BUCKET_BYTES if not buckets else self.bucket_bytes_cap
            if nbytes >= min(cap, self.bucket_bytes_cap):
                close(key)
        for key in list(open_):
            close(key)
        return buckets, where

    # ------------------------------------------------------------------ forward
    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Within this context backward only accumulates gradients locally; the first backward
        after it reduces the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._pending_error is not None:
            msg, self._pending_error = self._pending_error, None
            raise RuntimeError(msg)
        if self.broadcast_buffers and self.require_forward_param_sync:
            self._sync_states(list(self.module.buffers()))
        if self.device_ids is not None:
            dev = self.device_ids[0]
            inputs = tuple(x.to(dev) if isinstance(x, Tensor) else x for x in inputs)
            kwargs = {k: (v.to(dev) if isinstance(v, Tensor) else v) for k, v in kwargs.items()}
        out = self.module(*inputs, **kwargs)
        if grad_mode.is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(out)
        else:
            self._armed = False
        return out

    def _prepare_for_backward(self, out: Any) -> None:
        self._armed = True
        self._started = False
        self._ready = set()
        self._next_bucket = 0
        for b in self._buckets:
            b.pending = len(b.params)
            b.work = None
        self._unused = []
        if self.find_unused_parameters:
            reached = self._reachable_params(out)
            self._unused = [i for i, p in enumerate(self._params) if id(p) not in reached]

    @staticmethod
    def _reachable_params(out: Any) -> set[int]:
        """Ids of the leaves backward from ``out`` reaches (walking the recorded graph)."""
        seen: set[int] = set()
        found: set[int] = set()
        stack = [t._grad_fn for t in _tensors_in(out) if t._grad_fn is not None]
        for t in _tensors_in(out):
            if t._grad_fn is None and t._requires_grad:
                found.add(id(t))
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, AccumulateGrad):
                leaf = node.variable
                if leaf is not None:
                    found.add(id(leaf))
                continue
            stack.extend(n for n, _ in node._next if n is not None)
        return found

    # ----------------------------------------------------------------- backward
    @staticmethod
    def _hook(me: weakref.ref, i: int) -> Any:
        def hook(param: Tensor) -> None:
            self = me()
            if self is not None and self._armed:
                self._grad_ready(i)
        return hook

    def _grad_ready(self, i: int) -> None:
        if not self._started:
            self._started = True
            self._t_first_hook = time.perf_counter()
            # backward holds the GIL in Python between kernels: a short switch interval lets the
            # communication thread start a launched bucket within a fraction of a millisecond
            # instead of the default 5 ms (restored at the end of backward)
            self._switch = sys.getswitchinterval()
            sys.setswitchinterval(_SWITCH_INTERVAL)
            queue_callback(self._finalize)
            for j in self._unused:  # parameters this forward did not use count as zeros
                self._mark_ready(j)
        if i in self._ready:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. Parameter index {i} (shape "
                f"{tuple(self._params[i].shape)}) has been marked as ready twice: it was used "
                f"in more than one backward pass without a forward pass in between, or "
                f"reached through more than one autograd path of a reentrant backward.")
        self._mark_ready(i)

    def _mark_ready(self, i: int) -> None:
        self._ready.add(i)
        b_idx, j = self._where[i]
        b = self._buckets[b_idx]
        off, n = int(b.offsets[j]), b.numels[j]
        g = self._params[i]._grad
        if b.host:
            dst = b.array[off:off + n]
            if g is None:
                dst.fill(0)
            else:
                np.copyto(dst, g._storage.backend.host_array(g._v).reshape(-1))
        else:
            if g is None:
                _raw.fill(_raw.view(b.flat, (n,), (1,), off), 0)
            else:
                _raw.copy_region(b.flat, off, (n,), (1,), g.reshape(-1))
        b.pending -= 1
        while self._next_bucket < len(self._buckets) and \
                self._buckets[self._next_bucket].pending == 0:
            self._launch(self._buckets[self._next_bucket])
            self._next_bucket += 1

    def _launch(self, b: _Bucket) -> None:
        pg = self.process_group
        MPI = mpi()
        scale = 1.0 / pg.size()
        dst = b.array
        # the one device-to-host copy of the bucket, here in the calling thread: it overlaps
        # the reduction of the buckets launched before
        src = MPI.IN_PLACE if b.host else _st.read(b.flat)
        comm = pg._comm

        def body() -> None:
            if _st.is_half(dst):
                # MPI has no 16-bit float arithmetic: the rule of the collectives (reduce in
                # float32, average there, round once; docs/distributed.md)
                wide = (dst if src is MPI.IN_PLACE else src).astype(np.float32)
                comm.Allreduce(MPI.IN_PLACE, wide, MPI.SUM)
                np.multiply(wide, scale, out=wide)
                dst[...] = wide.astype(dst.dtype)
                return
            comm.Allreduce(src, dst, MPI.SUM)
            if scale != 1.0:
                np.multiply(dst, scale, out=dst, casting="unsafe")

        b.work = pg.run("DistributedDataParallel bucket all_reduce", body, None, True)

    def _finalize(self) -> None:
        self._armed = False
        sys.setswitchinterval(self._switch)
        t0 = time.perf_counter()
        launched = [b for b in self._buckets if b.work is not None]
        globally_used: np.ndarray | None = None
        if self.find_unused_parameters:
            used = np.ones(len(self._params), np.int32)
            used[self._unused] = 0
            pg = self.process_group
            MPI = mpi()
            w = pg.run("DistributedDataParallel unused parameters",
                       lambda: pg._comm.Allreduce(MPI.IN_PLACE, used, MPI.MAX), None, True)
            w.wait()
            globally_used = used
        comm = hidden = 0.0
        for b in launched:
            assert b.work is not None
            b.work.wait()
            w = b.work
            # the timeline: what part of the reduction ran while backward still computed
            comm += w.t_end - w.t_start
            hidden += max(0.0, min(w.t_end, t0) - w.t_start)
            self._write_back(b, globally_used)
        t1 = time.perf_counter()
        st = self._stats
        st["iterations"] += 1
        st["comm_seconds"] += comm
        st["hidden_seconds"] += hidden
        st["wait_seconds"] += t1 - t0
        st["backward_seconds"] += t0 - self._t_first_hook
        if len(launched) < len(self._buckets):
            missing = sorted(i for i in range(len(self._params)) if i not in self._ready)
            self._pending_error = (
                "Expected to have finished reduction in the prior iteration before starting a new "
                "one. This error indicates that your module has parameters that were not used in "
                "producing loss. You can enable unused parameter detection by passing the keyword "
                "argument `find_unused_parameters=True` to "
                "`portagrad.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss.\nParameter indices which did "
                f"not receive grad for rank {self.process_group._global_rank}: "
                f"{' '.join(map(str, missing))}")

    def _write_back(self, b: _Bucket, globally_used: np.ndarray | None) -> None:
        if not b.host:
            b.flat._storage.backend.from_host(b.flat._v, b.array, non_blocking=True)
        with grad_mode._no_grad():
            for j, i in enumerate(b.params):
                if globally_used is not None and not globally_used[i]:
                    continue  # no rank used it: its .grad stays as it was
                p = self._params[i]
                off, n = int(b.offsets[j]), b.numels[j]
                g = p._grad
                if b.host:
                    src = b.array[off:off + n].reshape(p._v.shape)
                    if g is None:
                        new = empty(p._v.shape, dtype=p.dtype, device=p.device)
                        np.copyto(new._storage.backend.host_array(new._v), src)
                        p._grad = new
                    else:
                        np.copyto(g._storage.backend.host_array(g._v), src)
                        _raw.bump(g)
                else:
                    piece = _raw.view(b.flat, p._v.shape, _raw.strides_for(p._v.shape), off)
                    if g is None:
                        p._grad = piece.clone()
                    else:
                        _raw.copy_(g, piece)

    # ------------------------------------------------------------------- extras
    def _get_ddp_logging_data(self) -> dict[str, Any]:
        """Counters of the gradient reduction (PyTorch has a method of this name), per backward on
        average, from a timeline of each bucket's reduction (when the communication thread
        started and finished it) against backward: the time from the first gradient to the end
        of backward's computation (``avg_backward_compute_time``), the time spent reducing
        (``avg_backward_comm_time``), the part of it that ran while backward still computed
        (``avg_backward_compute_comm_overlap_time``, and as a share, ``comm_hidden_fraction``),
        and how long backward then waited for the rest (``avg_backward_wait_time``)."""
        st = self._stats
        n = max(st["iterations"], 1)
        comm = st["comm_seconds"] / n
        return {"iterations": st["iterations"], "num_buckets": st["buckets"],
                "bucket_sizes": [b.total * b.dtype.itemsize for b in self._buckets],
                "avg_backward_compute_time": st["backward_seconds"] / n,
                "avg_backward_comm_time": comm,
                "avg_backward_compute_comm_overlap_time": st["hidden_seconds"] / n,
                "avg_backward_wait_time": st["wait_seconds"] / n,
                "comm_hidden_fraction": st["hidden_seconds"] / st["comm_seconds"]
                if st["comm_seconds"] > 0 else 0.0}

    def _reset_ddp_logging_data(self) -> None:
        for k in ("iterations", "comm_seconds", "hidden_seconds", "wait_seconds",
                  "backward_seconds"):
            self._stats[k] = 0 if k == "iterations" else 0.0
