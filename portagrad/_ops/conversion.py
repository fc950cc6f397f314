"""Copies and conversions: ``to``, ``clone``, ``contiguous``, ``copy_``.

In-place ops follow one rule (:func:`inplace`): without autograd recording they write straight into
the tensor's storage; with recording they compute the result out of place from a clone of the old
value (so nothing saved for backward is overwritten) and copy it in, making the tensor's
``grad_fn`` point at the new result. In-place ops on views rebase the view's base (``CopySlices``).
The rule is autograd's (:mod:`portagrad.autograd.inplace`); it is re-exported here for the ops.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np

from .. import _creation, _device, _dtype, _raw
from .._storage import Storage
from .._tensor import Tensor
from ..autograd.function import Function
from ..backends.interface import decline_complex
from ..autograd.grad_mode import _flags, _no_grad
from ..autograd.inplace import check_inplace, check_no_overlap, fit_result, inplace, overwritten
from ._common import call, sparse_fallback, to_scalar
from .shape import expand

__all__ = ["to", "clone", "contiguous", "unaliased", "copy_", "inplace", "fit_result", "type_as",
           "cpu", "check_inplace", "check_no_overlap", "bump", "fill_"]


bump = _raw.bump  # record an in-place change (the version counter has one writer, in _raw)


class _ToCopy(Function):
    _backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, dev: Any, dtype: Any, non_blocking: bool) -> Tensor:
        ctx.src = (x.device, x.dtype)
        warn_complex_to_real(x._v.dtype, dtype)
        return _copy_to(x, dev, dtype, non_blocking)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        dev, dt = ctx.src
        if not (dt.is_floating_point or dt.is_complex):
            return None, None, None, None
        if g._v.dtype.is_complex and not dt.is_complex:
            # a real input made complex: its gradient is the real part (PyTorch's rule)
            g = g.real
        return to(g, dev, dt), None, None, None


def warn_complex_to_real(src: _dtype.dtype, dst: _dtype.dtype) -> None:
    """PyTorch's warning when a cast from a complex dtype to a real one drops the imaginary part."""
    if src.is_complex and not dst.is_complex:
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=4)


def _copy_to(x: Tensor, dev: Any, dtype: _dtype.dtype, non_blocking: bool) -> Tensor:
    src_dev = x._storage.device
    if dev == src_dev:
        return _raw.cast(x, dtype)
    concrete, backend, index = _device.resolve(dev)
    if dtype._kind == 3:
        decline_complex(backend, dtype, concrete)
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
    n_dtypes = 0
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dtype.dtype):
            n_dtypes += 1
            if n_dtypes > 1:  # to(float64, float16): no form of PyTorch's takes two dtypes
                raise TypeError("to() received an invalid combination of arguments - got "
                                "(dtype, dtype)")
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
    if x._requires_grad and not (dt.is_floating_point or dt.is_complex) and _flags.grad:
        warn_complex_to_real(x._v.dtype, dt)
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
    try:
        return call(_Clone, x)
    except AttributeError:  # not a dense tensor: a sparse one (its own clone), or re-raised
        return sparse_fallback("clone", clone, x)


def unaliased(out: Tensor, input: Tensor) -> Tensor:
    """``out``, or a copy of it if it shares storage with ``input``: the last step of an op that
    PyTorch defines to return new memory (``repeat``, ``roll``, ``cumprod`` ...) but that is built
    here from views and reshapes, which in edge cases (a size-1 dimension, a zero shift) give a
    view of the input, or the input itself. A write into the result must not reach the input."""
    if out._storage is input._storage:
        return call(_Clone, out)
    return out


def contiguous(x: Tensor, memory_format: Any = None) -> Tensor:
    """``x`` if contiguous, else a contiguous copy."""
    if x._v.is_contiguous():
        return x
    return call(_Clone, x)


_TYPE_NAMES = _dtype.SCALAR_TYPE_NAMES
_CPP_NAMES = _dtype.CPP_TYPE_NAMES


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside portagrad, for a warning about the caller's
    call (however deep in the package it is raised)."""
    pkg = __name__.split(".")[0]
    frame: Any = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == pkg:
        frame, level = frame.f_back, level + 1
    return level


def write_out(name: str, res: Tensor, out: Tensor, inputs: tuple = (), *, dtype_rule: str = "cast",
              differentiable: bool = True, warn_dim: int | None = None) -> Tensor:
    """``out=``: write the result ``res`` of op ``name`` into ``out`` with PyTorch's rules, and
    return ``out``. Refused: for a differentiable op, an input or ``out`` that requires grad while
    grad mode is on (``out=`` is not differentiable; ops with no derivative, such as comparisons
    and ``argmax``, write even then), a dtype ``out`` cannot take (``dtype_rule`` below), another
    device, and an ``out`` whose elements share memory. An ``out`` of another shape is resized
    (with PyTorch's warning unless it was empty).

    ``dtype_rule`` is the op's check of ``out``'s dtype, as PyTorch's kernels differ:
    ``"cast"`` (most ops): the result dtype castable into ``out``'s without changing category
    (floating into integer, integer into bool are refused); ``"same"`` (ops that keep their
    input's dtype: ``abs``, ``neg``, ``floor``, ``round``, ``clamp`` with number bounds ...):
    exactly the result's dtype; ``"exact"`` (``matmul``, ``argmax``, reductions given ``dtype=``):
    exactly the result's dtype, with that kernel's message. ``warn_dim``: the dimension that
    PyTorch's kernel (``kthvalue``, ``mode`` without ``keepdim``) inserts into ``out`` and the
    result before resizing, so that its resize warning shows both shapes with it."""
    if differentiable:
        _refuse_grad(name, (*inputs, out))
    if dtype_rule == "cast":
        if not _dtype.can_cast(res.dtype, out.dtype):
            raise RuntimeError(f"result type {_TYPE_NAMES[res.dtype.name]} can't be cast to the "
                               f"desired output type {_TYPE_NAMES[out.dtype.name]}")
    elif out.dtype is not res.dtype:
        if dtype_rule == "same":
            raise RuntimeError(f"Found dtype {_TYPE_NAMES[out.dtype.name]} but expected "
                               f"{_TYPE_NAMES[res.dtype.name]}")
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES[res.dtype.name]}, but "
                           f"got {_CPP_NAMES[out.dtype.name]} instead")
    if out._storage.device != res._storage.device:
        raise RuntimeError(f"Expected out tensor to have device {res.device}, but got "
                           f"{out.device} instead")
    check_no_overlap(out)  # (before a resize, as PyTorch: an expanded out is refused)
    if tuple(out.shape) != tuple(res.shape):
        if out.numel():
            shown, wanted = list(out.shape), list(res.shape)
            if warn_dim is not None:
                shown.insert(min(warn_dim, len(shown)), 1)
                wanted.insert(warn_dim, 1)
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{shown}, which does not match the required output shape "
                          f"{wanted}. This behavior is deprecated, and in a future "
                          f"PyTorch release outputs will not be resized unless they have zero "
                          f"elements. You can explicitly reuse an out tensor t by resizing it, "
                          f"inplace, to zero elements with t.resize_(0).", UserWarning,
                          stacklevel=_caller_level())
        out.resize_(tuple(res.shape))
    with _no_grad():
        copy_(out, res)
    return out


def _refuse_grad(name: str, tensors: tuple) -> None:
    if _flags.grad and any(isinstance(t, Tensor) and t._requires_grad for t in tensors):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")


# PyTorch's messages for a (values, indices) out of the wrong dtype, by kernel (values' first):
# fields want/got (Float) and cwant/cgot (C++ names: float)
_PAIR_DTYPE_ERRORS = {
    "exact": ("Expected out tensor to have dtype {cwant}, but got {cgot} instead",) * 2,
    "kthvalue": ("output values must be of same type as input",
                 "output indices must be of scalar type Long"),
    "mode": ("expected scalar type '{want}' but got '{got}' for values output",
             "expected scalar type '{want}' but got '{got}' for indices output"),
    "median": ("Expected tensor for 'values' to have the same type as tensor for argument #2 "
               "'self'; but type torch.{got}Tensor does not equal torch.{want}Tensor (while "
               "checking arguments for median)",
               "Expected tensor for argument #1 'indices' to have scalar type Long; but got "
               "torch.{got}Tensor instead (while checking arguments for median)"),
    "cummax": ("expected scalar_type {want} but found {got}",) * 2,
}


def write_out_pair(name: str, res: tuple, out: Any, inputs: tuple = (), *,
                   dtype_errors: str = "exact", warn_dim: int | None = None) -> Any:
    """``out=(values, indices)`` of an op returning a pair (``max(dim)``, ``sort``, ``topk`` ...):
    write each of ``res`` into the tensor of ``out`` at its place with :func:`write_out`'s rules
    and return ``res``'s named tuple type holding ``out``'s tensors. ``out`` is a tuple or list
    of two tensors (a TypeError else, as PyTorch's argument parser); both dtypes must be the
    result's exactly (``dtype_errors``: the kernel's messages, ``_PAIR_DTYPE_ERRORS``); refused
    when an input or ``out`` requires grad while grad mode is on (``warn_dim``: write_out's)."""
    if not isinstance(out, (tuple, list)) or not all(isinstance(t, Tensor) for t in out):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != 2:
        raise TypeError(f"expected tuple of 2 elements but got {len(out)}")
    _refuse_grad(name, (*inputs, *out))
    for msg, r, o in zip(_PAIR_DTYPE_ERRORS[dtype_errors], res, out):
        if o.dtype is not r.dtype:
            raise RuntimeError(msg.format(want=_TYPE_NAMES[r.dtype.name],
                                          got=_TYPE_NAMES[o.dtype.name],
                                          cwant=_CPP_NAMES[r.dtype.name],
                                          cgot=_CPP_NAMES[o.dtype.name]))
    for r, o in zip(res, out):  # (resized with PyTorch's warning, one per tensor)
        write_out(name, r, o, dtype_rule="exact", differentiable=False, warn_dim=warn_dim)
    return type(res)(*out)


def copy_(dst: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` into ``dst`` in place (broadcasting, casting, across devices)."""
    if not isinstance(src, Tensor):
        src = _creation.tensor(src, dtype=dst.dtype, device=dst.device)
    given = src  # the overlap rule looks at the source as given, before it is broadcast
    if src._storage.device != dst._storage.device:
        src = to(src, dst.device, non_blocking=non_blocking)
    if src._v.shape != dst._v.shape:
        src = expand(src, dst._v.shape)
    warn_complex_to_real(src._v.dtype, dst._v.dtype)

    def raw_into(x: Tensor) -> None:
        s = src
        if x._storage is s._storage:
            if (x._v.offset, x._v.strides, x._v.dtype) == (s._v.offset, s._v.strides, s._v.dtype):
                return  # the same elements: nothing to copy (x.copy_(x))
            if (x._v.offset, x._v.strides) != (s._v.offset, s._v.strides):
                s = _raw.cast(s, s._v.dtype)  # overlapping views: go through a temporary
        _raw.copy_into(x, s)

    def compute(old: Tensor) -> Tensor:
        new = clone(to(src, dtype=dst.dtype))
        # (a new value without history is recorded as overwriting old by inplace itself)
        return overwritten(old, new) if old._requires_grad and new._requires_grad else new

    return inplace(dst, compute, raw_into, (given,))


def fill_(x: Tensor, value: Any) -> Tensor:
    """Fill ``x`` with ``value`` (a number or a zero-dim tensor) in place."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        if value._requires_grad:
            return copy_(x, value.expand(x.shape))
        value = value.item()

    def raw_into(t: Tensor) -> None:
        _raw.fill(t, to_scalar(value, t.dtype))

    def compute(old: Tensor) -> Tensor:
        return _creation.full(old.shape, value, dtype=old.dtype, device=old.device)

    return inplace(x, compute, raw_into, overlap_ok=True)  # one value: PyTorch allows it
