"""The in-place rule of autograd: how an in-place op on a tensor (or on a view of one) is recorded.

Without recording, an in-place op writes straight into the tensor's storage (``raw_into``) and bumps
its version. With recording it computes the result out of place from a value equal to the old
tensor (so nothing saved for backward is overwritten), copies it in, and points the tensor's
``grad_fn`` at the new result (``CopyBackwards`` when the result has no history of its own). An
in-place op on a differentiable view also rebases the view's base (``CopySlices``): the base's
gradient is the incoming one with the view's region taken out, the new values' gradient is that
region.

This module is part of the autograd core: it imports no op module at import time (ops are the
layer above); the few ops the rule itself needs (``to``, ``clone``, ``expand``, ``as_strided``,
``strided_region``) are looked up when it runs. :mod:`portagrad._ops.conversion` re-exports
:func:`inplace` and :func:`check_inplace` for the op modules.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from . import function
from ._profiling import STATE as _PROF
from ._profiling import record_inplace
from .function import Function, _edge, _move_retained
from .grad_mode import _flags

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["check_inplace", "check_no_overlap", "check_operand_overlap", "inplace", "overwritten",
           "DTYPE_VIEWS"]

#: The tensors made by ``view_as_real``/``view_as_complex`` (``.real`` and ``.imag`` are views of
#: the first): views in another dtype, which autograd does not rebase onto their source when
#: changed in place. A recorded in-place change of one (or of a view of one) raises rather than
#: leave the source's history stale (a silently wrong gradient).
#: Keyed by ``id`` (a tensor's ``==`` is elementwise, so a WeakSet cannot compare them); an entry
#: goes with its tensor, before the id can be reused.
DTYPE_VIEWS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

_Tensor: Any = None  # portagrad.Tensor and portagrad._raw, bound on first use (they import
_raw: Any = None  # the autograd package, so it cannot import them when it loads)


def _bind() -> Any:
    global _Tensor, _raw
    from .. import _raw as raw
    from .._tensor import Tensor

    _Tensor, _raw = Tensor, raw
    return Tensor


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


def check_no_overlap(x: Tensor) -> None:
    """PyTorch's error for an in-place write into a tensor some of whose elements share memory
    (an expanded view): the result would depend on the order of the writes (on OpenCL, a race).
    Free for the common case: a contiguous layout is never searched. Overlap means a dimension of
    size > 1 with stride 0 (an ``expand``); as in PyTorch, other layouts that may overlap
    (``as_strided`` tricks) are not searched, and pass; nor does an empty tensor, which has no
    element to write (PyTorch counts it as contiguous)."""
    v = x._v
    if not v.is_contiguous() and any(st == 0 and n > 1 for n, st in zip(v.shape, v.strides)) \
            and 0 not in v.shape:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor "
                           "refers to a single memory location. Please clone() the tensor before "
                           "performing the operation.")


def _span(v: Any) -> tuple[int, int, bool]:
    """``(first byte, end byte, dense)`` of the memory view ``v`` reaches; ``dense``: its elements
    fill that range once each (a permutation of a contiguous layout)."""
    isz = v.dtype.itemsize
    dims = sorted((st, n) for n, st in zip(v.shape, v.strides) if n != 1)
    dense, expect, last = True, 1, 0
    for st, n in dims:
        dense = dense and st == expect
        expect *= n
        last += st * (n - 1)
    return v.offset * isz, (v.offset + last + 1) * isz, dense


def check_operand_overlap(x: Tensor, others: tuple) -> bool:
    """PyTorch's check of an in-place op's operands against the tensor it writes (``x``).

    An operand that is ``x`` itself, or the same elements in the same layout, is fine; one that
    shares only some of ``x``'s memory, or the same memory in another layout (``b.mul_(b.t())``,
    ``x[1:].add_(x[:-1])``), raises as in PyTorch: written in place, the result would depend on
    the order of the writes (on OpenCL, a race). Returns True when an operand's layout is too
    irregular to tell (PyTorch allows it: an expanded or stepped view of ``x``'s memory) and its
    memory meets ``x``'s: the op must then be computed out of place before ``x`` is written."""
    v = x._v
    too_hard = False
    for o in others:
        if getattr(o, "_storage", None) is not x._storage:
            continue
        w = o._v
        if (w.offset, w.strides, w.shape) == (v.offset, v.strides, v.shape) or \
                w.numel == 0 or v.numel == 0:
            continue  # the same elements in the same layout (x.mul_(x)), or nothing to overlap
        a0, a1, a_dense = _span(v)
        b0, b1, b_dense = _span(w)
        if not (a0 < b1 and b0 < a1):
            continue
        if not (a_dense and b_dense):
            too_hard = True
        elif (a0, a1, v.strides) != (b0, b1, w.strides):
            raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                               "written-to tensor refer to a single memory location. Please "
                               "clone() the tensor before performing the operation.")
    return too_hard


def fit_result(result: Tensor, x: Tensor) -> Tensor:
    """An in-place op's out-of-place ``result`` in ``x``'s dtype and shape; PyTorch's error when
    the operands broadcast to a shape larger than ``x`` (``zeros(1).addcmul_(ones(3), ones(3))``)."""
    if result._v.dtype is not x._v.dtype:
        result = result.to(dtype=x._v.dtype)
    if result._v.shape != x._v.shape:
        shape, target = result._v.shape, x._v.shape
        if len(shape) > len(target) or any(
                n != 1 and n != m for n, m in zip(shape[::-1], target[::-1])):
            raise RuntimeError(f"output with shape {list(target)} doesn't match the broadcast "
                               f"shape {list(shape)}")
        result = result.expand(target)
    return result


class _Overwrite(Function):
    """``old`` is overwritten by ``new``: the gradient flows to ``new``, and ``old`` gets zeros
    (``CopyBackwards``: PyTorch's ``zeros_like(grad)``, so that a leaf under a fully overwritten
    tensor gets a zero ``.grad``, not None, and ``autograd.grad`` finds it used)."""

    _backward_name = "CopyBackwards"

    @staticmethod
    def forward(ctx: Any, old: Tensor, new: Tensor) -> Tensor:
        return new._alias()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        if not ctx.needs_input_grad[0]:
            return None, g
        _Tensor or _bind()
        zeros = _raw.fill(_raw.new_on(g._storage, g._v.shape, g._v.dtype), 0)  # (a constant)
        return zeros, g


def overwritten(old: Tensor, new: Tensor) -> Tensor:
    """``new`` recorded as overwriting ``old`` (both with histories): for an in-place op whose
    result does not depend on the old value (``copy_`` of a tensor that requires grad), so that
    the old value's history still receives its zero gradient, as in PyTorch."""
    return _Overwrite.apply(old, new)  # type: ignore[no-any-return]


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
        from .._ops.indexing import strided_region

        g_base, g_src = strided_region(g, ctx.base_geometry, ctx.geometry)
        return g_base, g_src, None, None


def inplace(x: Tensor, compute: Callable[[Tensor], Tensor], raw_into: Callable[[Tensor], None],
            others: tuple = (), overlap_ok: bool = False) -> Tensor:
    """Apply an in-place op to ``x``.

    ``raw_into(x)`` writes the result straight into ``x`` (the fast path, no recording);
    ``compute(old)`` returns the result out of place from a value equal to the old ``x`` (used when
    autograd records). ``x`` may have elements that share memory only with ``overlap_ok``: ops
    that write one value to every element they touch (``fill_``, ``masked_fill_``, as PyTorch)."""
    if not overlap_ok:
        check_no_overlap(x)
    buffered = check_operand_overlap(x, others) if others else False
    T = _Tensor or _bind()
    record = _flags.grad and (x._requires_grad or any(
        isinstance(o, T) and o._requires_grad for o in others))
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
        if buffered:  # an operand reads memory x's write would change: compute, then write
            _raw.copy_into(x, fit_result(compute(x._alias()), x))
        elif _PROF.on:  # a profiler is recording (the recorded path below goes through ops)
            record_inplace(raw_into, x, others)
        else:
            raw_into(x)
        _raw.bump(x)
        return x
    check_inplace(x)
    if DTYPE_VIEWS and (DTYPE_VIEWS.get(id(x)) is x or (
            x._base is not None and DTYPE_VIEWS.get(id(x._base)) is x._base)):
        raise RuntimeError("an in-place change of a view_as_real/view_as_complex view (.real, "
                           ".imag) is not supported while autograd records it: portagrad does not "
                           "rebase the complex tensor's history yet. Change the complex tensor "
                           "itself, or build a new one (pg.complex(re, im)).")
    result = fit_result(_compute_from_old(x, compute), x)
    base = x._base
    base_was_constant = base is not None and not base._requires_grad
    _raw.copy_into(x, result)
    _raw.bump(x)
    if base is not None and (base._requires_grad or result._requires_grad):
        # the view's base changes too: rebase the base's history, then the view reads from it
        base_geom = (base._v.shape, base._v.strides, base._v.offset)
        geom = (x._v.shape, x._v.strides, x._v.offset)
        base_alias = base._alias()
        base_alias._grad_fn, base_alias._output_nr = base._grad_fn, base._output_nr
        base_alias._requires_grad = base._requires_grad
        node_out = _CopySlices.apply(base_alias, result, geom, base_geom)
        if base._retains_grad:
            _move_retained(base, node_out._grad_fn, 0)
        base._grad_fn, base._output_nr = node_out._grad_fn, 0
        base._requires_grad = True
        if base_was_constant:
            _views_now_require_grad(base)
        view_now = base.as_strided(x._v.shape, x._v.strides, x._v.offset)
        if x._retains_grad:
            _move_retained(x, view_now._grad_fn, 0)
        x._grad_fn, x._output_nr = view_now._grad_fn, 0
        x._requires_grad = True
        x._view_ver = x._vc[0]
        return x
    if not result._requires_grad:
        prev = x._alias_with_grad_fn(x._grad_fn, x._output_nr) if x._grad_fn is not None else x
        result = _Overwrite.apply(prev, result)
    if x._retains_grad:
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
    node, nr = _edge(x)
    old = (_Tensor or _bind())._make(x._storage, x._v.offset, x._v.shape, x._v.strides,
                                     x._v.dtype, [0])
    if node is not None and node.__class__.__name__ != "AccumulateGrad":
        old._grad_fn, old._output_nr, old._requires_grad = node, nr, True
    start = _seq_now()
    result = compute(old)
    if not _saves(result._grad_fn, old._vc, start):
        return result
    if x._requires_grad:
        old = x.clone()
    else:
        old = _raw.cast(x, x._v.dtype)
    return compute(old)


def _seq_now() -> int:
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


