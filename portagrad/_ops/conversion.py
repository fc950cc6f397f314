"""Copies and conversions: ``to``, ``clone``, ``contiguous``, ``copy_``, and the in-place rule.

In-place ops follow one rule (:func:`inplace`): without autograd recording they write straight into
the tensor's storage; with recording they compute the result out of place from a clone of the old
value (so nothing saved for backward is overwritten) and copy it in, making the tensor's
``grad_fn`` point at the new result. In-place ops on views rebase the view's base (``CopySlices``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import _device, _dtype, _raw
from .._storage import Storage
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _flags, _no_grad
from ._common import call

__all__ = ["to", "clone", "contiguous", "copy_", "inplace", "type_as", "view_dtype", "cpu",
           "check_inplace", "bump"]


bump = _raw.bump  # record an in-place change (the version counter has one writer, in _raw)


class _ToCopy(Function):
    _backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, dev: Any, dtype: Any, non_blocking: bool) -> Tensor:
        ctx.src = (x.device, x.dtype)
        return _copy_to(x, dev, dtype, non_blocking)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        dev, dt = ctx.src
        if not dt.is_floating_point:
            return None, None, None, None
        return to(g, dev, dt), None, None, None


def _copy_to(x: Tensor, dev: Any, dtype: "_dtype.dtype", non_blocking: bool) -> Tensor:
    src_dev = x._storage.device
    if dev == src_dev:
        return _raw.cast(x, dtype)
    concrete, backend, index = _device.resolve(dev)
    if src_dev.type == concrete.type:
        # same backend, another device: device-to-device copy of a contiguous, converted source
        y = _raw.contiguous(x) if x._v.dtype is dtype else _raw.cast(x, dtype)
        nbytes = y.numel() * dtype.itemsize
        st = Storage(backend.allocate(index, nbytes), nbytes, concrete, backend, index)
        out = Tensor._make(st, 0, y._v.shape, _raw.strides_for(y._v.shape), dtype)
        if nbytes:
            backend.copy_between(out._v, y._v)
        return out
    # across backends the host is the interchange: device -> numpy -> device
    if src_dev.type == "cpu":
        host = x._storage.backend.host_array(x._v)
        if not (host.flags.c_contiguous and host.dtype == dtype.numpy):
            host = np.array(host, dtype=dtype.numpy, order="C", copy=True)
            non_blocking = False  # a temporary is never pinned
        else:
            non_blocking = non_blocking and x._storage.pinned
    else:
        host = x._storage.backend.to_host(x._v)
        if host.dtype != dtype.numpy:
            host = host.astype(dtype.numpy)
        non_blocking = False
    nbytes = host.size * dtype.itemsize
    shape = tuple(host.shape)
    if concrete.type == "cpu" and src_dev.type != "cpu" and host.flags.c_contiguous:
        # the array to_host just made is ours alone: the cpu tensor adopts it (a second copy
        # into fresh memory halved device->host bandwidth)
        wrapped = backend.wrap_host(host)
        if wrapped is not None:
            buf, off = wrapped
            st = Storage(buf, buf.nbytes, concrete, backend, index)
            return Tensor._make(st, off, shape, _raw.strides_for(shape), dtype)
    st = Storage(backend.allocate(index, nbytes), nbytes, concrete, backend, index)
    out = Tensor._make(st, 0, shape, _raw.strides_for(shape), dtype)
    if nbytes:
        backend.from_host(out._v, host, non_blocking)
    return out


def to(x: Tensor, *args: Any, device: Any = None, dtype: Any = None, non_blocking: bool = False,
       copy: bool = False, memory_format: Any = None) -> Tensor:
    """``x`` on another device and/or dtype (``x`` itself when nothing changes and not ``copy``).

    Accepts ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other_tensor)``."""
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, (str, _device.device)) or (isinstance(a, int) and not isinstance(a, bool)):
            device = a
        elif isinstance(a, bool):
            non_blocking = a
        elif a is None:
            continue
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
    dt = x._v.dtype if dtype is None else _dtype.as_dtype(dtype)
    if device is None:
        dev = x._storage.device
    else:
        dev = _device.as_device(device)
        if dev.index is None and dev.type != "cpu":
            dev = _device.resolve(dev)[0]
        elif dev.type == "cpu":
            dev = _device.resolve(dev)[0]
    if not copy and dt is x._v.dtype and dev == x._storage.device:
        return x
    if x._requires_grad and not dt.is_floating_point and _flags.grad:
        with _no_grad():
            return _copy_to(x, dev, dt, non_blocking)
    return call(_ToCopy, x, dev, dt, non_blocking)


def cpu(x: Tensor) -> Tensor:
    """A copy on the ``cpu`` device (``x`` itself if already there)."""
    return to(x, "cpu")


def type_as(x: Tensor, other: Tensor) -> Tensor:
    return to(x, dtype=other.dtype)


class _Clone(Function):
    _backward_name = "CloneBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        return _raw.cast(x, x._v.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return g


def clone(x: Tensor, memory_format: Any = None) -> Tensor:
    """A copy with its own storage (recorded: gradients flow back to ``x``)."""
    return call(_Clone, x)


def contiguous(x: Tensor, memory_format: Any = None) -> Tensor:
    """``x`` if contiguous, else a contiguous copy."""
    if x._v.is_contiguous():
        return x
    return call(_Clone, x)


def view_dtype(x: Tensor, dtype: Any) -> Tensor:
    dt = _dtype.as_dtype(dtype)
    if dt.itemsize != x._v.dtype.itemsize:
        raise RuntimeError(f"view(dtype): {x.dtype} -> {dt} with a different element size is not "
                           f"supported")
    return Tensor._make(x._storage, x._v.offset, x._v.shape, x._v.strides, dt, x._vc, x)


# ---------------------------------------------------------------------- in place
def check_inplace(x: Tensor) -> None:
    """Errors PyTorch raises before an in-place op."""
    if x._grad_fn is None and x._requires_grad and _flags.grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = x._base
    if base is not None and _flags.grad:
        if x._view_ver is None and base._requires_grad:
            raise RuntimeError(
                "A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
                "You can clarify your code by moving both the view and the inplace either both "
                "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                "outside (if you want the inplace to be tracked).")
        if base._grad_fn is None and base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")


class _Overwrite(Function):
    """``old`` is overwritten by ``new``: gradient flows to ``new`` only (``CopyBackwards``)."""

    _backward_name = "CopyBackwards"

    @staticmethod
    def forward(ctx: Any, old: Tensor, new: Tensor) -> Tensor:
        return new._alias()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return None, g


class _CopySlices(Function):
    """The base of a view changed in place: grad of the old base is ``g`` with the view's region
    zeroed; grad of the new values is ``g`` read at the view's geometry."""

    _backward_name = "CopySlices"

    @staticmethod
    def forward(ctx: Any, base_old: Tensor, src: Tensor, geometry: tuple, base_geometry: tuple
                ) -> Tensor:
        ctx.geometry = geometry
        ctx.base_geometry = base_geometry
        return base_old

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        from .indexing import strided_region

        g_base, g_src = strided_region(g, ctx.base_geometry, ctx.geometry)
        return g_base, g_src, None, None


def inplace(x: Tensor, compute: Callable[[Tensor], Tensor], raw_into: Callable[[Tensor], None],
            others: tuple = ()) -> Tensor:
    """Apply an in-place op to ``x``.

    ``raw_into(x)`` writes the result straight into ``x`` (the fast path, no recording);
    ``compute(old)`` returns the result out of place from a value equal to the old ``x`` (used when
    autograd records)."""
    record = _flags.grad and (x._requires_grad or any(
        isinstance(o, Tensor) and o._requires_grad for o in others))
    if not record and _flags.grad and x._base is not None and x._view_ver is not None \
            and x._view_ver != x._vc[0]:
        record = x._base._requires_grad  # a stale view whose base gained a history since
    if not record:
        if _flags.grad and x._base is not None and x._view_ver is None and x._base._requires_grad:
            check_inplace(x)  # a view made under no_grad of a tensor that requires grad
        if x._inference and not _flags.inference:
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                               "allowed.You can make a clone to get a normal tensor before doing "
                               "inplace update.")
        raw_into(x)
        bump(x)
        return x
    check_inplace(x)
    result = _compute_from_old(x, compute)
    if result._v.dtype is not x._v.dtype:
        result = to(result, dtype=x._v.dtype)
    if result._v.shape != x._v.shape:
        from .shape import expand

        result = expand(result, x._v.shape)
    base = x._base
    base_was_constant = base is not None and not base._requires_grad
    _raw.copy_into(x, result)
    bump(x)
    if base is not None and (base._requires_grad or result._requires_grad):
        # the view's base changes too: rebase the base's history, then the view reads from it
        base_geom = (base._v.shape, base._v.strides, base._v.offset)
        geom = (x._v.shape, x._v.strides, x._v.offset)
        base_alias = base._alias()
        base_alias._grad_fn, base_alias._output_nr = base._grad_fn, base._output_nr
        base_alias._requires_grad = base._requires_grad
        node_out = _CopySlices.apply(base_alias, result, geom, base_geom)
        if base._retains_grad:
            from ..autograd.function import _move_retained

            _move_retained(base, node_out._grad_fn, 0)
        base._grad_fn, base._output_nr = node_out._grad_fn, 0
        base._requires_grad = True
        if base_was_constant:
            _views_now_require_grad(base)
        from .shape import as_strided

        view_now = as_strided(base, x._v.shape, x._v.strides, x._v.offset)
        if x._retains_grad:
            from ..autograd.function import _move_retained

            _move_retained(x, view_now._grad_fn, 0)
        x._grad_fn, x._output_nr = view_now._grad_fn, 0
        x._requires_grad = True
        x._view_ver = x._vc[0]
        return x
    if not result._requires_grad:
        prev = x._alias_with_grad_fn(x._grad_fn, x._output_nr) if x._grad_fn is not None else x
        result = _Overwrite.apply(prev, result)
    if x._retains_grad:
        from ..autograd.function import _move_retained

        _move_retained(x, result._grad_fn, result._output_nr)
    was_constant = not x._requires_grad
    x._grad_fn = result._grad_fn
    x._output_nr = result._output_nr
    x._requires_grad = result._requires_grad
    if was_constant and base is None:
        _views_now_require_grad(x)
    return x


def _compute_from_old(x: Tensor, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """``compute(old)`` where ``old`` carries ``x``'s current value and history.

    Most ops (``add_``, ``mul_`` by a number, ``copy_``) do not save ``old`` for backward, and then
    an alias of ``x`` serves: no copy. The alias gets a private version counter; if a node made by
    ``compute`` saved it, the old value is needed after ``x`` is overwritten, so ``compute`` runs
    again on a clone (PyTorch's ``original_self``). Ops that draw random numbers must not save
    ``old`` (they would draw twice)."""
    from ..autograd.function import _edge

    node, nr = _edge(x)
    old = Tensor._make(x._storage, x._v.offset, x._v.shape, x._v.strides, x._v.dtype, [0])
    if node is not None and node.__class__.__name__ != "AccumulateGrad":
        old._grad_fn, old._output_nr, old._requires_grad = node, nr, True
    start = _seq_now()
    result = compute(old)
    if not _saves(result._grad_fn, old._vc, start):
        return result
    old = clone(x) if x._requires_grad else _raw.cast(x, x._v.dtype)
    return compute(old)


def _seq_now() -> int:
    from ..autograd import function

    return next(function._seq)


def _saves(node: Any, vc: list, start: int) -> bool:
    """Whether a node made after sequence number ``start`` below ``node`` saved a tensor whose
    version counter is ``vc``."""
    stack = [node] if node is not None else []
    seen = set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen or n._seq < start:
            continue
        seen.add(id(n))
        for entry in getattr(n, "_saved", None) or ():
            if entry is not None and entry[0]._vc is vc:
                return True
        stack.extend(nxt for nxt, _ in n._next)
    return False


def _views_now_require_grad(base: Tensor) -> None:
    """``base`` just got a history: its differentiable views made earlier follow it."""
    views, base._views = base._views, None
    for ref in views or ():
        v = ref()
        if v is not None and v._view_ver is not None:
            v._requires_grad = True


def copy_(dst: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` into ``dst`` in place (broadcasting, casting, across devices)."""
    from .shape import expand

    if not isinstance(src, Tensor):
        from .. import _creation

        src = _creation.tensor(src, dtype=dst.dtype, device=dst.device)
    if src._storage.device != dst._storage.device:
        src = to(src, dst.device, non_blocking=non_blocking)
    if src._v.shape != dst._v.shape:
        src = expand(src, dst._v.shape)

    def raw_into(x: Tensor) -> None:
        s = src
        if x._storage is s._storage and (x._v.offset, x._v.strides) != (s._v.offset, s._v.strides):
            s = _raw.cast(s, s._v.dtype)  # overlapping views: go through a temporary
        _raw.copy_into(x, s)

    def compute(old: Tensor) -> Tensor:
        return clone(to(src, dtype=dst.dtype))

    return inplace(dst, compute, raw_into, (src,))
