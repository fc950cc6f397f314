"""``torch.sym_*``: PyTorch's shape-arithmetic helpers, which its tracer overloads for symbolic
sizes. portagrad has no symbolic sizes (``compile`` runs eagerly), so on the plain Python numbers
they always receive here they are the arithmetic PyTorch performs on such numbers, with its type
promotions and errors. Also the build flags ``has_lapack``/``has_openmp``/``has_spectral``.
"""
from __future__ import annotations

import builtins
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ._creation import tensor

__all__ = ["sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum",
           "sym_ite", "sym_constrain_range", "sym_constrain_range_for_size", "sym_fresh_size",
           "has_lapack", "has_openmp", "has_spectral"]

# linear algebra runs on numpy's LAPACK, the FFTs on numpy's pocketfft; there is no OpenMP, but
# PyTorch's flag says whether intra-op threads exist, and portagrad's backends run threaded
# kernels (PoCL's pthread device, numpy's BLAS), so scripts gating on it take the same path.
has_lapack: bool = True
has_openmp: bool = True
has_spectral: bool = True

_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)
_FLOATS = (np.floating, builtins.float)


def sym_int(a: Any) -> int:
    """``int(a)`` (truncating a float)."""
    return builtins.int(a)


def sym_float(a: Any) -> float:
    """``float(a)``."""
    return builtins.float(a)


def _check_number(a: Any) -> None:
    if not isinstance(a, _NUMBERS):
        raise AssertionError(f"expected {_NUMBERS}, got {type(a)}")


def sym_max(a: Any, b: Any) -> int | float:
    """The larger of two numbers, a float if either is one (unlike ``max``, which keeps the
    winner's type)."""
    _check_number(a)
    _check_number(b)
    if isinstance(a, _FLOATS) or isinstance(b, _FLOATS):
        return builtins.float(builtins.max(a, b))
    return builtins.max(a, b)  # type: ignore[no-any-return]


def sym_min(a: Any, b: Any) -> int | float:
    """The smaller of two numbers, a float if either is one."""
    _check_number(a)
    _check_number(b)
    if isinstance(a, _FLOATS) or isinstance(b, _FLOATS):
        return builtins.float(builtins.min(a, b))
    return builtins.min(a, b)  # type: ignore[no-any-return]


def sym_not(a: Any) -> bool:
    """``not a``."""
    return not a


def sym_sqrt(a: Any) -> float:
    """``math.sqrt(a)``."""
    return math.sqrt(a)


def sym_sum(*args: Any) -> Any:
    """The sum of the numbers, given as ``sym_sum([a, b, c])`` or ``sym_sum(a, b, c)``."""
    items: Iterable[Any] = args
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        items = args[0]
    return builtins.sum(items)


def sym_ite(b: Any, t: Any, f: Any) -> Any:
    """``t if b else f``; ``b`` must be a bool and ``t``, ``f`` of the same type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def _bound(fn: str, name: str, value: Any) -> None:
    if value is not None and (isinstance(value, builtins.bool)
                              or not isinstance(value, builtins.int)):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(value).__name__}")


def _size(fn: str, size: Any) -> int:
    if isinstance(size, builtins.bool) or not isinstance(size, _NUMBERS):
        raise TypeError(f"{fn}(): argument 'size' (position 1) must be Number, not "
                        f"{type(size).__name__}")
    return builtins.int(size)


def sym_constrain_range(size: Any, *, min: int | None = None, max: int | None = None) -> None:
    """Check that ``size`` lies in ``[min, max]`` (bounds default to the int64 range); raises
    ``RuntimeError`` otherwise. Returns ``None``."""
    fn = "sym_constrain_range"
    _bound(fn, "min", min)
    _bound(fn, "max", max)
    value = _size(fn, size)
    lo = _INT64_MIN if min is None else min
    hi = _INT64_MAX if max is None else max
    if not lo <= value <= hi:
        raise RuntimeError(f"Invalid value range for {value} between [{lo}, {hi}].")


def sym_constrain_range_for_size(size: Any, *, min: int | None = None, max: int | None = None
                                 ) -> None:
    """:func:`sym_constrain_range` for a size: ``min`` defaults to 0, and ``max`` must exceed 2
    (PyTorch reserves 0 and 1 as special sizes)."""
    fn = "sym_constrain_range_for_size"
    _bound(fn, "min", min)
    _bound(fn, "max", max)
    value = _size(fn, size)
    if max is not None and max < 2:
        raise RuntimeError(f"Max value to constrain_range_for_size must be greater than 2. got: "
                           f"{max}")
    sym_constrain_range(value, min=0 if min is None else min, max=max)


def sym_fresh_size(expr: Any) -> Any:
    """``expr`` as a tensor and back (``torch.tensor(expr).item()``): a Python number of
    ``expr``'s kind."""
    return tensor(expr).item()
