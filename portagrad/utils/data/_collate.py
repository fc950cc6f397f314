"""Turning a list of samples into a batch (``default_collate``) and moving batches into pinned
memory."""
from __future__ import annotations

import collections.abc
import copy
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import _creation, _dtype
from ..._ops.joining import stack
from ..._tensor import Tensor

__all__ = ["default_collate", "default_convert", "pin_memory"]

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def default_convert(data: Any) -> Any:
    """Numpy arrays become tensors, recursively; everything else is left as is."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "SaUO":
        return _creation.as_tensor(data)
    if isinstance(data, np.generic) and data.dtype.kind not in "SaUO":
        return _creation.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: default_convert(v) for k, v in data.items()})  # type: ignore
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])  # type: ignore[call-arg]
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into a batch, as PyTorch: tensors are stacked along a new first
    dimension; numbers become 1-D tensors (float64 when the first is a float, else the dtype
    inferred from the whole batch); strings stay as given; dicts, tuples, named tuples and
    lists are collated element-wise."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray) or (isinstance(elem, np.generic) and not isinstance(elem, np.str_)):
        if elem.dtype.kind in "SaUO":
            raise TypeError(_ERR.format(elem.dtype))
        if isinstance(elem, np.ndarray) and elem.ndim > 0:
            return default_collate([_creation.as_tensor(b) for b in batch])
        return _creation.as_tensor(np.array(batch))
    if isinstance(elem, float):
        return _creation.tensor(list(batch), dtype=_dtype.float64)
    if isinstance(elem, int):  # (bool included) the dtype inferred from the whole batch, as
        return _creation.tensor(list(batch))  # PyTorch: [1, 2.5] is float32, [True, 2] int64
    if isinstance(elem, (str, bytes)):
        return batch  # as given (a tuple of strings from a transposed sample stays a tuple)
    if isinstance(elem, collections.abc.Mapping):
        out = {key: default_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            # a copy of the first sample's mapping, updated: keeps its type and its state
            # (a defaultdict's factory, an OrderedDict's order)
            merged = copy.copy(elem)
            merged.update(out)
            return merged
        try:
            return type(elem)(out)  # type: ignore[call-arg]
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return type(elem)([default_collate(s) for s in transposed])  # type: ignore[call-arg]
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_ERR.format(type(elem)))


_warned_no_pin = False


def _pin_tensor(t: Tensor) -> Tensor:
    global _warned_no_pin
    if _warned_no_pin or t.device.type != "cpu":
        return t
    try:
        return t.pin_memory()
    except RuntimeError as exc:
        if "pin" not in str(exc).lower():
            raise
        _warned_no_pin = True
        warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                      "device pinned memory won't be used.", UserWarning, stacklevel=4)
        return t


def pin_memory(data: Any) -> Any:
    """Copy every CPU tensor in ``data`` (nested dicts, lists, tuples) into page-locked memory.
    Without a backend that can pin, warn once and return the data unchanged, as PyTorch does
    without CUDA."""
    if isinstance(data, Tensor):
        return _pin_tensor(data)
    if isinstance(data, (str, bytes)):
        return data
    if hasattr(data, "pin_memory") and callable(data.pin_memory):
        return data.pin_memory()
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: pin_memory(v) for k, v in data.items()})  # type: ignore
        except TypeError:
            return {k: pin_memory(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(s) for s in data))
    if isinstance(data, tuple):
        return tuple(pin_memory(s) for s in data)
    if isinstance(data, list):
        return [pin_memory(s) for s in data]
    return data


Collate = Callable[[list], Any]
