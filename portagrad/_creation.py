"""Tensor factories: ``tensor``, ``from_numpy``, ``zeros``, ``arange``, ``*_like`` ..."""
from __future__ import annotations

import functools
import math
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _device, _dtype, _raw
from ._memory import pinned_buffer, pinning_backend
from ._memory_format import check_memory_format
from ._storage import Storage
from .backends.interface import decline_complex
from ._tensor import Tensor

__all__ = [
    "tensor", "as_tensor", "from_numpy", "asarray", "zeros", "ones", "full", "empty", "arange",
    "linspace", "logspace", "eye", "zeros_like", "ones_like", "full_like", "empty_like",
    "from_host", "parse_size", "empty_strided", "scalar_tensor", "pin_memory", "size_arg",
]


def parse_size(size: Sequence[Any], fn: str = "factory") -> tuple[int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])`` (also ``pg.Size``)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s.item())
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"{fn}(): argument 'size' must be a sequence of ints, but found element "
                            f"of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def size_arg(args: Sequence[Any], size: Any, fn: str) -> tuple[int, ...]:
    """The shape of ``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))`` (PyTorch accepts all)."""
    if size is None:
        if not args:
            raise TypeError(f"{fn}() missing 1 required positional argument: 'size'")
        return parse_size(args, fn)
    if args:
        raise TypeError(f"{fn}() got multiple values for argument 'size'")
    return parse_size((size,), fn)


def _target(device: Any, pin_memory: bool = False) -> tuple[Any, Any, int]:
    dev = _device.as_device(device)
    return _device.resolve(dev)


def _alloc(shape: tuple[int, ...], dtype: _dtype.dtype, device: Any, pin_memory: bool = False
           ) -> Tensor:
    concrete, backend, index = _target(device)
    if dtype._kind == 3:
        decline_complex(backend, dtype, concrete)
    n = math.prod(shape)
    nbytes = n * dtype.itemsize
    if nbytes >= 1 << 63:  # PyTorch's check, before any backend sees a size it cannot index
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    if pin_memory:
        if concrete.type != "cpu":
            raise RuntimeError(f"Only dense CPU tensors can be pinned, got device {concrete}")
        buf = pinned_buffer(nbytes)
        st = Storage(buf, nbytes, concrete, backend, index, pinned=True)
    else:
        st = Storage(backend.allocate(index, nbytes), nbytes, concrete, backend, index)
    return Tensor._make(st, 0, shape, _raw.strides_for(shape), dtype)


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_host(arr: np.ndarray, device: Any = None, dtype: Any = None, requires_grad: bool = False,
              pin_memory: bool = False) -> Tensor:
    """Copy a numpy array to a new tensor on ``device`` (never shares memory)."""
    dt = _dtype.from_numpy_dtype(arr.dtype) if dtype is None else _dtype.as_dtype(dtype)
    if arr.dtype != dt.numpy:
        arr = arr.astype(dt.numpy)
    arr = np.require(arr, requirements="C")  # ascontiguousarray would make 0-d arrays 1-d
    t = _alloc(tuple(arr.shape), dt, device, pin_memory)
    if arr.size:
        t._storage.backend.from_host(t._v, arr)
    return _finish(t, requires_grad)


def _infer_array(data: Any) -> tuple[np.ndarray, bool]:
    """numpy array for ``data`` and whether Python floats chose its dtype (-> default dtype)."""
    if isinstance(data, np.ndarray):
        return data, False
    if isinstance(data, (np.generic,)):
        return np.asarray(data), False
    if isinstance(data, (list, tuple)):
        data = _flatten_tensors(data)
    try:
        arr = np.array(data)
    except ValueError as exc:
        if isinstance(data, (list, tuple)):
            _check_ragged(data)  # names the dimension and lengths, as PyTorch
        raise ValueError(f"could not convert data to a tensor: {exc}") from None
    if arr.dtype == object:
        if isinstance(data, (list, tuple)):
            _check_ragged(data)
        _refuse_leaf(data)
    if arr.dtype.kind in "US":
        raise TypeError(f"new(): invalid data type '{'str' if arr.dtype.kind == 'U' else 'bytes'}'")
    return arr, arr.dtype.kind in "fc"


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _refuse_leaf(data: Any) -> None:
    """PyTorch's error for the first leaf of ``data`` that is not a number: a Python int outside
    int64 (``ValueError``), text (``TypeError``), anything else (``RuntimeError``, "Could not
    infer dtype")."""
    stack = [data]
    while stack:
        d = stack.pop(0)
        if isinstance(d, (list, tuple)):
            stack[:0] = list(d)
        elif isinstance(d, int) and not isinstance(d, bool):
            if not _INT64_MIN <= d <= _INT64_MAX:
                raise ValueError("Overflow when unpacking long long")
        elif isinstance(d, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(d).__name__}'")
        elif not isinstance(d, (float, complex, bool, np.generic, np.ndarray)):
            raise RuntimeError(f"Could not infer dtype of {type(d).__name__}")
    raise TypeError(f"can't convert object of type {type(data).__name__} to a tensor")


def _flatten_tensors(data: Any) -> Any:
    if isinstance(data, Tensor):
        # a one-element tensor in a sequence is a number, as PyTorch (a (1,) tensor included:
        # [t([1.]), t([2.])] is shape (2,)); a bigger one is nested (PyTorch raises there)
        if data.numel() == 1:
            return data.item()
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_flatten_tensors(d) for d in data]
    return data


def _float_leaf_dtypes(data: Any, out: list[Any]) -> bool:
    """Collect into ``out`` the dtypes of the floating/complex numpy scalars, numpy arrays and
    tensors among the leaves of nested sequences ``data``; True if a Python float or complex is
    among them. PyTorch infers such a sequence's dtype by promoting those dtypes with the default
    dtype where a Python float appears: ``[np.float64(1.5), 2.0]`` is float64, ``[np.float16(1)]`` float16."""
    weak = False
    stack = [data]
    while stack:
        d = stack.pop()
        if isinstance(d, (list, tuple)):
            stack.extend(d)
        elif isinstance(d, Tensor):
            if d.dtype.is_floating_point or d.dtype.is_complex:
                out.append(d.dtype)
        elif isinstance(d, (np.floating, np.complexfloating)) or \
                (isinstance(d, np.ndarray) and d.dtype.kind in "fc"):
            # a numpy array inside a sequence counts with its dtype, as a tensor does:
            # [np.array([0.1, 0.2])] is float64 (it was rounded to the default float32)
            out.append(_dtype.from_numpy_dtype(d.dtype))
        elif isinstance(d, (float, complex)):
            weak = True
    return weak


def _check_ragged(data: Sequence[Any], dim: int = 1) -> None:
    if not data or not isinstance(data[0], (list, tuple)):
        return
    n = len(data[0])
    for d in data:
        if not isinstance(d, (list, tuple)) or len(d) != n:
            got = len(d) if isinstance(d, (list, tuple)) else type(d).__name__
            raise ValueError(f"expected sequence of length {n} at dim {dim} (got {got})")
    for d in data:
        _check_ragged(d, dim + 1)


def warn_tensor_copy(spelled: str, depth: int) -> None:
    """PyTorch's warning for copying a tensor through ``torch.tensor``/``new_tensor`` (which
    ``clone().detach()`` says more plainly), when the caller ``depth`` frames up is user code
    (portagrad's own copies stay quiet)."""
    caller = sys._getframe(depth).f_globals.get("__name__", "")
    if caller == "portagrad" or caller.startswith("portagrad."):
        return
    warnings.warn("To copy construct from a tensor, it is recommended to use "
                  "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                  f".requires_grad_(True), rather than {spelled}(sourceTensor).", UserWarning,
                  stacklevel=depth + 1)


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, numpy arrays, tensors)."""
    if isinstance(data, Tensor):
        warn_tensor_copy("torch.tensor", 2)
        src = data.detach()
        out = src.to(device=device if device is not None else src.device,
                      dtype=dtype if dtype is not None else src.dtype, copy=True)
        return _finish(out, requires_grad)
    arr, from_floats = _infer_array(data)
    strong: list[Any] = []
    if dtype is None and from_floats and isinstance(data, (list, tuple)):
        weak = _float_leaf_dtypes(data, strong)
        if strong:  # numpy float scalars or float tensors among the leaves: their dtypes count
            if weak:
                strong.append(_dtype.default_complex() if arr.dtype.kind == "c"
                              else _dtype.get_default_dtype())
            dtype = functools.reduce(_dtype.promote_types, strong)
            if arr.dtype.kind == "c" and not dtype.is_complex:
                dtype = _dtype.promote_types(dtype, _dtype.default_complex())
    if dtype is None:
        if arr.dtype.kind == "c" and not isinstance(data, (np.ndarray, np.generic)):
            dt = _dtype.default_complex()  # Python complex numbers: the default's complex type
        elif from_floats or (arr.dtype == np.float64
                             and not isinstance(data, (np.ndarray, np.generic))):
            dt = _dtype.get_default_dtype()
        elif arr.dtype.kind in "iu" and arr.dtype not in _dtype._BY_NUMPY:
            if arr.dtype == np.uint64 and not isinstance(data, (np.ndarray, np.generic)):
                _refuse_leaf(data)  # Python ints past int64's range (numpy took uint64)
            dt = _dtype.int64  # integer types without a portagrad dtype (uint16 ...) widen
            if isinstance(data, (np.ndarray, np.generic)) and arr.dtype == np.uint64 and \
                    arr.size and int(arr.max()) > np.iinfo(np.int64).max:
                # (widening would wrap it to a negative number)
                raise RuntimeError(f"the uint64 value {int(arr.max())} does not fit in int64, "
                                   f"the dtype portagrad widens uint64 arrays to (it has no "
                                   f"uint64 tensors)")
        else:
            dt = _dtype.from_numpy_dtype(arr.dtype)
    else:
        dt = _dtype.as_dtype(dtype)
        if arr.dtype.kind == "c" and not dt.is_complex and \
                not isinstance(data, (np.ndarray, np.generic)):
            # Python complex numbers into a real dtype: PyTorch's TypeError (the imaginary part
            # was dropped with numpy's warning)
            raise TypeError("must be real number, not complex")
    if not isinstance(data, (np.ndarray, np.generic)):  # numpy arrays wrap, as in PyTorch
        _dtype.check_storable(arr, dt)
    return from_host(arr, device, dt, requires_grad, pin_memory)


def scalar_tensor(value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A zero-dim tensor (``torch.scalar_tensor``)."""
    return tensor(value, dtype=dtype or _dtype.get_default_dtype(), device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor *sharing memory* with ``array`` (writes through either are seen by both)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    dt = _dtype.from_numpy_dtype(array.dtype)
    if any(s < 0 for s in array.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    concrete, backend, index = _device.resolve(_device.device("cpu"))
    wrapped = backend.wrap_host(array)
    if wrapped is None:
        raise ValueError("from_numpy: the array's strides are not multiples of its item size")
    buf, offset = wrapped
    isz = array.itemsize
    strides = tuple(s // isz for s in array.strides)
    st = Storage(buf, buf.nbytes, concrete, backend, index)
    if not array.flags.writeable:
        import warnings

        warnings.warn("The given NumPy array is not writable; writing to the tensor is undefined "
                      "behaviour.", UserWarning, stacklevel=2)
    return Tensor._make(st, offset, tuple(array.shape), strides, dt)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor`` but avoids a copy when ``data`` is already a tensor or a CPU numpy array of
    the right dtype and device."""
    if isinstance(data, Tensor):
        if (dtype is None or _dtype.as_dtype(dtype) is data.dtype) and \
                (device is None or _device.as_device(device) == data.device):
            return data
        return data.to(device=device if device is not None else data.device,
                       dtype=dtype if dtype is not None else data.dtype)
    if isinstance(data, np.ndarray):
        dev = _device.as_device(device)
        if dev.type == "cpu" and (dtype is None or _dtype.as_dtype(dtype).numpy == data.dtype):
            try:
                return from_numpy(data)
            except (TypeError, ValueError):
                pass
    return tensor(data, dtype=dtype, device=device)


_UNSET: Any = object()  # requires_grad not given: the result keeps the input's


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: Any = _UNSET) -> Tensor:
    """``obj`` as a tensor (``torch.asarray``): a tensor, numpy array or buffer (``bytes``,
    ``bytearray``, ``memoryview``, its bytes read as ``dtype``) is shared where ``copy`` is
    ``None`` or ``False`` and nothing needs converting; ``copy=True`` always copies (a tensor's
    copy stays in the graph, as ``clone``); ``copy=False`` refuses what would need a copy
    (another dtype or device, a sequence, a number) with PyTorch's ``ValueError``.
    ``requires_grad`` given sets the flag on the result (on ``obj`` itself when it is returned,
    as PyTorch does); not given, a tensor's result keeps ``obj``'s."""
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"asarray(): argument 'copy' must be bool, not {type(copy).__name__}")
    dt = None if dtype is None else _dtype.as_dtype(dtype)
    dev = None if device is None else _device.as_device(device)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        # the buffer protocol: the bytes as they are, read as dtype (the default dtype if none)
        # whatever a memoryview's own format says, as PyTorch reads them
        obj = np.frombuffer(obj, dtype=(dt or _dtype.get_default_dtype()).numpy)
        dt = None
    if isinstance(obj, Tensor):
        out = _asarray_tensor(obj, dt, dev, copy)
    elif isinstance(obj, np.ndarray):
        out = _asarray_numpy(obj, dt, dev, copy)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        out = tensor(obj, dtype=dt, device=dev)
    if requires_grad is not _UNSET and bool(requires_grad) != out.requires_grad:
        out.requires_grad_(bool(requires_grad))
    return out


def _alias_check(src_dtype: _dtype.dtype, src_device: Any, dt: Any, dev: Any) -> None:
    """PyTorch's ``ValueError`` for ``copy=False`` where the dtype or the device differs."""
    if dt is not None and dt is not src_dtype:
        names = _dtype.SCALAR_TYPE_NAMES
        raise ValueError(f"can't alias tensor with dtype '{names.get(src_dtype.name)}' into "
                         f"dtype '{names.get(dt.name)}'.")
    if dev is not None and dev != src_device:
        raise ValueError(f"can't alias tensor from device '{src_device}' to '{dev}'.")


def _asarray_tensor(obj: Tensor, dt: Any, dev: Any, copy: bool | None) -> Tensor:
    converts = (dt is not None and dt is not obj.dtype) or (dev is not None and dev != obj.device)
    if copy is False:
        _alias_check(obj.dtype, obj.device, dt, dev)
    if not converts:
        return obj.clone() if copy else obj
    return obj.to(device=dev if dev is not None else obj.device,
                  dtype=dt if dt is not None else obj.dtype)  # recorded: the graph goes on


def _asarray_numpy(obj: np.ndarray, dt: Any, dev: Any, copy: bool | None) -> Tensor:
    src = _dtype.from_numpy_dtype(obj.dtype)
    if copy is False:
        _alias_check(src, _device.as_device("cpu"), dt, dev)
    if copy is not True and (dev is None or dev.type == "cpu") and (dt is None or dt is src):
        try:
            return from_numpy(obj)
        except (TypeError, ValueError):  # strides numpy has and tensors do not: a copy
            if copy is False:
                raise
    return tensor(obj, dtype=dt, device=dev)


def empty(*args: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, pin_memory: bool = False, memory_format: Any = None
          ) -> Tensor:
    """An uninitialised tensor (``empty(2, 3)``, ``empty((2, 3))`` or ``empty(size=(2, 3))``)."""
    shape = size_arg(args, size, "empty")
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    return _finish(_alloc(shape, dt, device, pin_memory), requires_grad)


def empty_strided(size: Sequence[int], stride: Sequence[int], dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor with the given strides."""
    shape = parse_size((size,), "empty_strided")
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    if any(s < 0 for s in stride):  # (PyTorch's words: the storage size comes out negative)
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(stride)}")
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    flat = empty(span, dtype=dtype, device=device)
    t = Tensor._make(flat._storage, 0, shape, tuple(stride), flat.dtype)
    return _finish(t, requires_grad)


def full(size: Sequence[int], fill_value: Any, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor filled with ``fill_value`` (dtype inferred from the value, as PyTorch)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = _dtype.result_type(fill_value)
    t = empty(parse_size((size,), "full"), dtype=dtype, device=device, pin_memory=pin_memory)
    # checked here, not only by the backend, so that every backend refuses a value that cannot be
    # stored (full((2,), -1.5, dtype=uint8)) instead of wrapping it
    _raw.fill(t, _dtype.fit_scalar(fill_value, t.dtype.name))
    return _finish(t, requires_grad)


def zeros(*args: Any, size: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of zeros (``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``)."""
    t = empty(size_arg(args, size, "zeros"), dtype=dtype, device=device, pin_memory=pin_memory)
    _raw.fill(t, 0)
    return _finish(t, requires_grad)


def ones(*args: Any, size: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of ones (``ones(2, 3)``, ``ones((2, 3))`` or ``ones(size=(2, 3))``)."""
    t = empty(size_arg(args, size, "ones"), dtype=dtype, device=device, pin_memory=pin_memory)
    _raw.fill(t, 1)
    return _finish(t, requires_grad)


def _like(t: Tensor, dtype: Any, device: Any, memory_format: Any = None, fn: str = "like"
          ) -> tuple[Any, Any]:
    check_memory_format(memory_format, fn)
    return (t.dtype if dtype is None else dtype), (t.device if device is None else device)


def empty_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               memory_format: Any = None) -> Tensor:
    dt, dev = _like(input, dtype, device, memory_format, "empty_like")
    return empty(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def zeros_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               memory_format: Any = None) -> Tensor:
    """Zeros with ``input``'s shape, dtype and device."""
    dt, dev = _like(input, dtype, device, memory_format, "zeros_like")
    return zeros(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False,
              memory_format: Any = None) -> Tensor:
    """Ones with ``input``'s shape, dtype and device."""
    dt, dev = _like(input, dtype, device, memory_format, "ones_like")
    return ones(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(input: Tensor, fill_value: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    dt, dev = _like(input, dtype, device, memory_format, "full_like")
    return full(input.shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0 or step != step:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in vals)
        dtype = _dtype.get_default_dtype() if is_float else _dtype.int64
    dt = _dtype.as_dtype(dtype)
    if dt.is_floating_point:
        n = max(0, math.ceil((end - start) / step))
        arr = start + np.arange(n, dtype=np.float64) * step
    else:
        # PyTorch: the values run from the truncated start by the truncated step; their count comes
        # from the truncated bounds for int64 and from the bounds as given for the narrower integer
        # types (arange(-0.99, 4, dtype=int16) has 5 elements, with dtype=int64 4), where a step
        # that truncates to 0 repeats the start (arange(1, 2, 0.3, dtype=int32) is [1, 1, 1, 1])
        istart, iend, istep = int(start), int(end), int(step)
        if dt is _dtype.int64:
            if istep == 0:
                raise RuntimeError("step must be nonzero")
            n = max(0, -((istart - iend) // istep))
        else:
            n = max(0, math.ceil((end - start) / step))
        arr = istart + np.arange(n, dtype=np.int64) * istep
    return from_host(np.asarray(arr, dtype=dt.numpy), device, dt, requires_grad)


def linspace(start: float, end: float, steps: int, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _space_dtype("linspace", start, end, dtype)
    if dt.is_complex and steps > 1:
        arr = _complex_range(start, end, steps, dt)
    elif _integral(dt) and steps > 1:
        arr = np.trunc(_int_endpoints_range(start, end, steps))
    else:
        arr = np.linspace(start, end, steps, dtype=np.complex128 if dt.is_complex else np.float64)
    return from_host(arr.astype(dt.numpy), device, dt, requires_grad)


def _space_dtype(name: str, start: Any, end: Any, dtype: Any) -> _dtype.dtype:
    """linspace's/logspace's dtype: ``dtype``, else the default float, or the default complex
    dtype when an endpoint is complex (PyTorch infers it from the endpoints, and refuses a real
    ``dtype`` then)."""
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    if any(isinstance(v, (complex, np.complexfloating)) for v in (start, end)):
        inferred = _dtype.default_complex()
        if dtype is None:
            return inferred
        if not dt.is_complex:
            raise RuntimeError(
                f"torch.{name}(): inferred dtype {_dtype.CPP_TYPE_NAMES[inferred.name]} can't be "
                f"safely cast to passed dtype {_dtype.SCALAR_TYPE_NAMES.get(dt.name, dt.name)}")
    return dt


def _complex_range(start: Any, end: Any, steps: int, dt: _dtype.dtype) -> np.ndarray:
    """PyTorch's complex linspace in ``dt``'s precision, part by part: ``step = (end - start) /
    (steps - 1)`` (c10's quotient of a complex by a real number divides each part), then
    ``start + step * i`` over the first half and ``end - step * (steps - 1 - i)`` over the
    second (each endpoint exact)."""
    real = np.float32 if dt is _dtype.complex64 else np.float64
    s, e = complex(start), complex(end)
    i = np.arange(steps, dtype=real)
    first = i < steps // 2
    parts = []
    for a, b in ((s.real, e.real), (s.imag, e.imag)):
        a, b = real(a), real(b)
        step = (b - a) / real(steps - 1)
        parts.append(np.where(first, a + step * i, b - step * (real(steps - 1) - i)))
    return parts[0] + 1j * parts[1].astype(np.complex128 if real is np.float64 else np.complex64)


def _integral(dt: _dtype.dtype) -> bool:
    return not (dt.is_floating_point or dt.is_complex or dt is _dtype.bool)


def _int_endpoints_range(start: Any, end: Any, steps: int) -> np.ndarray:
    """PyTorch's linspace (and logspace's exponents) for an integer dtype: the endpoints
    converted to the integer type first (truncated), then ``start + step * i`` over the first
    half and ``end - step * (steps - 1 - i)`` over the second, in double."""
    s, e = float(math.trunc(start)), float(math.trunc(end))
    step = (e - s) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    return np.where(i < steps // 2, s + step * i, e - step * (steps - 1 - i))


def logspace(start: float, end: float, steps: int, base: float = 10.0, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    dt = _space_dtype("logspace", start, end, dtype)
    if dt.is_complex:
        # base ** (linspace's exponents), in complex (PyTorch's pow of complex numbers)
        exps = _complex_range(start, end, steps, dt) if steps > 1 else \
            np.linspace(complex(start), complex(end), steps, dtype=np.complex128)
        arr = np.power(complex(base), exps.astype(np.complex128))
    elif _integral(dt) and steps > 1:
        arr = np.trunc(np.power(float(base), _int_endpoints_range(start, end, steps)))
    else:
        arr = np.logspace(start, end, steps, base=base, dtype=np.float64)
    return from_host(arr.astype(dt.numpy), device, dt, requires_grad)


def eye(n: int, m: int | None = None, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """The identity matrix (``n`` x ``m``)."""
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    return from_host(np.eye(n, m, dtype=dt.numpy), device, dt, requires_grad)


def pin_memory(input: Tensor, device: Any = None) -> Tensor:
    """A copy of the CPU tensor ``input`` in page-locked host memory (for fast, asynchronous
    copies to devices); ``input`` itself if already pinned. ``device`` (a device or device type)
    picks the backend whose pinned memory it is, the one that copies from it without blocking
    (default: the accelerator's, else the first backend that can pin)."""
    if input.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{input.type()}' only dense CPU tensors can be pinned")
    if input.is_pinned() and (device is None or
                              pinning_backend(device).is_pinned(input._storage.buffer)):
        return input
    shape = tuple(input.shape)
    nbytes = math.prod(shape) * input.dtype.itemsize
    concrete, cpu_backend, index = _target("cpu")
    st = Storage(pinned_buffer(nbytes, device), nbytes, concrete, cpu_backend, index, pinned=True)
    out = Tensor._make(st, 0, shape, _raw.strides_for(shape), input.dtype)
    _raw.copy_into(out, input)
    return out
