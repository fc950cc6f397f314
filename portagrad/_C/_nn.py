"""``torch._C._nn``: the one private helper of it that Python libraries call, ``_parse_to``."""
from __future__ import annotations

from typing import Any

from .. import _device, _dtype, accelerator
from .._memory_format import memory_format
from .._tensor import Tensor

__all__ = ["_parse_to"]

_SIGNATURES = ("(torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
               "bool copy = False, *, torch.memory_format memory_format = None)\n"
               " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
               "torch.memory_format memory_format = None)\n"
               " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
               "torch.memory_format memory_format = None)")


def _bad(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TypeError:
    got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}"
                                                       for k, v in kwargs.items()])
    return TypeError(f"to() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n * {_SIGNATURES}")


def _parse_to(*args: Any, **kwargs: Any
              ) -> tuple[_device.device | None, _dtype.dtype | None, bool, memory_format | None]:
    """``torch._C._nn._parse_to``: the ``(device, dtype, non_blocking, memory_format)`` that
    ``Tensor.to``/``Module.to`` arguments ask for (``None`` where not given), as PyTorch parses
    them: ``(device, dtype, non_blocking, copy)``, ``(dtype, non_blocking, copy)`` or
    ``(tensor, non_blocking, copy)``, with ``memory_format`` keyword-only. ``copy=True`` is
    refused, as by PyTorch."""
    allowed = {"device", "dtype", "non_blocking", "copy", "memory_format", "tensor"}
    if set(kwargs) - allowed:
        raise _bad(args, kwargs)
    fmt = kwargs.pop("memory_format", None)
    if args and isinstance(args[0], Tensor) or "tensor" in kwargs:
        names: tuple[str, ...] = ("tensor", "non_blocking", "copy")
    elif args and isinstance(args[0], _dtype.dtype):
        names = ("dtype", "non_blocking", "copy")
    else:
        names = ("device", "dtype", "non_blocking", "copy")
    if len(args) > len(names):
        raise _bad(args, kwargs)
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in bound or k not in names:
            raise _bad(args, kwargs)
        bound[k] = v
    device, dtype = bound.get("device"), bound.get("dtype")
    non_blocking, copy = bound.get("non_blocking", False), bound.get("copy", False)
    if not isinstance(non_blocking, bool) or not isinstance(copy, bool):
        raise _bad(args, kwargs)
    if dtype is not None and not isinstance(dtype, _dtype.dtype):
        raise _bad(args, kwargs)
    if device is not None and not isinstance(device, (str, int, _device.device)):
        raise _bad(args, kwargs)
    if fmt is not None and not isinstance(fmt, memory_format):
        raise _bad(args, kwargs)  # parsing only: a format the factories refuse still parses
    if copy:
        raise RuntimeError(".to() does not accept copy argument")
    tensor = bound.get("tensor")
    if tensor is not None:
        if not isinstance(tensor, Tensor):
            raise _bad(args, kwargs)
        return tensor.device, tensor.dtype, non_blocking, fmt
    return _as_device(device), dtype, non_blocking, fmt


def _as_device(device: str | int | _device.device | None) -> _device.device | None:
    if device is None or isinstance(device, _device.device):
        return device
    if isinstance(device, int):  # an index on the current accelerator, as in PyTorch
        acc = accelerator.current_accelerator()
        if acc is None:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return _device.device(acc.type, device)
    return _device.device(device)
