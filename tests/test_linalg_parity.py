"""Parity of linalg edge cases with PyTorch 2.13 (expected values are torch's, written out)."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg

from complex_support import need_complex


def _np(t):
    return np.array(t.detach().cpu().tolist())


def test_vander_complex_keeps_dtype(device):
    need_complex(device)
    x = pg.tensor([1 + 2j, 3 - 1j], device=device)
    v = pg.vander(x, N=3)
    assert v.dtype == pg.complex64
    np.testing.assert_allclose(_np(v), [[-3 + 4j, 1 + 2j, 1], [8 - 6j, 3 - 1j, 1]])
    lv = pg.linalg.vander(x, N=3)
    assert lv.dtype == pg.complex64
    np.testing.assert_allclose(_np(lv), [[1, 1 + 2j, -3 + 4j], [1, 3 - 1j, 8 - 6j]])


@pytest.mark.parametrize("fn", ["linalg.cholesky", "linalg.cholesky_ex", "cholesky"])
def test_cholesky_upper_reads_upper_triangle(device, fn):
    f = pg
    for part in fn.split("."):
        f = getattr(f, part)
    out = f(pg.tensor([[4.0, 2.0], [0.0, 5.0]], device=device), upper=True)
    out = out[0] if fn.endswith("_ex") else out
    np.testing.assert_allclose(_np(out), [[2, 1], [0, 2]], atol=1e-6)


def test_cholesky_upper_grad_real(device):
    A = pg.tensor([[4., 2, 1], [2, 5, 0.5], [1, 0.5, 6]], dtype=pg.float64, device=device,
                  requires_grad=True)
    W = pg.tensor([[1., 2, 0.5], [1, 0.3, 2], [0.1, 1, -1]], dtype=pg.float64, device=device)
    U = pg.linalg.cholesky(A, upper=True)
    (U * W).sum().backward()
    np.testing.assert_allclose(_np(U), [[2, 1, 0.5], [0, 2, 0], [0, 0, 2.3979157616563596]],
                               atol=1e-12)
    np.testing.assert_allclose(_np(A.grad), [
        [0.0994678491214328, 0.3375, -0.07287139648573131], [0.3375, 0.075, 0.5],
        [-0.07287139648573132, 0.5, -0.20851441405707477]], atol=1e-12)


def test_cholesky_upper_grad_complex(device):
    need_complex(device)
    A = pg.tensor([[4., 2 + 1j, 1], [2 - 1j, 5, 1j], [1, -1j, 6]], dtype=pg.complex128,
                  device=device, requires_grad=True)
    W = pg.tensor([[1., 2j, 0.5], [1 - 1j, 0.3, 2], [0.1j, 1, -1]], dtype=pg.complex128,
                  device=device)
    U = pg.linalg.cholesky(A, upper=True)
    (U * W).sum().real.backward()
    np.testing.assert_allclose(_np(U), [
        [2, 1 + 0.5j, 0.5], [0, 1.9364916731037085, -0.2581988897471611 + 0.6454972243679027j],
        [0, 0, 2.2949219304078006]], atol=1e-12)
    np.testing.assert_allclose(_np(A.grad), [
        [0.4798393053480319 + 0.3037914353639919j, -0.13791957590569806 - 0.5974681138996893j,
         -0.04604995568104209 - 0.15814908956228688j],
        [-0.22398587248808505 + 0.42533552073491526j, 0.11823138099097516 + 0.172132593164774j,
         0.48734813480561584 + 0.07262411172176583j],
        [-0.04604995568104209 + 0.1581490895622869j, 0.4873481348056159 - 0.07262411172176583j,
         -0.21787233516529755]], atol=1e-12)


def test_complex_lu_pivot_cabs1(device):
    need_complex(device)
    A = pg.tensor([[2, 1], [1.2 + 1.2j, 3]], device=device)
    LU, piv = pg.linalg.lu_factor(A)
    assert piv.tolist() == [2, 2]
    np.testing.assert_allclose(_np(LU), [[1.2 + 1.2j, 3], [0.8333333 - 0.8333333j, -1.5 + 2.5j]],
                               rtol=1e-5)
    assert pg.linalg.lu_factor_ex(A).pivots.tolist() == [2, 2]
    P, L, U = pg.linalg.lu(A)
    np.testing.assert_allclose(_np(P), [[0, 1], [1, 0]])
    np.testing.assert_allclose(_np(L), [[1, 0], [0.8333333 - 0.8333333j, 1]], rtol=1e-5)
    np.testing.assert_allclose(_np(U), [[1.2 + 1.2j, 3], [0, -1.5 + 2.5j]], rtol=1e-5)
    P2, _, _ = pg.lu_unpack(LU, piv)
    np.testing.assert_allclose(_np(P2), [[0, 1], [1, 0]])
    np.testing.assert_allclose(_np(pg.linalg.det(A)), 4.8 - 1.2j, rtol=1e-5)


@pytest.mark.parametrize("call", [
    lambda x: pg.linalg.norm(x, "nuc", dim=(1, 2)), lambda x: pg.linalg.norm(x, 2, dim=(1, 2)),
    lambda x: pg.linalg.norm(x, -2, dim=(1, 2)), lambda x: pg.linalg.matrix_norm(x, "nuc", dim=(1, 2)),
    lambda x: pg.linalg.matrix_norm(x, -2, dim=(0, 2)), lambda x: pg.norm(x, "nuc", dim=(1, 2)),
    lambda x: pg.norm(x, 2, dim=(1, 2))])
def test_matrix_norm_dim_out_of_range(device, call):
    with pytest.raises(IndexError, match="Dimension out of range"):
        call(pg.eye(3, device=device))


def test_norm_checks(device):
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 1"):
        pg.linalg.norm(pg.ones(3, 4, device=device), "fro", dim=1)
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        pg.linalg.norm(pg.ones(4, device=device), "fro")
    with pytest.raises(RuntimeError, match="dtype should be real for real inputs"):
        pg.linalg.vector_norm(pg.ones(3, device=device), dtype=pg.complex128)
    with pytest.raises(RuntimeError, match="without narrowing"):
        pg.linalg.vector_norm(pg.ones(3, dtype=pg.float64, device=device), dtype=pg.float32)
    with pytest.raises(TypeError, match="must be Number, not str"):
        pg.linalg.vector_norm(pg.ones(3, device=device), ord="fro")
    assert pg.linalg.vector_norm(pg.ones(3, device=device), dtype=pg.float64).dtype == pg.float64
    np.testing.assert_allclose(_np(pg.norm(pg.ones(3, 4, device=device), "fro", dim=1)), [2] * 3)


def test_vector_norm_complex_dtype(device):
    need_complex(device)
    with pytest.raises(RuntimeError, match="dtype should be complex for complex inputs"):
        pg.linalg.vector_norm(pg.ones(3, dtype=pg.complex64, device=device), dtype=pg.float64)


def test_slogdet_complex_empty_is_real(device):
    need_complex(device)
    for sh, want in (((0, 0), ()), ((3, 0, 0), (3,))):
        for dt, rdt in ((pg.complex64, pg.float32), (pg.complex128, pg.float64)):
            s, la = pg.linalg.slogdet(pg.ones(sh, dtype=dt, device=device))
            assert la.dtype == rdt and tuple(la.shape) == want and s.dtype == dt


def test_lstsq_shapes_and_dtypes(device):
    A = pg.ones(5, 3, dtype=pg.float64, device=device) + pg.eye(5, 3, dtype=pg.float64, device=device)
    for drv in ("gelsd", "gelss", "gels"):
        r = pg.linalg.lstsq(A, pg.ones(5, dtype=pg.float64, device=device), driver=drv)
        assert tuple(r.residuals.shape) == (1,)
    r = pg.linalg.lstsq(pg.ones(0, 5, 3, device=device), pg.ones(0, 5, 2, device=device),
                        driver="gelsd")
    assert tuple(r.singular_values.shape) == (0, 3) and tuple(r.residuals.shape) == (0, 2)


def test_lstsq_complex_empty_residuals_real(device):
    need_complex(device)
    A = pg.ones(5, 3, dtype=pg.complex64, device=device)
    r = pg.linalg.lstsq(A, pg.ones(5, 1, dtype=pg.complex64, device=device), driver="gelsy")
    assert r.residuals.dtype == pg.float32 and r.singular_values.dtype == pg.float32


def test_graph_cut_offs(device):
    A = pg.tensor([[1., 2], [3, 4]], device=device, requires_grad=True)
    r = pg.linalg.matrix_power(A, 0)
    np.testing.assert_allclose(_np(r), [[1, 0], [0, 1]])
    r.sum().backward()
    np.testing.assert_allclose(_np(A.grad), [[0, 0], [0, 0]])
    for sh in ((0, 0), (3, 0, 0), (0, 3, 3)):
        for f in (pg.linalg.det, lambda a: pg.linalg.slogdet(a)[1], pg.logdet, pg.linalg.pinv):
            a = pg.zeros(sh, dtype=pg.float64, device=device, requires_grad=True)
            f(a).sum().backward()
            assert tuple(a.grad.shape) == sh
    x = pg.tensor([[1., 2], [3, 4]], device=device, requires_grad=True)
    y = pg.tensor([[1., 0]], device=device, requires_grad=True)
    pg.cdist(x, y, p=0).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [[0, 0], [0, 0]])
    np.testing.assert_allclose(_np(y.grad), [[0, 0]])


def test_missing_checks(device):
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        pg.linalg.vecdot(pg.ones(3, dtype=pg.int64, device=device),
                         pg.ones(3, dtype=pg.int64, device=device))
    with pytest.raises(RuntimeError, match="the last tensor must be 1D or 2D but got 3D"):
        pg.linalg.multi_dot([pg.ones(2, 2, device=device), pg.ones(2, 2, 2, device=device)])
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        pg.cholesky_inverse(pg.ones(2, 3, device=device))
    for f in (pg.linalg.solve_ex, pg.linalg.solve):
        with pytest.raises(RuntimeError, match=r"XA = B \(3x3 and 3x1\)"):
            f(pg.eye(3, device=device), pg.ones(3, device=device), left=False)


def test_vecdot_mixed_dtypes(device):
    need_complex(device)
    with pytest.raises(RuntimeError, match="Expected x and y to have the same dtype"):
        pg.linalg.vecdot(pg.ones(3, dtype=pg.float64, device=device),
                         pg.ones(3, dtype=pg.complex128, device=device))
