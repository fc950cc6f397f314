"""Raw computations on tensors: allocate outputs and call backend primitives. No autograd here.

This module is the core's one door to a backend's compute primitives: ops, ``nn``, ``optim`` and
autograd call the functions here, never ``x._storage.backend.<primitive>`` themselves (only moving
data between host and device, in creation, conversion, serialization and multiprocessing, talks to a
backend directly). Every function takes tensors whose shapes, dtypes and devices the caller has
already reconciled (broadcast views, casts), and returns new tensors (or writes into ``out``). The
autograd layer (:mod:`portagrad._ops`) is built on these.

Raw views (:func:`view`, :func:`expand_view`) are tensors that share the storage and the version
counter of their source but have no autograd link to it (no ``_base``): for intermediate results of
a computation, never for what an op hands to the user as a view. :func:`bare_view` and
:func:`bare_expand` make the backend's :class:`View` alone, for the primitive calls themselves.

For code that chains many primitive calls on small arrays, where a Tensor and a Storage per
temporary cost as much Python time as the call itself, :class:`Scratch` gives bare-View temporaries
and the device's primitives on Views; keep it to where that was measured to pay (cross-entropy).

Writing into an existing tensor comes in two kinds. :func:`binary_`, :func:`fill_` and :func:`copy_`
change a tensor the caller (or the user) already holds: each bumps its version counter once, through
:func:`bump`, the one place a version changes, so autograd notices a saved tensor that was
overwritten. ``out=`` of :func:`binary`, :func:`binary_into`, :func:`copy_into`, :func:`fill`,
:func:`scatter` and :func:`random` do not bump: they fill fresh outputs and temporaries, or serve
the in-place rule of :mod:`portagrad.autograd.inplace`, which bumps once per in-place op itself.

Every storage :func:`new_on` allocates carries the allocation epoch current then: the ownership
stamp by which autograd knows a gradient's memory is its own (see :func:`open_epoch`).
"""
from __future__ import annotations

import functools
import itertools
import threading
from typing import Any
from collections.abc import Callable, Sequence

from . import _dtype
from ._shape import contiguous_strides
from ._storage import AllocatedStorage as _AllocatedStorage
from ._storage import Storage
from ._tensor import Tensor
from .autograd._profiling import STATE as _PROF
from .autograd._profiling import begin as _prof_begin
from .autograd._profiling import end as _prof_end
from .autograd.grad_mode import _flags
from .autograd.grad_mode import _inference_blocks as _INFERENCE_ACTIVE
from .backends.interface import Backend, View, decline_complex

__all__ = [
    "new_like", "new_on", "unary", "binary", "binary_views", "where", "cast", "contiguous",
    "copy_into", "copy_region", "fill", "reduce", "min_max", "min_max_later", "defers_checks",
    "arg_reduce", "cumsum", "bmm", "mm",
    "gather", "scatter",
    "sort", "random", "strides_for", "view", "expand_view", "bare_view", "bare_expand", "bump",
    "binary_", "binary_into", "fill_", "copy_", "axpy_", "lerp_", "addc_", "Scratch", "has_prims",
    "softmax", "conv2d", "conv2d_grad_input", "conv2d_grad_weight", "max_pool2d",
    "max_pool2d_grad_input", "forget_allocators", "open_epoch", "close_epoch", "owned", "moved", "disown",
    "softmax_backward", "layer_norm", "layer_norm_backward", "batch_norm", "batch_norm_backward",
    "cross_entropy", "cross_entropy_backward", "gelu", "gelu_backward", "attention",
    "attention_backward", "eigh", "svd", "eig",
    "fft_c2c", "fft_r2c", "fft_c2r",
]


# C-order strides by shape: a dict read inline on the operators' path is cheaper than a call
_STRIDES: dict[tuple[int, ...], tuple[int, ...]] = {}


def strides_for(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Cached C-order strides for ``shape``."""
    strides = _STRIDES.get(shape)
    if strides is None:
        strides = contiguous_strides(shape)
        if len(_STRIDES) < 4096:  # a bounded cache: shapes of a program repeat
            _STRIDES[shape] = strides
    return strides


# shape -> (C-order strides, number of elements): the operators' path reads both in one lookup
_LAYOUTS: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = {}


def _layout(shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """``(strides_for(shape), numel)``, cached as :func:`strides_for` is."""
    numel = 1
    for s in shape:
        numel *= s
    layout = (strides_for(shape), numel)
    if len(_LAYOUTS) < 4096:
        _LAYOUTS[shape] = layout
    return layout


def new_on(st: Storage, shape: tuple[int, ...], dtype: _dtype.dtype) -> Tensor:
    """A new contiguous, uninitialised tensor on the device of storage ``st`` (its storage stamped
    with the current allocation epoch: see :func:`open_epoch`)."""
    layout = _LAYOUTS.get(shape)
    if layout is None:
        layout = _layout(shape)
    strides, nbytes = layout
    nbytes *= dtype.itemsize
    backend = st.backend
    index = st.index
    try:
        alloc = _ARRAYS[backend]
    except (KeyError, TypeError):
        alloc = _array_allocator(backend)
    if alloc is not None:  # the backend's array is both the buffer and the view's handle
        buf = cache = alloc(index, nbytes, shape, dtype)
    else:
        buf = backend.allocate(index, nbytes)
        cache = None
    return _fresh(buf, nbytes, st.device, backend, index, _epoch.now if _OPEN else 0, shape,
                  strides, dtype, cache)


# backend -> its bound ``allocate_array`` (an optional method of the contract: see
# ``backends.interface``), else None: read for every result, so one dict read, not a getattr
_ARRAYS: dict[Any, Any] = {}
# backend -> its bound ``binary_array`` (optional too), else None: read by every operator
_BINARY_ARRAYS: dict[Any, Any] = {}
# backend -> its bound ``mm`` (optional: the 2-D product), else None: read by every mm
_MMS: dict[Any, Any] = {}


def _usable(backend: Any, name: str, beneath: tuple[str, ...], cache: dict[Any, Any]) -> Any:
    """``backend``'s method ``name`` if it has one and it sees what the methods ``beneath`` would,
    else None (remembered in ``cache``): None where one of them is shadowed on the object itself
    (the capture recorder notes allocations and launches that way), or redefined below ``name``
    (a subclass of the numpy backend with an ``allocate`` of its own that counts or limits
    memory): ``name`` would go around it."""
    fn = getattr(backend, name, None)
    if fn is not None:
        own = getattr(backend, "__dict__", {})
        levels = [vars(c) for c in type(backend).__mro__]

        def level(method: str) -> int:
            return next((i for i, d in enumerate(levels) if method in d), len(levels))

        if any(m in own or level(name) > level(m) for m in beneath):
            fn = None
    try:
        cache[backend] = fn
    except TypeError:  # an unhashable backend object: asked on every allocation
        pass
    return fn


def _array_allocator(backend: Any) -> Any:
    """``backend``'s ``allocate_array`` if it has one and may use it, else None: ``allocate``
    must see every allocation where it is redefined or shadowed (see :func:`_usable`)."""
    return _usable(backend, "allocate_array", ("allocate",), _ARRAYS)


def _binary_array(backend: Any) -> Any:
    """``backend``'s ``binary_array`` (``allocate_array`` and ``binary`` in one call) if it has
    one and may use it, else None: not where ``allocate``, ``allocate_array`` or ``binary`` is
    redefined below it or shadowed on the object (see :func:`_usable`)."""
    return _usable(backend, "binary_array", ("allocate", "allocate_array", "binary"),
                   _BINARY_ARRAYS)


def forget_allocators() -> None:
    """Drop what :func:`new_on` remembers of each backend's allocation methods: for code that
    shadows them on a live backend object (the capture recorder, on entry and on exit)."""
    _ARRAYS.clear()
    _BINARY_ARRAYS.clear()
    _MMS.clear()


_fresh = Tensor._fresh
_new = object.__new__


def new_like(t: Tensor, shape: tuple[int, ...] | None = None, dtype: Any = None) -> Tensor:
    """A new contiguous tensor on ``t``'s device (``t``'s shape and dtype unless given)."""
    return new_on(t._storage, t._v.shape if shape is None else shape,
                  t._v.dtype if dtype is None else dtype)


# ------------------------------------------------------------------------ ownership
# Which memory may a leaf's ``.grad`` take over without a copy? Memory nobody but the backward
# engine can reach. The first half of that is known here: every storage ``new_on`` allocates is
# stamped with the allocation epoch current at that moment, and the engine opens a new epoch for
# each backward run, so a storage stamped with the run's epoch is memory allocated during the run
# (never a tensor that existed before it: a saved tensor, a cached constant, anything the user
# holds). The engine clears the stamp (``disown``) of whatever it hands to code it does not trust
# (hooks, user-defined Functions); see ``autograd.engine`` and ``autograd.function._adoptable``.
# The current epoch is per thread: a backward run's formulas all run in its thread, and a tensor
# another thread allocates meanwhile (a data-loading or evaluation thread, another training loop)
# is no memory of that run's. With one process-wide value such tensors would carry the run's
# stamp, and runs ending in another order than they began would leave a stale epoch current.


class _Epoch(threading.local):
    def __init__(self) -> None:
        self.now = 0  # this thread's current allocation epoch (0: no backward run open)


_epoch = _Epoch()
# One entry per epoch open now, in any thread (list append and pop are atomic). While it is empty
# every thread's epoch is 0, and new_on does not read the thread-local (a third of a one-element
# op's Python time went to thread-local reads)
_OPEN: list[None] = []
_epochs = itertools.count(1)  # next() on it is atomic: no two runs get one epoch


def open_epoch() -> tuple[int, int]:
    """Start a new allocation epoch (the engine does, once per backward run): storages this thread
    allocates from now on carry it. Returns ``(epoch, previous)``; ``previous`` goes to
    :func:`close_epoch`.
    """
    _OPEN.append(None)  # before the thread-local changes: _OPEN empty implies epoch 0
    prev = _epoch.now
    now = _epoch.now = next(_epochs)  # never reused: a stale stamp can never match a later run
    return now, prev


def close_epoch(prev: int) -> None:
    """End the epoch :func:`open_epoch` started in this thread, making ``prev`` current again (a
    backward run inside a hook of another one hands the outer run its epoch back)."""
    _epoch.now = prev
    _OPEN.pop()


def owned(t: Tensor, epoch: int) -> bool:
    """Whether ``t``'s storage was allocated by :func:`new_on` during ``epoch`` and has not been
    reachable any other way since (no second tensor over it, no memory handed out, not disowned)."""
    return t._storage._epoch == epoch


def moved(t: Tensor, shape: tuple[int, ...], strides: tuple[int, ...]) -> Tensor:
    """``t``'s storage under a new shape, for a caller that drops ``t`` (a freshly allocated
    result it re-views before returning it): the ownership stamp moves to the new tensor instead
    of being cleared as it is for a second tensor over the same memory."""
    stamp = t._storage._epoch
    out = Tensor._make(t._storage, t._v.offset, shape, strides, t._v.dtype, t._vc)
    t._storage._epoch = stamp
    return out


def disown(t: Tensor) -> None:
    """Code other than the engine can now reach ``t``'s storage: it is never adopted."""
    t._storage._epoch = None


# ------------------------------------------------------------------------ raw views
def view(t: Tensor, shape: tuple[int, ...], strides: tuple[int, ...], offset: int | None = None
         ) -> Tensor:
    """A raw view of ``t``'s storage: ``shape`` and ``strides`` (in elements) from ``offset``
    (``t``'s own offset unless given). It shares ``t``'s version counter, so an in-place change
    through either is seen by autograd on both, and records nothing."""
    return Tensor._make(t._storage, t._v.offset if offset is None else offset, shape, strides,
                        t._v.dtype, t._vc)


def expand_view(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``t`` broadcast to ``shape`` as a raw view (stride 0 along new and size-1 dimensions)."""
    v = bare_expand(t._v, shape)
    return Tensor._make(t._storage, v.offset, v.shape, v.strides, v.dtype, t._vc)


def bare_view(v: View, shape: tuple[int, ...], strides: tuple[int, ...],
              offset: int | None = None) -> View:
    """Another :class:`View` of ``v``'s buffer (no tensor): what a primitive call needs when no
    tensor outlives it."""
    return View(v.buffer, v.offset if offset is None else offset, shape, strides, v.dtype)


def bare_expand(v: View, shape: tuple[int, ...]) -> View:
    """``v`` broadcast to ``shape`` as a :class:`View` (stride 0 along broadcast dimensions)."""
    lead = len(shape) - len(v.shape)
    strides = [0] * lead + [0 if n == 1 and m != 1 else st for n, m, st in
                            zip(v.shape, shape[lead:], v.strides)]
    return View(v.buffer, v.offset, tuple(shape), tuple(strides), v.dtype)


def _v(x: Any) -> Any:
    return x._v if isinstance(x, Tensor) else x


def unary(op: str, x: Tensor, out_dtype: Any = None) -> Tensor:
    out = new_on(x._storage, x._v.shape, x._v.dtype if out_dtype is None else out_dtype)
    x._storage.backend.unary(op, x._v, out._v)
    return out


def binary(op: str, a: Any, b: Any, out_dtype: _dtype.dtype, like: Tensor | None = None,
           out: Tensor | None = None) -> Tensor:
    """``op(a, b)`` for same-shape tensors (or scalars, or bare Views) of the computation dtype:
    a new tensor of ``like``'s shape (else the tensor operand's), or written into ``out``."""
    if isinstance(a, Tensor):
        t = a
        a = a._v
    else:
        t = b
    if isinstance(b, Tensor):
        b = b._v
    if out is None:
        if like is not None:
            t = like
        out = new_on(t._storage, t._v.shape, out_dtype)
    out._storage.backend.binary(op, a, b, out._v)
    return out


def binary_views(op: str, st: Storage, a: Any, b: Any, shape: tuple[int, ...],
                 dtype: _dtype.dtype) -> Tensor:
    """``op(a, b)`` into a new contiguous tensor of ``shape`` and ``dtype`` on ``st``'s device,
    for operands that are already Views (or scalars) of that shape and dtype: the operators'
    fast path, with nothing to look up but the backend. The backend's optional
    ``binary_array`` computes the result in one call where it has one and takes the case;
    else ``allocate_array`` (or ``allocate``) and ``binary``."""
    if _PROF.on:  # a profiler is recording (the one check on this path)
        rec = _prof_begin(op, "op", (a, b), st)
        out = new_on(st, shape, dtype)
        st.backend.binary(op, a, b, out._v)
        _prof_end(rec, out)
        return out
    # new_on, inlined: this is every operator's result, and a call costs as much as its body
    layout = _LAYOUTS.get(shape)
    if layout is None:
        layout = _layout(shape)
    strides, nbytes = layout
    nbytes *= dtype.itemsize
    backend = st.backend
    index = st.index
    try:
        fused = _BINARY_ARRAYS[backend]
    except (KeyError, TypeError):
        fused = _binary_array(backend)
    if fused is not None:  # allocate_array and binary in one call, unless the backend declines
        buf = fused(index, nbytes, shape, dtype, op, a, b)
        if buf is not None:
            # Tensor._fresh, inlined: its call (ten arguments, a frame) is a measurable part
            # of a one-element op. Keep the two in step (tests/test_core_overhead.py holds the
            # slots of both kinds of result equal)
            fst = _AllocatedStorage()
            fst.buffer = buf
            fst.nbytes = nbytes
            fst.device = st.device
            fst.backend = backend
            fst.index = index
            fst._epoch = _epoch.now if _OPEN else 0
            out = _new(Tensor)
            out._storage = fst
            out._v = v = _new(View)
            v.buffer = buf
            v.offset = 0
            v.shape = shape
            v.strides = strides
            v.dtype = dtype
            v.cache = buf
            out._vc = [0]
            out._requires_grad = False
            out._grad = None
            out._grad_fn = None
            out._output_nr = 0
            out._base = None
            out._hooks = None
            out._retains_grad = False
            out._accum = None
            out._inference = _flags.inference if _INFERENCE_ACTIVE else False
            out._view_ver = None
            out._views = None
            return out
    try:
        alloc = _ARRAYS[backend]
    except (KeyError, TypeError):
        alloc = _array_allocator(backend)
    if alloc is not None:
        buf = cache = alloc(index, nbytes, shape, dtype)
    else:
        buf = backend.allocate(index, nbytes)
        cache = None
    out = _fresh(buf, nbytes, st.device, backend, index, _epoch.now if _OPEN else 0, shape,
                 strides, dtype, cache)
    backend.binary(op, a, b, out._v)
    return out


def where(cond: Tensor, a: Any, b: Any, dtype: _dtype.dtype, like: Tensor) -> Tensor:
    out = new_on(like._storage, cond._v.shape, dtype)
    like._storage.backend.where(cond._v, _v(a), _v(b), out._v)
    return out


def cast(x: Tensor, dtype: _dtype.dtype) -> Tensor:
    """A contiguous copy of ``x`` converted to ``dtype``."""
    if dtype._kind == 3 and dtype is not x._v.dtype:
        decline_complex(x._storage.backend, dtype, x._storage.device)
    out = new_on(x._storage, x._v.shape, dtype)
    x._storage.backend.copy(x._v, out._v)
    return out


def contiguous(x: Tensor) -> Tensor:
    """``x`` itself if contiguous, else a contiguous copy."""
    if x._v.is_contiguous():
        return x
    return cast(x, x._v.dtype)


def copy_into(dst: Tensor, src: Tensor) -> None:
    """``dst[...] = src`` for equal shapes on one device (casts the dtype; no version bump: see
    :func:`copy_`)."""
    dst._storage.backend.copy(src._v, dst._v)


def copy_region(dst: Tensor, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
                src: Tensor) -> None:
    """Write ``src`` into the region ``(offset, shape, strides)`` of ``dst``'s storage, for a
    caller filling a fresh result piece by piece: no tensor is made for the region, so the result
    stays the only tensor over its memory (see :func:`owned`). No version bump."""
    dst._storage.backend.copy(src._v, bare_view(dst._v, shape, strides, offset))


def fill(out: Tensor, value: Any) -> Tensor:
    """Every element of ``out`` set to ``value`` (no version bump: see :func:`fill_`)."""
    out._storage.backend.fill(out._v, value)
    return out


# -------------------------------------------------------------------------- in place
def bump(t: Tensor) -> None:
    """Record an in-place change of ``t``: every tensor sharing its version counter (its views and
    aliases) sees the new version, and a saved tensor read back in backward raises."""
    t._vc[0] += 1


def binary_into(op: str, y: Tensor, x: Any) -> None:
    """``y = op(y, x)`` written into ``y`` WITHOUT a version bump: for the in-place rule
    (:func:`portagrad.autograd.inplace.inplace`), which bumps once per op itself. ``x``: a bare
    View of ``y``'s shape or a scalar of ``y``'s dtype kind."""
    v = y._v
    y._storage.backend.binary(op, v, x, v)


def binary_(op: str, y: Tensor, x: Any) -> Tensor:
    """``y = op(y, x)`` in place (``x``: a tensor of ``y``'s shape, a bare View of it, or a
    scalar of ``y``'s dtype kind); bumps ``y``'s version."""
    v = y._v
    y._storage.backend.binary(op, v, x._v if isinstance(x, Tensor) else x, v)
    bump(y)
    return y


def fill_(t: Tensor, value: Any) -> Tensor:
    """Every element of ``t`` set to ``value`` in place; bumps ``t``'s version."""
    t._storage.backend.fill(t._v, value)
    bump(t)
    return t


def copy_(dst: Tensor, src: Tensor) -> Tensor:
    """``dst[...] = src`` in place (equal shapes, one device, casting); bumps ``dst``'s version."""
    dst._storage.backend.copy(src._v, dst._v)
    bump(dst)
    return dst


def _temp(y: Tensor) -> View:
    """A bare contiguous View of ``y``'s shape and dtype on its device, for a temporary that no
    tensor outlives (no Storage or Tensor object: its buffer goes with the View)."""
    v = y._v
    st = y._storage
    nbytes = v.dtype.itemsize
    for d in v.shape:
        nbytes *= d
    return View(st.backend.allocate(st.index, nbytes), 0, v.shape, strides_for(v.shape), v.dtype)


# Update rules of optimizers, each a few primitive calls on the views themselves (a step costs a
# few microseconds of Python per parameter); ``x``, ``a``, ``b`` have ``y``'s shape and dtype and
# scalars are Python floats, computed in ``y``'s dtype.
def axpy_(y: Tensor, alpha: float, x: Tensor) -> Tensor:
    """``y += alpha * x`` in place (PyTorch's ``y.add_(x, alpha=alpha)``); bumps ``y``."""
    be = y._storage.backend
    v = y._v
    if alpha == 1:
        be.binary("add", v, x._v, v)
    elif alpha == -1:
        be.binary("sub", v, x._v, v)
    else:
        t = _temp(y)
        be.binary("mul", x._v, alpha, t)
        be.binary("add", v, t, v)
    bump(y)
    return y


def lerp_(y: Tensor, x: Tensor, w: float) -> Tensor:
    """``y += w * (x - y)`` in place with PyTorch's ``lerp_`` rounding; bumps ``y``."""
    be = y._storage.backend
    v = y._v
    t = _temp(y)
    be.binary("sub", x._v, v, t)
    if w < 0.5:
        be.binary("mul", t, w, t)
        be.binary("add", v, t, v)
    else:  # PyTorch's formula for weight >= 0.5: end - (end - start) * (1 - weight)
        be.binary("mul", t, 1 - w, t)
        be.binary("sub", x._v, t, v)
    bump(y)
    return y


def addc_(op: str, y: Tensor, a: Tensor, b: Tensor, value: float) -> Tensor:
    """``y += value * (a op b)`` in place (``addcmul_``/``addcdiv_`` for ``op`` ``"mul"``/``"div"``;
    ``value`` multiplies ``a`` first, as PyTorch rounds it); bumps ``y``."""
    be = y._storage.backend
    v = y._v
    t = _temp(y)
    if value == 1:
        be.binary(op, a._v, b._v, t)
    else:
        be.binary("mul", a._v, value, t)
        be.binary(op, t, b._v, t)
    be.binary("add", v, t, v)
    bump(y)
    return y


def reduce(op: str, x: Tensor, axes: Sequence[int], keepdim: bool, out_dtype: Any = None) -> Tensor:
    shape = x._v.shape
    if axes.__class__ is tuple and len(axes) == 1 and 0 <= axes[0] < len(shape):
        ax = axes[0]
        kshape = shape[:ax] + (1,) + shape[ax + 1:]
    else:
        axes = tuple(sorted(set(axes)))
        kshape = tuple([1 if i in axes else s for i, s in enumerate(shape)])
    out = new_on(x._storage, kshape, x._v.dtype if out_dtype is None else out_dtype)
    if 0 in shape and (op == "sum" or op == "prod"):
        fill(out, 0 if op == "sum" else 1)
    else:
        x._storage.backend.reduce(op, x._v, axes, out._v)
    if not keepdim:
        out = _drop_axes(out, axes)
    return out


# Set by ``portagrad.capture`` while it records a step (else None): told the valid range of each
# index check below, so that a replayed step can repeat the check instead of refusing the read.
CHECK_HOOK: Any = None


def min_max(x: Tensor, valid: tuple[Any, Any] | None = None, late: bool = False
            ) -> tuple[Any, Any]:
    """``(min, max)`` of all elements of non-empty ``x`` as Python numbers, with ONE host read: both
    reductions write into one two-element buffer (on a device every read is a synchronisation;
    index checks run this on every gather and cross-entropy). ``valid``: the closed range an index
    check accepts, for a captured step (:mod:`portagrad.capture`) to check again on replay;
    ``late``: a check the eager step defers (:func:`min_max_later`), which a replay may defer
    too."""
    if CHECK_HOOK is None and x._storage.device.type == "cpu":
        # the cpu device's memory read in place (its two reductions and the result tensor cost
        # 3x the reads: index checks run on every gather and cross-entropy)
        a = x._storage.backend.host_array(x._v)
        if a is not None and a.dtype.kind in "iu":
            if a.size == 1:  # (a decode step's position: two reductions cost 20x the read)
                v = int(a.reshape(-1)[0])
                return v, v
            return int(a.min()), int(a.max())
    out = _min_max_into(x)
    if valid is not None and CHECK_HOOK is not None:
        CHECK_HOOK(out._v, valid, late)
    lo, hi = out._host().tolist()
    return lo, hi


def _min_max_into(x: Tensor) -> Tensor:
    """A fresh two-element tensor holding ``(min, max)`` of non-empty ``x``: two reductions."""
    v = x._v
    if not v.shape:  # 0-d: reduce a one-element view
        v = bare_view(v, (1,), (1,))
    nd = len(v.shape)
    axes = tuple(range(nd))
    out = new_on(x._storage, (2,), v.dtype)
    ov = out._v
    be = x._storage.backend
    for i, op in enumerate(("min", "max")):
        be.reduce(op, v, axes, bare_view(ov, (1,) * nd, (1,) * nd, i))
    return out


def defers_checks(x: Tensor) -> bool:
    """Whether :func:`min_max_later` defers a check of ``x`` (see there)."""
    return CHECK_HOOK is None and hasattr(x._storage.backend, "defer_check")


def min_max_later(x: Tensor, check: Callable[[Any, Any], None]) -> None:
    """Check ``(min, max)`` of non-empty ``x`` later, on a backend that reads asynchronously
    (only where :func:`defers_checks` says so; elsewhere, a host backend whose read costs
    nothing or inside a captured step, the caller checks now with :func:`min_max`).

    The two reductions and the read are enqueued through the backend's ``defer_check`` (the
    OpenCL backend) without waiting, and ``check(lo, hi)`` runs at the device's next host read
    or synchronisation, where it may raise (as a CUDA device-side assert surfaces). The kernels
    that consume what is checked must stay in bounds whatever the values (the check only
    reports)."""
    x._storage.backend.defer_check(_min_max_into(x)._v, lambda values: check(*values.tolist()))


def _drop_axes(t: Tensor, axes: Sequence[int]) -> Tensor:
    """The fresh result ``t`` without its size-1 reduced ``axes`` (the caller drops ``t``)."""
    shape = tuple(s for i, s in enumerate(t._v.shape) if i not in axes)
    strides = tuple(s for i, s in enumerate(t._v.strides) if i not in axes)
    return moved(t, shape, strides)


def arg_reduce(op: str, x: Tensor, axis: int, keepdim: bool) -> Tensor:
    kshape = tuple(1 if i == axis else s for i, s in enumerate(x._v.shape))
    out = new_on(x._storage, kshape, _dtype.int64)
    x._storage.backend.arg_reduce(op, x._v, axis, out._v)
    return out if keepdim else _drop_axes(out, (axis,))


def cumsum(x: Tensor, axis: int, dtype: _dtype.dtype) -> Tensor:
    if x._v.dtype is not dtype:
        x = cast(x, dtype)
    out = new_on(x._storage, x._v.shape, dtype)
    if x.numel():
        x._storage.backend.cumsum(x._v, axis, out._v)
    return out


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """(B, M, K) @ (B, K, N) -> (B, M, N), strided inputs. An empty sum (K == 0) is zeros and an
    empty result is left as it is: the backend's matmul is not called then, as a GEMM kernel over
    K == 0 may leave ``out`` unwritten (and the front end lets bool through only there)."""
    B, M, K = a._v.shape
    N = b._v.shape[2]
    out = new_on(a._storage, (B, M, N), a._v.dtype)
    if B * M * N == 0:
        return out
    if K == 0:
        return fill(out, 0)
    a._storage.backend.matmul(a._v, b._v, out._v)
    return out


def mm(a: Tensor, b: Tensor, av: View | None = None, bv: View | None = None,
       bias: View | None = None) -> Tensor:
    """(M, K) @ (K, N) -> a new contiguous (M, N) tensor, for 2-D ``a`` and ``b``; ``av``/``bv``:
    2-D Views of ``a``'s/``b``'s buffers to multiply instead (a transpose is swapped strides).
    The backend's (1, M, K) @ (1, K, N) is called on bare Views: no tensor is made for the
    operands (each costs more than the rest of a small product's Python), and ``a``'s and
    ``b``'s storages keep their ownership stamps. Empty sums and results as :func:`bmm`.
    ``bias``: a (N,) View of the product's dtype added to every row (a linear layer's)."""
    if av is None:
        av = a._v
    if bv is None:
        bv = b._v
    m, k = av.shape
    n = bv.shape[1]
    out = new_on(a._storage, (m, n), av.dtype)
    if m * n == 0:
        return out
    ov = out._v
    be = a._storage.backend
    if k == 0:
        fill(out, 0)
    else:
        try:
            prod = _MMS[be]
        except (KeyError, TypeError):
            prod = _usable(be, "mm", ("matmul",), _MMS)
        if prod is not None:  # the backend's 2-D product: no batch views to build
            prod(av, bv, ov, bias)
            return out
        be.matmul(View(av.buffer, av.offset, (1, m, k), (0,) + av.strides, av.dtype),
                  View(bv.buffer, bv.offset, (1, k, n), (0,) + bv.strides, bv.dtype),
                  View(ov.buffer, ov.offset, (1, m, n), (0, n, 1), ov.dtype))
    if bias is not None:
        be.binary("add", ov, bare_expand(bias, (m, n)), ov)
    return out


def gather(x: Tensor, axis: int, index: Tensor) -> Tensor:
    out = new_on(x._storage, index._v.shape, x._v.dtype)
    if out.numel():
        x._storage.backend.gather(x._v, axis, index._v, out._v)
    return out


def scatter(out: Tensor, axis: int, index: Tensor, src: Tensor, reduce: str | None) -> Tensor:
    """In place into ``out``."""
    if index.numel():
        out._storage.backend.scatter(out._v, axis, index._v, src._v, reduce)
    return out


def sort(x: Tensor, axis: int, descending: bool) -> tuple[Tensor, Tensor]:
    values = new_on(x._storage, x._v.shape, x._v.dtype)
    indices = new_on(x._storage, x._v.shape, _dtype.int64)
    if x.numel():
        x._storage.backend.sort(x._v, axis, descending, values._v, indices._v)
    return values, indices


def random(kind: str, out: Tensor, seed: int, offset: int, a: float, b: float) -> Tensor:
    if out.numel():
        out._storage.backend.random(kind, out._v, seed, offset, a, b)
    return out


def _linalg_method(x: Tensor, name: str) -> Any:
    """The backend's ``eigh``/``svd``/``fft_*``, or :class:`Backend`'s host default for a backend
    object that does not subclass it (these are not required of one)."""
    be = x._storage.backend
    meth = getattr(be, name, None)
    return meth if meth is not None else functools.partial(getattr(Backend, name), be)


def eigh(x: Tensor, uplo: str, vectors: bool) -> tuple[Tensor, Tensor | None]:
    """``(eigenvalues, eigenvectors or None)`` of the symmetric (Hermitian) ``(..., n, n)``
    ``x``; the eigenvalues are real (of ``x``'s real dtype)."""
    w = new_on(x._storage, x._v.shape[:-1], x._v.dtype.to_real())
    v = new_on(x._storage, x._v.shape, x._v.dtype) if vectors else None
    if w.numel():
        _linalg_method(x, "eigh")(x._v, uplo, w._v, None if v is None else v._v)
    return w, v


def svd(x: Tensor, full_matrices: bool, vectors: bool
        ) -> tuple[Tensor | None, Tensor, Tensor | None]:
    """``(U or None, S, Vh or None)`` of the ``(..., m, n)`` ``x`` (``min(m, n) > 0``); ``S`` is
    real (of ``x``'s real dtype)."""
    *batch, m, n = x._v.shape
    k = min(m, n)
    s = new_on(x._storage, (*batch, k), x._v.dtype.to_real())
    u = vh = None
    if vectors:
        u = new_on(x._storage, (*batch, m, m if full_matrices else k), x._v.dtype)
        vh = new_on(x._storage, (*batch, n if full_matrices else k, n), x._v.dtype)
    if s.numel():
        _linalg_method(x, "svd")(x._v, full_matrices, None if u is None else u._v, s._v,
                                 None if vh is None else vh._v)
    return u, s, vh


def eig(x: Tensor, vectors: bool) -> tuple[Tensor, Tensor | None]:
    """``(eigenvalues, eigenvectors or None)``, complex, of the general ``(..., n, n)`` ``x``;
    a backend that declines complex raises its :class:`~portagrad.errors.DTypeError` first."""
    cdt = x._v.dtype.to_complex()
    decline_complex(x._storage.backend, cdt, x._storage.device)
    w = new_on(x._storage, x._v.shape[:-1], cdt)
    v = new_on(x._storage, x._v.shape, cdt) if vectors else None
    if w.numel():
        _linalg_method(x, "eig")(x._v, w._v, None if v is None else v._v)
    return w, v


def fft_c2c(x: Tensor, axes: tuple[int, ...], forward: bool) -> Tensor:
    """Unnormalised complex-to-complex transform of the complex ``x`` over ``axes``."""
    out = new_on(x._storage, x._v.shape, x._v.dtype)
    if out.numel():
        _linalg_method(x, "fft_c2c")(x._v, axes, forward, out._v)
    return out


def fft_r2c(x: Tensor, axes: tuple[int, ...], onesided: bool) -> Tensor:
    """Unnormalised forward transform of the real ``x`` over ``axes`` (complex result)."""
    shape = list(x._v.shape)
    if onesided:
        shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    out = new_on(x._storage, tuple(shape), x._v.dtype.to_complex())
    if out.numel():  # then x has elements too: the core pads every axis to at least one
        _linalg_method(x, "fft_r2c")(x._v, axes, onesided, out._v)
    return out


def fft_c2r(x: Tensor, axes: tuple[int, ...], last_dim_size: int) -> Tensor:
    """Unnormalised backward transform of the one-sided complex ``x`` over ``axes`` (real
    result with ``last_dim_size`` entries along the last of ``axes``)."""
    shape = list(x._v.shape)
    shape[axes[-1]] = last_dim_size
    out = new_on(x._storage, tuple(shape), x._v.dtype.to_real())
    if out.numel():  # then x has elements too: the core pads every axis to at least one
        _linalg_method(x, "fft_c2r")(x._v, axes, last_dim_size, out._v)
    return out


# ------------------------------------------------------------------- bare-View scratch
class Scratch:
    """Bare-View temporaries, and primitives on Views, on the device of tensor ``like``.

    ``new(shape, dtype)`` allocates a contiguous :class:`View` alone (no Tensor, no Storage; its
    buffer is freed with it); ``unary``, ``binary``, ``reduce``, ``copy`` and ``fill`` are the
    device's primitives, bound once, taking Views (``tensor._v`` for tensors) or scalars exactly as
    the backend contract says. Results that outlive the computation should be tensors
    (:func:`new_like`) written through their ``_v``.
    """

    __slots__ = ("_allocate", "_index", "binary", "copy", "fill", "reduce", "unary", "where")

    def __init__(self, like: Tensor) -> None:
        st = like._storage
        be = st.backend
        self.unary = be.unary
        self.binary = be.binary
        self.reduce = be.reduce
        self.copy = be.copy
        self.fill = be.fill
        self.where = be.where
        self._allocate = be.allocate
        self._index = st.index

    def new(self, shape: tuple[int, ...], dtype: _dtype.dtype) -> View:
        """A new, uninitialised, contiguous View of ``shape`` and ``dtype``."""
        nbytes = dtype.itemsize
        for d in shape:
            nbytes *= d
        return View(self._allocate(self._index, nbytes), 0, shape, strides_for(shape), dtype)


# ------------------------------------------------------------- optional fast paths
def has_prims(t: Tensor, *names: str) -> bool:
    """Whether ``t``'s backend implements every optional primitive in ``names`` (see
    ``OPTIONAL_METHODS`` of the backend contract); without them the caller composes."""
    be = t._storage.backend
    for name in names:
        if getattr(be, name, None) is None:
            return False
    return True


def softmax(x: Tensor, axis: int, out: Tensor, log: bool) -> Tensor:
    """The backend's (log-)softmax of ``x`` along ``axis`` into ``out`` (``has_prims(x,
    "softmax")`` first)."""
    x._storage.backend.softmax(x._v, axis, out._v, log)
    return out


def conv2d(x: Tensor, w: Tensor, out: Tensor, stride: tuple, padding: tuple, dilation: tuple,
           groups: int) -> Tensor:
    """The backend's 2-D convolution of (N, C, H, W) ``x`` with ``w`` into ``out`` (bias apart)."""
    x._storage.backend.conv2d(x._v, w._v, out._v, stride, padding, dilation, groups)
    return out


def conv2d_grad_input(g: Tensor, w: Tensor, out: Tensor, stride: tuple, padding: tuple,
                      dilation: tuple, groups: int) -> Tensor:
    """The gradient of :func:`conv2d` with respect to its input, into ``out``."""
    g._storage.backend.conv2d_grad_input(g._v, w._v, out._v, stride, padding, dilation, groups)
    return out


def conv2d_grad_weight(x: Tensor, g: Tensor, out: Tensor, stride: tuple, padding: tuple,
                       dilation: tuple, groups: int) -> Tensor:
    """The gradient of :func:`conv2d` with respect to its weight, into ``out``."""
    g._storage.backend.conv2d_grad_weight(x._v, g._v, out._v, stride, padding, dilation, groups)
    return out


def max_pool2d(x: Tensor, out: Tensor, indices: Tensor, kernel_size: tuple, stride: tuple,
               padding: tuple, dilation: tuple) -> Tensor:
    """The backend's max pooling of (N, C, H, W) ``x``: values into ``out``, int64 flat positions
    into ``indices``."""
    x._storage.backend.max_pool2d(x._v, out._v, indices._v, kernel_size, stride, padding,
                                  dilation)
    return out


def max_pool2d_grad_input(g: Tensor, indices: Tensor, out: Tensor, kernel_size: tuple,
                          stride: tuple, padding: tuple, dilation: tuple) -> Tensor:
    """The gradient of :func:`max_pool2d` with respect to its input, into ``out``."""
    g._storage.backend.max_pool2d_grad_input(g._v, indices._v, out._v, kernel_size, stride,
                                             padding, dilation)
    return out


# the normalisation fast paths (see the backend contract); ``None`` stands for an operand the
# primitive does without or an output nobody wants
def _ov(t: Tensor | None) -> View | None:
    return None if t is None else t._v


def softmax_backward(g: Tensor, y: Tensor, axis: int, out: Tensor, log: bool) -> Tensor:
    """The backend's gradient of (log-)softmax from its output ``y``, into ``out``."""
    y._storage.backend.softmax_backward(g._v, y._v, axis, out._v, log)
    return out


def layer_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float, out: Tensor,
               mean: Tensor | None, rstd: Tensor | None) -> Tensor:
    """The backend's layer norm of the rows of the (M, N) ``x`` into ``out`` (statistics into
    ``mean``/``rstd`` (M,) when given)."""
    x._storage.backend.layer_norm(x._v, _ov(weight), _ov(bias), eps, out._v, _ov(mean), _ov(rstd))
    return out


def layer_norm_backward(g: Tensor, x: Tensor, weight: Tensor | None, mean: Tensor, rstd: Tensor,
                        grad_x: Tensor | None, grad_weight: Tensor | None,
                        grad_bias: Tensor | None) -> None:
    """The backend's gradients of :func:`layer_norm`, into the outputs that are not ``None``."""
    x._storage.backend.layer_norm_backward(g._v, x._v, _ov(weight), mean._v, rstd._v, _ov(grad_x),
                                           _ov(grad_weight), _ov(grad_bias))


def batch_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None,
               running_mean: Tensor | None, running_var: Tensor | None, momentum: float,
               eps: float, out: Tensor, mean: Tensor, rstd: Tensor) -> Tensor:
    """The backend's training-mode batch norm of the (N, C, L) ``x`` into ``out``; batch
    statistics into ``mean``/``rstd`` (C,); the running statistics updated in place (each bumps
    its version)."""
    x._storage.backend.batch_norm(x._v, _ov(weight), _ov(bias), _ov(running_mean),
                                  _ov(running_var), momentum, eps, out._v, mean._v, rstd._v)
    for r in (running_mean, running_var):
        if r is not None:
            bump(r)
    return out


def batch_norm_backward(g: Tensor, x: Tensor, weight: Tensor | None, mean: Tensor, rstd: Tensor,
                        grad_x: Tensor | None, grad_weight: Tensor | None,
                        grad_bias: Tensor | None) -> None:
    """The backend's gradients of :func:`batch_norm`, into the outputs that are not ``None``."""
    x._storage.backend.batch_norm_backward(g._v, x._v, _ov(weight), mean._v, rstd._v, _ov(grad_x),
                                           _ov(grad_weight), _ov(grad_bias))


def gelu(x: Tensor, out: Tensor) -> Tensor:
    """The backend's exact GELU of the contiguous float32 ``x`` into ``out``."""
    x._storage.backend.gelu(x._v, out._v)
    return out


def gelu_backward(g: Tensor, x: Tensor, out: Tensor) -> Tensor:
    """The backend's gradient of :func:`gelu` for the incoming ``g`` into ``out``."""
    x._storage.backend.gelu_backward(g._v, x._v, out._v)
    return out


def cross_entropy(x: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int,
                  loss: Tensor, lse: Tensor, row_weight: Tensor) -> Tensor:
    """The backend's per-row cross entropy of (N, C) logits against int64 class indices: the
    losses into ``loss``, the row log-sum-exps into ``lse``, the row weights into
    ``row_weight`` (all (N,))."""
    x._storage.backend.cross_entropy(x._v, target._v, _ov(weight), ignore_index, loss._v, lse._v,
                                     row_weight._v)
    return loss


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool, scale: float,
              out: Tensor, lse: Tensor) -> Tensor:
    """The backend's fused scaled dot-product attention into ``out`` (row log-sum-exps into
    ``lse``); ``mask`` already broadcast to ``(*batch, L, S)``."""
    q._storage.backend.attention(q._v, k._v, v._v, _ov(mask), causal, scale, out._v, lse._v)
    return out


def attention_backward(g: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
                       mask: Tensor | None, causal: bool, scale: float, dq: Tensor, dk: Tensor,
                       dv: Tensor) -> None:
    """The backend's gradients of :func:`attention` into ``dq``, ``dk``, ``dv``."""
    q._storage.backend.attention_backward(g._v, q._v, k._v, v._v, out._v, lse._v, _ov(mask),
                                          causal, scale, dq._v, dk._v, dv._v)


def cross_entropy_backward(x: Tensor, target: Tensor, lse: Tensor, coef: Tensor,
                           grad_x: Tensor) -> Tensor:
    """The backend's gradient of :func:`cross_entropy` (scaled per row by ``coef``) into
    ``grad_x``."""
    x._storage.backend.cross_entropy_backward(x._v, target._v, lse._v, coef._v, grad_x._v)
    return grad_x
