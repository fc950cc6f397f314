"""``lobpcg``: the extreme eigenpairs of symmetric positive-definite (generalized) problems against
numpy's full decompositions, with a start block, a preconditioner, batches and float32;
``gradcheck`` of the eigenpairs' derivative (phase-invariant functions of the vectors), and
PyTorch's values, gradients and errors where it is installed."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck

RNG = np.random.default_rng(17)


def _spd(m: int, shift: float = 0.0) -> np.ndarray:
    a = RNG.standard_normal((m, m))
    return a @ a.T + shift * np.eye(m)


A = _spd(12)
B = _spd(12, 12.0)


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _check_pairs(a: np.ndarray, E: pg.Tensor, X: pg.Tensor, b: np.ndarray | None = None,
                 tol: float = 1e-6) -> None:
    e, x = _np(E).astype(np.float64), _np(X).astype(np.float64)
    bx = x if b is None else b @ x
    scale = np.abs(a).max() * a.shape[-1]
    np.testing.assert_allclose(a @ x, bx * e[..., None, :], atol=tol * scale)


@pytest.mark.parametrize("largest", [True, False])
def test_extreme_eigenpairs(largest: bool, device: str) -> None:
    E, X = pg.lobpcg(pg.tensor(A, device=device), k=3, largest=largest)
    ref = np.linalg.eigvalsh(A)
    want = ref[::-1][:3] if largest else ref[:3]
    np.testing.assert_allclose(_np(E), want, rtol=1e-7)
    assert X.shape == (12, 3)
    _check_pairs(A, E, X)


def test_generalized_problem(device: str) -> None:
    E, X = pg.lobpcg(pg.tensor(A, device=device), k=2, B=pg.tensor(B, device=device))
    Li = np.linalg.inv(np.linalg.cholesky(B))
    np.testing.assert_allclose(_np(E), np.linalg.eigvalsh(Li @ A @ Li.T)[::-1][:2], rtol=1e-7)
    _check_pairs(A, E, X, B)
    x = _np(X)
    np.testing.assert_allclose(x.T @ B @ x, np.eye(2), atol=1e-8)  # B-orthonormal


def test_start_block_preconditioner_tracker_batch(device: str) -> None:
    calls: list[Any] = []
    X0 = pg.tensor(RNG.standard_normal((12, 4)), device=device)
    iK = pg.tensor(np.diag(1.0 / np.diag(A)), device=device)  # Jacobi preconditioner
    E, X = pg.lobpcg(pg.tensor(A, device=device), k=2, X=X0, iK=iK, method="basic",
                     tracker=lambda e, x, r: calls.append(e.shape))
    np.testing.assert_allclose(_np(E), np.linalg.eigvalsh(A)[::-1][:2], rtol=1e-7)
    assert calls and calls[0] == (4,)  # the whole block of n = 4 is iterated
    Eb, Xb = pg.lobpcg(pg.tensor(np.stack([A, B]), device=device), k=2)
    assert Eb.shape == (2, 2) and Xb.shape == (2, 12, 2)
    for i, a in enumerate((A, B)):
        np.testing.assert_allclose(_np(Eb[i]), np.linalg.eigvalsh(a)[::-1][:2], rtol=1e-7)


def test_float32(device: str) -> None:
    E, X = pg.lobpcg(pg.tensor(A, dtype=pg.float32, device=device), k=2)
    assert E.dtype is pg.float32 and X.dtype is pg.float32
    np.testing.assert_allclose(_np(E), np.linalg.eigvalsh(A)[::-1][:2], rtol=1e-4)


def test_gradcheck(device: str) -> None:
    """The eigenvalues and ``|X|`` (the vectors' signs are arbitrary) of the symmetric part."""
    x = pg.tensor(_spd(6), device=device, requires_grad=True)
    x0 = pg.tensor(RNG.standard_normal((6, 2)), device=device)

    def f(a: pg.Tensor) -> tuple:
        E, X = pg.lobpcg(a, X=x0, tol=1e-13, niter=500)
        return E, X.abs()

    assert gradcheck(f, (x,), atol=1e-5, rtol=1e-4)


def test_eigenvalue_gradient_closed_form(device: str) -> None:
    """``dE_i/dA = x_i x_i^T`` (symmetrised: it already is)."""
    x = pg.tensor(A, device=device, requires_grad=True)
    E, X = pg.lobpcg(x, k=1)
    E.sum().backward()
    v = _np(X)[:, 0]
    np.testing.assert_allclose(_np(x.grad), np.outer(v, v), atol=1e-7)


def test_errors(device: str) -> None:
    with pytest.raises(ValueError, match=r"LOBPCG algorithm is not applicable when the number of "
                                         r"A rows \(=12\) is smaller than 3 x the number of "
                                         r"requested eigenpairs \(=5\)"):
        pg.lobpcg(pg.tensor(A, device=device), k=5)
    with pytest.raises(ValueError, match="does not support backward with B != I"):
        pg.lobpcg(pg.tensor(A, device=device, requires_grad=True), k=1,
                  B=pg.tensor(B, device=device))
    with pytest.raises(AssertionError, match="A must be square"):
        pg.lobpcg(pg.ones((3, 4), device=device))


def test_matches_torch(device: str) -> None:
    torch = pytest.importorskip("torch")
    w = np.arange(12.0)[:, None]
    x = pg.tensor(A, device=device, requires_grad=True)
    E, X = pg.lobpcg(x, k=2)
    (E.sum() + (X ** 2 * pg.tensor(w, device=device)).sum()).backward()
    xt = torch.tensor(A, requires_grad=True)
    Et, Xt = torch.lobpcg(xt, k=2)
    (Et.sum() + (Xt ** 2 * torch.tensor(w)).sum()).backward()
    np.testing.assert_allclose(_np(E), Et.detach().numpy(), rtol=1e-8)
    np.testing.assert_allclose(_np(x.grad), xt.grad.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="is smaller than 3 x the number of requested"):
        torch.lobpcg(torch.tensor(A), k=5)
