"""The optional fast paths: ``softmax``, ``conv2d`` (and its two gradients), ``max_pool2d`` (and
its gradient), called directly against the numpy backend where the backend has them, and through
the public API (forward and backward against the cpu device) in any case."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg

from . import conv_checks as cc
from ._util import contiguous, empty, sample, supported_dtypes


@pytest.fixture
def fp64_device(conformance_device: str) -> str:
    try:
        cc.need_fp64(conformance_device)
    except cc.NoFloat64 as exc:
        pytest.skip(str(exc))
    return conformance_device


def _has(be: Any, names: tuple) -> None:
    missing = [n for n in names if getattr(be, n, None) is None]
    if missing:
        pytest.skip(f"the backend has no {', '.join(missing)} (optional; the core composes it)")


@pytest.mark.parametrize("case", cc.CONV_CASES, ids=[str(i) for i in range(len(cc.CONV_CASES))])
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=["f32", "f64"])
def test_conv2d_matches_cpu(fp64_device: str, case: tuple, dtype: Any) -> None:
    cc.check_conv2d_case(fp64_device, case, dtype)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 1, 1, 1), (2, 2, 2, 2), (3, 0, 1, 4)])
def test_conv1d_matches_cpu(fp64_device: str, stride: int, padding: int, dilation: int,
                            groups: int) -> None:
    cc.check_conv1d(fp64_device, stride, padding, dilation, groups)


def test_conv2d_empty_batch(conformance_device: str) -> None:
    cc.check_conv2d_empty_batch(conformance_device)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", [cc.CONV_CASES[2], cc.CONV_CASES[5], cc.CONV_CASES[8]],
                         ids=["groups", "depthwise", "dilated"])
def test_conv2d_methods(conformance_backend: Any, fp64_device: str, case: tuple,
                        strided: bool) -> None:
    _has(conformance_backend, cc.CONV_METHODS)
    cc.check_conv_methods(fp64_device, case, strided)


@pytest.mark.parametrize("case", cc.POOL_CASES, ids=[str(i) for i in range(len(cc.POOL_CASES))])
@pytest.mark.parametrize("kind", cc.POOL_KINDS)
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=["f32", "f64"])
def test_max_pool2d_matches_cpu(fp64_device: str, case: tuple, kind: str, dtype: Any) -> None:
    cc.check_max_pool2d_case(fp64_device, case, kind, dtype)


def test_max_pool2d_rules(fp64_device: str) -> None:
    cc.check_max_pool2d_rules(fp64_device)


def test_max_pool1d_and_empty(fp64_device: str) -> None:
    cc.check_max_pool1d_and_empty(fp64_device)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_max_pool2d_methods(conformance_backend: Any, fp64_device: str, strided: bool) -> None:
    _has(conformance_backend, cc.POOL_METHODS)
    cc.check_max_pool_methods(fp64_device, strided)


def _softmax_ref(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    a = x.astype(np.float64)
    with np.errstate(all="ignore"):
        z = a - a.max(axis, keepdims=True)
        s = np.log(np.exp(z).sum(axis, keepdims=True))
        return z - s if log else np.exp(z - s)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64, pg.float16, pg.bfloat16], ids=str)
def test_softmax_method(conformance_backend: Any, dtype: Any, log: bool) -> None:
    """Large inputs stay finite (the maximum is subtracted), a row with NaN or +inf gives NaN,
    every axis, a zero-length axis; the input at an offset in its buffer (a contiguous slice)."""
    be = conformance_backend
    _has(be, ("softmax",))
    if dtype not in supported_dtypes(be):
        pytest.skip(f"the backend does not store {dtype.name}")
    tol = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}[dtype.name]
    x = sample(dtype, (4, 6, 5)).astype(np.float64)
    x[0] = np.where(np.isfinite(x[0]), x[0] * 300.0, 0.0)  # large: finite only with the shift
    x[1, 2, 3] = np.nan
    x[2, 1, 1] = np.inf
    x[3] = np.where(np.isfinite(x[3]), x[3], -np.inf)
    x = x.astype(dtype.numpy)
    for axis in (0, 1, 2):
        xv = contiguous(be, x, dtype, 3)
        out = empty(be, x.shape, dtype)
        be.softmax(xv.dev, axis, out.dev, log)
        want = _softmax_ref(x, axis, log)
        np.testing.assert_allclose(be.to_host(out.dev).astype(np.float64), want, rtol=tol,
                                   atol=tol, equal_nan=True, err_msg=f"softmax axis {axis}")
    e = contiguous(be, np.zeros((3, 0)), dtype)
    be.softmax(e.dev, 1, empty(be, (3, 0), dtype).dev, log)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_gradcheck(fp64_device: str, groups: int) -> None:
    cc.check_conv2d_gradcheck(fp64_device, groups)


def test_max_pool2d_gradcheck(fp64_device: str) -> None:
    cc.check_max_pool2d_gradcheck(fp64_device)
