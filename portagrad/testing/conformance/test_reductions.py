"""Reductions and scans: ``reduce``, ``arg_reduce``, ``cumsum`` and ``sort``, over offset and
transposed inputs, empty axis lists, 0-d and zero-size shapes, NaN, ties and every dtype."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.interface import ARG_REDUCE_OPS, REDUCE_OPS

from ._util import (broadcast, check, contiguous, empty, reversed_axes, run_both, sample,
                    supported_dtypes)

ALL = [pg.bool, pg.uint8, pg.int8, pg.int16, pg.int32, pg.int64, pg.float16, pg.bfloat16,
       pg.float32, pg.float64]


def _need(be: Any, dtype: Any) -> None:
    if dtype not in supported_dtypes(be):
        pytest.skip(f"the backend does not store {dtype.name}")


def _keep(shape: tuple, axes: tuple) -> tuple:
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _reduce_ok(op: str, dt: Any) -> bool:
    # the core casts integer and bool sums/products to int64 first; max/min see every dtype
    if op in ("sum", "prod"):
        return dt.is_floating_point or dt is pg.int64
    return True


_REDUCE_SHAPES = [((3, 4, 5), (0,)), ((3, 4, 5), (1,)), ((3, 4, 5), (2,)), ((3, 4, 5), (0, 2)),
                  ((3, 4, 5), (0, 1, 2)), ((6, 7), ()), ((), ()), ((1000, 3), (0,)),
                  ((3, 1031), (1,)), ((2, 0), ()), ((4, 0), (0,))]
REDUCE_CASES = [(op, dt) for op in REDUCE_OPS for dt in ALL if _reduce_ok(op, dt)]


def _reduce_input(op: str, dtype: Any, shape: tuple) -> np.ndarray:
    if op == "prod" and dtype.is_floating_point:
        return np.random.default_rng(3).uniform(0.9, 1.1, shape).astype(dtype.numpy)
    if op == "prod":
        return np.random.default_rng(3).integers(-2, 3, shape).astype(dtype.numpy)
    if op == "sum" and dtype in (pg.float16, pg.bfloat16):
        return sample(dtype, shape, "positive")
    a = sample(dtype, shape)
    if dtype.is_floating_point and a.size > 8:
        a = np.where(np.isnan(a), 0.5, a).astype(dtype.numpy)
        if op in ("max", "min"):
            a.reshape(-1)[a.size // 2] = np.nan  # propagates
        elif op == "sum":
            a = np.where(np.isinf(a), 1.0, a).astype(dtype.numpy)
    return a


@pytest.mark.parametrize("op,dtype", REDUCE_CASES, ids=[f"{o}-{d.name}" for o, d in REDUCE_CASES])
def test_reduce(conformance_backend: Any, op: str, dtype: Any) -> None:
    """Every axis set (the empty one copies), long axes (tree reductions), offset and transposed
    inputs; max/min propagate NaN."""
    be = conformance_backend
    _need(be, dtype)
    tol = {"float16": (5e-3, 5e-3), "bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-4),
           "float64": (1e-12, 1e-12)}.get(dtype.name, (0.0, 0.0))
    for shape, axes in _REDUCE_SHAPES:
        if 0 in shape and (op in ("max", "min") or axes):
            continue  # never asked: the core fills the identity (or raises) itself
        a = _reduce_input(op, dtype, shape)
        for name, x in (("offset", contiguous(be, a, dtype, 3)),
                        ("transposed", reversed_axes(be, a, dtype))):
            out = empty(be, _keep(shape, axes), dtype)
            run_both(be, "reduce", op, x, axes, out)
            check(be, out, tol=tol, what=f"reduce {op} {dtype.name} {shape} over {axes} {name}")


def test_reduce_rules(conformance_backend: Any) -> None:
    be = conformance_backend
    a = np.array([[1.0, np.nan, 3.0], [-np.inf, 2.0, 0.5]])
    cases: list[tuple[str, tuple, Any]] = [
        ("max", (1,), [[np.nan], [2.0]]), ("min", (1,), [[np.nan], [-np.inf]]),
        ("max", (0, 1), [[np.nan]]), ("sum", (), a)]
    for op, axes, want in cases:
        x = contiguous(be, a, pg.float32, 2)
        out = empty(be, _keep(a.shape, axes), pg.float32)
        be.reduce(op, x.dev, axes, out.dev)
        np.testing.assert_array_equal(be.to_host(out.dev), np.array(want, np.float32),
                                      err_msg=f"reduce {op} over {axes}")
    b = np.array([[True, False], [True, True]])
    for op, want_b in (("max", [[True], [True]]), ("min", [[False], [True]])):  # any / all
        out = empty(be, (2, 1), pg.bool)
        be.reduce(op, contiguous(be, b, pg.bool, 1).dev, (1,), out.dev)
        np.testing.assert_array_equal(be.to_host(out.dev), want_b, err_msg=f"{op} on bool")
    big = np.full((3,), 2 ** 62, np.int64)
    out = empty(be, (1,), pg.int64)
    be.reduce("sum", contiguous(be, big, pg.int64, 1).dev, (0,), out.dev)
    np.testing.assert_array_equal(be.to_host(out.dev), big.sum(keepdims=True),
                                  err_msg="int64 sums wrap")


ARG_CASES = [(op, dt) for op in ARG_REDUCE_OPS for dt in ALL]


@pytest.mark.parametrize("op,dtype", ARG_CASES, ids=[f"{o}-{d.name}" for o, d in ARG_CASES])
def test_arg_reduce(conformance_backend: Any, op: str, dtype: Any) -> None:
    """The first extreme wins ties; NaN counts as the extreme (the first NaN); offset, transposed
    and broadcast inputs; long axes."""
    be = conformance_backend
    _need(be, dtype)
    a = sample(dtype, (6, 37))
    if dtype is not pg.bool:
        a[3, :] = a[3, 0]  # a row of ties
        a[4, 5] = a[4, 20] = a[4, 30] = np.max(a[4]) if op == "argmax" else np.min(a[4])
    if dtype.is_floating_point:
        a[1, 7] = a[1, 9] = np.nan
        a[2] = np.where(np.isnan(a[2]), 0, a[2])
        a[2, 11] = a[2, 13] = np.inf if op == "argmax" else -np.inf
    long = sample(dtype, (2, 3001))
    for axis in (0, 1):
        for name, x in (("offset", contiguous(be, a, dtype, 3)),
                        ("transposed", reversed_axes(be, a, dtype)),
                        ("broadcast", broadcast(be, a[4], a.shape, dtype)),
                        ("long", contiguous(be, long, dtype, 1))):
            out = empty(be, _keep(x.shape, (axis,)), pg.int64)
            run_both(be, "arg_reduce", op, x, axis, out)
            check(be, out, what=f"{op} {dtype.name} axis {axis} {name}")


def test_arg_reduce_rules(conformance_backend: Any) -> None:
    be = conformance_backend
    a = np.array([[1.0, 5.0, 5.0, np.nan, 7.0, np.nan], [2.0, 2.0, -1.0, -1.0, 0.0, 2.0]])
    for op, want in (("argmax", [[3], [0]]), ("argmin", [[3], [2]])):
        out = empty(be, (2, 1), pg.int64)
        be.arg_reduce(op, contiguous(be, a, pg.float32, 1).dev, 1, out.dev)
        np.testing.assert_array_equal(be.to_host(out.dev), want, err_msg=f"{op}: the first NaN, "
                                      "else the first extreme")


CUMSUM_DTYPES = [pg.int64, pg.int32, pg.float16, pg.bfloat16, pg.float32, pg.float64]


@pytest.mark.parametrize("dtype", CUMSUM_DTYPES, ids=[d.name for d in CUMSUM_DTYPES])
def test_cumsum(conformance_backend: Any, dtype: Any) -> None:
    be = conformance_backend
    _need(be, dtype)
    tol = {"float16": (5e-3, 5e-2), "bfloat16": (2e-2, 2e-1), "float32": (1e-5, 1e-4),
           "float64": (1e-12, 1e-12)}.get(dtype.name, (0.0, 0.0))
    a = sample(dtype, (7, 45), "positive")
    for axis in (0, 1):
        for name, x in (("offset", contiguous(be, a, dtype, 3)),
                        ("transposed", reversed_axes(be, a, dtype)),
                        ("broadcast", broadcast(be, a[1], a.shape, dtype)),
                        ("long", contiguous(be, sample(dtype, (2, 2050), "positive"), dtype, 1)),
                        ("empty", contiguous(be, a[:0], dtype, 1))):
            out = empty(be, x.shape, dtype)
            run_both(be, "cumsum", x, axis, out)
            check(be, out, tol=tol, what=f"cumsum {dtype.name} axis {axis} {name}")
    x = contiguous(be, np.array([1, 2, 3, 4]), dtype, 1)
    out = empty(be, (4,), dtype)
    be.cumsum(x.dev, 0, out.dev)
    np.testing.assert_array_equal(be.to_host(out.dev).astype(np.float64), [1, 3, 6, 10],
                                  err_msg="cumsum is inclusive")


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("dtype", ALL, ids=[d.name for d in ALL])
def test_sort(conformance_backend: Any, dtype: Any, descending: bool) -> None:
    """Stable (ties keep their order), NaN last ascending and first descending, along either axis
    of offset and transposed inputs, long rows, zero-size and length-1 axes."""
    be = conformance_backend
    _need(be, dtype)
    a = sample(dtype, (6, 45))
    if dtype is not pg.bool:
        a = (a % 4 if not dtype.is_floating_point else np.round(a)).astype(dtype.numpy)  # ties
    if dtype.is_floating_point:
        a[2, ::5] = np.nan
    for axis in (0, 1):
        for name, x in (("offset", contiguous(be, a, dtype, 3)),
                        ("transposed", reversed_axes(be, a, dtype)),
                        ("long", contiguous(be, sample(dtype, (2, 1500)) if dtype is pg.bool else
                                            (sample(dtype, (2, 1500)) % 5).astype(dtype.numpy),
                                            dtype, 1)),
                        ("empty", contiguous(be, a[:0], dtype, 1)),
                        ("length 1", contiguous(be, a[:1, :1], dtype, 1))):
            vals = empty(be, x.shape, dtype)
            idx = empty(be, x.shape, pg.int64)
            run_both(be, "sort", x, axis, descending, vals, idx)
            what = f"sort {dtype.name} axis {axis} descending={descending} {name}"
            check(be, idx, what=what + " (indices)")
            check(be, vals, what=what + " (values)")


def test_sort_rules(conformance_backend: Any) -> None:
    be = conformance_backend
    keys = np.array([[3, 1, 2, 1, np.nan, 0, np.nan]], np.float32)
    for descending, want in ((False, [5, 1, 3, 2, 0, 4, 6]), (True, [4, 6, 0, 2, 1, 3, 5])):
        vals, idx = empty(be, keys.shape, pg.float32), empty(be, keys.shape, pg.int64)
        be.sort(contiguous(be, keys, pg.float32, 1).dev, 1, descending, vals.dev, idx.dev)
        np.testing.assert_array_equal(be.to_host(idx.dev)[0], want,
                                      err_msg=f"stable sort, NaN {'first' if descending else 'last'}")
        np.testing.assert_array_equal(be.to_host(vals.dev)[0], keys[0][want])
