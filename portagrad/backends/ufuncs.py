"""The numpy ufunc of every binary op name of the backend contract.

:data:`BINARY_UFUNCS` maps each name in :data:`~portagrad.backends.interface.BINARY_OPS` and
:data:`~portagrad.backends.interface.COMPARISON_OPS` to the numpy ufunc that computes it, which is
the reference meaning of the op. It is shared by the backends that compute on the host: the numpy
backend runs its ``binary`` primitive through it, and the OpenCL backend uses it for a binary op
of two Python scalars (computed on the host, then filled on the device).

The ufuncs are numpy's plain semantics: integer ``floordiv``/``remainder`` by zero give 0 (with a
``RuntimeWarning``), so a caller that must raise :class:`ZeroDivisionError`, as the numpy
backend's ``binary`` does, checks the divisor itself.
"""
from __future__ import annotations

import numpy as np

__all__ = ["BINARY_UFUNCS", "fit_scalar"]

BINARY_UFUNCS: dict[str, np.ufunc] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floordiv": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod,
    "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal,
}
"""Op name -> numpy ufunc, for every binary and comparison op of the contract."""


# PyTorch's checked conversion of a Python scalar stored into a narrow integer tensor (fill_, full,
# where, masked_fill): a value outside the type raises, except that a negative value whose
# magnitude fits wraps into an unsigned type (fill_(-1) on uint8 writes 255). Arithmetic operands
# are not checked: they wrap (uint8 + 1000).
_NARROW = {"uint8": (0, 255, "uint8_t"), "int8": (-128, 127, "int8_t"),
           "int16": (-32768, 32767, "int16_t")}


def fit_scalar(value: object, dtype_name: str) -> object:
    """``value`` as stored into a tensor of dtype ``dtype_name``: checked and wrapped for uint8,
    int8 and int16 (``RuntimeError`` like PyTorch's when it overflows), unchanged otherwise."""
    r = _NARROW.get(dtype_name)
    if r is None or value.__class__ is not int:
        return value
    lo, hi, cname = r
    v: int = value  # type: ignore[assignment]
    if lo <= v <= hi:
        return v
    if lo == 0 and -hi <= v < 0:
        return v & hi
    raise RuntimeError(f"value cannot be converted to type {cname} without overflow")
