"""dtypes and PyTorch's type-promotion rules."""
from __future__ import annotations

from typing import Any

import builtins as _builtins

import numpy as np

__all__ = [
    "dtype", "float16", "float32", "float64", "int32", "int64", "bool", "half", "float", "double",
    "int", "long", "result_type", "promote_types", "get_default_dtype", "set_default_dtype",
    "from_numpy_dtype", "as_dtype", "ALL_DTYPES",
]

_builtin_bool = bool
# one assignment each: type checkers read a plain `X = cls` as a type alias; annotations below use
# _py_int because `int` is rebound to a dtype in this module
_py_float = _builtins.float
_py_int = _builtins.int


class dtype:
    """A tensor element type (``pg.float32`` ...). Instances are singletons; compare with ``is``/``==``."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_signed", "numpy", "_kind", "_rank")

    def __init__(self, name: str, np_dtype: Any, kind: _py_int, rank: _py_int) -> None:
        self.name = name
        self.numpy = np.dtype(np_dtype)
        self.itemsize = self.numpy.itemsize
        self._kind = kind  # 0 bool, 1 integer, 2 floating: PyTorch's promotion categories
        self._rank = rank
        self.is_floating_point = kind == 2
        self.is_signed = kind != 0

    @property
    def is_complex(self) -> _builtin_bool:
        return False

    def __repr__(self) -> str:
        return f"portagrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name


bool = dtype("bool", np.bool_, 0, 0)  # PyTorch's name
int32 = dtype("int32", np.int32, 1, 2)
int64 = dtype("int64", np.int64, 1, 3)
float16 = dtype("float16", np.float16, 2, 1)
float32 = dtype("float32", np.float32, 2, 2)
float64 = dtype("float64", np.float64, 2, 3)
half, float, double, int, long = float16, float32, float64, int32, int64  # PyTorch's names
ALL_DTYPES = (bool, int32, int64, float16, float32, float64)

_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES}
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_default_float = float32


def get_default_dtype() -> dtype:
    """The dtype of floating-point tensors created from Python floats (``float32`` unless changed)."""
    return _default_float


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype (``float32`` or ``float64``)."""
    global _default_float
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def from_numpy_dtype(np_dtype: Any) -> dtype:
    """Map a numpy dtype to a portagrad dtype, with a clear error for unsupported ones."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, int64, int32, and bool."
        ) from None


def as_dtype(d: Any) -> dtype:
    """Accept a portagrad dtype, a numpy dtype, a name, or Python's ``float``/``int``/``bool``."""
    if isinstance(d, dtype):
        return d
    if d is _py_float:
        return float64
    if d is _py_int:
        return int64
    if d is _builtin_bool:
        return bool
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    try:
        return from_numpy_dtype(d)
    except TypeError:
        raise TypeError(f"{d!r} is not a portagrad dtype") from None


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to (PyTorch's ``promote_types``)."""
    if a is b:
        return a
    if a._kind != b._kind:
        return a if a._kind > b._kind else b
    return a if a._rank >= b._rank else b


def _scalar_kind(x: Any) -> _py_int:
    if isinstance(x, _builtin_bool):
        return 0
    if isinstance(x, _py_int):
        return 1
    return 2


def result_type(*operands: Any) -> dtype:
    """PyTorch's result type: dimensioned tensors > zero-dim tensors > Python scalars, by category."""
    dim_t = zero_t = None
    scalar_kind = -1
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype):
            if x.dim() > 0:
                dim_t = d if dim_t is None else promote_types(dim_t, d)
            else:
                zero_t = d if zero_t is None else promote_types(zero_t, d)
        else:
            scalar_kind = max(scalar_kind, _scalar_kind(x))
    result = dim_t
    if zero_t is not None:
        if result is None or zero_t._kind > result._kind:
            result = zero_t
    if scalar_kind >= 0:
        if result is None:
            result = (bool, int64, _default_float)[scalar_kind]
        elif scalar_kind > result._kind:
            result = int64 if scalar_kind == 1 else _default_float
    if result is None:
        raise TypeError("result_type needs at least one operand")
    return result
