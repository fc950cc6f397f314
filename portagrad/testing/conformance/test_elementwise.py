"""Elementwise primitives: ``unary``, ``binary`` (and comparisons), ``where``, ``copy`` and ``fill``
on every dtype the backend stores, every layout the core passes, and the edge-value rules."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.interface import BINARY_OPS, COMPARISON_OPS, UNARY_OPS

from ._util import (assert_same, broadcast, check, contiguous, empty, gapped, reversed_axes,
                    run_both, sample, strided_out, supported_dtypes)

ALL = [pg.bool, pg.uint8, pg.int8, pg.int16, pg.int32, pg.int64, pg.float16, pg.bfloat16,
       pg.float32, pg.float64]
SHAPE = (5, 29)  # 145 elements: not a multiple of any vector width

_FLOAT_ONLY_UNARY = {"exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
                     "sigmoid", "erf", "reciprocal", "floor", "ceil", "round", "trunc", "isnan",
                     "isinf"}
_INEXACT_UNARY = {"exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
                  "sigmoid", "erf", "reciprocal"}
_BOOL_OUT_UNARY = {"logical_not", "isnan", "isinf"}


def _unary_ok(op: str, dt: Any) -> bool:
    if op == "logical_not":
        return True
    if dt is pg.bool:
        return False
    return dt.is_floating_point or op not in _FLOAT_ONLY_UNARY


def _need(be: Any, dtype: Any) -> None:
    if dtype not in supported_dtypes(be):
        pytest.skip(f"the backend does not store {dtype.name}")


UNARY_CASES = [(op, dt) for op in UNARY_OPS for dt in ALL if _unary_ok(op, dt)]


@pytest.mark.parametrize("op,dtype", UNARY_CASES, ids=[f"{o}-{d.name}" for o, d in UNARY_CASES])
def test_unary(conformance_backend: Any, op: str, dtype: Any) -> None:
    """Contiguous at an offset, transposed, broadcast (stride 0), 0-d and zero-size inputs, with
    NaN, infinities, signed zeros, halves and integer extremes among the values; and a strided
    ``out`` (its gaps untouched)."""
    be = conformance_backend
    _need(be, dtype)
    odt = pg.bool if op in _BOOL_OUT_UNARY else dtype
    exact = op not in _INEXACT_UNARY
    a = sample(dtype, SHAPE)
    layouts = {
        "offset": lambda: contiguous(be, a, dtype, offset=3),
        "transposed": lambda: reversed_axes(be, a, dtype),
        "broadcast": lambda: broadcast(be, a[1], SHAPE, dtype),
        "0-d": lambda: contiguous(be, a[1, 2], dtype, offset=1),
        "empty": lambda: contiguous(be, a[:0], dtype, offset=1),
    }
    for name, make in layouts.items():
        x = make()
        out = empty(be, x.shape, odt)
        run_both(be, "unary", op, x, out)
        check(be, out, exact, what=f"unary {op} {dtype.name} {name}")
    out = strided_out(be, SHAPE, odt)
    run_both(be, "unary", op, contiguous(be, a, dtype, offset=1), out)
    check(be, out, exact, what=f"unary {op} {dtype.name} into a strided out")


_UNARY_LITERALS: dict[str, tuple[list[Any], list[Any]]] = {
    # PyTorch's rules, by hand (the reference could share a bug with the backend)
    "round": ([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 0.49999997, np.nan, np.inf],
              [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 4.0, 0.0, np.nan, np.inf]),
    "relu": ([np.nan, -1.0, -0.0, 2.0, -np.inf, np.inf], [np.nan, 0.0, 0.0, 2.0, 0.0, np.inf]),
    "sign": ([np.nan, 0.0, -0.0, -3.0, 2.0, -np.inf, np.inf], [0.0, 0.0, 0.0, -1.0, 1.0, -1.0, 1.0]),
    "trunc": ([-2.7, 2.7, -0.5, np.nan], [-2.0, 2.0, -0.0, np.nan]),
    "floor": ([-2.5, 2.5, -0.0], [-3.0, 2.0, -0.0]),
    "ceil": ([-2.5, 2.5, 0.2], [-2.0, 3.0, 1.0]),
    "abs": ([-0.0, -np.inf, np.nan, -3.0], [0.0, np.inf, np.nan, 3.0]),
    "isnan": ([np.nan, np.inf, 0.0], [True, False, False]),
    "isinf": ([np.nan, -np.inf, 100.0], [False, True, False]),
    "sigmoid": ([-1000.0, 1000.0, 0.0], [0.0, 1.0, 0.5]),
    "logical_not": ([0.0, -0.0, np.nan, 2.0], [True, True, False, False]),
}


@pytest.mark.parametrize("dtype", [pg.float32, pg.float64, pg.float16, pg.bfloat16], ids=str)
@pytest.mark.parametrize("op", sorted(_UNARY_LITERALS))
def test_unary_rules(conformance_backend: Any, op: str, dtype: Any) -> None:
    be = conformance_backend
    _need(be, dtype)
    xs, want = _UNARY_LITERALS[op]
    if dtype not in (pg.float32, pg.float64) and op == "round":
        xs, want = xs[:7] + xs[8:], want[:7] + want[8:]  # 0.49999997 rounds to 0.5 in 16 bits
    odt = pg.bool if op in _BOOL_OUT_UNARY else dtype
    x = contiguous(be, np.array(xs), dtype, offset=1)
    out = empty(be, x.shape, odt)
    be.unary(op, x.dev, out.dev)
    assert_same(be.to_host(out.dev), np.array(want).astype(odt.numpy), odt, what=f"{op}({xs})")


def test_unary_integer_rules(conformance_backend: Any) -> None:
    be = conformance_backend
    for dtype in (pg.int8, pg.int32, pg.int64):
        if dtype not in supported_dtypes(be):
            continue
        lo = int(np.iinfo(dtype.numpy).min)
        x = contiguous(be, np.array([lo, -3, 0, 5]), dtype, offset=1)
        for op, want in (("neg", [lo, 3, 0, -5]), ("abs", [lo, 3, 0, 5]),
                         ("sign", [-1, -1, 0, 1])):
            out = empty(be, (4,), dtype)
            be.unary(op, x.dev, out.dev)
            np.testing.assert_array_equal(be.to_host(out.dev), np.array(want, dtype.numpy),
                                          err_msg=f"{op} on {dtype.name} (wraps)")


# ------------------------------------------------------------------ binary
_BOOL_BINARY = set(COMPARISON_OPS) | {"logical_and", "logical_or", "logical_xor", "bitwise_and",
                                      "bitwise_or", "bitwise_xor", "maximum", "minimum", "add"}
_FLOAT_ONLY_BINARY = {"div", "atan2"}
_INEXACT_BINARY = {"pow", "atan2", "div"}


def _binary_ok(op: str, dt: Any) -> bool:
    if dt is pg.bool:
        return op in _BOOL_BINARY
    if op.startswith("bitwise"):
        return not dt.is_floating_point
    return dt.is_floating_point or op not in _FLOAT_ONLY_BINARY


def _out_dtype(op: str, dt: Any) -> Any:
    return pg.bool if op in COMPARISON_OPS or op.startswith("logical") else dt


def _operands(op: str, dtype: Any, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    if op == "pow" and not dtype.is_floating_point:
        return sample(dtype, shape), sample(dtype, shape, "small")
    if op in ("floordiv", "remainder", "fmod") and not dtype.is_floating_point:
        return sample(dtype, shape), sample(dtype, shape, "nonzero")
    return sample(dtype, shape), sample(dtype, shape)


def _scalar(op: str, dtype: Any, which: int) -> Any:
    if dtype is pg.bool:
        return bool(which)
    if dtype.is_floating_point:
        return (2.5, -0.75, math.nan)[which]
    if op == "pow":
        return (3, 2, 0)[which]  # integer pow never sees a negative exponent
    if dtype is pg.uint8:
        return (3, 200, 1000 if op in ("add", "sub", "mul") else 7)[which]
    return (3, -2, 1000 if op in ("add", "sub", "mul") else 7)[which]


BINARY_CASES = [(op, dt) for op in BINARY_OPS + COMPARISON_OPS for dt in ALL if _binary_ok(op, dt)]


@pytest.mark.parametrize("op,dtype", BINARY_CASES, ids=[f"{o}-{d.name}" for o, d in BINARY_CASES])
def test_binary(conformance_backend: Any, op: str, dtype: Any) -> None:
    """Views at offsets, transposed and broadcast (stride-0) operands, a Python scalar on either
    side and on both, strided and in-place outputs, 0-d and zero-size shapes."""
    be = conformance_backend
    _need(be, dtype)
    odt = _out_dtype(op, dtype)
    exact = op not in _INEXACT_BINARY
    if dtype is pg.bfloat16 or dtype is pg.float16:
        exact = exact and op not in ("floordiv", "remainder", "fmod")
    a, b = _operands(op, dtype, SHAPE)
    scalars = [_scalar(op, dtype, i) for i in range(3)]
    if op in ("floordiv", "remainder", "fmod") and not dtype.is_floating_point:
        scalars[2] = 7
    cases: list[tuple[str, Any, Any, Any]] = [
        ("views", lambda: contiguous(be, a, dtype, 2), lambda: contiguous(be, b, dtype, 1), None),
        ("transposed", lambda: reversed_axes(be, a, dtype), lambda: contiguous(be, b, dtype), None),
        ("broadcast", lambda: contiguous(be, a, dtype), lambda: broadcast(be, b[1], SHAPE, dtype),
         None),
        ("0-d", lambda: contiguous(be, a[0, 0], dtype, 1), lambda: contiguous(be, b[0, 1], dtype),
         None),
        ("empty", lambda: contiguous(be, a[:0], dtype, 1), lambda: contiguous(be, b[:0], dtype),
         None),
        ("strided out", lambda: contiguous(be, a, dtype), lambda: reversed_axes(be, b, dtype),
         "strided"),
    ]
    for s in scalars:
        cases.append((f"scalar b={s}", lambda: contiguous(be, a, dtype, 1), lambda s=s: s, None))
        cases.append((f"scalar a={s}", lambda s=s: s, lambda: reversed_axes(be, b, dtype), None))
    cases.append(("two scalars", lambda: scalars[0], lambda: scalars[1], None))
    if odt is dtype:
        cases.append(("in place", lambda: None, lambda: contiguous(be, b, dtype), "inplace"))
        cases.append(("in place on a gapped view", lambda: None,
                      lambda: broadcast(be, b[2], SHAPE, dtype), "inplace strided"))
    for name, ma, mb, outkind in cases:
        xa, xb = ma(), mb()
        shape = next((x.shape for x in (xa, xb) if hasattr(x, "shape")), SHAPE)
        if outkind == "strided":
            out = strided_out(be, shape, odt)
        elif outkind == "inplace":
            out = xa = contiguous(be, a, dtype, 3)
        elif outkind == "inplace strided":
            out = xa = gapped(be, a, dtype)
        else:
            out = empty(be, shape, odt)
        run_both(be, "binary", op, xa, xb, out)
        check(be, out, exact, what=f"binary {op} {dtype.name} {name}")


_BINARY_LITERALS = [
    # (op, dtype, a, b, want): Python's floor division and modulo, C's fmod, NaN propagation,
    # wrapping, bool arithmetic
    ("floordiv", pg.int64, [-7, 7, -7, 7, 0], [2, -2, -2, 2, 5], [-4, -4, 3, 3, 0]),
    ("remainder", pg.int64, [-7, 7, -7, 7], [2, -2, -2, 2], [1, -1, -1, 1]),
    ("fmod", pg.int64, [-7, 7, -7, 7], [2, -2, -2, 2], [-1, 1, -1, 1]),
    ("floordiv", pg.int32, [-1, -9, 9], [3, 4, -4], [-1, -3, -3]),
    ("remainder", pg.int32, [-1, -9, 9], [3, 4, -4], [2, 3, -3]),
    ("fmod", pg.int32, [-1, -9, 9], [3, 4, -4], [-1, -1, 1]),
    ("floordiv", pg.float32, [-7.0, 7.5, -0.5], [2.0, -2.0, 4.0], [-4.0, -4.0, -1.0]),
    ("remainder", pg.float32, [-7.0, 7.5, 5.0], [2.0, -2.0, np.inf], [1.0, -0.5, 5.0]),
    ("fmod", pg.float32, [-7.0, 7.5, 5.0, -5.0], [2.0, -2.0, np.inf, np.inf], [-1.0, 1.5, 5.0, -5.0]),
    ("fmod", pg.float64, [-7.0, 7.5], [2.0, -2.0], [-1.0, 1.5]),
    ("maximum", pg.float32, [np.nan, 1.0, -np.inf, 0.0], [1.0, np.nan, np.nan, -0.0],
     [np.nan, np.nan, np.nan, 0.0]),
    ("minimum", pg.float32, [np.nan, 1.0, -np.inf], [1.0, np.nan, 3.0], [np.nan, np.nan, -np.inf]),
    ("maximum", pg.float64, [np.nan, 2.0], [1.0, np.nan], [np.nan, np.nan]),
    ("minimum", pg.float64, [np.nan, 2.0], [1.0, np.nan], [np.nan, np.nan]),
    ("add", pg.uint8, [200, 255], [100, 1], [44, 0]),
    ("sub", pg.uint8, [0, 5], [1, 10], [255, 251]),
    ("mul", pg.int8, [100, -128], [3, -1], [44, -128]),
    ("add", pg.int32, [2 ** 31 - 1], [1], [-2 ** 31]),
    ("add", pg.bool, [True, True, False], [True, False, False], [True, True, False]),
    ("maximum", pg.bool, [True, False, False], [False, True, False], [True, True, False]),
    ("minimum", pg.bool, [True, False, True], [False, True, True], [False, False, True]),
    ("bitwise_xor", pg.bool, [True, True, False], [True, False, False], [False, True, False]),
    ("bitwise_and", pg.int8, [-1, 12, -128], [7, 10, -1], [7, 8, -128]),
    ("bitwise_or", pg.uint8, [240, 1], [15, 2], [255, 3]),
    ("logical_and", pg.float32, [np.nan, 0.0, 2.0], [1.0, 1.0, -0.0], [True, False, False]),
    ("logical_xor", pg.int64, [0, 5, 3], [0, 0, -1], [False, True, False]),
    ("lt", pg.float32, [np.nan, 1.0, -0.0], [1.0, np.nan, 0.0], [False, False, False]),
    ("ne", pg.float32, [np.nan, -0.0], [np.nan, 0.0], [True, False]),
    ("pow", pg.int64, [2, -3, 0, 7], [10, 3, 0, 0], [1024, -27, 1, 1]),
    ("pow", pg.float32, [0.0, -8.0, np.nan, 1.0], [0.0, 1.0 / 3.0, 0.0, np.nan],
     [1.0, np.nan, 1.0, 1.0]),
]


@pytest.mark.parametrize("op,dtype,a,b,want", _BINARY_LITERALS,
                         ids=[f"{c[0]}-{c[1].name}-{i}" for i, c in enumerate(_BINARY_LITERALS)])
def test_binary_rules(conformance_backend: Any, op: str, dtype: Any, a: list, b: list,
                      want: list) -> None:
    be = conformance_backend
    _need(be, dtype)
    odt = _out_dtype(op, dtype)
    want_arr = np.array(want).astype(odt.numpy)
    xa, xb = contiguous(be, np.array(a), dtype, 1), contiguous(be, np.array(b), dtype, 2)
    out = empty(be, xa.shape, odt)
    be.binary(op, xa.dev, xb.dev, out.dev)
    np.testing.assert_array_equal(be.to_host(out.dev), want_arr, err_msg=f"{op}({a}, {b})")
    # the same with a scalar on the left and on the right (element by element)
    for i in range(len(a)):
        sa = np.array(a[i]).astype(dtype.numpy).item()
        sb = np.array(b[i]).astype(dtype.numpy).item()
        one_b = contiguous(be, np.array([b[i]]), dtype, 1)
        o = empty(be, (1,), odt)
        be.binary(op, sa, one_b.dev, o.dev)
        np.testing.assert_array_equal(be.to_host(o.dev), want_arr[i:i + 1],
                                      err_msg=f"{op}({sa!r} as a scalar, {b[i]})")
        one_a = contiguous(be, np.array([a[i]]), dtype, 1)
        o = empty(be, (1,), odt)
        be.binary(op, one_a.dev, sb, o.dev)
        np.testing.assert_array_equal(be.to_host(o.dev), want_arr[i:i + 1],
                                      err_msg=f"{op}({a[i]}, {sb!r} as a scalar)")


def test_binary_scalar_wraps_into_narrow_integers(conformance_backend: Any) -> None:
    be = conformance_backend
    _need(be, pg.uint8)
    x = contiguous(be, np.array([0, 10, 250]), pg.uint8, 1)
    out = empty(be, (3,), pg.uint8)
    be.binary("add", x.dev, 1000, out.dev)  # 1000 wraps to 232 (PyTorch)
    np.testing.assert_array_equal(be.to_host(out.dev), np.array([232, 242, 226], np.uint8))


# ------------------------------------------------------------------ where
@pytest.mark.parametrize("dtype", ALL, ids=[d.name for d in ALL])
def test_where(conformance_backend: Any, dtype: Any) -> None:
    be = conformance_backend
    _need(be, dtype)
    c = sample(pg.bool, SHAPE)
    a, b = sample(dtype, SHAPE), sample(dtype, SHAPE)
    sa = _scalar("where", dtype, 0)
    sb = _scalar("where", dtype, 1)
    cases = [
        ("views", lambda: reversed_axes(be, a, dtype), lambda: contiguous(be, b, dtype, 2)),
        ("broadcast", lambda: broadcast(be, a[1], SHAPE, dtype),
         lambda: contiguous(be, b, dtype, 1)),
        ("scalar a", lambda: sa, lambda: contiguous(be, b, dtype, 1)),
        ("scalar b", lambda: reversed_axes(be, a, dtype), lambda: sb),
        ("two scalars", lambda: sa, lambda: sb),
    ]
    for name, ma, mb in cases:
        cond = contiguous(be, c, pg.bool, 1)
        out = empty(be, SHAPE, dtype)
        run_both(be, "where", cond, ma(), mb(), out)
        check(be, out, what=f"where {dtype.name} {name}")
    # broadcast condition, 0-d and empty
    cond = broadcast(be, c[0], SHAPE, pg.bool)
    out = empty(be, SHAPE, dtype)
    run_both(be, "where", cond, contiguous(be, a, dtype), sb, out)
    check(be, out, what=f"where {dtype.name} broadcast condition")
    for shape in ((), (0, 3)):
        cond = contiguous(be, sample(pg.bool, shape), pg.bool, 1)
        out = empty(be, shape, dtype)
        run_both(be, "where", cond, contiguous(be, sample(dtype, shape), dtype, 1), sb, out)
        check(be, out, what=f"where {dtype.name} shape {shape}")
    # in place (masked_fill_): a is out itself, only the false positions change
    cond = contiguous(be, c, pg.bool, 1)
    out = contiguous(be, a, dtype, 2)
    run_both(be, "where", cond, out, sb, out)
    check(be, out, what=f"where {dtype.name} in place")


# PyTorch's checked conversion of a Python scalar stored into an integer tensor (the rule of
# portagrad.backends.helpers.fit_scalar), written out by hand: value -> stored value, or None
# for RuntimeError("value cannot be converted to type <C type> without overflow")
_SCALAR_INTO_INT: dict[str, tuple[str, list[tuple[Any, Any]]]] = {
    "uint8": ("uint8_t", [(300, None), (-1, 255), (-255, 1), (-256, None), (255, 255), (1.5, 1),
                          (254.9, 254), (255.5, None), (math.inf, None), (math.nan, None)]),
    "int8": ("int8_t", [(128, None), (-128, -128), (-129, None), (-2.7, -2), (126.5, 126),
                        (127.5, None)]),
    "int16": ("int16_t", [(40000, None), (-32768, -32768), (-40000, None), (3.9, 3)]),
    "int32": ("int", [(2 ** 31, None), (-(2 ** 31), -(2 ** 31)), (1e10, None), (-7.5, -7)]),
    "int64": ("int64_t", [(2 ** 63, None), (-(2 ** 63), -(2 ** 63)), (2 ** 62 + 1, 2 ** 62 + 1),
                          (1.5, 1), (-2.5, -2), (math.inf, None), (-math.inf, None),
                          (math.nan, None), (9.3e18, None)]),
}
_INT_DTYPES = [pg.uint8, pg.int8, pg.int16, pg.int32, pg.int64]


@pytest.mark.parametrize("prim", ["where", "fill"])
@pytest.mark.parametrize("dtype", _INT_DTYPES, ids=[d.name for d in _INT_DTYPES])
def test_scalar_into_integers(conformance_backend: Any, dtype: Any, prim: str) -> None:
    """A Python scalar stored by ``where`` (either side) or ``fill`` into an integer dtype:
    an ``int`` that does not fit raises PyTorch's ``RuntimeError`` (a negative one whose
    magnitude fits wraps into an unsigned type: -1 is 255 in uint8), a ``float`` is truncated
    toward zero and must be finite and in range. Never numpy's wrapping cast."""
    be = conformance_backend
    _need(be, dtype)
    cname, cases = _SCALAR_INTO_INT[dtype.name]
    cond = contiguous(be, np.array([True, False, True]), pg.bool, 1)
    other = contiguous(be, np.array([5, 6, 7]), dtype, 2)
    calls = {"fill": lambda v, out: be.fill(out.dev, v),
             "where": lambda v, out: be.where(cond.dev, v, other.dev, out.dev),
             "where b": lambda v, out: be.where(cond.dev, other.dev, v, out.dev)}
    for value, want in cases:
        for name, call in calls.items():
            if not name.startswith(prim):
                continue
            out = empty(be, (3,), dtype)
            what = f"{name} {dtype.name} with {value!r}"
            if want is None:
                message = f"value cannot be converted to type {cname} without overflow"
                try:
                    call(value, out)
                    be.synchronize(0)
                except RuntimeError as exc:
                    assert message in str(exc), f"{what}: {exc!r}, expected {message!r}"
                else:
                    pytest.fail(f"{what} raised nothing: PyTorch raises RuntimeError({message!r}) "
                                f"(got {be.to_host(out.dev).tolist()})")
                continue
            call(value, out)
            expect = {"fill": [want] * 3, "where": [want, 6, want], "where b": [5, want, 7]}[name]
            assert be.to_host(out.dev).tolist() == expect, what


# ------------------------------------------------------------------ copy
def _copy_source(src: Any, dst: Any) -> np.ndarray:
    """Values of ``src`` whose conversion to ``dst`` is defined (finite, in range)."""
    if src.is_floating_point and not dst.is_floating_point and dst is not pg.bool:
        vals = np.array([-2.7, 2.7, -0.5, 0.5, 0.0, -0.0, 1.5, -1.5, 100.75, -99.9, 7.0, 126.5])
        if dst is pg.uint8:
            vals = np.abs(vals)
        v = np.resize(vals, SHAPE[0] * SHAPE[1]).reshape(SHAPE)
        return v.astype(src.numpy)
    return sample(src, SHAPE)


def _zero_dim_at(be: Any, dtype: Any, offset: int) -> Any:
    """A 0-d view at ``offset`` in a buffer of sentinels (``x[3]`` of a 1-D tensor)."""
    p = empty(be, (offset + 2,), dtype)
    return p.twin.view(offset, (), ())


COPY_CASES = [(s, d) for s in ALL for d in ALL]


@pytest.mark.parametrize("src,dst", COPY_CASES, ids=[f"{s.name}-{d.name}" for s, d in COPY_CASES])
def test_copy(conformance_backend: Any, src: Any, dst: Any) -> None:
    """Every cast (float to int truncates toward zero, to bool is ``!= 0`` with NaN true, narrow
    integers wrap, float rounding is to nearest even) between offset, transposed, broadcast and
    strided views."""
    be = conformance_backend
    _need(be, src)
    _need(be, dst)
    a = _copy_source(src, dst)
    cases = [
        ("offset", lambda: contiguous(be, a, src, 3), lambda: empty(be, SHAPE, dst)),
        ("transposed into strided", lambda: reversed_axes(be, a, src),
         lambda: strided_out(be, SHAPE, dst)),
        ("broadcast", lambda: broadcast(be, a[2], SHAPE, src), lambda: empty(be, SHAPE, dst)),
        ("into transposed", lambda: contiguous(be, a, src, 1),
         lambda: reversed_axes(be, np.zeros(SHAPE), dst)),
        ("0-d", lambda: contiguous(be, a[1, 1], src, 1), lambda: empty(be, (), dst)),
        ("0-d at offsets", lambda: contiguous(be, a[2, 3], src, 2),
         lambda: _zero_dim_at(be, dst, 3)),
        ("empty", lambda: contiguous(be, a[:0], src, 1), lambda: empty(be, (0, SHAPE[1]), dst)),
    ]
    for name, ms, md in cases:
        s, d = ms(), md()
        run_both(be, "copy", s, d)
        check(be, d, what=f"copy {src.name} -> {dst.name} {name}")


def test_copy_rules(conformance_backend: Any) -> None:
    be = conformance_backend
    f = contiguous(be, np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 99.99]), pg.float32, 1)
    out = empty(be, (6,), pg.int32)
    be.copy(f.dev, out.dev)
    np.testing.assert_array_equal(be.to_host(out.dev), [-2, 0, 0, 0, 2, 99],
                                  err_msg="float -> int truncates toward zero")
    f = contiguous(be, np.array([np.nan, 0.0, -0.0, 1e-30, -np.inf]), pg.float32, 1)
    out = empty(be, (5,), pg.bool)
    be.copy(f.dev, out.dev)
    np.testing.assert_array_equal(be.to_host(out.dev), [True, False, False, True, True],
                                  err_msg="float -> bool is != 0 (NaN is true)")
    if pg.int8 in supported_dtypes(be):
        i = contiguous(be, np.array([300, -129, 127]), pg.int64, 1)
        out = empty(be, (3,), pg.int8)
        be.copy(i.dev, out.dev)
        np.testing.assert_array_equal(be.to_host(out.dev), np.array([44, 127, 127], np.int8),
                                      err_msg="int64 -> int8 wraps")


# ------------------------------------------------------------------ fill
_FILL_VALUES: dict[str, list[Any]] = {
                "bool": [True, False], "uint8": [255, -1], "int8": [-128, 5], "int16": [-300, 7],
                "int32": [-7, 2 ** 31 - 1],
                "int64": [2 ** 40, 2 ** 53 + 1, 2 ** 62 + 1, -(2 ** 63), 2 ** 63 - 1],
                "float16": [1.5, -np.inf], "bfloat16": [-0.25, np.nan],
                "float32": [1.5, np.nan], "float64": [-0.1, np.inf]}


@pytest.mark.parametrize("dtype", ALL, ids=[d.name for d in ALL])
def test_fill(conformance_backend: Any, dtype: Any) -> None:
    """Contiguous, strided (``x[::2].fill_``: the gaps keep their values), 0-d and zero-size."""
    be = conformance_backend
    _need(be, dtype)
    for value in _FILL_VALUES[dtype.name]:
        for name, make in (("contiguous", lambda: empty(be, (3, 41), dtype)),
                           ("strided", lambda: strided_out(be, (3, 41), dtype)),
                           ("transposed", lambda: reversed_axes(be, sample(dtype, (4, 6)), dtype)),
                           ("broadcast-free 0-d", lambda: empty(be, (), dtype)),
                           ("0-d at an offset", lambda: _zero_dim_at(be, dtype, 2)),
                           ("empty", lambda: strided_out(be, (0, 4), dtype))):
            out = make()
            run_both(be, "fill", out, value)
            check(be, out, what=f"fill {dtype.name} {value!r} {name}")


@pytest.mark.parametrize("value", [2 ** 40 + 3, 2 ** 53 + 1, 2 ** 62 + 1, -(2 ** 63), 2 ** 63 - 1,
                                   -(2 ** 53) - 3])
def test_fill_value_literal(conformance_backend: Any, value: int) -> None:
    """int64 values are stored exactly (never through a double, which rounds past 2**53)."""
    be = conformance_backend
    out = strided_out(be, (2, 3), pg.int64)
    be.fill(out.dev, value)
    assert be.to_host(out.dev).tolist() == [[value] * 3] * 2, f"fill int64 with {value}"


def test_discard(conformance_backend: Any) -> None:
    """``discard(buffer)`` (optional): the buffer's contents may be dropped, nothing else. A value
    computed from it before the call, written elsewhere, stays right, and the buffer can be
    written and read again afterwards."""
    be = conformance_backend
    if getattr(be, "discard", None) is None:
        pytest.skip("the backend has no discard (optional)")
    a = np.linspace(-2, 2, 145, dtype=np.float32)
    x = contiguous(be, a.reshape(SHAPE), pg.float32)
    t = empty(be, SHAPE, pg.float32)
    u = empty(be, SHAPE, pg.float32)
    run_both(be, "binary", "mul", x, x, t)  # t = x * x: a temporary
    run_both(be, "binary", "add", t, x, u)  # u = x * x + x reads it
    be.discard(t.dev.buffer)  # t is never read again
    check(be, u)
    run_both(be, "binary", "sub", x, 1.0, t)  # the buffer written again, then read
    check(be, t)
