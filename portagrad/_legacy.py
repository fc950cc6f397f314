"""PyTorch's legacy tensor types: ``pg.FloatTensor``, ``pg.LongTensor`` ... (CPU types).

``pg.FloatTensor(2, 3)`` is an uninitialised 2x3 float32 tensor, ``pg.FloatTensor([1, 2])`` holds
the data, ``pg.FloatTensor(t)`` aliases a float32 CPU tensor ``t``. ``isinstance(t,
pg.FloatTensor)`` is true for float32 CPU tensors, as in PyTorch (the types name a dtype *and* the
cpu device), and ``t.type(pg.FloatTensor)`` converts. A type whose dtype this build lacks (e.g.
``ByteTensor`` without ``pg.uint8``) exists but raises when used.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import _creation, _device, _dtype
from ._storage import Size
from ._tensor import LEGACY_TYPE_DTYPES, Tensor, _legacy_type_dtype

__all__ = ["LegacyTensorType", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor",
           "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
           "set_default_tensor_type"]


class LegacyTensorType(type):
    """The metaclass of the legacy types: calling one builds a CPU tensor of its dtype, and
    ``isinstance`` checks dtype and device."""

    _dtype_name: str

    @property
    def dtype(cls) -> _dtype.dtype:
        """The dtype this type stands for."""
        dt: _dtype.dtype = getattr(_dtype, cls._dtype_name)
        return dt

    @property
    def is_cuda(cls) -> bool:
        return False

    @property
    def is_sparse(cls) -> bool:
        return False

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __subclasscheck__(cls, sub: Any) -> bool:
        return sub is cls

    def __repr__(cls) -> str:
        return f"<class 'portagrad.{cls.__name__}'>"

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:  # type: ignore[override]
        dt = cls.dtype
        if device is not None and _device.as_device(device).type != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                               f"{_device.as_device(device).type} was passed")
        if not args:
            return _creation.empty(0, dtype=dt, device="cpu")
        if len(args) == 1:
            arg = args[0]
            if isinstance(arg, Tensor):
                if arg.dtype is not dt or arg.device.type != "cpu":
                    raise TypeError(f"expected dtype {dt} on device cpu (got dtype {arg.dtype} "
                                    f"on device {arg.device})")
                return arg.detach()  # an alias of the same storage, as PyTorch
            if isinstance(arg, Size):
                return _creation.empty(arg, dtype=dt, device="cpu")
            if isinstance(arg, (list, tuple, np.ndarray)):
                return _creation.tensor(arg, dtype=dt, device="cpu")
            if isinstance(arg, str) or not isinstance(arg, (int, np.integer)) or \
                    isinstance(arg, bool):
                raise TypeError(f"new(): data must be a sequence (got {type(arg).__name__})")
        return _creation.empty(_creation.parse_size(args, cls.__name__), dtype=dt, device="cpu")


def _legacy(name: str, dtype_name: str) -> LegacyTensorType:
    doc = f"Legacy CPU tensor type of dtype ``pg.{dtype_name}`` (``torch.{name}``)."
    return LegacyTensorType(name, (), {"_dtype_name": dtype_name, "__doc__": doc,
                                        "__module__": "portagrad"})


_BY_NAME = {f"{prefix}Tensor": _legacy(f"{prefix}Tensor", dt)
            for prefix, dt in LEGACY_TYPE_DTYPES.items()}
FloatTensor = _BY_NAME["FloatTensor"]
DoubleTensor = _BY_NAME["DoubleTensor"]
HalfTensor = _BY_NAME["HalfTensor"]
BFloat16Tensor = _BY_NAME["BFloat16Tensor"]
LongTensor = _BY_NAME["LongTensor"]
IntTensor = _BY_NAME["IntTensor"]
ShortTensor = _BY_NAME["ShortTensor"]
CharTensor = _BY_NAME["CharTensor"]
ByteTensor = _BY_NAME["ByteTensor"]
BoolTensor = _BY_NAME["BoolTensor"]


def set_default_tensor_type(t: Any) -> None:
    """Deprecated in PyTorch: set the default floating dtype from a legacy type
    (``pg.DoubleTensor`` or ``"torch.DoubleTensor"``); warns as PyTorch does."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, LegacyTensorType):
        dt = t.dtype
    elif isinstance(t, str):
        try:
            dt = _legacy_type_dtype(t)
        except AssertionError:
            raise TypeError(f"type {t} not available. Torch not compiled with CUDA enabled.") \
                from None
    else:
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dtype.set_default_dtype(dt)
