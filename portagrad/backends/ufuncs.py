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

import ml_dtypes
import numpy as np

# PyTorch's checked conversion of a scalar stored into a tensor: one rule for the core and every
# backend, defined beside the dtypes
from .._dtype import fit_scalar

__all__ = ["BINARY_UFUNCS", "f16_scalar_is_float32", "fit_scalar", "half_scalar_operands",
           "is_scalar"]


def f16_scalar_is_float32(op: str, a: object, b: object) -> bool:
    """Whether binary ``op`` of a 16-bit float (float16 or bfloat16) tensor with a Python scalar
    (``a`` or ``b``) computes with the scalar as a float32 rather than rounded to the 16-bit type
    first, as PyTorch 2.13's CPU kernels do: ``mul``, ``div`` and ``floordiv`` with the scalar as
    the second operand take it at float32 (their scalar fast path; ``2.5 * x`` is ``x.mul(2.5)``,
    while ``torch.mul(2.5, x)`` rounds); every other op and position (``add``, ``sub``, ``pow``,
    ``remainder``, comparisons, a scalar numerator, ...) rounds it to the 16-bit type first."""
    return (op == "mul" or op == "div" or op == "floordiv") and is_scalar(b)


def half_scalar_operands(op: str, a: object, b: object, dtype: str) -> tuple[object, object]:
    """``(a, b)`` of binary ``op`` on ``dtype`` views (``"float16"``/``"bfloat16"``; others
    unchanged) with a real Python scalar operand as PyTorch's CPU kernels take it: a
    ``numpy.float32`` where :func:`f16_scalar_is_float32` holds (numpy then computes in float32
    and rounds the result once), else rounded to ``dtype`` first (bfloat16 through float32, as
    PyTorch converts a Python number) and returned as a Python float."""
    if dtype not in ("float16", "bfloat16"):
        return a, b
    keep = f16_scalar_is_float32(op, a, b)

    def conv(x: object) -> object:
        if not is_scalar(x) or isinstance(x, (complex, np.complexfloating)):
            return x
        with np.errstate(over="ignore"):
            if keep:
                return np.float32(x)  # type: ignore[arg-type]
            if dtype == "float16":
                return float(np.float16(x))  # type: ignore[arg-type]
            return float(np.float32(x).astype(ml_dtypes.bfloat16))  # type: ignore[arg-type]

    return conv(a), conv(b)


def is_scalar(x: object) -> bool:
    """Whether a binary op's operand ``x`` is a scalar (Python or numpy), not a view."""
    return isinstance(x, (int, float, complex, np.integer, np.floating, np.complexfloating,
                          np.bool_))

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
