"""Linear-algebra edge cases against PyTorch (CPU), on every device: the dtypes its kernels take
or refuse (``lu_factor`` of integers, ``cross`` of mixed dtypes), ``lu_factor``'s error for an
exactly singular ``U``, and ``matrix_power`` with negative exponents (values and ``gradcheck``).
The differential fuzzer (tests/test_fuzz_differential.py) found each of these."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)


def _both(fn: Any, device: str, *arrays: np.ndarray) -> tuple:
    """``fn(m, *tensors)`` with each library: (result or error) for portagrad and torch."""
    out = []
    for m in (pg, torch):
        ts = [pg.tensor(a, device=device) if m is pg else torch.tensor(a) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.append(fn(m, *ts))
            except Exception as exc:  # compared below
                out.append(exc)
    return tuple(out)


def _same_error(fn: Any, device: str, *arrays: np.ndarray) -> None:
    """Both raise, portagrad an instance of PyTorch's exception class (its ``LinAlgError`` is a
    ``RuntimeError``), with the same message up to the kernel's name."""
    mine, theirs = _both(fn, device, *arrays)
    assert isinstance(mine, Exception) and isinstance(theirs, Exception), (mine, theirs)
    assert isinstance(mine, type(theirs)), (mine, theirs)
    assert str(mine).split(" (")[0].replace("linalg.lu_factor: \"lu\"", "\"lu_cpu\"") == \
        str(theirs).split(" (")[0], (mine, theirs)


def _same_values(fn: Any, device: str, *arrays: np.ndarray) -> None:
    mine, theirs = _both(fn, device, *arrays)
    assert not isinstance(mine, Exception) and not isinstance(theirs, Exception), (mine, theirs)
    mine = mine if isinstance(mine, tuple) else (mine,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(mine, theirs, strict=True):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------- lu_factor
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_lu_factor_of_integers_refused_unless_empty(device: str, dtype: str) -> None:
    # PyTorch's kernel refuses the dtype (NotImplementedError); an empty input never reaches it
    _same_error(lambda m, a: m.linalg.lu_factor(a), device, np.ones((2, 2), dtype))
    _same_error(lambda m, a: m.linalg.lu(a), device, np.ones((2, 2), dtype))
    for shape in [(0, 0), (2, 0, 0), (0, 2, 2), (3, 0)]:
        _same_values(lambda m, a: tuple(m.linalg.lu_factor(a)), device, np.ones(shape, dtype))


@pytest.mark.parametrize("a", [
    np.array([[1.0, 2.0], [2.0, 4.0]]),  # U[2,2] == 0
    np.zeros((2, 3)),  # U[1,1] == 0
    np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 5.0]]),
    np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 4.0]])]),  # (Batch element 1)
], ids=["square", "zeros-wide", "wide", "batch"])
def test_lu_factor_raises_for_an_exactly_singular_u(device: str, a: np.ndarray) -> None:
    _same_error(lambda m, x: m.linalg.lu_factor(x), device, a)
    _same_error(lambda m, x: m.linalg.lu_factor_ex(x, check_errors=True), device, a)
    # lu and lu_factor_ex (without check_errors) factor it all the same
    _same_values(lambda m, x: tuple(m.linalg.lu(x)), device, a)
    _same_values(lambda m, x: tuple(m.linalg.lu_factor_ex(x)), device, a)


def test_lu_factor_of_a_full_rank_tall_matrix(device: str) -> None:
    _same_values(lambda m, x: tuple(m.linalg.lu_factor(x)), device,
                 np.array([[1.0, 2.0], [2.0, 4.0], [1.0, 1.0]]))


# ------------------------------------------------------------------------------- cross
@pytest.mark.parametrize("other", ["int64", "float16", "float32", "int32", "bool"])
def test_cross_refuses_mixed_dtypes(device: str, other: str) -> None:
    x = np.array([[1.0, 2.0, 3.0]])
    y = np.array([[4, 5, 0]]).astype(other)
    _same_error(lambda m, a, b: m.linalg.cross(a, b), device, x, y)
    _same_error(lambda m, a, b: m.linalg.cross(a, b), device, y, x)
    _same_error(lambda m, a, b: m.cross(a, b, dim=1), device, x[:0], y[:0])  # even when empty


def test_cross_refuses_bool(device: str) -> None:
    b = np.array([[True, False, True]])
    _same_error(lambda m, a, c: m.linalg.cross(a, c), device, b, b)


def test_cross_of_integers(device: str) -> None:
    _same_values(lambda m, a, b: m.linalg.cross(a, b), device, np.array([[1, 2, 3]]),
                 np.array([[4, 5, 6]]))


# ------------------------------------------------------------------------------- matrix_power
@pytest.mark.parametrize("n", [-1, -2, -3])
def test_matrix_power_of_negative_exponents(device: str, n: int) -> None:
    a = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    _same_values(lambda m, x: m.linalg.matrix_power(x, n), device, a)
    x = pg.tensor(a, device=device, requires_grad=True)
    assert gradcheck(lambda t: pg.linalg.matrix_power(t, n), (x,))


def test_matrix_power_of_a_singular_matrix_with_a_negative_exponent(device: str) -> None:
    mine, theirs = _both(lambda m, x: m.linalg.matrix_power(x, -2), device, np.zeros((2, 2)))
    assert isinstance(mine, pg.linalg.LinAlgError) and isinstance(theirs, RuntimeError)


def test_matrix_power_places_nan_from_infinite_entries_as_pytorch(device: str) -> None:
    # inf - inf gives NaN where the products meet: the order of the products decides where
    # (PyTorch's cube is (A A) A; other powers square and multiply from the lowest bit up)
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.standard_normal((3, 3))
        u = rng.random((3, 3))
        a[u < 0.15], a[(u >= 0.15) & (u < 0.25)], a[(u >= 0.25) & (u < 0.3)] = np.inf, -np.inf, 0
        for n in range(8):
            mine, theirs = _both(lambda m, x, n=n: m.linalg.matrix_power(x, n), device, a)
            np.testing.assert_array_equal(np.isnan(mine.cpu().numpy()), np.isnan(theirs.numpy()))


def test_lu_factor_multipliers_as_lapacks(device: str) -> None:
    # LAPACK scales the column below a pivot by the pivot's reciprocal: x * (1 / x) is one unit
    # below 1 for this x, so equal rows leave U a 1e-16 entry and lu_factor does not raise
    r = [0.37810676358706613, -1.0454968829614948, -0.8261270867837869]
    _same_values(lambda m, x: tuple(m.linalg.lu_factor(x)), device, np.array([r, r]))
    _same_values(lambda m, x: tuple(m.linalg.lu_factor_ex(x)), device, np.array([r, r]))


@pytest.mark.parametrize("a", [
    [[4.538222667428284, -0.9036742346658434, 2.4524292853027845],
     [0.5337385062896451, -0.9507547576193606, 2.0454605912926844],
     [np.nan, -1.0483501217495832, -0.0]],  # a NaN below: never the pivot
    [[np.nan, 1.0], [3.0, 2.0]],  # a NaN first: LAPACK's running maximum stays there
    [[4.2, 2.3], [np.nan, -0.0]],
], ids=["nan-below", "nan-first", "nan-2x2"])
def test_lu_factor_pivots_past_nan_as_lapack(device: str, a: list) -> None:
    mine, theirs = _both(lambda m, x: m.linalg.lu_factor_ex(x), device, np.array(a))
    np.testing.assert_array_equal(mine.pivots.cpu().numpy(), theirs.pivots.numpy())
    np.testing.assert_array_equal(np.isnan(mine.LU.cpu().numpy()), np.isnan(theirs.LU.numpy()))
