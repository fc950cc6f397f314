"""Advanced indexing (integer/bool tensors and lists in a key), as PyTorch and NumPy define it.

The common case ``x[rows]`` / ``x[mask]`` (one index in the first position) is an ``index_select``.
Any other key is resolved on the host: NumPy applies the key to the *positions* ``arange(numel)``,
which gives, with NumPy's exact semantics (broadcasting, adjacency rule, bool masks), the linear
position of every selected element; a recorded ``gather`` then reads them. Indices are checked
there, so a bad index raises ``IndexError`` naming it.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _creation, _dtype, _raw
from .._tensor import Tensor
from ._common import call, check_same_device
from ._gather import _Gather
from .shape import expand, reshape

__all__ = ["advanced_getitem", "advanced_setitem"]


def _host_key(x: Tensor, key: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for k in key:
        if isinstance(k, Tensor):
            if k.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors "
                                 f"(got {k.dtype})")
            if k.device != x.device and k.device.type != "cpu":
                check_same_device(x, k, "index")
            out.append(k.detach()._host())
        elif isinstance(k, (list, np.ndarray)):
            arr = np.asarray(k)
            if isinstance(k, list) and arr.size == 0:
                arr = arr.astype(np.int64)  # `[]` (or an empty range) selects nothing, as PyTorch
            if arr.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors "
                                 "(got a list of floats)")
            if arr.dtype == object:
                raise IndexError("index lists must hold integers or bools")
            out.append(arr)
        else:
            out.append(k)
    return tuple(out)


def _is_int(k: Any) -> bool:
    return isinstance(k, int) and not isinstance(k, bool)


def _consumed(k: Any) -> int:
    """How many dimensions of the indexed tensor the (host) key entry ``k`` takes."""
    if k is None or k is Ellipsis or isinstance(k, bool):
        return 0
    if isinstance(k, np.ndarray) and k.dtype == np.bool_:
        return k.ndim
    return 1


def _selects_first(shape: tuple[int, ...], key: tuple[Any, ...]
                   ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``key`` split in two: its integers as selects (slices elsewhere), then the rest.

    PyTorch applies an integer entry as a select before the advanced indexing, so it does not
    count as an advanced index (NumPy counts it as one: ``x[1, :, idx]`` would then put the
    index's dimensions first, as for separated advanced indices)."""
    rest = len(shape) - sum(_consumed(k) for k in key if k is not Ellipsis)
    first: list[Any] = []
    for k in key:
        if _is_int(k):
            first.append(k)
        elif k is Ellipsis:
            first.extend([slice(None)] * max(rest, 0))
        else:
            first.extend([slice(None)] * _consumed(k))
    return tuple(first), tuple(k for k in key if not _is_int(k))


def _check_bounds(shape: tuple[int, ...], key: tuple[Any, ...]) -> None:
    """PyTorch's ``IndexError`` for an out-of-range index array: the first bad element (in the
    broadcast order), naming the index's place among the key's index tensors (a mask counts
    one per dimension) as its "dimension"."""
    arrays, dim, ordinal = [], 0, 0
    rest = len(shape) - sum(_consumed(k) for k in key if k is not Ellipsis)
    for k in key:
        if k is Ellipsis:
            dim += max(rest, 0)
        elif isinstance(k, np.ndarray) and k.dtype != np.bool_:
            if dim < len(shape):
                arrays.append((k, ordinal, shape[dim]))
            ordinal, dim = ordinal + 1, dim + 1
        else:
            n = _consumed(k)
            if isinstance(k, np.ndarray):
                ordinal += n
            dim += n
    if not arrays:
        return
    try:
        b = np.broadcast_arrays(*(a for a, _, _ in arrays))
    except ValueError:
        return  # NumPy reports the shape mismatch
    bad = [(a < -n) | (a >= n) for a, (_, _, n) in zip(b, arrays)]
    hit = np.flatnonzero(np.logical_or.reduce(bad) if len(bad) > 1 else bad[0])
    if hit.size:
        e = hit[0]
        j = next(j for j, m in enumerate(bad) if m.reshape(-1)[e])
        raise IndexError(f"index {b[j].reshape(-1)[e]} is out of bounds for dimension "
                         f"{arrays[j][1]} with size {arrays[j][2]}")


def _positions(x: Tensor, key: tuple[Any, ...]) -> np.ndarray:
    pos = np.arange(x.numel(), dtype=np.int64).reshape(tuple(x.shape))
    try:
        if any(_is_int(k) for k in key):
            first, key = _selects_first(pos.shape, key)
            pos = pos[first]
        _check_bounds(pos.shape, key)
        return np.require(pos[key], requirements="C")
    except IndexError as exc:
        msg = str(exc).replace("axis", "dimension")
        raise IndexError(msg) from None


def _index_first(x: Tensor, k: Any) -> Tensor | None:
    """Fast path: ``x[idx]`` with one integer or bool index on the first dimension."""
    if isinstance(k, Tensor) and k.dtype is _dtype.bool:
        if tuple(k.shape) != tuple(x.shape[:k.dim()]):
            for i, (a, b) in enumerate(zip(k.shape, x.shape)):
                if a != b:
                    raise IndexError(f"The shape of the mask {list(k.shape)} at index {i} does not "
                                     f"match the shape of the indexed tensor {list(x.shape)} at "
                                     f"index {i}")
            raise IndexError(f"too many indices for tensor of dimension {x.dim()}")
        if k.dim() == 0:
            return None
        # (the mask's positions counted, not -1: with a zero-size trailing dimension -1 is
        # ambiguous)
        flat = reshape(x, (math.prod(x.shape[:k.dim()]),) + tuple(x.shape[k.dim():]))
        idx = np.flatnonzero(k.detach()._host())
        return flat.index_select(0, _creation.from_host(idx.astype(np.int64), device=x.device))
    if isinstance(k, list):
        arr = np.asarray(k)
        if arr.dtype == np.bool_ or arr.dtype.kind not in "iu" or arr.ndim != 1:
            return None
        k = _creation.from_host(arr.astype(np.int64), device=x.device)
    if not isinstance(k, Tensor) or k.dtype.is_floating_point or x.dim() == 0:
        return None
    if k.device != x.device:
        if k.device.type != "cpu":  # CPU indices are fine for any device, as in PyTorch
            check_same_device(x, k, "index")
        k = k.to(x.device)
    n = x.shape[0]
    idx = k if k.dtype is _dtype.int64 else k.to(_dtype.int64)
    flat_idx = reshape(idx, (-1,))
    if flat_idx.numel():
        if n == 0:  # (index_select would refuse the empty dimension with a RuntimeError)
            raise IndexError("index is out of bounds for dimension with size 0")
        lo = int(_raw.reduce("min", flat_idx, (0,), False).item())
        if lo < 0:
            if lo < -n:
                raise IndexError(f"index {lo} is out of bounds for dimension 0 with size {n}")
            flat_idx = _raw.where(_raw.binary("lt", flat_idx, 0, _dtype.bool),
                                  _raw.binary("add", flat_idx, n, _dtype.int64), flat_idx,
                                  _dtype.int64, flat_idx)
    out = x.index_select(0, flat_idx)
    return reshape(out, tuple(k.shape) + tuple(x.shape[1:]))


def _index_dtypes(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """PyTorch's index tensor dtypes: int64, int32, bool, and uint8 read as a mask (deprecated,
    with its warning); int8 and int16 are refused."""
    if not any(isinstance(k, Tensor) and k.dtype in _NARROW_INT for k in key):
        return key
    out = []
    for k in key:
        if isinstance(k, Tensor) and k.dtype is _dtype.uint8:
            warnings.warn("indexing with dtype portagrad.uint8 is now deprecated, please use a "
                          "dtype portagrad.bool instead.", UserWarning, stacklevel=5)
            k = _raw.binary("ne", k, 0, _dtype.bool)
        elif isinstance(k, Tensor) and k.dtype in _NARROW_INT:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        out.append(k)
    return tuple(out)


_NARROW_INT = (_dtype.uint8, _dtype.int8, _dtype.int16)


def advanced_getitem(x: Tensor, key: tuple[Any, ...]) -> Tensor:
    """``x[key]`` for a key holding integer/bool tensors, lists or arrays (a copy)."""
    key = _index_dtypes(key)
    if len(key) == 1:
        out = _index_first(x, key[0])
        if out is not None:
            return out
    pos = _positions(x, _host_key(x, key))
    idx = _creation.from_host(pos.reshape(-1), device=x.device)
    flat = reshape(x, (-1,))
    return reshape(call(_Gather, flat, 0, idx), pos.shape)


def advanced_setitem(x: Tensor, key: tuple[Any, ...], value: Any) -> None:
    """``x[key] = value`` for an advanced key: a scatter into ``x``, in place."""
    key = _index_dtypes(key)
    pos = _positions(x, _host_key(x, key))
    idx = _creation.from_host(pos.reshape(-1), device=x.device)
    if not isinstance(value, Tensor):
        value = _creation.tensor(value, dtype=x.dtype, device=x.device)
    elif value.dtype is not x.dtype:
        value = value.to(x.dtype)
    if value.device != x.device:
        value = value.to(x.device)
    try:
        value = expand(value, pos.shape)
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(pos.shape)}") from None
    flat_val = reshape(value, (-1,))
    new = reshape(x, (-1,)).scatter(0, idx, flat_val)
    x.copy_(reshape(new, tuple(x.shape)))
