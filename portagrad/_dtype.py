"""dtypes and PyTorch's type-promotion rules."""
from __future__ import annotations

from typing import Any

import builtins as _builtins
import math

import ml_dtypes
import numpy as np

from .errors import DTypeError

__all__ = [
    "dtype", "float16", "float32", "float64", "int32", "int64", "bool", "half", "float", "double",
    "int", "long", "result_type", "promote_types", "get_default_dtype", "set_default_dtype",
    "from_numpy_dtype", "as_dtype", "ALL_DTYPES", "HALF_FLOATS", "SCALAR_TYPE_NAMES",
    "CPP_TYPE_NAMES",
    "uint8", "int8", "int16", "bfloat16", "short", "can_cast", "iinfo", "finfo", "check_storable",
    "fit_scalar", "INT_LIMITS", "scalar_ctype", "complex64", "complex128", "cfloat", "cdouble",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "DECLARED_ONLY",
    "uint16", "uint32", "uint64", "COMPLEX_DTYPES", "default_complex", "complex32", "chalf",
]

_builtin_bool = bool
# one assignment each: type checkers read a plain `X = cls` as a type alias; annotations below use
# _py_int because `int` is rebound to a dtype in this module
_py_float = _builtins.float
_py_int = _builtins.int


class dtype:
    """A tensor element type (``pg.float32`` ...). Instances are singletons; compare with ``is``/``==``."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_signed", "numpy", "_kind", "_rank")

    def __init__(self, name: str, np_dtype: Any, kind: _py_int, rank: _py_int,
                 signed: _builtin_bool = True) -> None:
        self.name = name
        self.numpy = np.dtype(np_dtype)
        self.itemsize = self.numpy.itemsize
        self._kind = kind  # 0 bool, 1 integer, 2 floating, 3 complex: promotion categories
        # position in ALL_DTYPES (PyTorch's ScalarType order); -1: declared only (DECLARED_ONLY)
        self._rank = rank
        self.is_floating_point = kind == 2
        self.is_signed = kind != 0 and signed

    @property
    def is_complex(self) -> _builtin_bool:
        return self._kind == 3

    def to_complex(self) -> dtype:
        """The complex dtype with this real dtype's parts (``float32`` -> ``complex64``)."""
        if self.is_complex:
            return self
        try:
            return _TO_COMPLEX[self.name]
        except KeyError:
            raise RuntimeError(f"to_complex is not supported for {self}") from None

    def to_real(self) -> dtype:
        """The real dtype of this complex dtype's parts (``complex64`` -> ``float32``)."""
        if not self.is_complex:
            return self
        return _BY_NAME[_COMPLEX_PARTS[self.name]]

    def __repr__(self) -> str:
        return f"portagrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name


bool = dtype("bool", np.bool_, 0, 0)  # PyTorch's name
uint8 = dtype("uint8", np.uint8, 1, 1, signed=False)
int8 = dtype("int8", np.int8, 1, 2)
int16 = dtype("int16", np.int16, 1, 3)
int32 = dtype("int32", np.int32, 1, 4)
int64 = dtype("int64", np.int64, 1, 5)
float16 = dtype("float16", np.float16, 2, 6)
# numpy has no bfloat16; ml_dtypes registers one (kind "V") whose casts round to nearest even
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2, 7)
float32 = dtype("float32", np.float32, 2, 8)
float64 = dtype("float64", np.float64, 2, 9)
half, float, double, int, long = float16, float32, float64, int32, int64  # PyTorch's names
short = int16
ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
#: the 16-bit floats: stored in 16 bits, computed in float32 and rounded once per op
HALF_FLOATS = (float16, bfloat16)

# complex tensors: pairs of float32/float64 (numpy's layout, and PyTorch's). A backend that does
# not store them declines with DTypeError (backends/interface.py, "Complex").
complex64 = dtype("complex64", np.complex64, 3, 10)
complex128 = dtype("complex128", np.complex128, 3, 11)
cfloat, cdouble = complex64, complex128  # PyTorch's names
COMPLEX_DTYPES = (complex64, complex128)

# Named so that code mentioning them loads (safetensors maps the float8 codes at import) and so
# that finfo answers, but no tensor can have them yet: as_dtype refuses them with a DTypeError,
# before any factory, cast or promotion uses them.
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 2, -1)
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, 2, -1)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 2, -1)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 2, -1)
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, 2, -1, signed=False)
# PyTorch's "shell" unsigned dtypes (few of its own ops take them); checkpoints name them
uint16 = dtype("uint16", np.uint16, 1, -1, signed=False)
uint32 = dtype("uint32", np.uint32, 1, -1, signed=False)
uint64 = dtype("uint64", np.uint64, 1, -1, signed=False)
# PyTorch's complex32 (pairs of float16; few of its own kernels take it): named, its parts float16
# (finfo, to_real), no tensors; float16 with a complex scalar promotes to complex64 here
complex32 = dtype("complex32", np.dtype([("real", np.float16), ("imag", np.float16)]), 3, -1)
chalf = complex32
DECLARED_ONLY = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
                 float8_e5m2fnuz, float8_e8m0fnu, uint16, uint32, uint64, complex32)
_COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64", "complex32": "float16"}
_TO_COMPLEX = {"float32": complex64, "float64": complex128}

# PyTorch's promote_types over ALL_DTYPES, row by row (computed with torch 2.13). It is not a
# lattice by rank: uint8 with int8 gives int16, float16 with bfloat16 gives float32.
_PROMOTE_NAMES = {
    "bool": ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
             "float32", "float64"),
    "uint8": ("uint8", "uint8", "int16", "int16", "int32", "int64", "float16", "bfloat16",
              "float32", "float64"),
    "int8": ("int8", "int16", "int8", "int16", "int32", "int64", "float16", "bfloat16",
             "float32", "float64"),
    "int16": ("int16", "int16", "int16", "int16", "int32", "int64", "float16", "bfloat16",
              "float32", "float64"),
    "int32": ("int32", "int32", "int32", "int32", "int32", "int64", "float16", "bfloat16",
              "float32", "float64"),
    "int64": ("int64", "int64", "int64", "int64", "int64", "int64", "float16", "bfloat16",
              "float32", "float64"),
    "float16": ("float16", "float16", "float16", "float16", "float16", "float16", "float16",
                "float32", "float32", "float64"),
    "bfloat16": ("bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16",
                 "float32", "bfloat16", "float32", "float64"),
    "float32": ("float32",) * 9 + ("float64",),
    "float64": ("float64",) * 10,
}

_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES + COMPLEX_DTYPES}
_BY_NAME = {d.name: d for d in ALL_DTYPES + COMPLEX_DTYPES}
_PROMOTE = {(a, b): _BY_NAME[_PROMOTE_NAMES[a.name][b._rank]]
            for a in ALL_DTYPES for b in ALL_DTYPES}
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


def default_complex() -> dtype:
    """The dtype of complex tensors made from Python complex numbers: the complex dtype of the
    default float (``complex64``, or ``complex128`` after ``set_default_dtype(float64)``)."""
    return complex128 if _default_float is float64 else complex64


def from_numpy_dtype(np_dtype: Any) -> dtype:
    """Map a numpy dtype to a portagrad dtype, with a clear error for unsupported ones."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, bfloat16, int64, int32, int16, int8, "
            "uint8, and bool."
        ) from None


def as_dtype(d: Any) -> dtype:
    """Accept a portagrad dtype, a numpy dtype, a name, or Python's ``float``/``int``/``bool``.
    A dtype of :data:`DECLARED_ONLY` raises ``DTypeError``: no tensor can have it yet."""
    if isinstance(d, dtype):
        if d._rank < 0:
            kind = ("complex32 (complex half)" if d.is_complex else "float8"
                    if d.is_floating_point else d.name)
            raise DTypeError(f"{d} is named for code that mentions it, but portagrad has no "
                             f"{kind} tensors yet (finfo/iinfo and is_complex work; creating, "
                             "casting to or computing in it does not)")
        return d
    if d is _py_float:
        return float64
    if d is _py_int:
        return int64
    if d is _builtin_bool:
        return bool
    if d is _builtins.complex:
        return default_complex()
    if isinstance(d, str):
        if d in _BY_NAME:
            return _BY_NAME[d]
        if d.startswith("complex"):  # numpy's "complex" aliases: not a portagrad dtype name
            raise TypeError(f"{d!r} is not a portagrad dtype")
    try:
        return from_numpy_dtype(d)
    except TypeError:
        raise TypeError(f"{d!r} is not a portagrad dtype") from None


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to (PyTorch's ``promote_types``)."""
    if a is b:
        return a
    a, b = as_dtype(a), as_dtype(b)
    if a._kind == 3 or b._kind == 3:
        # as PyTorch: the complex dtype whose parts are the promotion of both sides' (real) parts
        parts = promote_types(a.to_real(), b.to_real())
        return complex128 if parts is float64 else complex64
    return _PROMOTE[(a, b)]


def can_cast(from_: dtype, to: dtype) -> _builtin_bool:
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` in type promotion: never to a
    lower category (floating -> integer, integer -> bool)."""
    return as_dtype(from_)._kind <= as_dtype(to)._kind


def _scalar_kind(x: Any) -> _py_int:
    if isinstance(x, _builtin_bool):
        return 0
    if isinstance(x, (_py_int, np.integer)):  # (a numpy integer is an int to PyTorch too;
        return 1  # np.bool_ is not a bool there: it promotes as a float, as below)
    if isinstance(x, (_builtins.complex, np.complexfloating)):
        return 3
    return 2


def _to_complex_of(d: dtype) -> dtype:
    """PyTorch's toComplexType for promotion; float16/bfloat16 give complex64 (PyTorch's float16
    gives complex32, which portagrad has no tensors of)."""
    return complex128 if d is float64 else complex64


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """PyTorch's combine_categories: ``higher`` (the operand class with priority) wins unless
    ``lower`` is of a higher category; a complex ``lower`` keeps a floating ``higher``'s width."""
    if higher is None:
        return lower
    if lower is None or higher._kind >= lower._kind:
        return higher
    if lower._kind == 3 and higher._kind == 2:
        return _to_complex_of(higher)
    return lower


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
        result = _combine(result, zero_t)
    if scalar_kind >= 0:
        if result is None:
            result = (bool, int64, _default_float, default_complex())[scalar_kind]
        elif scalar_kind > result._kind:
            if scalar_kind == 3:
                result = _to_complex_of(result) if result._kind == 2 else default_complex()
            else:
                result = int64 if scalar_kind == 1 else _default_float
    if result is None:
        raise TypeError("result_type needs at least one operand")
    return result


def _g(x: Any) -> str:
    return f"{_py_float(x):.6g}"


class finfo:
    """Machine limits of a floating dtype, as ``torch.finfo`` (``bits``, ``eps``, ``max``, ``min``,
    ``tiny``/``smallest_normal``, ``resolution``, ``dtype``). Without an argument: the default
    dtype."""

    def __init__(self, type: Any = None) -> None:
        if isinstance(type, dtype):
            d = type  # declared-only dtypes have limits too
        else:
            d = _default_float if type is None else as_dtype(type)
        if d.is_complex:
            d = d.to_real()  # as PyTorch: a complex dtype's limits are its parts'
        if not d.is_floating_point:
            raise TypeError(f"finfo() requires a floating point input type, got {d}; use iinfo "
                            "for integer types")
        info = ml_dtypes.finfo(d.numpy)  # numpy's own finfo for numpy types, ml_dtypes' too
        self.bits: _py_int = d.itemsize * 8
        # PyTorch's c10 limits give float8_e5m2fnuz an epsilon of 2**-3 (ml_dtypes: 2**-2);
        # PyTorch is the reference
        self.eps: _py_float = 0.125 if d.name == "float8_e5m2fnuz" else _py_float(info.eps)
        self.max: _py_float = _py_float(info.max)
        self.min: _py_float = _py_float(info.min)
        self.tiny: _py_float = _py_float(info.smallest_normal)
        self.smallest_normal: _py_float = self.tiny
        # as PyTorch: 10 ** -digits10, digits10 = floor(mantissa bits * log10(2)), in float64
        self.resolution: _py_float = 10.0 ** -_py_int(info.nmant * math.log10(2))
        self.dtype: str = d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, max={_g(self.max)}, "
                f"eps={_g(self.eps)}, smallest_normal={_g(self.smallest_normal)}, "
                f"tiny={_g(self.tiny)}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as ``torch.iinfo`` (``bits``, ``min``, ``max``, ``dtype``)."""

    def __init__(self, type: Any) -> None:
        d = type if isinstance(type, dtype) else as_dtype(type)  # declared-only ones too
        if d is bool:
            raise TypeError("portagrad.bool is not supported by iinfo")
        if d._kind != 1:
            raise TypeError(f"iinfo() requires an integer input type, got {d}; use finfo for "
                            "floating-point types")
        info = np.iinfo(d.numpy)
        self.bits: _py_int = d.itemsize * 8
        self.min: _py_int = _py_int(info.min)
        self.max: _py_int = _py_int(info.max)
        self.dtype: str = d.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


# PyTorch's checked conversion of a Python scalar stored into an integer tensor (fill_, full,
# where, masked_fill, index_fill, an integer alpha): a value outside the type raises, except that a
# negative integer whose magnitude fits wraps into an unsigned type (fill_(-1) on uint8 writes 255);
# a float must lie in the type's range (NaN and infinities never do) and is truncated toward zero.
# Arithmetic operands are not checked: they wrap (uint8 + 1000).
INT_LIMITS: dict[str, tuple[_py_int, _py_int, str]] = {
    "uint8": (0, 255, "uint8_t"), "int8": (-128, 127, "int8_t"), "int16": (-32768, 32767, "int16_t"),
    "int32": (-(1 << 31), (1 << 31) - 1, "int"), "int64": (-(1 << 63), (1 << 63) - 1, "int64_t"),
}
"""Integer dtype name -> (lowest, highest, the C type PyTorch's overflow message names)."""

# 16- and 32-bit float dtype name -> (largest finite value, the C type of the overflow message):
# a finite number past it is refused when stored as a scalar (fill_, masked_fill, where)
_FLOAT_LIMITS: dict[str, tuple[_py_float, str]] = {
    "float32": (_py_float(np.finfo(np.float32).max), "float"),
    "float16": (65504.0, "c10::Half"),
    "bfloat16": (3.3895313892515355e38, "c10::BFloat16"),
}


def scalar_ctype(d: dtype) -> str:
    """The C type PyTorch's checked conversion of a Scalar into ``d`` names in its overflow
    message (16-bit floats convert through double)."""
    if d is float32:
        return "float"
    if d.is_floating_point:
        return "double"
    r = INT_LIMITS.get(d.name)
    return r[2] if r else d.name


def fit_scalar(value: object, dtype_name: str) -> object:
    """``value`` as stored into a tensor of dtype ``dtype_name``: for an integer dtype, an ``int``
    checked (wrapped into an unsigned type when its magnitude fits) and a ``float`` checked and
    truncated, with ``RuntimeError`` like PyTorch's when it cannot be stored; unchanged otherwise."""
    r = INT_LIMITS.get(dtype_name)
    if r is None or isinstance(value, (_builtin_bool, np.bool_)):
        f_limit = _FLOAT_LIMITS.get(dtype_name)
        if f_limit is not None and isinstance(value, (_py_float, _py_int, np.floating, np.integer)) \
                and not isinstance(value, (_builtin_bool, np.bool_)):
            top, cname = f_limit
            f = _py_float(value) if not isinstance(value, (_py_int, np.integer)) else None
            if (f is not None and f == f and abs(f) != _py_float("inf") and abs(f) > top) or \
                    (f is None and abs(_py_int(value)) > top):
                # a finite number past the dtype's largest: PyTorch refuses it (inf is stored)
                raise RuntimeError(f"value cannot be converted to type {cname} without overflow")
        return value
    lo, hi, cname = r
    if isinstance(value, (_py_int, np.integer)):
        v = _py_int(value)
        if lo <= v <= hi:
            return v
        if lo == 0 and -hi <= v < 0:
            return v & hi
    elif isinstance(value, (_py_float, np.floating)):
        f = _py_float(value)
        if lo <= f <= hi:  # False for NaN; Python compares a float with an int exactly
            return _py_int(f)
    else:
        return value
    raise RuntimeError(f"value cannot be converted to type {cname} without overflow")


def check_storable(values: np.ndarray, d: dtype, c_name: _builtin_bool = False) -> None:
    """Raise PyTorch's ``RuntimeError`` when Python numbers ``values`` cannot be stored into the
    integer dtype ``d`` by :func:`fit_scalar`'s rule (``tensor([300], dtype=uint8)``, ``tensor([nan],
    dtype=int64)``, ``tensor([-1.5], dtype=uint8)``); other dtypes are not checked."""
    r = INT_LIMITS.get(d.name)
    if r is None or not values.size or values.dtype.kind not in "iuf":
        return
    lo, hi, _ = r
    if values.dtype.kind == "f":
        # float(...) <= int compares exactly (numpy would round int64's bound up to 2**63)
        ok = _builtin_bool(np.isfinite(values).all()) and lo <= _py_float(values.min()) and \
            _py_float(values.max()) <= hi
    else:
        ok = values.min() >= (-hi if lo == 0 else lo) and values.max() <= hi
    if not ok:  # (PyTorch's tensor() names the dtype, its ops the C type: c_name)
        raise RuntimeError(f"value cannot be converted to type {r[2] if c_name else d.name} "
                           f"without overflow")


#: PyTorch's C++ ScalarType names of the dtypes, as its error messages spell them
SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int32": "Int",
                     "int64": "Long", "bool": "Bool", "uint8": "Byte", "int8": "Char",
                     "int16": "Short", "bfloat16": "BFloat16", "complex64": "ComplexFloat",
                     "complex128": "ComplexDouble"}

#: the C++ element type names of the dtypes, as other PyTorch error messages spell them
CPP_TYPE_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
                  "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                  "bool": "bool", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                  "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
