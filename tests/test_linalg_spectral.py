"""``eigh``, ``svd`` and what is composed from them (``pinv``, ``matrix_rank``, ``lstsq``,
``cond``, the ``*_ex`` variants ...) beyond the op table: closed forms, PyTorch's result tuples
and ``info`` semantics, empty and batched inputs, the derivatives at repeated eigenvalues, and
every op-table row of this family run on PyTorch itself where it is installed."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck, gradgradcheck
from portagrad.errors import DTypeError, LinAlgError

from op_table import OP_TABLE, OpInfo, to_device

F32, F64 = pg.float32, pg.float64

_FAMILY = ("linalg_eigh", "linalg_eigvalsh", "linalg_svd", "linalg_svdvals", "svd",
           "linalg_pinv", "pinverse", "linalg_matrix_rank", "linalg_lstsq", "linalg_cond",
           "linalg_matrix_norm_spectral", "linalg_norm_nuc", "norm_nuc", "linalg_solve_triangular",
           "linalg_inv_ex", "linalg_solve_ex", "linalg_cholesky_ex", "linalg_lu_factor_ex",
           "linalg_householder_product", "orgqr", "linalg_vander", "linalg_tensorinv",
           "linalg_tensorsolve", "svd_lowrank", "pca_lowrank")
ROWS = [r for r in OP_TABLE if r.name.startswith(_FAMILY)]


def _t(a: Any, device: str, dtype: Any = F64, grad: bool = False) -> pg.Tensor:
    return pg.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, device=device,
                     requires_grad=grad)


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


# ----------------------------------------------------------------------- against PyTorch
def _flat(obj: Any) -> list:
    if isinstance(obj, (tuple, list)):
        return [y for x in obj for y in _flat(x)]
    return [obj]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_rows_match_torch(row: OpInfo, device: str) -> None:
    """Each row's op (gauge-invariant where vectors are involved) on PyTorch and on portagrad
    gives the same numbers, on every sample and dtype."""
    ot = pytest.importorskip("op_table_torch")
    if ot.torch is None:
        pytest.skip("torch is not installed")
    op = ot.torch_op(row.op)
    compared = 0
    for dtype in row.dtypes:
        for sample in row.samples(dtype, np.random.default_rng(5)):
            want = op(*ot.torch_args(sample.args, sample.nc), **ot.torch_args(sample.kwargs, None))
            got = row.op(*to_device(sample.args, device, sample.nc), **sample.kwargs)
            for g, w in zip(_flat(got), _flat(tuple(want) if isinstance(want, tuple) else want),
                            strict=True):
                assert tuple(g.shape) == tuple(w.shape), f"{row.name} {sample!r}"
                assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
                tol = 1e-4 if dtype is F32 else 1e-8
                np.testing.assert_allclose(_np(g), w.detach().numpy(), rtol=tol, atol=tol,
                                           err_msg=f"{row.name} {dtype} {sample!r}")
                compared += 1
    assert compared


def _torch() -> Any:
    return pytest.importorskip("torch")


# ----------------------------------------------------------------------- closed forms
def test_eigh_closed_form(device: str) -> None:
    a = _t([[2.0, 1.0], [1.0, 2.0]], device)
    w, v = pg.linalg.eigh(a)
    np.testing.assert_allclose(_np(w), [1.0, 3.0], atol=1e-12)
    np.testing.assert_allclose(np.abs(_np(v)), np.full((2, 2), 1 / math.sqrt(2)), atol=1e-12)
    assert type(pg.linalg.eigh(a))._fields == ("eigenvalues", "eigenvectors")
    # only the lower (default) or upper triangle is read
    b = _t([[2.0, 100.0], [1.0, 2.0]], device)
    np.testing.assert_allclose(_np(pg.linalg.eigvalsh(b)), [1.0, 3.0], atol=1e-12)
    np.testing.assert_allclose(_np(pg.linalg.eigvalsh(b.mT, UPLO="U")), [1.0, 3.0], atol=1e-12)


def test_float32_is_computed_in_float32(device: str) -> None:
    """LAPACK's single-precision routines, as PyTorch: the float32 results are numpy's float32
    ones (not float64 rounded)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 5)).astype(np.float32)
    a = a + a.T
    w = pg.linalg.eigvalsh(pg.tensor(a, device=device))
    assert w.dtype is F32
    np.testing.assert_allclose(_np(w), np.linalg.eigvalsh(a), rtol=1e-6, atol=1e-6)
    s = pg.linalg.svdvals(pg.tensor(a, device=device))
    np.testing.assert_allclose(_np(s), np.linalg.svd(a, compute_uv=False), rtol=1e-6)


def test_svd_closed_form_and_legacy(device: str) -> None:
    a = _t([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]], device)
    U, S, Vh = pg.linalg.svd(a)
    assert type(pg.linalg.svd(a))._fields == ("U", "S", "Vh")
    assert U.shape == (3, 3) and S.shape == (2,) and Vh.shape == (2, 2)
    np.testing.assert_allclose(_np(S), [3.0, 2.0])
    np.testing.assert_allclose(_np(U[:, :2] * S) @ _np(Vh), _np(a), atol=1e-12)
    # torch.svd: V (not Vh), reduced by default; compute_uv=False gives zero U and V
    u, s, v = pg.svd(a)
    assert u.shape == (3, 2) and v.shape == (2, 2)
    np.testing.assert_allclose((_np(u) * _np(s)) @ _np(v).T, _np(a), atol=1e-12)
    u, s, v = a.svd(some=False, compute_uv=False)
    assert u.shape == (3, 3) and v.shape == (2, 2) and not _np(u).any() and not _np(v).any()
    np.testing.assert_allclose(_np(s), [3.0, 2.0])


def test_singular_value_gradient_closed_form(device: str) -> None:
    """d sum(S) / dA = U Vh (reduced), d sum(w) / dA = I for symmetric A."""
    rng = np.random.default_rng(1)
    a = _t(rng.standard_normal((4, 3)), device, grad=True)
    pg.linalg.svdvals(a).sum().backward()
    U, _, Vh = np.linalg.svd(_np(a), full_matrices=False)
    np.testing.assert_allclose(_np(a.grad), U @ Vh, atol=1e-10)
    b = _t(rng.standard_normal((3, 3)), device, grad=True)
    pg.linalg.eigvalsh(b + b.mT).sum().backward()
    np.testing.assert_allclose(_np(b.grad), 2 * np.eye(3), atol=1e-10)


def test_repeated_eigenvalues(device: str) -> None:
    """The eigenvalues' gradient is finite at a repeated eigenvalue; the eigenvectors' is not
    (they are not unique there): inf/NaN, as PyTorch."""
    a = pg.eye(3, dtype=F64, device=device).requires_grad_()
    pg.linalg.eigvalsh(a).sum().backward()
    np.testing.assert_allclose(_np(a.grad), np.eye(3))
    b = pg.eye(3, dtype=F64, device=device).requires_grad_()
    pg.linalg.eigh(b).eigenvectors.sum().backward()
    assert not np.isfinite(_np(b.grad)).all()


def test_gradgrad(device: str) -> None:
    rng = np.random.default_rng(2)
    a = _t(rng.standard_normal((3, 2)), device, grad=True)
    assert gradgradcheck(lambda x: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.Vh)(
        pg.linalg.svd(x, full_matrices=False)), (a,), eps=1e-6, atol=1e-5, rtol=1e-3)
    b = _t(rng.standard_normal((3, 3)), device, grad=True)
    assert gradgradcheck(lambda x: pg.linalg.pinv(x), (b,), eps=1e-6, atol=1e-5, rtol=1e-3)
    assert gradcheck(lambda x: pg.linalg.eigh(x + x.mT).eigenvectors.abs(), (b,), eps=1e-6,
                     atol=1e-5, rtol=1e-3)


# ----------------------------------------------------------------------- empty and batched
def test_empty_inputs(device: str) -> None:
    for shape in [(0, 0), (2, 0, 0), (0, 3, 3)]:
        w, v = pg.linalg.eigh(pg.zeros(shape, device=device))
        assert w.shape == shape[:-1] and v.shape == shape
    for shape, full, want in [((0, 3), True, [(0, 0), (0,), (3, 3)]),
                              ((0, 3), False, [(0, 0), (0,), (0, 3)]),
                              ((4, 0), True, [(4, 4), (0,), (0, 0)]),
                              ((4, 0), False, [(4, 0), (0,), (0, 0)]),
                              ((2, 0, 3), True, [(2, 0, 0), (2, 0), (2, 3, 3)])]:
        r = pg.linalg.svd(pg.zeros(shape, device=device), full_matrices=full)
        assert [tuple(t.shape) for t in r] == want, (shape, full)
        if full:  # the complete bases of an empty matrix are identities (LAPACK's, PyTorch's)
            n = want[2][-1]
            np.testing.assert_array_equal(_np(r.Vh), np.broadcast_to(np.eye(n), want[2]))
    assert pg.linalg.svdvals(pg.zeros(3, 0, device=device)).shape == (0,)
    assert pg.linalg.pinv(pg.zeros(2, 0, 3, device=device)).shape == (2, 3, 0)
    rank = pg.linalg.matrix_rank(pg.zeros(2, 0, 3, device=device))
    assert rank.dtype is pg.int64 and _np(rank).tolist() == [0, 0]
    assert _np(pg.linalg.cond(pg.zeros(0, 0, device=device))) == 0
    assert pg.linalg.matrix_norm(pg.zeros(0, 3, device=device), "nuc").item() == 0


def test_batched_and_strided(device: str) -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, 5, 4))
    t = _t(a, device).transpose(-1, -2)  # (2, 3, 4, 5), strided
    s = pg.linalg.svdvals(t)
    np.testing.assert_allclose(_np(s), np.linalg.svd(np.swapaxes(a, -1, -2), compute_uv=False),
                               atol=1e-12)
    sym = a[..., :4, :] + np.swapaxes(a[..., :4, :], -1, -2)
    np.testing.assert_allclose(_np(pg.linalg.eigvalsh(_t(sym, device))),
                               np.linalg.eigvalsh(sym), atol=1e-12)


# ----------------------------------------------------------------------- composed ops
def test_lstsq_result_per_driver(device: str) -> None:
    """PyTorch's CPU rules: residuals for gels/gelsd/gelss when m > n and full rank, rank for
    all but gels, singular values for gelsd/gelss; the others empty."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    x_ref = np.linalg.lstsq(a, b, rcond=None)[0]
    res_ref = ((a @ x_ref - b) ** 2).sum(0)
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        r = pg.linalg.lstsq(_t(a, device), _t(b, device), driver=driver)
        assert type(r)._fields == ("solution", "residuals", "rank", "singular_values")
        np.testing.assert_allclose(_np(r.solution), x_ref, atol=1e-12)
        if driver == "gelsy":
            assert r.residuals.shape == (0,)
        else:
            np.testing.assert_allclose(_np(r.residuals), res_ref, atol=1e-12)
        if driver == "gels":
            assert r.rank.shape == (0,) and r.rank.dtype is pg.int64
        else:
            assert r.rank.dtype is pg.int64 and r.rank.item() == 3
        if driver in ("gelsd", "gelss"):
            np.testing.assert_allclose(_np(r.singular_values), np.linalg.svd(a, compute_uv=False))
        else:
            assert r.singular_values.shape == (0,)
    # default gelsy; a rank-deficient matrix: the minimum-norm solution, its rank, no residuals
    low = np.outer([1.0, 2.0, 3.0], [1.0, 2.0])
    r = pg.linalg.lstsq(_t(low, device), _t(b[:3], device), driver="gelsd")
    np.testing.assert_allclose(_np(r.solution), np.linalg.pinv(low) @ b[:3], atol=1e-12)
    assert r.rank.item() == 1 and r.residuals.shape == (0,)
    # a vector right-hand side, and a batch
    v = pg.linalg.lstsq(_t(a, device), _t(b[:, 0], device)).solution
    np.testing.assert_allclose(_np(v), x_ref[:, 0], atol=1e-12)
    r = pg.linalg.lstsq(_t(np.stack([a, 2 * a]), device), _t(np.stack([b, b]), device),
                        driver="gelsd")
    assert r.solution.shape == (2, 3, 2) and r.residuals.shape == (2, 2)
    assert _np(r.rank).tolist() == [3, 3] and r.singular_values.shape == (2, 3)


def test_ex_variants_report_info(device: str) -> None:
    sing = pg.tensor([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]], device=device)
    r = pg.linalg.inv_ex(sing)
    assert type(r)._fields == ("inverse", "info")
    assert r.info.dtype is pg.int32 and _np(r.info).tolist() == [2, 0]
    np.testing.assert_allclose(_np(r.inverse[1]), np.eye(2))
    with pytest.raises(LinAlgError, match="singular"):
        pg.linalg.inv_ex(sing, check_errors=True)
    r = pg.linalg.solve_ex(sing, pg.ones(2, 2, device=device))
    assert _np(r.info).tolist() == [2, 0]
    np.testing.assert_allclose(_np(r.result[1]), np.ones(2))
    c = pg.linalg.cholesky_ex(pg.tensor([[[4.0, 0.0], [0.0, -1.0]], [[4.0, 0.0], [0.0, 1.0]]],
                                        device=device))
    assert type(c)._fields == ("L", "info") and _np(c.info).tolist() == [2, 0]
    np.testing.assert_allclose(_np(c.L[1]), [[2.0, 0.0], [0.0, 1.0]])
    with pytest.raises(LinAlgError, match="not positive-definite"):
        pg.linalg.cholesky_ex(-pg.eye(2, device=device), check_errors=True)
    u = pg.linalg.cholesky_ex(pg.eye(2, device=device) * 4, upper=True)
    np.testing.assert_allclose(_np(u.L), 2 * np.eye(2))
    lu = pg.linalg.lu_factor_ex(pg.zeros(2, 3, 3, device=device))
    assert type(lu)._fields == ("LU", "pivots", "info") and _np(lu.info).tolist() == [1, 1]
    with pytest.raises(LinAlgError, match=r"U\[1,1\] is zero"):
        pg.linalg.lu_factor_ex(pg.zeros(3, 3, device=device), check_errors=True)


def test_cond_of_singular_matrices(device: str) -> None:
    s = pg.tensor([[1.0, 2.0], [2.0, 4.0]], device=device)
    for p in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        assert _np(pg.linalg.cond(s, p)) == math.inf, p
    assert math.isnan(pg.linalg.cond(pg.zeros(2, 2, device=device)).item())  # 0 / 0
    assert pg.linalg.cond(pg.randn(2, 3, 4, device=device)).shape == (2,)


def test_pinv_and_rank_tolerances(device: str) -> None:
    a = _t(np.diag([4.0, 1.0, 1e-3]), device)
    np.testing.assert_allclose(_np(pg.linalg.pinv(a)), np.diag([0.25, 1.0, 1e3]))
    np.testing.assert_allclose(_np(pg.linalg.pinv(a, atol=0.01)), np.diag([0.25, 1.0, 0.0]))
    np.testing.assert_allclose(_np(pg.linalg.pinv(a, rtol=0.5)), np.diag([0.25, 0.0, 0.0]))
    np.testing.assert_allclose(_np(pg.linalg.pinv(a, rcond=0.5)), np.diag([0.25, 0.0, 0.0]))
    np.testing.assert_allclose(_np(pg.pinverse(a, rcond=0.5)), np.diag([0.25, 0.0, 0.0]))
    with pytest.raises(RuntimeError, match="both rtol and rcond"):
        pg.linalg.pinv(a, rtol=0.1, rcond=0.1)
    # per-matrix tolerances (tensors broadcast over the batch)
    batch = pg.stack([a, a])
    atol = pg.tensor([0.01, 2.0], dtype=F64, device=device)
    assert _np(pg.linalg.matrix_rank(batch, atol=atol)).tolist() == [2, 1]
    np.testing.assert_allclose(_np(pg.linalg.pinv(batch, atol=atol))[1], np.diag([0.25, 0, 0]))
    # hermitian: absolute eigenvalues decide
    h = _t(np.diag([-4.0, 1.0, 0.0]), device)
    np.testing.assert_allclose(_np(pg.linalg.pinv(h, hermitian=True)), np.diag([-0.25, 1, 0]))
    assert pg.linalg.matrix_rank(h, hermitian=True).item() == 2
    assert pg.linalg.matrix_rank(a, 0.5).item() == 2  # the older tol= form: atol, rtol=0
    assert pg.linalg.matrix_rank(a).item() == 3


def test_errors(device: str) -> None:
    with pytest.raises(RuntimeError, match="torch.linalg.eig"):
        pg.eye(2, device=device).eig()
    with pytest.raises(NotImplementedError, match="ldl_solve is not implemented"):
        pg.linalg.ldl_solve(pg.eye(2, device=device), pg.zeros(2, dtype=pg.int32), pg.eye(2))
    with pytest.raises(LinAlgError, match="non-finite values"):
        pg.linalg.svd(pg.tensor([[1.0, math.nan], [0.0, 1.0]], device=device))
    w, v = pg.linalg.eigh(pg.tensor([[math.nan, 0.0], [0.0, 1.0]], device=device))
    assert np.isnan(_np(w)).all() and np.isnan(_np(v)).all()  # PyTorch's answer: NaN


def test_half_precision_is_refused(device: str) -> None:
    """LAPACK has no 16-bit routines: PyTorch's NotImplementedError naming the kernel."""
    try:
        x = pg.zeros(2, 2, dtype=pg.float16, device=device)
    except DTypeError as exc:  # a device that does not store float16 (PoCL, array-api-strict)
        pytest.skip(f"the device declines float16: {exc}")
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        pg.linalg.svdvals(x)
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        pg.linalg.eigh(x)


def test_errors_match_torch(device: str) -> None:
    torch = _torch()
    cases = [
        (lambda m: m.linalg.eigh(m.zeros(2, 3)), RuntimeError),
        (lambda m: m.linalg.svd(m.zeros(2, 2, dtype=m.int64)), RuntimeError),
        (lambda m: m.linalg.eigh(m.zeros(2, 2, dtype=m.int64)), NotImplementedError),
        (lambda m: m.linalg.lstsq(m.zeros(3, 2), m.zeros(4, 1)), RuntimeError),
        (lambda m: m.linalg.cond(m.zeros(2, 3), "fro"), RuntimeError),
        (lambda m: m.linalg.householder_product(m.zeros(3, 4), m.zeros(2)), RuntimeError),
        (lambda m: m.linalg.tensorinv(m.zeros(4, 4), ind=0), RuntimeError),
        (lambda m: m.linalg.vander(m.zeros(3), N=1), RuntimeError),
    ]
    for fn, exc in cases:
        with pytest.raises(exc) as mine:
            fn(pg)
        with pytest.raises(exc) as theirs:
            fn(torch)
        assert str(mine.value) == str(theirs.value)


def test_householder_product_rebuilds_qr(device: str) -> None:
    """Q from LAPACK-style reflectors: v_i (unit at i, A below), tau_i = 2 / |v_i|^2 gives
    orthonormal columns; torch.orgqr is the same function."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((5, 3))
    v = np.tril(a, -1) + np.eye(5, 3)
    tau = 2.0 / (v * v).sum(0)
    q = pg.linalg.householder_product(_t(a, device), _t(tau, device))
    np.testing.assert_allclose(_np(q).T @ _np(q), np.eye(3), atol=1e-12)
    np.testing.assert_allclose(_np(pg.orgqr(_t(a, device), _t(tau, device))), _np(q))


def test_family_rows_exist() -> None:
    """The rows this module runs on torch exist (the table's names did not drift)."""
    names = {r.name for r in ROWS}
    assert {"linalg_eigh", "linalg_svd", "linalg_pinv", "linalg_lstsq", "linalg_cond"} <= names


def test_lstsq_of_empty_matrices(device: str) -> None:
    """Shapes (and the residuals of a matrix without columns: all of B) as PyTorch."""
    b = pg.ones(4, 2, dtype=F64, device=device)
    r = pg.linalg.lstsq(pg.zeros(4, 0, dtype=F64, device=device), b, driver="gelsd")
    assert r.solution.shape == (0, 2) and _np(r.residuals).tolist() == [4.0, 4.0]
    assert r.rank.item() == 0 and r.singular_values.shape == (0,)
    r = pg.linalg.lstsq(pg.zeros(2, 0, 3, dtype=F64, device=device),
                        pg.zeros(2, 0, 1, dtype=F64, device=device), driver="gelsd")
    assert [tuple(t.shape) for t in r] == [(2, 3, 1), (0,), (2,), (2, 0)]
    assert not _np(r.solution).any()


def test_nuclear_norm_is_deprecated_matrix_norm(device: str) -> None:
    x = _t(np.arange(24.0).reshape(2, 3, 4), device)
    with pytest.warns(UserWarning, match="nuclear_norm is deprecated"):
        got = pg.nuclear_norm(x, (0, 2), keepdim=True)
    np.testing.assert_allclose(_np(got), _np(pg.linalg.matrix_norm(x, "nuc", (0, 2), True)))
    with pytest.warns(UserWarning, match="nuclear_norm is deprecated"):
        two = pg.nuclear_norm(x[0], True)  # the older (input, keepdim) form
    assert two.shape == (1, 1)
    np.testing.assert_allclose(_np(two)[0, 0], np.linalg.norm(_np(x[0]), "nuc"))
    np.testing.assert_allclose(_np(x[0].norm("nuc")), np.linalg.norm(_np(x[0]), "nuc"))


def test_svd_lowrank_approximates(device: str) -> None:
    """Below the rank the randomized SVD is close to the truncated SVD (power iterations on a
    decaying spectrum); ``M`` is subtracted first."""
    rng = np.random.default_rng(9)
    u, _ = np.linalg.qr(rng.standard_normal((30, 30)))
    v, _ = np.linalg.qr(rng.standard_normal((20, 20)))
    s = 2.0 ** -np.arange(20)
    a = (u[:, :20] * s) @ v.T
    pg.manual_seed(0)
    U, S, V = pg.svd_lowrank(_t(a, device), q=5, niter=3)
    np.testing.assert_allclose(_np(S), s[:5], rtol=1e-4)  # (not exact below the rank)
    np.testing.assert_allclose(_np(V).T @ _np(V), np.eye(5), atol=1e-12)
    m = np.ones((30, 20))
    U, S, V = pg.svd_lowrank(_t(a + m, device), q=20, M=_t(m, device))
    np.testing.assert_allclose((_np(U) * _np(S)) @ _np(V).T, a, atol=1e-10)
