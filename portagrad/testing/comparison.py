"""``assert_close``, ``make_tensor`` and the deprecated ``assert_allclose`` (``torch.testing``).

The comparison is done on host copies with numpy: ``|actual - expected| <= atol + rtol *
|expected|`` elementwise (equal infinities match; NaNs match only with ``equal_nan``), after
checking the shape, device and dtype. Default tolerances depend on the dtype, as in PyTorch.
"""
from __future__ import annotations

import cmath
import collections.abc
import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype
from .._creation import from_numpy, tensor
from .._ops.complexnum import view_as_complex
from .._random import rand, randint
from .._tensor import Tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# (rtol, atol) per dtype, PyTorch's defaults; dtypes not listed (integers, bool) compare exactly
_DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),  # a complex dtype takes its parts' (PyTorch's)
    "complex128": (1e-7, 1e-7),
}


class _Failure(Exception):
    """A mismatch found while comparing: becomes the AssertionError, with the item path."""

    def __init__(self, exc_type: type[Exception], message: str, path: tuple = ()) -> None:
        super().__init__(message)
        self.exc_type = exc_type
        self.message = message
        self.path = path


def _tolerances(*dtypes: Any) -> tuple[float, float]:
    rtols, atols = zip(*(_DEFAULT_TOLERANCES.get(getattr(d, "name", str(d)), (0.0, 0.0))
                         for d in dtypes))
    return max(rtols), max(atols)


def _mismatch_msg(identifier: str, abs_diff: Any, abs_idx: Any, atol: float, rel_diff: Any,
                  rel_idx: Any, rtol: float, extra: str | None = None) -> str:
    equality = rtol == 0 and atol == 0

    def diff_msg(kind: str, diff: Any, idx: Any, tol: float) -> str:
        msg = (f"{kind.title()} difference: {diff}" if idx is None
               else f"Greatest {kind} difference: {diff} at index {idx}")
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _host(t: Tensor) -> np.ndarray:
    a = t.detach().numpy(force=True)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)  # differences of bools are counted as 0/1
    return a


def _close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        if a.dtype.kind in "iu" and b.dtype.kind in "iu" and rtol == 0 and atol == 0:
            return a == b
        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _compare_tensors(actual: Tensor, expected: Tensor, rtol: float | None, atol: float | None,
                     equal_nan: bool, check_device: bool, check_dtype: bool,
                     check_stride: bool) -> None:
    if actual.shape != expected.shape:
        raise _Failure(AssertionError, f"The values for attribute 'shape' do not match: "
                                       f"{actual.shape} != {expected.shape}.")
    if check_device and actual.device != expected.device:
        raise _Failure(AssertionError, f"The values for attribute 'device' do not match: "
                                       f"{actual.device} != {expected.device}.")
    if check_dtype and actual.dtype != expected.dtype:
        raise _Failure(AssertionError, f"The values for attribute 'dtype' do not match: "
                                       f"{actual.dtype} != {expected.dtype}.")
    if check_stride and actual.stride() != expected.stride():
        raise _Failure(AssertionError, f"The values for attribute 'stride()' do not match: "
                                       f"{actual.stride()} != {expected.stride()}.")
    if rtol is None:
        rtol, atol = _tolerances(actual.dtype, expected.dtype)
    assert atol is not None
    a, b = _host(actual), _host(expected)
    if a.dtype != b.dtype:
        common = np.result_type(a.dtype, b.dtype)
        a, b = a.astype(common), b.astype(common)
    matches = _close(a, b, rtol, atol, equal_nan)
    if matches.all():
        return
    if actual.dim() == 0:
        raise _Failure(AssertionError, _scalar_msg(a.item(), b.item(), rtol, atol))
    a_flat, b_flat, m_flat = a.reshape(-1), b.reshape(-1), matches.reshape(-1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(a_flat - b_flat)
        abs_diff[m_flat] = 0
        rel_diff = abs_diff / np.abs(b_flat)
        rel_diff[m_flat] = 0
    abs_i = _argmax_nan(abs_diff)
    rel_i = _argmax_nan(rel_diff)
    total = int((~matches).sum())
    n = matches.size
    extra = f"Mismatched elements: {total} / {n} ({total / n:.1%})"
    raise _Failure(AssertionError, _mismatch_msg(
        "Tensor-likes", abs_diff[abs_i].item(), tuple(int(i) for i in np.unravel_index(abs_i, a.shape)),
        atol, rel_diff[rel_i].item(), tuple(int(i) for i in np.unravel_index(rel_i, a.shape)),
        rtol, extra=extra))


def _argmax_nan(x: np.ndarray) -> int:
    # torch.max propagates NaN: the first NaN wins, as there
    nan = np.isnan(x) if x.dtype.kind == "f" else None
    if nan is not None and nan.any():
        return int(np.argmax(nan))
    return int(np.argmax(x))


def _scalar_msg(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 and abs_diff else (
        0.0 if abs_diff == 0 else abs_diff / abs(expected))
    if isinstance(abs_diff, bool):
        abs_diff = int(abs_diff)
    return _mismatch_msg("Scalars", abs_diff, None, atol, rel_diff, None, rtol,
                         extra=f"Expected {expected} but got {actual}.")


def _compare_scalars(actual: Any, expected: Any, rtol: float | None, atol: float | None,
                     equal_nan: bool, check_dtype: bool) -> None:
    if check_dtype and type(actual) is not type(expected):
        raise _Failure(AssertionError, f"The values for attribute 'dtype' do not match: "
                                       f"{type(actual).__name__} != {type(expected).__name__}.")
    if rtol is None:
        floating = isinstance(actual, (float, complex)) or isinstance(expected, (float, complex))
        rtol, atol = _DEFAULT_TOLERANCES["float64"] if floating else (0.0, 0.0)
    assert atol is not None
    if actual == expected:
        return
    if isinstance(actual, complex) or isinstance(expected, complex):
        # PyTorch compares complex numbers as one value: |actual - expected| and NaN anywhere
        a, e = complex(actual), complex(expected)
        if equal_nan and cmath.isnan(a) and cmath.isnan(e):
            return
        if cmath.isfinite(a) and cmath.isfinite(e) and abs(a - e) <= atol + rtol * abs(e):
            return
        raise _Failure(AssertionError, _scalar_msg(actual, expected, rtol, atol))
    if equal_nan and math.isnan(actual) and math.isnan(expected):
        return
    if not (math.isinf(actual) or math.isinf(expected) or math.isnan(actual)
            or math.isnan(expected)) and abs(actual - expected) <= atol + rtol * abs(expected):
        return
    raise _Failure(AssertionError, _scalar_msg(actual, expected, rtol, atol))


def _is_tensor_like(x: Any) -> bool:
    return isinstance(x, (Tensor, np.ndarray))


def _compare(actual: Any, expected: Any, path: tuple, kw: dict[str, Any]) -> None:
    try:
        if actual is None or expected is None:
            if actual is None and expected is None:
                return
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}")
        if _is_tensor_like(actual) and _is_tensor_like(expected):
            a = from_numpy(actual) if isinstance(actual, np.ndarray) else actual
            b = from_numpy(expected) if isinstance(expected, np.ndarray) else expected
            _compare_tensors(a, b, kw["rtol"], kw["atol"], kw["equal_nan"], kw["check_device"],
                             kw["check_dtype"], kw["check_stride"])
            return
        scalar = (numbers.Number, np.generic)
        if isinstance(actual, scalar) and isinstance(expected, scalar) \
                and not _is_tensor_like(actual) and not _is_tensor_like(expected):
            a_s = actual.item() if isinstance(actual, np.generic) else actual
            e_s = expected.item() if isinstance(expected, np.generic) else expected
            _compare_scalars(a_s, e_s, kw["rtol"], kw["atol"], kw["equal_nan"],
                             kw["check_dtype"])
            return
        if isinstance(actual, collections.abc.Mapping) and isinstance(
                expected, collections.abc.Mapping):
            a_keys, e_keys = set(actual), set(expected)
            if a_keys != e_keys:
                missing, extra = e_keys - a_keys, a_keys - e_keys
                raise _Failure(AssertionError,
                               "The keys of the mappings do not match:\n"
                               + (f"Missing keys in the actual mapping: {sorted(missing, key=repr)}\n"
                                  if missing else "")
                               + (f"Extra keys in the actual mapping: {sorted(extra, key=repr)}"
                                  if extra else ""))
            for k in expected:
                _compare(actual[k], expected[k], path + (k,), kw)
            return
        if (isinstance(actual, collections.abc.Sequence) and isinstance(
                expected, collections.abc.Sequence) and not isinstance(actual, str)
                and not isinstance(expected, str)):
            if len(actual) != len(expected):
                raise _Failure(AssertionError, f"The length of the sequences mismatch: "
                                               f"{len(actual)} != {len(expected)}")
            for i, (x, y) in enumerate(zip(actual, expected)):
                _compare(x, y, path + (i,), kw)
            return
        raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type "
                                  f"{type(actual)} and {type(expected)}.")
    except _Failure as f:
        if not f.path:
            f.path = path
        raise


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: str | Callable[[str], str] | None = None) -> None:
    """Assert that ``actual`` and ``expected`` are close (``torch.testing.assert_close``).

    Tensors (and numpy arrays) must have the same shape and, unless turned off, device and
    dtype; values are close when ``|actual - expected| <= atol + rtol * |expected|``. Without
    ``rtol``/``atol`` the dtype's defaults apply (float32: 1.3e-6 / 1e-5, float64: 1e-7 / 1e-7,
    integers and bool: exact). Sequences and mappings are compared item by item; Python scalars
    too. ``msg`` replaces the message (a callable receives the generated one). Raises
    ``AssertionError`` naming the mismatched elements, the greatest absolute and relative
    differences and where they are.
    """
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    kw = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
              check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, (), kw)
    except _Failure as f:
        message = f.message
        if f.exc_type is AssertionError and msg is not None:
            message = msg(message) if callable(msg) else msg
        elif f.path:
            message += "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in f.path)
        raise f.exc_type(message) from None


# assert_allclose's own defaults (looser than assert_close's for float32 and float64)
_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """The deprecated predecessor of :func:`assert_close` (warns ``FutureWarning``, as PyTorch):
    non-tensors become tensors (``expected`` in ``actual``'s dtype), dtypes and strides are not
    compared, NaNs match by default, and the default tolerances are its own (float32:
    1e-4 / 1e-5, float64: 1e-5 / 1e-8, float16: 1e-3 / 1e-3, others exact)."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed "
                  "in a future release. Please use `torch.testing.assert_close()` instead. You "
                  "can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_ALLCLOSE_TOLERANCES.get(d.name, (0.0, 0.0))
                 for d in (actual.dtype, expected.dtype)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


def make_tensor(*shape: Any, dtype: Any, device: Any, low: float | None = None,
                high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` and ``dtype`` filled with random values in ``[low, high)``
    (defaults: -9 and 9; bool: random 0/1), drawn with portagrad's generator."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    dt = _dtype.as_dtype(dtype)
    if memory_format is not None:
        raise NotImplementedError("make_tensor(memory_format=...) is not supported")
    if low is not None and high is not None and low > high:
        raise ValueError(f"low must be less than or equal to high, but got low={low} and "
                         f"high={high}")
    if dt is _dtype.bool:
        t = randint(0, 2, tuple(shape), device=device).to(dt)
    elif dt.is_complex:  # real and imaginary parts each uniform in [low, high), as PyTorch
        flo = -9.0 if low is None else float(low)
        fhi = 9.0 if high is None else float(high)
        parts = rand(tuple(shape) + (2,), dtype=dt.to_real(), device=device) * (fhi - flo) + flo
        t = view_as_complex(parts)
    elif not dt.is_floating_point:
        ilo = -9 if low is None else math.ceil(low)
        ihi = 10 if high is None else math.ceil(high)  # exclusive, as in PyTorch
        t = randint(ilo, max(ihi, ilo + 1), tuple(shape), device=device, dtype=dt)
    else:
        flo = -9.0 if low is None else float(low)
        fhi = 9.0 if high is None else float(high)
        t = rand(tuple(shape), dtype=dt, device=device) * (fhi - flo) + flo
    if exclude_zero:
        replacement = 1 if dt is _dtype.bool or not (dt.is_floating_point or dt.is_complex) else (
            1e-3 if dt.itemsize >= 4 else 1e-2)
        t = t.masked_fill(t == 0, replacement)
    if noncontiguous and t.numel() > 1:
        doubled = t.repeat_interleave(2, dim=-1)
        t = doubled[..., ::2]
    if requires_grad:
        t.requires_grad_(True)
    return t

