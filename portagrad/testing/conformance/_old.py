"""Conformance tests for a portagrad backend: every required primitive against the numpy reference.

Run with the plugin (see :mod:`portagrad.testing.plugin`). Each test builds :class:`View` objects on
the backend under test, runs a primitive, and compares with the numpy backend on the same data; the
last tests train a tiny model through the public API on the device.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends import philox
from portagrad.backends.interface import (ARG_REDUCE_OPS, BINARY_OPS, COMPARISON_OPS,
                                          REDUCE_OPS, UNARY_OPS, View)
from portagrad.backends.numpy import NumpyBackend
from portagrad.plugins.manager import missing_methods

_RNG = np.random.default_rng(1234)


def _dtypes(backend: Any) -> list:
    out = [pg.float32, pg.int32, pg.int64, pg.bool]
    if backend.get_device_properties(0).fp64:
        out.append(pg.float64)
    return out


def _upload(backend: Any, arr: np.ndarray, pad: int = 0) -> View:
    """A contiguous view of ``arr`` on device 0, ``pad`` elements into its buffer."""
    dt = pg._dtype.from_numpy_dtype(arr.dtype)
    flat = np.concatenate([np.zeros(pad, arr.dtype), arr.reshape(-1)])
    buf = backend.allocate(0, max(flat.nbytes, 1))
    whole = View(buf, 0, (flat.size,), (1,), dt)
    if flat.size:
        backend.from_host(whole, flat)
    strides = pg._shape.contiguous_strides(arr.shape)
    return View(buf, pad, tuple(arr.shape), strides, dt)


def _empty(backend: Any, shape: tuple, dtype: Any) -> View:
    n = int(np.prod(shape)) if shape else 1
    buf = backend.allocate(0, max(n * dtype.itemsize, 1))
    return View(buf, 0, tuple(shape), pg._shape.contiguous_strides(shape), dtype)


def _host(backend: Any, v: View) -> np.ndarray:
    return backend.to_host(v)


def _sample(shape: tuple, dtype: Any, positive: bool = False) -> np.ndarray:
    if dtype is pg.bool:
        return _RNG.random(shape) > 0.5
    if dtype.is_floating_point:
        a = _RNG.standard_normal(shape)
        if positive:
            a = np.abs(a) + 0.5
        return a.astype(dtype.numpy)
    lo = 1 if positive else -20
    return _RNG.integers(lo, 20, size=shape).astype(dtype.numpy)


def _transposed(backend: Any, arr: np.ndarray) -> tuple[View, np.ndarray]:
    """A non-contiguous (transposed, offset) view and the numpy array it shows."""
    base = _upload(backend, np.ascontiguousarray(arr.T), pad=3)
    v = View(base.buffer, base.offset, tuple(reversed(base.shape)), tuple(reversed(base.strides)),
             base.dtype)
    return v, arr


def _close(got: np.ndarray, want: np.ndarray, dtype: Any) -> None:
    if dtype.is_floating_point:
        tol = 1e-5 if dtype is pg.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def test_contract_is_complete(conformance_contract: tuple[Any, str | None]) -> None:
    """The backend loads and implements every required method (the other tests skip if not)."""
    backend, problem = conformance_contract
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    assert not missing_methods(backend)


def test_device_properties(conformance_backend: Any) -> None:
    assert conformance_backend.device_count() >= 1
    props = conformance_backend.get_device_properties(0)
    assert isinstance(props.name, str) and props.name
    assert props.total_memory >= 0
    stats = conformance_backend.memory_stats(0)
    assert {"allocated", "reserved", "peak_allocated"} <= set(stats)


@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (2, 3, 4)])
def test_host_roundtrip(conformance_backend: Any, shape: tuple) -> None:
    for dtype in _dtypes(conformance_backend):
        arr = _sample(shape, dtype)
        v = _upload(conformance_backend, arr, pad=2)
        np.testing.assert_array_equal(_host(conformance_backend, v), arr)


@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary(conformance_backend: Any, reference_backend: Any, op: str) -> None:
    be = conformance_backend
    float_ops_only = op not in ("neg", "abs", "sign", "logical_not")
    for dtype in _dtypes(be):
        if dtype is pg.bool and op not in ("logical_not",):
            continue
        if not dtype.is_floating_point and float_ops_only:
            continue
        positive = op in ("log", "log1p", "sqrt", "rsqrt", "reciprocal")
        arr = _sample((5, 7), dtype, positive)
        out_dtype = pg.bool if op in ("logical_not", "isnan", "isinf") else dtype
        for view, a in (( _upload(be, arr), arr), _transposed(be, arr.T.copy())):
            out = _empty(be, a.shape, out_dtype)
            be.unary(op, view, out)
            ref_out = np.empty(a.shape, out_dtype.numpy)
            ref_in = View(a.copy().reshape(-1).view(np.uint8), 0, a.shape,
                          pg._shape.contiguous_strides(a.shape), dtype)
            reference_backend.unary(op, ref_in, View(ref_out.reshape(-1).view(np.uint8), 0,
                                                     a.shape, pg._shape.contiguous_strides(a.shape),
                                                     out_dtype))
            _close(_host(be, out), ref_out, out_dtype)


def _ref_binary(reference_backend: Any, op: str, a: Any, b: Any, out_dtype: Any, shape: tuple
                ) -> np.ndarray:
    def wrap(x: Any) -> Any:
        if not isinstance(x, np.ndarray):
            return x
        x = np.ascontiguousarray(x)
        return View(x.reshape(-1).view(np.uint8), 0, x.shape, pg._shape.contiguous_strides(x.shape),
                    pg._dtype.from_numpy_dtype(x.dtype))

    out = np.empty(shape, out_dtype.numpy)
    reference_backend.binary(op, wrap(a), wrap(b), View(out.reshape(-1).view(np.uint8), 0, shape,
                                                        pg._shape.contiguous_strides(shape),
                                                        out_dtype))
    return out


@pytest.mark.parametrize("op", BINARY_OPS + COMPARISON_OPS)
def test_binary(conformance_backend: Any, reference_backend: Any, op: str) -> None:
    be = conformance_backend
    for dtype in _dtypes(be):
        if op in ("div", "atan2", "pow") and not dtype.is_floating_point:
            continue
        if op.startswith("bitwise") and dtype.is_floating_point:
            continue
        if dtype is pg.bool and op not in COMPARISON_OPS + ("logical_and", "logical_or",
                                                           "logical_xor", "bitwise_and",
                                                           "bitwise_or", "bitwise_xor", "maximum",
                                                           "minimum"):
            continue
        positive = op in ("floordiv", "remainder", "fmod", "pow", "div")
        a = _sample((4, 6), dtype, positive and op == "pow")
        b = _sample((4, 6), dtype, positive)
        out_dtype = pg.bool if op in COMPARISON_OPS or op.startswith("logical") else dtype
        # full views
        out = _empty(be, a.shape, out_dtype)
        be.binary(op, _upload(be, a), _upload(be, b), out)
        _close(_host(be, out), _ref_binary(reference_backend, op, a, b, out_dtype, a.shape),
               out_dtype)
        # broadcast row (stride 0) and a scalar operand
        row = b[:1]
        vb = _upload(be, row)
        bview = View(vb.buffer, vb.offset, a.shape, (0, 1), dtype)
        out = _empty(be, a.shape, out_dtype)
        be.binary(op, _upload(be, a), bview, out)
        _close(_host(be, out), _ref_binary(reference_backend, op, a, np.broadcast_to(row, a.shape),
                                           out_dtype, a.shape), out_dtype)
        scalar = (True if dtype is pg.bool else 2.5 if dtype.is_floating_point else 3)
        out = _empty(be, a.shape, out_dtype)
        be.binary(op, _upload(be, a), scalar, out)
        _close(_host(be, out), _ref_binary(reference_backend, op, a, scalar, out_dtype, a.shape),
               out_dtype)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1), (1, 2), (0, 2)])
def test_reduce(conformance_backend: Any, op: str, axes: tuple) -> None:
    be = conformance_backend
    for dtype in (pg.float32, pg.int64):
        arr = _sample((3, 4, 5), dtype)
        kshape = tuple(1 if i in axes else s for i, s in enumerate(arr.shape))
        out = _empty(be, kshape, dtype)
        be.reduce(op, _upload(be, arr), axes, out)
        want = getattr(np, {"sum": "sum", "prod": "prod", "max": "max", "min": "min"}[op])(
            arr, axis=axes, keepdims=True)
        _close(_host(be, out), want.astype(dtype.numpy), dtype)


@pytest.mark.parametrize("op", ARG_REDUCE_OPS)
def test_arg_reduce(conformance_backend: Any, op: str) -> None:
    be = conformance_backend
    arr = np.array([[1, 5, 5, 0], [3, 3, -1, 7], [2, 2, 2, 2]], np.float32)
    for axis in (0, 1):
        kshape = tuple(1 if i == axis else s for i, s in enumerate(arr.shape))
        out = _empty(be, kshape, pg.int64)
        be.arg_reduce(op, _upload(be, arr), axis, out)
        want = getattr(np, op)(arr, axis=axis, keepdims=True)
        np.testing.assert_array_equal(_host(be, out), want)


def test_where_copy_fill_cumsum(conformance_backend: Any) -> None:
    be = conformance_backend
    cond = _sample((3, 4), pg.bool)
    a, b = _sample((3, 4), pg.float32), _sample((3, 4), pg.float32)
    out = _empty(be, (3, 4), pg.float32)
    be.where(_upload(be, cond), _upload(be, a), _upload(be, b), out)
    np.testing.assert_array_equal(_host(be, out), np.where(cond, a, b))
    # casts: float -> int truncates, -> bool is != 0
    f = np.array([-2.7, -0.5, 0.0, 0.5, 2.7], np.float32)
    for dtype, want in ((pg.int32, np.trunc(f).astype(np.int32)), (pg.bool, f != 0)):
        out = _empty(be, f.shape, dtype)
        be.copy(_upload(be, f), out)
        np.testing.assert_array_equal(_host(be, out), want)
    # strided copy into a transposed destination
    src = _sample((3, 4), pg.float32)
    dst_base = _empty(be, (4, 3), pg.float32)
    dst = View(dst_base.buffer, 0, (3, 4), (1, 3), pg.float32)
    be.copy(_upload(be, src), dst)
    np.testing.assert_array_equal(_host(be, dst_base), src.T)
    out = _empty(be, (2, 3), pg.int64)
    be.fill(out, 7)
    np.testing.assert_array_equal(_host(be, out), np.full((2, 3), 7))
    x = _sample((3, 5), pg.float32)
    for axis in (0, 1):
        out = _empty(be, x.shape, pg.float32)
        be.cumsum(_upload(be, x), axis, out)
        np.testing.assert_allclose(_host(be, out), np.cumsum(x, axis), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mnk", [(1, 1, 1), (5, 7, 3), (17, 33, 65), (64, 64, 64)])
def test_matmul(conformance_backend: Any, mnk: tuple) -> None:
    be = conformance_backend
    m, n, k = mnk
    a = _sample((2, m, k), pg.float32)
    bt = _sample((2, n, k), pg.float32)  # b given transposed: strides swapped, no copy
    vb = _upload(be, bt)
    b_view = View(vb.buffer, vb.offset, (2, k, n), (n * k, 1, k), pg.float32)
    out = _empty(be, (2, m, n), pg.float32)
    be.matmul(_upload(be, a), b_view, out)
    np.testing.assert_allclose(_host(be, out), a @ bt.transpose(0, 2, 1), rtol=1e-4, atol=1e-4)


def test_gather_scatter_sort(conformance_backend: Any) -> None:
    be = conformance_backend
    x = _sample((4, 5), pg.float32)
    idx = _RNG.integers(0, 5, size=(4, 3)).astype(np.int64)
    out = _empty(be, idx.shape, pg.float32)
    be.gather(_upload(be, x), 1, _upload(be, idx), out)
    np.testing.assert_array_equal(_host(be, out), np.take_along_axis(x, idx, 1))
    target = _upload(be, np.zeros((4, 5), np.float32))
    src = _sample((4, 3), pg.float32)
    be.scatter(target, 1, _upload(be, idx), _upload(be, src), "add")
    want = np.zeros((4, 5), np.float32)
    for i in range(4):
        for j in range(3):
            want[i, idx[i, j]] += src[i, j]
    np.testing.assert_allclose(_host(be, target), want, rtol=1e-6, atol=1e-6)
    # reduce=None with distinct indices per row (duplicates would leave the winner unspecified)
    perm = np.stack([_RNG.permutation(5)[:3] for _ in range(4)]).astype(np.int64)
    target = _upload(be, np.full((4, 5), -1.0, np.float32))
    be.scatter(target, 1, _upload(be, perm), _upload(be, src), None)
    want = np.full((4, 5), -1.0, np.float32)
    np.put_along_axis(want, perm, src, 1)
    np.testing.assert_array_equal(_host(be, target), want)
    keys = np.array([[3, 1, 2, 1, np.nan, 0]], np.float32)
    for descending in (False, True):
        vals = _empty(be, keys.shape, pg.float32)
        inds = _empty(be, keys.shape, pg.int64)
        be.sort(_upload(be, keys), 1, descending, vals, inds)
        ref_vals = np.empty_like(keys)
        ref_inds = np.empty(keys.shape, np.int64)

        def wrap(a: np.ndarray, dt: Any) -> View:
            return View(a.reshape(-1).view(np.uint8), 0, a.shape, (a.shape[1], 1), dt)

        NumpyBackend().sort(wrap(keys.copy(), pg.float32), 1, descending,
                            wrap(ref_vals, pg.float32), wrap(ref_inds, pg.int64))
        # NaN last ascending, first descending; ties keep their order (stable)
        want_inds = [5, 1, 3, 2, 0, 4] if not descending else [4, 0, 2, 1, 3, 5]
        np.testing.assert_array_equal(ref_inds[0], want_inds)
        np.testing.assert_array_equal(_host(be, inds), ref_inds)
        np.testing.assert_array_equal(_host(be, vals), ref_vals)  # NaN compares equal to NaN here
        np.testing.assert_array_equal(ref_vals, np.take_along_axis(keys, ref_inds, 1))


def test_random_matches_reference(conformance_backend: Any) -> None:
    be = conformance_backend
    out = _empty(be, (1000,), pg.float32)
    be.random("uniform", out, 42, 17, 0.0, 1.0)
    np.testing.assert_array_equal(_host(be, out), philox.uniform(1000, 42, 17, 0.0, 1.0, np.float32))
    out = _empty(be, (1000,), pg.float32)
    be.random("normal", out, 42, 17, 0.0, 1.0)
    np.testing.assert_allclose(_host(be, out), philox.normal(1000, 42, 17, 0.0, 1.0, np.float32),
                               rtol=1e-5, atol=1e-5)


def test_training_step_matches_cpu(conformance_device: str) -> None:
    """The public API on the device gives the same loss and gradients as on the cpu."""
    def step(device: str) -> tuple:
        pg.manual_seed(0)
        x = pg.randn(16, 8, device=device)
        w = pg.randn(8, 4, device=device, requires_grad=True)
        loss = (x @ w).tanh().pow(2).mean()
        loss.backward()
        assert w.grad is not None
        return loss.item(), w.grad.cpu().numpy()

    l_dev, g_dev = step(conformance_device)
    l_cpu, g_cpu = step("cpu")
    assert abs(l_dev - l_cpu) < 1e-5
    np.testing.assert_allclose(g_dev, g_cpu, rtol=1e-4, atol=1e-6)
