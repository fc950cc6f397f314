"""``matmul`` (and the optional 2-D ``mm``), ``gather`` and ``scatter``: transposed operands,
broadcast batches (stride 0), ``K = 0``, integer products, duplicate indices and every axis."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.interface import View

from ._util import check, contiguous, empty, reversed_axes, run_both, sample, supported_dtypes

ALL = [pg.bool, pg.uint8, pg.int8, pg.int16, pg.int32, pg.int64, pg.float16, pg.bfloat16,
       pg.float32, pg.float64]
MATMUL_DTYPES = [pg.float32, pg.float64, pg.float16, pg.bfloat16, pg.int32, pg.int64]


def _need(be: Any, dtype: Any) -> None:
    if dtype not in supported_dtypes(be):
        pytest.skip(f"the backend does not store {dtype.name}")


def _tol(dtype: Any, k: int) -> tuple[float, float]:
    return {"float16": (2e-3, 2e-3 * k), "bfloat16": (1.6e-2, 1.6e-2 * k),
            "float32": (1e-5, 1e-5 * k), "float64": (1e-12, 1e-12 * k)}.get(dtype.name, (0.0, 0.0))


_MNK = [(1, 1, 1), (5, 7, 3), (17, 33, 65), (64, 64, 64), (3, 5, 0), (0, 4, 3), (130, 67, 129)]


@pytest.mark.parametrize("mnk", _MNK, ids=["x".join(map(str, c)) for c in _MNK])
@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=[d.name for d in MATMUL_DTYPES])
def test_matmul(conformance_backend: Any, dtype: Any, mnk: tuple) -> None:
    """Contiguous at offsets, a transposed ``b`` (swapped strides), a broadcast batch of ``a``
    (stride 0) and ``K = 0`` (zeros)."""
    be = conformance_backend
    _need(be, dtype)
    m, n, k = mnk
    kind = "any" if dtype.is_floating_point else "small"
    a = sample(dtype, (3, m, k), kind)
    b = sample(dtype, (3, k, n), kind)
    if dtype.is_floating_point:
        a, b = (np.where(np.isfinite(t), t, 1.0).astype(dtype.numpy) for t in (a, b))
    tol = _tol(dtype, max(k, 1))
    # contiguous at offsets
    out = empty(be, (3, m, n), dtype)
    run_both(be, "matmul", contiguous(be, a, dtype, 3), contiguous(be, b, dtype, 1), out)
    check(be, out, tol=tol, what=f"matmul {dtype.name} {mnk}")
    # b transposed in each batch (a weight used as x @ w.T)
    bt = contiguous(be, np.ascontiguousarray(b.transpose(0, 2, 1)), dtype, 2)
    bv = bt.twin.view(2, (3, k, n), (n * k, 1, k))
    out = empty(be, (3, m, n), dtype)
    run_both(be, "matmul", contiguous(be, a, dtype), bv, out)
    check(be, out, tol=tol, what=f"matmul {dtype.name} {mnk} transposed b")
    # a's batch broadcast (stride 0) and stored transposed
    at = reversed_axes(be, a[0], dtype)
    av = at.twin.view(at.dev.offset, (3, m, k), (0,) + at.dev.strides)
    out = empty(be, (3, m, n), dtype)
    run_both(be, "matmul", av, contiguous(be, b, dtype), out)
    check(be, out, tol=tol, what=f"matmul {dtype.name} {mnk} broadcast batch of a")
    # b's batch broadcast (a matrix times a stack)
    b0 = contiguous(be, b[1], dtype, 1)
    bv = b0.twin.view(1, (3, k, n), (0, n, 1))
    out = empty(be, (3, m, n), dtype)
    run_both(be, "matmul", contiguous(be, a, dtype), bv, out)
    check(be, out, tol=tol, what=f"matmul {dtype.name} {mnk} broadcast batch of b")


@pytest.mark.parametrize("mnk", _MNK, ids=["x".join(map(str, c)) for c in _MNK])
@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=[d.name for d in MATMUL_DTYPES])
def test_mm(conformance_backend: Any, dtype: Any, mnk: tuple) -> None:
    """The optional 2-D product as the core calls it (K >= 1, a non-empty result, a fresh
    contiguous ``out``): what the backend's ``matmul`` gives on the operands as batches of one
    (and ``binary("add")`` with a bias), for operands contiguous at an offset, ``b`` transposed
    (a weight as ``x @ w.T``) and ``a`` transposed (a weight gradient ``g.T @ x``)."""
    be = conformance_backend
    if getattr(be, "mm", None) is None:
        pytest.skip("the backend has no mm (optional)")
    _need(be, dtype)
    m, n, k = mnk
    if k == 0 or m * n == 0:
        pytest.skip("the core calls mm for K >= 1 and a non-empty result only")
    kind = "any" if dtype.is_floating_point else "small"
    a, b = sample(dtype, (m, k), kind), sample(dtype, (k, n), kind)
    if dtype.is_floating_point:
        a, b = (np.where(np.isfinite(t), t, 1.0).astype(dtype.numpy) for t in (a, b))
    bt = contiguous(be, np.ascontiguousarray(b.T), dtype, 2)
    cases = {"contiguous": (contiguous(be, a, dtype, 3).dev, contiguous(be, b, dtype, 1).dev),
             "transposed b": (contiguous(be, a, dtype).dev, bt.twin.view(2, (k, n), (1, k)).dev),
             "transposed a": (reversed_axes(be, a, dtype).dev, contiguous(be, b, dtype).dev)}
    bias = contiguous(be, sample(dtype, (n,), kind), dtype, 1).dev
    for what, (av, bv) in cases.items():
        for with_bias in (False, True):
            out, ref = empty(be, (m, n), dtype), empty(be, (1, m, n), dtype)
            be.mm(av, bv, out.dev, bias if with_bias else None)
            be.matmul(*(View(v.buffer, v.offset, (1,) + v.shape, (0,) + v.strides, v.dtype)
                        for v in (av, bv)), ref.dev)
            if with_bias:
                r = ref.dev
                be.binary("add", r, View(bias.buffer, bias.offset, r.shape, (0, 0, 1), dtype), r)
            rt, at = _tol(dtype, k)
            np.testing.assert_allclose(
                be.to_host(out.dev).astype(np.float64),
                be.to_host(ref.dev)[0].astype(np.float64), rtol=rt, atol=at,
                err_msg=f"mm {dtype.name} {mnk} {what}{' + bias' if with_bias else ''} "
                        f"against matmul (and binary add)")


def test_matmul_rules(conformance_backend: Any) -> None:
    be = conformance_backend
    out = empty(be, (1, 2, 3), pg.float32)
    a = contiguous(be, np.zeros((1, 2, 0)), pg.float32, 1)
    b = contiguous(be, np.zeros((1, 0, 3)), pg.float32, 1)
    be.matmul(a.dev, b.dev, out.dev)
    np.testing.assert_array_equal(be.to_host(out.dev), np.zeros((1, 2, 3), np.float32),
                                  err_msg="K = 0 gives zeros")
    if pg.int32 in supported_dtypes(be):
        a = contiguous(be, np.full((1, 1, 2), 2 ** 30), pg.int32)
        b = contiguous(be, np.full((1, 2, 1), 4), pg.int32)
        out = empty(be, (1, 1, 1), pg.int32)
        be.matmul(a.dev, b.dev, out.dev)
        assert be.to_host(out.dev).item() == 0, "int32 matmul wraps"
    x = contiguous(be, np.arange(6.0).reshape(1, 2, 3), pg.float32)
    y = contiguous(be, np.arange(12.0).reshape(1, 3, 4), pg.float32)
    out = empty(be, (1, 2, 4), pg.float32)
    be.matmul(x.dev, y.dev, out.dev)
    want = (np.arange(6.0).reshape(2, 3) @ np.arange(12.0).reshape(3, 4)).astype(np.float32)
    np.testing.assert_array_equal(be.to_host(out.dev), want[None])


@pytest.mark.parametrize("dtype", ALL, ids=[d.name for d in ALL])
def test_gather(conformance_backend: Any, dtype: Any) -> None:
    """Along each axis of a transposed 2-D and a permuted 3-D input (the middle axis of three
    is not a transposition away from the last), an index smaller than the input along the other
    axes (PyTorch's rule), a broadcast index row (``index_select``) and a zero-size index."""
    be = conformance_backend
    _need(be, dtype)
    rng = np.random.default_rng(5)
    xa = sample(dtype, (6, 9))
    for axis, ishape in ((0, (4, 9)), (1, (6, 13)), (0, (3, 5)), (1, (2, 4)), (1, (6, 0))):
        idx = rng.integers(0, xa.shape[axis], ishape)
        out = empty(be, ishape, dtype)
        run_both(be, "gather", reversed_axes(be, xa, dtype), axis,
                 contiguous(be, idx, pg.int64, 1), out)
        check(be, out, what=f"gather {dtype.name} axis {axis} index {ishape}")
    # 3-D, stored with its axes permuted, each axis, the index cropped along the others
    x3 = sample(dtype, (4, 5, 6))
    for axis, shape3 in ((0, (7, 3, 4)), (1, (3, 8, 5)), (2, (2, 4, 9))):
        idx = rng.integers(0, x3.shape[axis], shape3)
        xp = contiguous(be, np.ascontiguousarray(x3.transpose(1, 2, 0)), dtype, 3)
        xv = xp.twin.view(3, x3.shape, (xp.dev.strides[2], xp.dev.strides[0], xp.dev.strides[1]))
        out = empty(be, shape3, dtype)
        run_both(be, "gather", xv, axis, contiguous(be, idx, pg.int64, 1), out)
        check(be, out, what=f"gather {dtype.name} 3-D axis {axis} index {shape3}")
    # one index row broadcast over the other axis (stride 0)
    row = rng.integers(0, 9, 5)
    ir = contiguous(be, row, pg.int64, 1)
    iv = ir.twin.view(1, (6, 5), (0, 1))
    out = empty(be, (6, 5), dtype)
    run_both(be, "gather", contiguous(be, xa, dtype, 2), 1, iv, out)
    check(be, out, what=f"gather {dtype.name} broadcast index")


@pytest.mark.parametrize("reduce", [None, "add"], ids=["assign", "add"])
@pytest.mark.parametrize("dtype", ALL, ids=[d.name for d in ALL])
def test_scatter(conformance_backend: Any, dtype: Any, reduce: Any) -> None:
    """``reduce="add"`` accumulates duplicates; assignment with distinct indices; each axis; an
    index smaller than ``out`` along the other axes; transposed ``src``."""
    be = conformance_backend
    _need(be, dtype)
    if reduce == "add" and dtype is pg.bool:
        pytest.skip("scatter-add on bool is never requested")
    rng = np.random.default_rng(6)
    for axis in (0, 1):
        base = sample(dtype, (5, 7), "small" if not dtype.is_floating_point else "any")
        if dtype.is_floating_point:
            base = np.where(np.isfinite(base), base, 0.5).astype(dtype.numpy)
        if reduce == "add":
            ishape = (8, 7) if axis == 0 else (5, 11)
            idx = rng.integers(0, base.shape[axis], ishape)  # many duplicates
        else:
            ishape = (3, 6) if axis == 0 else (4, 4)
            idx = np.stack([rng.permutation(base.shape[axis])[:ishape[axis]]
                            for _ in range(ishape[1 - axis])], axis=1 - axis)
        src = sample(dtype, ishape, "small" if not dtype.is_floating_point else "positive")
        out = contiguous(be, base, dtype, 2)
        run_both(be, "scatter", out, axis, contiguous(be, idx, pg.int64, 1),
                 reversed_axes(be, src, dtype), reduce)
        tol = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2), "float32": (1e-6, 1e-6),
               "float64": (1e-13, 1e-13)}.get(dtype.name, (0.0, 0.0))
        check(be, out, tol=tol, what=f"scatter {reduce} {dtype.name} axis {axis}")


def test_scatter_add_accumulates_duplicates(conformance_backend: Any) -> None:
    be = conformance_backend
    out = contiguous(be, np.zeros((2, 3)), pg.float32, 1)
    idx = contiguous(be, np.array([[1, 1, 1, 0], [2, 2, 0, 2]]), pg.int64)
    src = contiguous(be, np.array([[1.0, 2.0, 4.0, 8.0], [1.0, 1.0, 5.0, 1.0]]), pg.float32)
    be.scatter(out.dev, 1, idx.dev, src.dev, "add")
    np.testing.assert_array_equal(be.to_host(out.dev), [[8.0, 7.0, 0.0], [5.0, 0.0, 3.0]])
    out = contiguous(be, np.zeros((3, 2)), pg.int64, 1)
    idx = contiguous(be, np.array([[2, 0], [2, 0]]), pg.int64)
    src = contiguous(be, np.array([[1, 2], [3, 4]]), pg.int64)
    be.scatter(out.dev, 0, idx.dev, src.dev, "add")
    np.testing.assert_array_equal(be.to_host(out.dev), [[0, 6], [0, 0], [4, 0]],
                                  err_msg="scatter along axis 0")


@pytest.mark.parametrize("reduce", [None, "add"], ids=["assign", "add"])
def test_indices_out_of_range_stay_in_bounds(conformance_backend: Any, reduce: Any) -> None:
    """A backend with ``defer_check`` lets the core check some indices after the kernels that use
    them are queued (an embedding's rows, the gradient added back into its table), so its
    ``gather`` and ``scatter`` must stay in bounds whatever the index: an index outside the axis
    gathers an unspecified value and scatters nothing; the in-range ones work as usual."""
    be = conformance_backend
    if getattr(be, "defer_check", None) is None:
        pytest.skip("the backend has no defer_check (optional): the core checks every index first")
    f32 = pg.float32
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 5, -1, 2], [-7, 1, 3, 0]])  # axis 0 of size 3
    ok = (idx >= 0) & (idx < 3)
    out = empty(be, (2, 4), f32)
    be.gather(contiguous(be, x, f32, 2).dev, 0, contiguous(be, idx, pg.int64, 1).dev, out.dev)
    got = be.to_host(out.dev)
    want = x[np.where(ok, idx, 0), np.arange(4)]
    np.testing.assert_array_equal(got[ok], want[ok], err_msg="gather: the in-range indices")
    # scatter into rows 1-3 of a 5-row buffer: rows 0 and 4 lie outside the view and must not move
    buf = contiguous(be, np.full((5, 4), 7.0, np.float32), f32)
    view = buf.twin.view(4, (3, 4), (4, 1))
    src = np.arange(1.0, 9.0, dtype=np.float32).reshape(2, 4)
    be.scatter(view.dev, 0, contiguous(be, idx, pg.int64, 1).dev, contiguous(be, src, f32).dev, reduce)
    want_all = np.full((5, 4), 7.0, np.float32)
    for (r, c), k in np.ndenumerate(idx):
        if ok[r, c]:
            want_all[1 + k, c] = want_all[1 + k, c] + src[r, c] if reduce else src[r, c]
    np.testing.assert_array_equal(be.to_host(buf.dev).reshape(5, 4), want_all,
                                  err_msg=f"scatter ({reduce}) with indices outside the axis")
