"""Elementwise fusion: chains of elementwise primitives become one kernel.

``y = a * b + c`` is two primitives; run one by one they launch two kernels and write the
temporary ``a * b`` to memory and read it back. Here, a floating ``unary``/``binary`` on
contiguous operands of one size is not launched: it is recorded as a *node* of a pending group,
and its inputs that are outputs of pending nodes are referred to, not read. The group is
*flushed* (generated as one kernel, built once per structure, and enqueued) before anything else
touches the device: every other backend method that touches device memory, waits or records
events is decorated with :func:`flushes`, which flushes first, so reads, host copies, events and
non-fusable ops all see the results in queue order.

Outputs nobody can see are not written: a node holds only a *weak* reference to its output
buffer, so when the temporary ``a * b`` dies (its tensor is gone) before the flush, the fused
kernel computes it in a register and never stores it. A buffer that a pending node reads is held
alive until the flush, so the caching allocator cannot hand it out again.

Hazards, and how each is avoided:

* read after write: an input that is the output of a pending node is inlined only when it is the
  very same region (offset; everything is contiguous and of one size); any other view of that
  buffer flushes first;
* write after read, write after write: within the kernel every work-item loads all its inputs
  before it stores any output, and a buffer that is both read and written in a group must be
  used at one offset (again, the same region), so no work-item reads what another writes;
* broadcast inputs (views of the group's shape with stride-0 axes: a ``(C,)`` bias over
  ``(N, C)``, a ``(1, C, 1, 1)`` scale over NCHW, a one-element tensor) are read in place through
  at most :data:`MAX_BCAST_TERMS` index terms (see :func:`.fusion_kernels.fused_source`); their
  buffer must not be written by the group (each element is read by many work-items), and an
  input that is a pending output is flushed first rather than read through a broadcast;
* everything else (other sizes, devices or dtypes, other strided views, integer ops whose results
  depend on checks) flushes the group and runs unfused.

A group holds at most :data:`MAX_NODES` nodes, :data:`MAX_LEAVES` input buffers and
:data:`MAX_SCALARS` scalars (the kernel's argument list stays far below OpenCL's 1 KiB minimum).
A group of one node runs through the backend's ordinary (bundled, precompiled) kernels, so
single ops never compile a fused kernel. The results are bit-identical to unfused execution:
every intermediate is rounded to the dtype, and ``FP_CONTRACT`` is off.

``PORTAGRAD_OPENCL_FUSION=0`` turns fusion off.

Threads: the group is one per backend, shared by every thread, so that a thread that reads what
another thread's pending node writes (a parameter an optimizer thread updates, say) sees the
write: its flush enqueues the other thread's nodes too. The fuser's re-entrant ``_lock`` guards
the group (nodes, leaves, scalars, every buffer's ``lazy`` link) and the plan cache: recording a
node, flushing and resetting all happen under it. Only :attr:`Fuser.pending` is read without it
(see there). Lock order: the fuser's lock, then a device's launch lock or the allocator's, never
the other way round. Outputs are held weakly, and a weak reference can hand back a buffer whose
``__del__`` is running in another thread: a flush claims the outputs it writes under the
allocator's lock (see :meth:`.allocator.CachingAllocator._release`).
"""
from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from ... import _dtype
from ..interface import View
from .kernels import BINARY_VALID, UNARY_VALID, out_is_bool
from .allocator import DeviceBuffer
from .fusion_kernels import VEC_OPS, VEC_WIDTH, fused_source
from ..ufuncs import half_scalar_operands
from .launch import CONVERT

__all__ = [
    "MAX_BCAST_TERMS",
    "MAX_LEAVES",
    "MAX_NODES",
    "MAX_SCALARS",
    "STREAM_MIN",
    "Fuser",
    "flushes",
    "fusion_enabled",
]

MAX_NODES = 24
MAX_LEAVES = 16
MAX_SCALARS = 24
#: index terms (runs of axes of one stride) a broadcast input may need; more: not fused
MAX_BCAST_TERMS = 3
#: from this many elements a PoCL group of plain arithmetic runs 64-byte vectors with non-temporal
#: stores (see :func:`.fusion_kernels.fused_source`): outputs this large do not stay in cache
#: anyway, and skipping the read-for-ownership of every output line saves memory traffic
STREAM_MIN = 1 << 22

#: a fused group's scalar operand as its kernel argument (16-bit floats compute in float; a
#: 16-bit float's scalar is rounded to its type first where the unfused kernels round it)
_FLOAT_NP: dict[str, Any] = {"float32": np.float32, "float64": np.float64, "bfloat16": np.float32,
                             "float16": CONVERT["float16"]}
_F16 = _dtype.float16
_BF16 = _dtype.bfloat16


_NP_ARG = {"float32": np.float32, "float64": np.float64, "bfloat16": np.float32,
           "float16": np.float32}
# ops whose output dtype is the input dtype (comparisons and tests write bool: not fused)
_UNARY_OK = frozenset(op for op in UNARY_VALID["f"] if not out_is_bool(op))
_BINARY_OK = frozenset(op for op in BINARY_VALID["f"] if not out_is_bool(op))
_SCALAR_TYPES = (float, int, bool, np.floating, np.integer, np.bool_)


def broadcast_terms(shape: tuple, strides: tuple) -> tuple | None:
    """The index terms ``((div, mod, mul), ...)`` of a broadcast view: element ``j`` of the
    contiguous array of ``shape`` is at ``sum(((j // div) % mod) * mul)`` of the view. ``None``
    unless some axis longer than 1 has stride 0, no stride is negative and at most
    :data:`MAX_BCAST_TERMS` terms are needed (axes of one contiguous run share a term)."""
    terms: list[tuple[int, int, int]] = []
    inner, zero = 1, False
    for size, st in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if st < 0:
            return None
        if st == 0:
            zero = True
        elif terms and terms[-1][0] * terms[-1][1] == inner and st == terms[-1][2] * terms[-1][1]:
            d, m, u = terms[-1]  # continues the previous run of axes
            terms[-1] = (d, m * size, u)
        else:
            terms.append((inner, size, st))
        inner *= size
    if not zero or len(terms) > MAX_BCAST_TERMS:
        return None
    return tuple(terms)


def fusion_enabled() -> bool:
    """Whether ``PORTAGRAD_OPENCL_FUSION`` leaves fusion on (the default)."""
    return os.environ.get("PORTAGRAD_OPENCL_FUSION", "1").strip().lower() not in ("0", "false", "no", "off")


class _Node:
    """One pending primitive: ``op`` over ``args`` (node index >= 0, leaf ``-1 - k``, or scalar
    ``("s", k)``), writing the buffer behind ``ref`` at ``off`` unless superseded (``store``).

    ``dead``, ``claimed`` and ``parked`` are the node's side of the hand-over with a dying output
    buffer (see :meth:`.allocator.CachingAllocator._release`), read and written under the
    allocator's lock only: ``dead`` (the buffer went back to the cache: never write it),
    ``claimed`` (a flush is enqueueing the write) and ``parked`` (the memory of a buffer that
    died while claimed, which the flush returns after the enqueue)."""

    __slots__ = ("args", "claimed", "dead", "idx", "off", "op", "parked", "ref", "shape", "src",
                 "store", "strides")

    def __init__(self, op: str, args: tuple, ref: Any, off: int, idx: int, src: tuple | None,
                 shape: tuple, strides: tuple) -> None:
        self.op, self.args, self.ref, self.off, self.idx = op, args, ref, off, idx
        self.store = True
        self.src, self.shape, self.strides = src, shape, strides
        self.dead = self.claimed = False
        self.parked: tuple | None = None


class _Restart(Exception):
    """The group had to be flushed half-way through recording a node: record it again."""


class Fuser:
    """The pending group of one backend (all its devices: a group lives on one device)."""

    def __init__(self, backend: Any, eager_unary: Callable[..., None],
                 eager_binary: Callable[..., None], chunk: Callable[[int, Any], int]) -> None:
        self._be = backend
        self._eager_unary = eager_unary
        self._eager_binary = eager_binary
        self._chunk = chunk
        # per device index: the dtypes that fuse there (float64 only with cl_khr_fp64)
        self._ok: dict[int, frozenset] = {}
        self._plans: dict[tuple, tuple] = {}
        # one group per backend, so threads that share the backend take turns; re-entrant, and
        # _gen (bumped by every flush) lets a recording notice a flush from within itself
        self._lock = threading.RLock()
        self._gen = 0
        self.launches = 0  # fused kernels enqueued (for tests and benchmarks)
        self.stores = 0  # outputs written by flushes (dead temporaries are not)
        # flushes in progress: _flush empties the group before it enqueues the group's kernels,
        # so a thread that finds the group empty must still wait while this is non-zero, or its
        # read is enqueued ahead of the kernels computing what it reads
        self._flushing = 0
        self._reset()

    def _reset(self) -> None:
        self.nodes: list[_Node] = []
        self._leaves: list[tuple[DeviceBuffer, int]] = []
        self._leaf_bc: list[tuple | None] = []  # per leaf: broadcast terms, None if contiguous
        self._leaf_index: dict[tuple, int] = {}  # (id, offset[, broadcast terms]) -> leaf
        self._leaf_off: dict[int, int] = {}  # id(buffer) -> its one offset, or -1 for several
        self._scalars: list[Any] = []
        self._scalar_index: dict[bytes, int] = {}
        self._n = -1
        self._dev = -1
        self._dt: Any = None
        self._vec_ops = True  # every op so far in VEC_OPS

    # -------------------------------------------------------------- recording
    def add(self, op: str, a: Any, b: Any, out: View, unary: bool) -> bool:
        """Record ``out = op(a[, b])`` in the group; ``False`` when it cannot fuse (the group is
        then flushed and the caller runs the primitive eagerly)."""
        if op not in (_UNARY_OK if unary else _BINARY_OK):
            self.flush()
            return False
        with self._lock:
            try:
                return self._add(op, a, b, out, unary)
            except _Restart:  # the group was flushed half-way: record again, into the empty group
                try:
                    return self._add(op, a, b, out, unary)
                except _Restart:  # only if flushed half-way again: give up fusing this one
                    self.flush()
                    return False

    def _decline(self) -> bool:
        self.flush()
        return False

    def _conflict(self) -> None:
        self.flush()
        raise _Restart

    def _operand(self, x: Any, dt: Any, shape: tuple, n: int) -> Any:
        """The code of input ``x`` (see :class:`_Node`), registering it; ``None``: not fusable."""
        if x.__class__ is View:
            xb = x.buffer
            if x.dtype is not dt or xb.__class__ is not DeviceBuffer:
                return None
            if x.shape != shape and x.numel != n:
                return None
            c = x.cache
            if c is None:
                c = x.cache = x.is_contiguous()
            if not c:
                return self._broadcast_operand(x, xb, shape)
            nd = xb.lazy
            if nd is not None:  # written by a pending node: the same region is inlined
                if nd.off != x.offset:
                    self._conflict()
                return nd.idx
            key = (id(xb), x.offset)
            k = self._leaf_index.get(key)
            if k is None:
                if len(self._leaves) >= MAX_LEAVES:
                    self._conflict()
                k = len(self._leaves)
                self._leaves.append((xb, x.offset))
                self._leaf_bc.append(None)
                self._leaf_index[key] = k
                prev = self._leaf_off.get(key[0])
                self._leaf_off[key[0]] = x.offset if prev is None or prev == x.offset else -1
            return -1 - k
        if isinstance(x, _SCALAR_TYPES):
            v = _FLOAT_NP[dt.name](x)
            key = v.tobytes()  # equal bits share one kernel argument (not 0.0 and -0.0)
            k = self._scalar_index.get(key)
            if k is None:
                if len(self._scalars) >= MAX_SCALARS:
                    self._conflict()
                k = self._scalar_index[key] = len(self._scalars)
                self._scalars.append(v)
            return ("s", k)
        return None

    def _broadcast_operand(self, x: View, xb: DeviceBuffer, shape: tuple) -> Any:
        """The leaf code of a broadcast view ``x`` (see :func:`broadcast_terms`), or ``None``."""
        if x.shape != shape:
            return None
        bc = broadcast_terms(shape, x.strides)
        if bc is None:
            return None
        if xb.lazy is not None:  # a pending output read at other positions: flush it first
            self._conflict()
        key = (id(xb), x.offset, bc)
        k = self._leaf_index.get(key)
        if k is None:
            if len(self._leaves) >= MAX_LEAVES:
                self._conflict()
            k = len(self._leaves)
            self._leaves.append((xb, x.offset))
            self._leaf_bc.append(bc)
            self._leaf_index[key] = k
            self._leaf_off[id(xb)] = -1  # no node of the group may write this buffer
        return -1 - k

    def _add(self, op: str, a: Any, b: Any, out: View, unary: bool) -> bool:
        buf = out.buffer
        if buf.__class__ is not DeviceBuffer:
            return self._decline()
        dt = out.dtype
        dev = buf.device
        ok = self._ok.get(dev)
        if ok is None:
            # float64 fuses only where the device has it; complex never does (the fused
            # codegen computes real scalars: a complex output, or a complex input of abs into a
            # real output, fails the dtype tests here and in _operand, so the op runs unfused)
            fp64 = self._be.device(dev).fp64
            ok = self._ok[dev] = frozenset([_dtype.float32, _dtype.bfloat16, _dtype.float16]
                                           + ([_dtype.float64] if fp64 else []))
        c = out.cache
        if c is None:
            c = out.cache = out.is_contiguous()
        if dt not in ok or not c:
            return self._decline()
        shape = out.shape
        n = out.numel
        if n == 0:
            return self._decline()
        nodes = self.nodes
        if nodes and (n != self._n or dev != self._dev or dt is not self._dt):
            self.flush()
            nodes = self.nodes
        gen = self._gen
        if (dt is _F16 or dt is _BF16) and not unary:
            # a 16-bit float's scalar operand as the unfused kernels take it (PyTorch's rule)
            a, b = half_scalar_operands(op, a, b, dt.name)
        x = self._operand(a, dt, shape, n)
        if x is None:
            return self._decline()
        if unary:
            args: tuple = (x,)
        else:
            y = self._operand(b, dt, shape, n)
            if y is None:
                return self._decline()
            args = (x, y)
        if self._gen != gen:  # flushed meanwhile (a finalizer calling the backend, say)
            raise _Restart
        # the output: a buffer read or written in this group must be used at one offset
        if self._leaf_off:
            lo = self._leaf_off.get(id(buf))
            if lo is not None and lo != out.offset:
                self._conflict()
        prev = buf.lazy
        if prev is not None:
            if prev.off != out.offset:
                self._conflict()
            prev.store = False  # overwritten by this node before anyone could read it
        # the inputs themselves are kept only for a replay through the ordinary kernels, which
        # needs no inlined input (keeping one would keep its buffer alive, and so stored)
        src = None if (x.__class__ is int and x >= 0) or (not unary and y.__class__ is int and y >= 0) \
            else (a, b)
        node = _Node(op, args, weakref.ref(buf), out.offset, len(nodes), src, shape, out.strides)
        if not nodes:
            self._n, self._dev, self._dt = n, dev, dt
        if op not in VEC_OPS:
            self._vec_ops = False
        buf.lazy = node
        nodes.append(node)
        if len(nodes) >= MAX_NODES:
            self.flush()
        return True

    def discard(self, buf: Any) -> None:
        """The contents ``buf`` holds now will never be read: a pending node writing it need not
        store (as when its tensor dies before the flush; a captured step's replay says so of a
        temporary after its last launch, since the replay keeps every buffer alive)."""
        with self._lock:
            nd = getattr(buf, "lazy", None)
            if nd is not None:
                # not stored, and no longer the buffer's pending write: nothing reads this value
                # again, so no later node may inline it (a flush clears only stored outputs' links)
                nd.store = False
                buf.lazy = None

    # --------------------------------------------------------------- flushing
    @property
    def pending(self) -> bool:
        """Whether the group holds work or another thread is enqueueing it (read without the lock:
        ``_flush`` raises ``_flushing`` before it empties the group)."""
        return bool(self.nodes) or self._flushing > 0

    def flush(self) -> None:
        """Enqueue the pending group (nothing when it is empty or all its outputs are dead)."""
        if not self.pending:
            if self._leaves or self._scalars:  # registered by a primitive that then declined
                with self._lock:
                    # checked again under the lock: another thread may have recorded a node over
                    # these leaves since; resetting then would drop its node while its output
                    # buffer still points at it (``lazy``)
                    if not self.nodes and not self._flushing:
                        self._reset()
            return
        with self._lock:  # waits for a flush in progress in another thread
            self._flush()

    def _flush(self) -> None:
        if not self.nodes:  # another thread flushed first
            return
        self._flushing += 1
        try:
            self._flush_group()
        finally:
            self._flushing -= 1

    def _flush_group(self) -> None:
        nodes, leaves, scalars, leaf_bc = self.nodes, self._leaves, self._scalars, self._leaf_bc
        n, dev, dt, vec_ops = self._n, self._dev, self._dt, self._vec_ops
        self._reset()  # first: whatever runs below (a replay) sees an empty group
        self._gen += 1
        alloc = self._be.device(dev).allocator
        # Claim the outputs to store. ``nd.ref()`` can return a buffer whose ``__del__`` is
        # running in another thread (CPython clears weak references after ``__del__``); the
        # allocator's lock orders this against that ``__del__`` (see CachingAllocator._release).
        live = []
        with alloc.lock:
            for nd in nodes:
                if nd.store and not nd.dead:
                    b = nd.ref()
                    if b is not None:
                        nd.claimed = True
                        live.append((nd, b))
        if not live:
            return  # every output died unseen: nothing to compute
        try:
            if len(live) == 1 and live[0][0].src is not None:
                self._replay(live[0][0], live[0][1], dt)
                self.stores += 1
            else:
                self._launch(nodes, live, leaves, leaf_bc, scalars, n, dev, dt, vec_ops)
        finally:
            parked = []
            with alloc.lock:  # enqueued: the outputs are no longer pending
                for nd, b in live:
                    nd.claimed = False
                    if b.lazy is nd:
                        b.lazy = None
                    if nd.parked is not None:
                        parked.append(nd.parked)
                        nd.parked = None
            for mem, size in parked:  # died while claimed: back now that the write is enqueued
                alloc.put_back(mem, size)

    def _replay(self, nd: _Node, buf: DeviceBuffer, dt: Any) -> None:
        """A group that is one primitive: run it with the ordinary kernels."""
        out = View(buf, nd.off, nd.shape, nd.strides, dt)
        assert nd.src is not None  # the caller replays only nodes that kept their inputs
        a, b = nd.src
        if len(nd.args) == 1:
            self._eager_unary(nd.op, a, out)
        else:
            self._eager_binary(nd.op, a, b, out)

    def _launch(self, nodes: list[_Node], live: list, leaves: list, leaf_bc: list, scalars: list,
                n: int, dev_index: int, dt: Any, vec_ops: bool) -> None:
        dev = self._be.device(dev_index)
        nterms = tuple([-1 if b is None else len(b) for b in leaf_bc])
        bcast = any(t >= 0 for t in nterms)
        stream = (vec_ops and not bcast and n >= STREAM_MIN
                  and self._streamable(dev, dt, live, leaves))
        # one cached plan per group signature: the nodes' ops and operands, which are stored and
        # how many index terms each broadcast input has
        sig = (dev_index, dt, dev.ew_style, stream, tuple([(nd.op, nd.args) for nd in nodes]),
               tuple([nd.idx for nd, _ in live]), nterms)
        plan = self._plans.get(sig)
        if plan is None:
            if len(self._plans) >= 4096:
                self._plans.clear()
            plan = self._plans[sig] = self._plan(nodes, live, dev_index, dt, stream, nterms)
        kern, lock, queue, style, ch_dev, leaf_order, scal_order = plan
        if style == "cl":
            ch = self._chunk(n, ch_dev)
            kargs: list[Any] = [n, ch]
            gs, ls = (-(-n // ch),), None
        else:
            kargs = [n]
            gs, ls = (-(-n // ch_dev) * ch_dev,), (ch_dev,)
        for nd, b in live:
            kargs += (b.mem, nd.off)
        for k in leaf_order:
            lb, lo = leaves[k]
            kargs += (lb.mem, lo)
        if bcast:
            for k in leaf_order:
                for term in leaf_bc[k] or ():
                    kargs += term
        for k in scal_order:
            kargs.append(scalars[k])
        with lock:  # the device's launch lock (see .devices.Kernel)
            kern(queue, gs, ls, *kargs)
        self.launches += 1
        self.stores += len(live)

    @staticmethod
    def _streamable(dev: Any, dt: Any, live: list, leaves: list) -> bool:
        """Whether the vector/non-temporal loop applies: a PoCL CPU device (the builtin is
        clang's), loop style, and every operand 64-byte aligned (buffers are aligned to
        ``mem_base_addr_align``; offsets must be multiples of the vector width)."""
        if dev.ew_style != "loop" or not dev.is_pocl or dt.name not in VEC_WIDTH:
            return False
        w = VEC_WIDTH[dt.name]
        if dev.mem_align % (w * dt.itemsize):
            return False
        return all(nd.off % w == 0 for nd, _ in live) and all(off % w == 0 for _, off in leaves)

    def _plan(self, nodes: list[_Node], live: list, dev_index: int, dt: Any, stream: bool,
              nterms: tuple = ()) -> tuple:
        """Kernel and argument order for a group signature: the nodes the live outputs need
        (dead nodes feeding nobody are dropped), renumbered, leaves and scalars in first use."""
        need = [False] * len(nodes)
        for nd, _ in live:
            need[nd.idx] = True
        for i in range(len(nodes) - 1, -1, -1):
            if need[i]:
                for x in nodes[i].args:
                    if x.__class__ is int and x >= 0:
                        need[x] = True
        store_slot = {nd.idx: s for s, (nd, _) in enumerate(live)}
        new_idx: dict[int, int] = {}
        leaf_map: dict[int, int] = {}
        scal_map: dict[int, int] = {}
        prog: list[tuple[str, tuple, int]] = []
        for i, nd in enumerate(nodes):
            if not need[i]:
                continue
            args: list[Any] = []
            for x in nd.args:
                if x.__class__ is tuple:
                    args.append(("s", scal_map.setdefault(x[1], len(scal_map))))
                elif x < 0:
                    args.append(-1 - leaf_map.setdefault(-1 - x, len(leaf_map)))
                else:
                    args.append(new_idx[x])
            new_idx[i] = len(prog)
            prog.append((nd.op, tuple(args), store_slot.get(i, -1)))
        dev = self._be.device(dev_index)
        style = "cl" if dev.ew_style == "loop" else "g"
        dtn = dt.name
        npt = _NP_ARG[dtn]
        nout, nleaf, nscal = len(live), len(leaf_map), len(scal_map)
        order = sorted(leaf_map, key=leaf_map.__getitem__)
        bc = tuple([None if nterms[k] < 0 else nterms[k] for k in order]) if nterms else ()
        nbc = 3 * sum(t or 0 for t in bc)

        def types() -> list:
            return ([np.int64] * (2 if style == "cl" else 1) + [None, np.int64] * nout
                    + [None, np.int64] * nleaf + [np.int64] * nbc + [npt] * nscal)

        key = ("fused", dtn, style, stream, tuple(prog), bc)
        kern = dev.kernel(key, "pg_fused",
                          lambda: fused_source(dtn, style, prog, nout, nleaf, nscal, stream, bc),
                          [dtn], types)
        return (kern.cl, kern.lock, dev.queue, style, dev if style == "cl" else dev.local_size,
                order, sorted(scal_map, key=scal_map.__getitem__))


_Method = TypeVar("_Method", bound=Callable[..., Any])


def flushes(method: _Method) -> _Method:
    """Decorator of a backend method that must see the device in queue order: the backend's
    pending fused group (``self._fz``, ``None`` with fusion off) is flushed before the method runs.

    Every method that reads or writes device memory, waits, records or queries events carries it;
    ``unary``/``binary`` record into the group instead, and methods that touch no device memory
    (``allocate``, ``device``, ``memory_stats``, ...) need not flush."""

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        fz = self._fz
        if fz is not None and fz.pending:
            fz.flush()
        return method(self, *args, **kwargs)

    return cast(_Method, functools.update_wrapper(call, method))
