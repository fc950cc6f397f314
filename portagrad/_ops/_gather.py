"""The two recorded primitives of indexing, ``_Gather`` and ``_ScatterAddZeros``, each the other's
derivative, and what views and indexing build from them (the derivative of ``as_strided``)."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _creation, _raw
from .._shape import maybe_overlapping
from .._tensor import Tensor
from ..autograd.function import Function
from ._common import call

__all__ = ["as_strided_scatter_add", "check_index_range", "linear_index", "scatter_into_zeros"]


def check_index_range(index: Tensor, size: int, dim: int, what: str = "index",
                      exc: type = IndexError, late: bool = False) -> None:
    """Raise ``exc`` (``IndexError``; PyTorch's gather/scatter raise ``RuntimeError``) if any value
    of the int64 ``index`` is outside ``[0, size)`` (negative values must already have been
    wrapped where allowed).

    ``late``: the caller consumes ``index`` only through ``_Gather`` and its derivatives (the
    backend's ``gather`` and ``scatter``). On a device that reads asynchronously
    (``_raw.defers_checks``) the check is then enqueued and raises at the device's next read or
    synchronisation, as a CUDA device-side assert does, instead of stalling the host on the work
    queued before it (an embedding at the start of a forward pass would wait for the last step's
    optimizer); such a backend's gather and scatter stay in bounds for any index meanwhile."""
    if index.numel() == 0:
        return
    if late and _raw.defers_checks(index):
        _raw.min_max_later(index, functools.partial(_late_index_check, size, dim, what, exc))
        return
    lo, hi = _raw.min_max(index, (0, size - 1), late=late)
    _late_index_check(size, dim, what, exc, lo, hi)


def _late_index_check(size: int, dim: int, what: str, exc: type, lo: int, hi: int) -> None:
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise exc(f"{what} {bad} is out of bounds for dimension {dim} with size {size}")


class _Gather(Function):
    _backward_name = "GatherBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, d: int, index: Tensor) -> Tensor:
        ctx.meta = (x._v.shape, d)
        ctx.save_for_backward(index)
        return _raw.gather(x, d, index)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (index,) = ctx.saved_tensors
        shape, d = ctx.meta
        return scatter_into_zeros(g, d, index, shape), None, None


class _ScatterAddZeros(Function):
    """``zeros(shape).scatter_add_(d, index, src)``: the derivative of gather."""

    _backward_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx: Any, src: Tensor, d: int, index: Tensor, shape: tuple[int, ...]) -> Tensor:
        ctx.d = d
        ctx.save_for_backward(index)
        out = _raw.fill(_raw.new_like(src, shape), 0)
        return _raw.scatter(out, d, index, src, "add")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (index,) = ctx.saved_tensors
        return call(_Gather, g, ctx.d, index), None, None, None


def scatter_into_zeros(src: Tensor, d: int, index: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``zeros(shape)`` with ``src`` added at ``index`` along ``d`` (duplicates accumulate)."""
    return call(_ScatterAddZeros, src, d, index, tuple(shape))


def as_strided_scatter_add(g: Tensor, in_geometry: tuple, view_geometry: tuple) -> Tensor:
    """Gradient of ``as_strided`` (PyTorch's ``as_strided_backward``): add ``g`` into a zero
    buffer standing for the memory, through the view's geometry, then read the input's geometry
    from the buffer. Where elements of the input share a memory location (an expanded input,
    overlapping windows), what landed there is divided among them: read back whole by each, it
    would be counted once per element when their gradients are summed into the input's base."""
    in_shape, in_strides, in_offset = in_geometry
    v_shape, v_strides, v_offset = view_geometry
    span = max(_span(in_shape, in_strides, in_offset), _span(v_shape, v_strides, v_offset))
    idx = linear_index(g, v_shape, v_strides, v_offset)
    flat = scatter_into_zeros(g.reshape((-1,)), 0, idx, (span,))
    in_lin = _linear_host(in_shape, in_strides, in_offset)
    out = call(_Gather, flat, 0, _creation.from_host(in_lin, device=g.device)).reshape(in_shape)
    if maybe_overlapping(in_shape, in_strides):
        count = np.bincount(in_lin, minlength=span)[in_lin].reshape(in_shape)
        out = out / _creation.from_host(count.astype(g.dtype.numpy), device=g.device)
    return out


def _span(shape: tuple, strides: tuple, offset: int) -> int:
    if not all(shape):
        return offset
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def _linear_host(shape: tuple, strides: tuple, offset: int) -> np.ndarray:
    lin = np.full((), offset, np.int64)
    for n, s in zip(shape, strides):
        lin = lin[..., None] + np.arange(n, dtype=np.int64) * s
    return np.ascontiguousarray(lin.reshape(-1))


def linear_index(like: Tensor, shape: tuple, strides: tuple, offset: int) -> Tensor:
    """The memory offsets of the elements of the layout ``(shape, strides, offset)``, in C order,
    as a 1-D int64 tensor on ``like``'s device."""
    return _creation.from_host(_linear_host(shape, strides, offset), device=like.device)
