"""``linalg.eig`` and ``linalg.eigvals`` of general matrices: complex results of the input's
precision, ``A V = V diag(L)`` with unit eigenvectors, values against numpy (and PyTorch where
it is installed), batches, strided and empty inputs, PyTorch's argument errors, and gradients of
phase-invariant losses (``gradcheck``, closed forms, PyTorch's numbers), with PyTorch's error for a
loss that depends on the eigenvectors' phases. A device that declines complex tensors raises its
``DTypeError``."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck
from portagrad.errors import DTypeError, LinAlgError

from complex_support import complex_ok, need_complex

RNG = np.random.default_rng(7)


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _sorted(w: np.ndarray) -> np.ndarray:
    # eigenvalues compared as sets: sorted by rounded real part, then imaginary part
    key = np.round(w.real, 6) * 1e6 + np.round(w.imag, 6)
    return np.take_along_axis(w, np.argsort(key, axis=-1), -1)


def _gauge_free(L: pg.Tensor, V: pg.Tensor) -> pg.Tensor:
    """A real loss that neither the eigenvectors' phases nor the order of the eigenvalues
    changes: ``|V|^2`` weighted per column by its eigenvalue's real part, plus the eigenvalues'
    squares."""
    return ((V.abs() ** 2) * L.real.unsqueeze(-2)).sum() + (L * L).real.sum() + L.imag.sum()


@pytest.mark.parametrize("dtype, cdtype", [(pg.float32, pg.complex64), (pg.float64, pg.complex128),
                                           (pg.complex64, pg.complex64),
                                           (pg.complex128, pg.complex128)])
def test_decomposition(dtype: Any, cdtype: Any, device: str) -> None:
    need_complex(device)
    a = RNG.standard_normal((2, 4, 4))
    if dtype.is_complex:
        a = a + 1j * RNG.standard_normal((2, 4, 4))
    A = pg.tensor(a, dtype=dtype, device=device)
    L, V = pg.linalg.eig(A)
    assert L.dtype is cdtype and V.dtype is cdtype
    assert L.shape == (2, 4) and V.shape == (2, 4, 4)
    tol = 1e-4 if cdtype is pg.complex64 else 1e-12
    an = a.astype(dtype.numpy).astype(np.complex128)
    l, v = _np(L).astype(np.complex128), _np(V).astype(np.complex128)
    np.testing.assert_allclose(an @ v, v * l[..., None, :], atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, atol=tol)
    np.testing.assert_allclose(_sorted(l), _sorted(np.linalg.eigvals(an)), atol=tol * 10)
    np.testing.assert_allclose(_np(pg.linalg.eigvals(A)), _np(L), atol=tol)


def test_closed_forms(device: str) -> None:
    """A rotation has eigenvalues +-i; a triangular matrix its diagonal."""
    need_complex(device)
    rot = pg.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=pg.float64, device=device)
    np.testing.assert_allclose(_sorted(_np(pg.linalg.eigvals(rot))), [-1j, 1j], atol=1e-14)
    tri = pg.tensor([[2.0, 1.0, 5.0], [0.0, 3.0, -1.0], [0.0, 0.0, -4.0]], dtype=pg.float64,
                    device=device)
    L, V = pg.linalg.eig(tri)
    np.testing.assert_allclose(_sorted(_np(L)), [-4, 2, 3], atol=1e-13)
    np.testing.assert_allclose(_np(L).imag, 0.0)


def test_strided_batched_and_empty(device: str) -> None:
    need_complex(device)
    a = RNG.standard_normal((3, 5, 5))
    At = pg.tensor(a, dtype=pg.float64, device=device).transpose(-1, -2)
    L = pg.linalg.eigvals(At)
    np.testing.assert_allclose(_sorted(_np(L)), _sorted(np.linalg.eigvals(np.swapaxes(a, -1, -2))),
                               atol=1e-12)
    for shape in ((0, 0), (2, 0, 0)):
        L, V = pg.linalg.eig(pg.zeros(shape, device=device))
        assert L.shape == shape[:-1] and V.shape == shape and L.dtype is pg.complex64
        assert pg.linalg.eigvals(pg.zeros(shape, device=device)).shape == shape[:-1]


def test_errors(device: str) -> None:
    for f in (pg.linalg.eig, pg.linalg.eigvals):
        name = f.__name__
        with pytest.raises(RuntimeError, match=rf"linalg.{name}: A must be batches of square "
                                               r"matrices, but they are 2 by 3 matrices"):
            f(pg.ones((2, 3), device=device))
        with pytest.raises(RuntimeError, match=rf"linalg.{name}: The input tensor A must have at "
                                               r"least 2 dimensions."):
            f(pg.ones(3, device=device))
        with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for Long"):
            f(pg.ones((2, 2), dtype=pg.int64, device=device))
    if complex_ok(device):
        with pytest.raises(LinAlgError, match="input tensor should not contain infs or NaNs"):
            pg.linalg.eig(pg.full((2, 2), float("nan"), device=device))


def test_declined_without_complex(device: str) -> None:
    if complex_ok(device):
        pytest.skip(f"{device} has complex tensors")
    for f in (pg.linalg.eig, pg.linalg.eigvals):
        with pytest.raises(DTypeError, match="complex"):
            f(pg.ones((3, 3), device=device))


@pytest.mark.parametrize("complex_input", [False, True])
def test_gradcheck(complex_input: bool, device: str) -> None:
    """Phase-invariant functions of ``eig``: the values, ``|V|``, ``V diag(L) V^-1`` (which is
    ``A``), and ``eigvals``."""
    need_complex(device)
    a = RNG.standard_normal((2, 3, 3))
    if complex_input:
        a = a + 1j * RNG.standard_normal((2, 3, 3))
    A = pg.tensor(a, device=device, requires_grad=True)

    def parts(x: pg.Tensor) -> tuple:
        L, V = pg.linalg.eig(x)
        return L, V.abs(), V @ pg.diag_embed(L) @ pg.linalg.inv(V)

    assert gradcheck(parts, (A,))
    assert gradcheck(pg.linalg.eigvals, (A,))
    assert gradcheck(lambda x: _gauge_free(*pg.linalg.eig(x)), (A,))


def test_gradient_closed_forms(device: str) -> None:
    """``sum(L) = trace(A)``: gradient the identity; ``prod(L) = det(A)``: gradient
    ``det(A) A^-T`` (real input, real parts)."""
    need_complex(device)
    a = RNG.standard_normal((4, 4))
    A = pg.tensor(a, device=device, requires_grad=True)
    pg.linalg.eigvals(A).sum().real.backward()
    np.testing.assert_allclose(_np(A.grad), np.eye(4), atol=1e-12)
    A.grad = None
    L = pg.linalg.eigvals(A)
    L.prod(-1).real.backward()
    np.testing.assert_allclose(_np(A.grad), np.linalg.det(a) * np.linalg.inv(a).T, atol=1e-10)


def test_phase_dependent_loss_raises(device: str) -> None:
    """``V.real.sum()`` changes with an eigenvector's phase: no gradient, PyTorch's error."""
    need_complex(device)
    A = pg.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=pg.float64, device=device,
                  requires_grad=True)  # eigenvalues 0.75 +- 2.44i
    L, V = pg.linalg.eig(A)
    with pytest.raises(RuntimeError, match=r"linalg_eig_backward: The eigenvectors in the "
                                           r"complex case are specified up to multiplication "
                                           r"by e\^\{i phi\}"):
        V.real.sum().backward()


@pytest.mark.parametrize("complex_input", [False, True])
def test_matches_torch(complex_input: bool, device: str) -> None:
    torch = pytest.importorskip("torch")
    need_complex(device)
    a = RNG.standard_normal((2, 4, 4))
    if complex_input:
        a = a + 1j * RNG.standard_normal((2, 4, 4))
    A = pg.tensor(a, device=device, requires_grad=True)
    At = torch.tensor(a, requires_grad=True)
    L, V = pg.linalg.eig(A)
    Lt, Vt = torch.linalg.eig(At)
    np.testing.assert_allclose(_sorted(_np(L)), _sorted(Lt.detach().numpy()), atol=1e-12)
    _gauge_free(L, V).backward()
    (((Vt.abs() ** 2) * Lt.real.unsqueeze(-2)).sum() + (Lt * Lt).real.sum()
     + Lt.imag.sum()).backward()
    np.testing.assert_allclose(_np(A.grad), At.grad.numpy(), atol=1e-9)
    for f in (torch.linalg.eig, torch.linalg.eigvals):
        with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for Long"):
            f(torch.ones((2, 2), dtype=torch.int64))
