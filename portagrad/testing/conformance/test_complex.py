"""Complex dtypes: a backend either stores complex64/complex128 (``supports_complex = True``) and
its primitives then agree with numpy's complex results on the views the core passes, or it
declines them cleanly: every way the public API would make a complex tensor on its device raises
:class:`~portagrad.errors.DTypeError` naming the dtype and the backend, before any kernel runs
(the "Complex" section of :mod:`portagrad.backends.interface`)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.errors import DTypeError

from ._util import REF, check, contiguous, empty, gapped, reversed_axes, run_both, strided_out

COMPLEX = [pg.complex64, pg.complex128]
SHAPE = (3, 7)
_UNARY = ["neg", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "reciprocal"]
_BINARY = ["add", "sub", "mul", "div", "pow"]
_TOL = {"complex64": 2e-5, "complex128": 1e-12}


def _stores(be: Any) -> bool:
    return bool(getattr(be, "supports_complex", False))


def _need(be: Any, dtype: Any) -> None:
    if not _stores(be):
        pytest.skip("the backend declines complex dtypes (test_complex_declined checks how)")
    if dtype is pg.complex128 and not be.get_device_properties(0).fp64:
        pytest.skip("complex128 needs float64, which the device lacks")


def _z(shape: tuple[int, ...], seed: int, dtype: Any) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)).astype(dtype.numpy)


def _close(be: Any, p: Any, dtype: Any, what: str) -> None:
    tol = _TOL[dtype.name]
    np.testing.assert_allclose(be.to_host(p.dev), REF.to_host(p.ref), rtol=tol, atol=tol,
                               equal_nan=True, err_msg=what)


# ----------------------------------------------------------------------------- decline
def test_complex_declined(conformance_backend: Any, conformance_device: str) -> None:
    if _stores(conformance_backend):
        pytest.skip("the backend stores complex tensors (the tests below check them)")
    d = conformance_device
    makers: list[Callable[[], Any]] = [
        lambda: pg.zeros(2, dtype=pg.complex64, device=d),
        lambda: pg.tensor([1 + 2j], device=d),
        lambda: pg.ones(2, device=d) + 1j,
        lambda: pg.ones(2, device=d).to(pg.complex64),
        lambda: pg.tensor([1j]).to(d),
        lambda: pg.view_as_complex(pg.ones(2, 2, device=d)),
        lambda: pg.randn(2, dtype=pg.complex64, device=d),
    ]
    for make in makers:
        with pytest.raises(DTypeError, match=rf"complex64.*{conformance_backend.device_type}"):
            make()


# ------------------------------------------------------------------------ storage
@pytest.mark.parametrize("dtype", COMPLEX, ids=[d.name for d in COMPLEX])
def test_complex_host_round_trip_copy_and_fill(conformance_backend: Any, dtype: Any) -> None:
    be = conformance_backend
    _need(be, dtype)
    z = _z(SHAPE, 1, dtype)
    p = contiguous(be, z, dtype, offset=3)
    np.testing.assert_array_equal(be.to_host(p.dev), z)
    assert be.to_host(p.dev).dtype == dtype.numpy
    for src in (gapped(be, z, dtype), reversed_axes(be, z, dtype)):
        out = strided_out(be, SHAPE, dtype)
        run_both(be, "copy", src, out)
        check(be, out, what="copy complex -> complex (strided)")
    for real in (pg.float32, pg.int64, pg.bool):  # real to complex: imaginary part 0
        src = contiguous(be, np.arange(21).reshape(SHAPE) % 3, real)
        out = empty(be, SHAPE, dtype)
        run_both(be, "copy", src, out)
        check(be, out, what=f"copy {real.name} -> {dtype.name}")
    for real in (dtype.to_real(), pg.int64, pg.bool):  # complex to real: the real part
        out = empty(be, SHAPE, real)
        run_both(be, "copy", p, out)
        check(be, out, what=f"copy {dtype.name} -> {real.name}")
    out = strided_out(be, SHAPE, dtype)
    run_both(be, "fill", out, 1.5 - 2j)
    check(be, out, what="fill with a complex scalar")


# ---------------------------------------------------------------------- arithmetic
@pytest.mark.parametrize("op", _UNARY)
@pytest.mark.parametrize("dtype", COMPLEX, ids=[d.name for d in COMPLEX])
def test_complex_unary(conformance_backend: Any, dtype: Any, op: str) -> None:
    be = conformance_backend
    _need(be, dtype)
    x = contiguous(be, _z(SHAPE, 2, dtype), dtype, offset=1)
    out = empty(be, SHAPE, dtype)
    run_both(be, "unary", op, x, out)
    _close(be, out, dtype, f"unary {op}")


@pytest.mark.parametrize("dtype", COMPLEX, ids=[d.name for d in COMPLEX])
def test_complex_abs_and_predicates(conformance_backend: Any, dtype: Any) -> None:
    be = conformance_backend
    _need(be, dtype)
    z = _z(SHAPE, 3, dtype)
    z[0, :3] = [complex(np.nan, 1), complex(1, np.inf), 0]
    x = contiguous(be, z, dtype)
    out = empty(be, SHAPE, dtype.to_real())  # abs: the real dtype out
    run_both(be, "unary", "abs", x, out)
    check(be, out, exact=False, what="abs of complex")
    for op in ("isnan", "isinf"):
        b = empty(be, SHAPE, pg.bool)
        run_both(be, "unary", op, x, b)
        check(be, b, what=op)


@pytest.mark.parametrize("op", _BINARY + ["eq", "ne"])
@pytest.mark.parametrize("dtype", COMPLEX, ids=[d.name for d in COMPLEX])
def test_complex_binary(conformance_backend: Any, dtype: Any, op: str) -> None:
    be = conformance_backend
    _need(be, dtype)
    a = contiguous(be, _z(SHAPE, 4, dtype), dtype, offset=2)
    b = reversed_axes(be, _z(SHAPE, 5, dtype), dtype)
    odt = pg.bool if op in ("eq", "ne") else dtype
    for lhs, rhs in ((a, b), (a, 0.5 - 1.5j), (2 + 1j, b), (a, a)):
        out = empty(be, SHAPE, odt)
        run_both(be, "binary", op, lhs, rhs, out)
        if odt is pg.bool:
            check(be, out, what=f"binary {op}")
        else:
            _close(be, out, dtype, f"binary {op}")


@pytest.mark.parametrize("dtype", COMPLEX, ids=[d.name for d in COMPLEX])
def test_complex_where_reduce_matmul(conformance_backend: Any, dtype: Any) -> None:
    be = conformance_backend
    _need(be, dtype)
    a = contiguous(be, _z(SHAPE, 6, dtype), dtype)
    cond = contiguous(be, np.arange(21).reshape(SHAPE) % 2 == 0, pg.bool)
    out = empty(be, SHAPE, dtype)
    run_both(be, "where", cond, a, 3j, out)
    check(be, out, what="where")
    for op in ("sum", "prod"):
        for axes in ((0,), (1,), (0, 1)):
            shape = tuple(1 if i in axes else n for i, n in enumerate(SHAPE))
            r = empty(be, shape, dtype)
            run_both(be, "reduce", op, a, axes, r)
            _close(be, r, dtype, f"reduce {op} over {axes}")
    # matmul takes (B, M, K) @ (B, K, N) views (the contract): a batch of two against a transposed
    # b broadcast over the batch (stride 0)
    a3 = contiguous(be, _z((2, 3, 7), 9, dtype), dtype, 1)
    b2 = reversed_axes(be, _z((7, 4), 7, dtype), dtype)
    b = b2.twin.view(b2.dev.offset, (2, 7, 4), (0, *b2.dev.strides))
    m = empty(be, (2, 3, 4), dtype)
    run_both(be, "matmul", a3, b, m)
    _close(be, m, dtype, "matmul")


@pytest.mark.parametrize("dtype", COMPLEX, ids=[d.name for d in COMPLEX])
def test_complex_through_the_public_api(conformance_backend: Any, conformance_device: str,
                                        dtype: Any) -> None:
    """The core's complex ops (views, conj, abs, a gradient) on the device, against the cpu."""
    _need(conformance_backend, dtype)
    z = _z((4, 3), 8, dtype)
    t = pg.tensor(z, device=conformance_device, requires_grad=True)
    r = pg.view_as_real(t)
    assert r._storage is t._storage and r.dtype is dtype.to_real()
    np.testing.assert_array_equal(r.detach().cpu().numpy(), np.stack([z.real, z.imag], -1))
    np.testing.assert_array_equal(t.conj().detach().cpu().numpy(), np.conj(z))
    loss = (t * t.conj().exp()).abs().sum()
    loss.backward()
    c = pg.tensor(z, requires_grad=True)
    (c * c.conj().exp()).abs().sum().backward()
    tol = _TOL[dtype.name] * 10
    assert t.grad is not None and c.grad is not None
    np.testing.assert_allclose(t.grad.cpu().numpy(), c.grad.numpy(), rtol=tol, atol=tol)
