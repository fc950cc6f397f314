"""Edge cases of ``linalg`` and the top-level linear-algebra functions against PyTorch 2.13:
gradients at singular matrices, the triangle ``cholesky_solve``/``cholesky_inverse`` read,
triangular solves with a zero on the diagonal (``inf``/``nan``, no error), batch broadcasting,
``lstsq``'s ``gels`` driver and ``rcond``, and the exception types and messages (batch element
included). Expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import math

import pytest

import portagrad as pg

NAN, INF = math.nan, math.inf
F64 = pg.float64


def t(device: str, data, dtype=F64, grad: bool = False):
    return pg.tensor(data, dtype=dtype, device=device, requires_grad=grad)


def close(x, expected, tol: float = 1e-9) -> None:
    got = x.detach().tolist() if hasattr(x, "detach") else x
    assert _close(got, expected, tol), (got, expected)


def _close(a, b, tol: float) -> bool:
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(_close(p, q, tol)
                                                                 for p, q in zip(a, b))
    if math.isnan(b):
        return math.isnan(a)
    if math.isinf(b):
        return a == b
    return abs(a - b) <= tol * (1 + abs(b))


SING3 = [[1., 0, 0], [2, 0, 0], [1, 0, 1]]  # lower triangular, a zero on the diagonal


# ------------------------------------------------------------------------------- det's gradient
def test_det_gradient_is_zero_where_the_determinant_is_zero(device: str) -> None:
    x = t(device, [[[2., 1], [1, 3]], [[1., 2], [2, 4]]], grad=True)
    pg.linalg.det(x).sum().backward()
    close(x.grad, [[[3.0, -1.0], [-1.0, 2.0]], [[0.0, 0.0], [0.0, 0.0]]])
    x = t(device, [[1e-300, 0], [0, 1e-300]], grad=True)  # the determinant underflows to 0
    pg.linalg.det(x).backward()
    close(x.grad, [[0.0, 0.0], [0.0, 0.0]])
    x = t(device, [[0.]], grad=True)  # 1x1: the entry itself, gradient 1
    pg.linalg.det(x).backward()
    close(x.grad, [[1.0]])
    x = t(device, [[1., 2, 3], [2, 4, 6], [1, 0, 1]], grad=True)  # rank 2: adjugate != 0
    pg.det(x).backward()
    close(x.grad, [[0.0] * 3] * 3)


@pytest.mark.parametrize("o", [2, 1, INF, -INF, 3, 0.5, -1, -2])
def test_vector_norm_gradient_at_zero(device: str, o: float) -> None:
    z = pg.zeros(3, dtype=F64, device=device, requires_grad=True)
    pg.linalg.vector_norm(z, ord=o).backward()
    close(z.grad, [0.0, 0.0, 0.0])


# ------------------------------------------------------------------ cholesky_solve / _inverse
def test_cholesky_solve_reads_one_triangle(device: str) -> None:
    L, B = t(device, [[2., 5], [1, 3]]), t(device, [[1.], [2.]])
    close(pg.cholesky_solve(B, L), [[0.16666666666666669], [0.16666666666666666]])
    close(pg.cholesky_solve(B, L, upper=True), [[0.3888888888888889], [-0.05555555555555555]])
    close(pg.cholesky_inverse(L), [[0.2777777777777778, -0.05555555555555555],
                                   [-0.05555555555555555, 0.1111111111111111]])
    close(pg.cholesky_inverse(L, upper=True), [[0.9444444444444443, -0.27777777777777773],
                                               [-0.27777777777777773, 0.1111111111111111]])


def test_cholesky_solve_gradients_are_pytorchs(device: str) -> None:
    # (PyTorch differentiates the whole of L, the unread triangle included)
    L, B = t(device, [[2., 5], [1, 3]], grad=True), t(device, [[1.], [2.]], grad=True)
    pg.cholesky_solve(B, L).sum().backward()
    close(L.grad, [[-0.19444444444444448, -0.5092592592592593],
                   [-0.1111111111111111, -0.287037037037037]])
    close(B.grad, [[0.2222222222222222], [0.05555555555555555]])
    L = t(device, [[2., 5], [1, 3]], grad=True)
    pg.cholesky_solve(t(device, [[1.], [2.]]), L, upper=True).sum().backward()
    close(L.grad, [[-0.5277777777777778, 0.1111111111111111],
                   [-0.21296296296296297, 0.046296296296296294]])
    L = t(device, [[2., 5], [1, 3]], grad=True)
    pg.cholesky_inverse(L).sum().backward()
    close(L.grad, [[-0.22222222222222227, -0.5679012345679013],
                   [-0.05555555555555555, -0.1419753086419753]])


def test_cholesky_solve_checks(device: str) -> None:
    eye, b = pg.eye(3, dtype=F64, device=device), pg.ones(3, 2, dtype=F64, device=device)
    close(pg.cholesky_solve(b, t(device, SING3)), [[NAN, NAN]] * 3)  # no error
    with pytest.raises(RuntimeError, match="^b should have at least 2 dimensions, but has 1 "
                       "dimensions instead"):
        pg.cholesky_solve(b[0], eye)
    with pytest.raises(RuntimeError, match="^u should have at least 2 dimensions"):
        pg.cholesky_solve(b, eye[0])
    with pytest.raises(RuntimeError, match=r"^Incompatible matrix sizes for cholesky_solve: "
                       r"each A matrix is 3 by 3 but each b matrix is 4 by 2"):
        pg.cholesky_solve(pg.ones(4, 2, dtype=F64, device=device), eye)
    with pytest.raises(RuntimeError, match="^Expected b and A to have the same dtype, but found "
                       "b of type Float and A of type Double instead."):
        pg.cholesky_solve(b.float(), eye)
    with pytest.raises(pg.linalg.LinAlgError, match=r"^cholesky_inverse: \(Batch element 1\): "
                       r"The diagonal element 2 is zero"):
        pg.cholesky_inverse(pg.stack([eye, t(device, SING3)]))


# ------------------------------------------------------------------------ triangular solves
def test_triangular_solves_with_a_zero_pivot_give_inf_nan(device: str) -> None:
    S, b = t(device, SING3), pg.ones(3, 2, dtype=F64, device=device)
    expected = [[1.0, 1.0], [-INF, -INF], [NAN, NAN]]
    close(pg.triangular_solve(b, S, upper=False).solution, expected)
    close(pg.linalg.solve_triangular(S, b, upper=False), expected)


def test_triangular_solve_broadcasts_and_checks(device: str) -> None:
    r = pg.triangular_solve(pg.ones(2, 1, 3, 2, dtype=F64, device=device),
                            pg.eye(3, dtype=F64, device=device).expand(4, 3, 3))
    assert tuple(r.solution.shape) == (2, 4, 3, 2)
    assert tuple(r.cloned_coefficient.shape) == (2, 4, 3, 3)
    eye, b = pg.eye(3, dtype=F64, device=device), pg.ones(3, 2, dtype=F64, device=device)
    with pytest.raises(RuntimeError, match="^torch.triangular_solve: Expected b to have at least "
                       "2 dimensions, but it has 1 dimensions instead"):
        pg.triangular_solve(b[0], eye)
    with pytest.raises(RuntimeError, match="^A must be batches of square matrices, but they are "
                       "3 by 2 matrices"):
        pg.triangular_solve(b, b)
    with pytest.raises(NotImplementedError, match="\"triangular_solve_cpu\" not implemented for "
                       "'Int'"):
        pg.triangular_solve(b.int(), eye.int())


# ----------------------------------------------------------------------------- lstsq's drivers
def test_lstsq_gels_ignores_rcond(device: str) -> None:
    A = t(device, [[0.5, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 2.0, 0.0], [1.0, 1.0, 1.0]])
    B = t(device, [[1.0], [2.0], [0.0], [1.0]])
    # (singular values 2.66, 1.75, 0.32: rcond=0.5 drops the last one, except for gels)
    close(pg.linalg.lstsq(A, B, rcond=0.5, driver="gels").solution,
          [[2.222222222222222], [-0.11111111111111112], [-0.6666666666666666]])
    close(pg.linalg.lstsq(A, B, rcond=0.5, driver="gelsd").solution,
          [[0.7902059486937625], [0.007664227712762095], [0.78102234051419]])


# -------------------------------------------------------------------------------- messages
def test_singular_batch_errors_name_the_batch_element(device: str) -> None:
    eye, S = pg.eye(3, dtype=F64, device=device), t(device, [[1., 2, 3], [2, 4, 6], [1, 0, 1]])
    A, b = pg.stack([eye, S, S.mT]), pg.ones(3, 2, dtype=F64, device=device)
    tail = "The diagonal element 3 is zero, the inversion could not be completed"
    with pytest.raises(pg.linalg.LinAlgError, match=rf"^linalg.inv: \(Batch element 1\): {tail}"):
        pg.linalg.inv(A)
    with pytest.raises(pg.linalg.LinAlgError, match=r"^linalg.inv: The diagonal element 3"):
        pg.linalg.inv(S)
    with pytest.raises(pg.linalg.LinAlgError, match=r"^linalg.inv_ex: \(Batch element 1\): "):
        pg.linalg.inv_ex(A, check_errors=True)
    with pytest.raises(pg.linalg.LinAlgError, match=r"^torch.linalg.solve: \(Batch element 1\): "
                       r"The solver failed because the input matrix is singular."):
        pg.linalg.solve(A, b)
    with pytest.raises(pg.linalg.LinAlgError, match=r"^torch.linalg.solve_ex: \(Batch element "
                       r"1\): The solver failed"):
        pg.linalg.solve_ex(A, b.mT, left=False, check_errors=True)
    not_pd = pg.stack([eye, pg.diag(t(device, [1., 1, -1])), -eye])
    msg = (r"\(Batch element 1\): The factorization could not be completed because the input is "
           r"not positive-definite \(the leading minor of order 3 is not positive-definite\).")
    with pytest.raises(pg.linalg.LinAlgError, match="^linalg.cholesky: " + msg):
        pg.linalg.cholesky(not_pd)
    with pytest.raises(pg.linalg.LinAlgError, match="^linalg.cholesky: " + msg):
        pg.linalg.cholesky(not_pd, upper=True)
    with pytest.raises(pg.linalg.LinAlgError, match="^linalg.cholesky_ex: " + msg):
        pg.linalg.cholesky_ex(not_pd, check_errors=True)
    assert pg.linalg.cholesky_ex(not_pd).info.tolist() == [0, 3, 1]


def test_argument_check_messages(device: str) -> None:
    v, m23 = pg.ones(3, device=device), pg.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="^linalg.eigh: A must be batches of square matrices"):
        pg.linalg.eigvalsh(m23)
    with pytest.raises(RuntimeError, match="^linalg.matrix_exp: A must be batches of square "
                       "matrices, but they are 2 by 3 matrices"):
        pg.linalg.matrix_exp(m23)
    with pytest.raises(RuntimeError, match="^linalg.matrix_exp: The input tensor A must have at "
                       "least 2 dimensions."):
        pg.linalg.matrix_exp(v)
    with pytest.raises(RuntimeError, match="^linalg.matrix_power: The input tensor A must have "
                       "at least 2 dimensions."):
        pg.linalg.matrix_power(v, 2)
    with pytest.raises(RuntimeError, match="^linalg.cond: The input tensor must have at least 2 "
                       "dimensions."):
        pg.linalg.cond(v)
    with pytest.raises(RuntimeError, match="^Tensor dimension is 1, expected 2 instead."):
        pg.chain_matmul(v, pg.ones(3, 3, device=device))
    with pytest.raises(NotImplementedError, match="\"trace\" not implemented for 'Bool'"):
        pg.trace(pg.ones(2, 2, dtype=pg.bool, device=device))


def test_complex_triangular_solves(device: str) -> None:
    try:
        L = pg.tensor([[1, 0], [1j, 2]], dtype=pg.complex128, device=device)
    except pg.errors.DTypeError:
        pytest.skip("no complex dtypes on this backend")
    b = pg.tensor([[1.0 + 0j], [1j]], dtype=pg.complex128, device=device)
    x = pg.cholesky_solve(b, L)  # torch: [[(1+0j)], [0j]]
    close(pg.real(x), [[1.0], [0.0]])
    close(pg.imag(x), [[0.0], [0.0]])
    y = pg.linalg.solve_triangular(L, b, upper=False)  # torch: [[(1+0j)], [0j]]
    close(pg.real(y), [[1.0], [0.0]])
    close(pg.imag(y), [[0.0], [0.0]])
