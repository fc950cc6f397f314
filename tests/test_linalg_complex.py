"""The linear-algebra family on complex matrices: every op against numpy (LAPACK), and against
PyTorch where it is installed, in complex64 and complex128; ``gradcheck`` in complex128 of every
differentiable one (of phase-invariant functions where the result is a basis: ``eigh``, ``svd``);
PyTorch's error for a loss that depends on the singular vectors' or eigenvectors' phases. A device
that declines complex tensors cannot hold the inputs: it raises its ``DTypeError`` instead."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck
from portagrad.errors import DTypeError

from complex_support import complex_ok, need_complex

RNG = np.random.default_rng(11)


def _c(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


A = _c(3, 3)
B = _c(3, 2)
R = _c(4, 3)
W = _c(2, 4)
BATCH = _c(2, 3, 3)
HPD = A @ A.conj().T + 3 * np.eye(3)  # Hermitian positive-definite
TRI = np.triu(A) + 3 * np.eye(3)


def _hpd(x: Any) -> Any:
    """A Hermitian positive-definite matrix from any square ``x`` (tensor of either library)."""
    return x @ x.mH + 3 * _eye(x)


def _herm(x: Any) -> Any:
    return x + x.mH


def _eye(x: Any) -> Any:
    if isinstance(x, pg.Tensor):
        return pg.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    return __import__("torch").eye(x.shape[-1], dtype=x.dtype)


def _svd_parts(r: Any) -> tuple:
    u, s, vh = r
    return s, u.abs(), vh.abs(), (u * s.unsqueeze(-2).to(u.dtype)) @ vh


def _eigh_parts(r: Any) -> tuple:
    w, v = r
    return w, v.abs(), (v * w.unsqueeze(-2).to(v.dtype)) @ v.mH


# name: (function of the library module ``L`` and its inputs, inputs, numpy reference or None,
#        differentiable)
CASES: dict[str, tuple[Callable, tuple, Callable | None, bool]] = {
    "det": (lambda L, a: L.linalg.det(a), (BATCH,), np.linalg.det, True),
    "slogdet": (lambda L, a: tuple(L.linalg.slogdet(a)), (BATCH,),
                lambda a: tuple(np.linalg.slogdet(a)), True),
    "logdet": (lambda L, a: L.logdet(a), (A,), lambda a: np.log(np.linalg.det(a)), True),
    "inv": (lambda L, a: L.linalg.inv(a), (BATCH,), np.linalg.inv, True),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), (A, B), np.linalg.solve, True),
    "solve_left_false": (lambda L, a, b: L.linalg.solve(a, b, left=False), (A, B.T.copy()),
                         lambda a, b: b @ np.linalg.inv(a), True),
    "cholesky": (lambda L, a: L.linalg.cholesky(_hpd(a)), (A,),
                 lambda a: np.linalg.cholesky(a @ a.conj().T + 3 * np.eye(3)), True),
    "cholesky_upper": (lambda L, a: L.linalg.cholesky(_hpd(a), upper=True), (A,),
                       lambda a: np.linalg.cholesky(a @ a.conj().T + 3 * np.eye(3)).conj().T,
                       True),
    "cholesky_solve": (lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(_hpd(a))), (B, A),
                       lambda b, a: np.linalg.solve(a @ a.conj().T + 3 * np.eye(3), b), True),
    "cholesky_inverse": (lambda L, a: L.cholesky_inverse(L.linalg.cholesky(_hpd(a))), (A,),
                         lambda a: np.linalg.inv(a @ a.conj().T + 3 * np.eye(3)), True),
    "solve_triangular": (lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True), (TRI, B),
                         lambda a, b: np.linalg.solve(np.triu(a), b), True),
    "qr": (lambda L, a: tuple(L.linalg.qr(a)), (R,), None, True),
    "qr_complete": (lambda L, a: tuple(L.linalg.qr(a, mode="complete")), (R,), None, False),
    "qr_wide": (lambda L, a: tuple(L.linalg.qr(a)), (W,), None, True),
    "lu_factor": (lambda L, a: tuple(L.linalg.lu_factor(a)), (A,), None, False),
    "lu": (lambda L, a: tuple(L.linalg.lu(a)), (A,), None, True),
    "lu_solve_adjoint": (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b,
                                                           adjoint=True), (A, B),
                         lambda a, b: np.linalg.solve(a.conj().T, b), True),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a), (BATCH,), None, True),
    "matrix_power_neg": (lambda L, a: L.linalg.matrix_power(a, -2), (A,),
                         lambda a: np.linalg.matrix_power(a, -2), True),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(_herm(a)), (BATCH,),
                 lambda a: np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2).conj()), True),
    "eigh": (lambda L, a: _eigh_parts(L.linalg.eigh(_herm(a))), (BATCH,), None, True),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), (R,),
                lambda a: np.linalg.svd(a, compute_uv=False), True),
    "svd": (lambda L, a: _svd_parts(L.linalg.svd(a, full_matrices=False)), (R,), None, True),
    "svd_wide": (lambda L, a: _svd_parts(L.linalg.svd(a, full_matrices=False)), (W,), None,
                 True),
    "pinv": (lambda L, a: L.linalg.pinv(a), (R,), np.linalg.pinv, True),
    "pinv_hermitian": (lambda L, a: L.linalg.pinv(_herm(a), hermitian=True), (A,),
                       lambda a: np.linalg.pinv(a + a.conj().T), True),
    "matrix_rank": (lambda L, a: L.linalg.matrix_rank(a), (R,), np.linalg.matrix_rank, False),
    "lstsq": (lambda L, a, b: L.linalg.lstsq(a, b).solution, (R, _c(4, 2)),
              lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0], True),
    "cond": (lambda L, a: L.linalg.cond(a), (A,), np.linalg.cond, True),
    "matrix_norm_nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc"), (R,),
                        lambda a: np.linalg.norm(a, "nuc"), True),
    "matrix_norm_2": (lambda L, a: L.linalg.matrix_norm(a, 2), (R,),
                      lambda a: np.linalg.norm(a, 2), True),
    "vecdot": (lambda L, x, y: L.linalg.vecdot(x, y), (A, A[::-1].copy()),
               lambda x, y: np.sum(x.conj() * y, -1), True),
    "vander": (lambda L, x: L.linalg.vander(x), (B[:, 0].copy(),),
               lambda x: np.vander(x, increasing=True), True),
    "geqrf": (lambda L, a: tuple(L.geqrf(a)), (R,), None, False),
    "householder_product": (lambda L, a, t: L.linalg.householder_product(a, t),
                            (R, B[:, 0].copy()), None, True),
    "ormqr": (lambda L, a, t, c: L.ormqr(a, t, c), (R, B[:, 0].copy(), _c(4, 2)), None, True),
    "ormqr_transpose": (lambda L, a, t, c: L.ormqr(a, t, c, transpose=True),
                        (R, B[:, 0].copy(), _c(4, 2)), None, True),
    "cholesky_ex_upper": (lambda L, a: L.linalg.cholesky_ex(_hpd(a), upper=True).L, (A,), None,
                          True),
    "svd_lowrank_exact": (lambda L, a: (lambda r: (r[0] * r[1].unsqueeze(-2).to(r[0].dtype))
                                        @ r[2].mH)(L.svd_lowrank(a, q=3)), (R,),
                          lambda a: a, False),
}


def _to_np(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return tuple(_to_np(y) for y in x)
    if hasattr(x, "resolve_conj"):  # (PyTorch's lazily conjugated results)
        x = x.resolve_conj()
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _flat(x: Any) -> list:
    return [y for v in x for y in _flat(v)] if isinstance(x, tuple) else [x]


def _tol(dtype: Any) -> float:
    return 1e-4 if dtype is pg.complex64 else 1e-10


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[2] is not None])
@pytest.mark.parametrize("dtype", [pg.complex64, pg.complex128], ids=["c64", "c128"])
def test_matches_numpy(name: str, dtype: Any, device: str) -> None:
    need_complex(device)
    fn, args, ref, _ = CASES[name]
    got = _to_np(fn(pg, *(pg.tensor(a, dtype=dtype, device=device) for a in args)))
    want = ref(*(a.astype(dtype.numpy).astype(np.complex128) for a in args))
    for g, w in zip(_flat(got), _flat(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10,
                                   err_msg=name)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name: str, device: str) -> None:
    """Values (and dtypes: real singular values and eigenvalues, complex bases) as PyTorch's;
    the decompositions with LAPACK's conventions (QR's real diagonal of ``R``, LU's pivots)
    equal PyTorch's entry for entry."""
    torch = pytest.importorskip("torch")
    need_complex(device)
    fn, args, _, _ = CASES[name]
    if name == "svd_lowrank_exact":
        pytest.skip("random projections differ between the libraries (compared with numpy)")
    got = _flat(_to_np(fn(pg, *(pg.tensor(a, device=device) for a in args))))
    res = fn(torch, *(torch.tensor(a) for a in args))
    want = _flat(_to_np(res))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[3]])
def test_gradcheck(name: str, device: str) -> None:
    need_complex(device)
    fn, args, _, _ = CASES[name]
    xs = tuple(pg.tensor(a, dtype=pg.complex128, device=device, requires_grad=True)
               for a in args)

    def f(*t: pg.Tensor) -> Any:
        out = fn(pg, *t)
        return tuple(o for o in _flat(out) if o.dtype.is_floating_point or o.dtype.is_complex)

    assert gradcheck(f, xs)


def test_grad_matches_torch(device: str) -> None:
    """The conjugate-transposing derivatives (Cholesky's, the SVD's diagonal phase term,
    ``eigh``'s) give PyTorch's gradients."""
    torch = pytest.importorskip("torch")
    need_complex(device)
    for name in ("cholesky", "svd", "svd_wide", "eigh", "qr", "slogdet", "pinv"):
        fn, args, _, _ = CASES[name]
        xs = [pg.tensor(a, device=device, requires_grad=True) for a in args]
        ts = [torch.tensor(a, requires_grad=True) for a in args]
        loss = sum((o.abs() ** 2).sum() if o.dtype.is_complex else o.sum()
                   for o in _flat(fn(pg, *xs)))
        tloss = sum((o.abs() ** 2).sum() if o.is_complex() else o.sum()
                    for o in _flat(fn(torch, *ts)))
        loss.backward()
        tloss.backward()
        for x, t in zip(xs, ts):
            np.testing.assert_allclose(_to_np(x.grad), t.grad.numpy(), atol=1e-8, err_msg=name)


def test_closed_forms(device: str) -> None:
    """``det`` of a diagonal matrix is the product of its entries; ``slogdet``'s sign is the
    determinant's phase; the Cholesky factor of a diagonal matrix is its square root; a unitary
    matrix has singular values 1."""
    need_complex(device)
    d = pg.tensor(np.diag([1j, 2.0, -1 + 1j]), device=device)
    np.testing.assert_allclose(pg.linalg.det(d).item(), 1j * 2 * (-1 + 1j))
    sign, logabs = pg.linalg.slogdet(d)
    np.testing.assert_allclose(sign.item(), (-2 - 2j) / abs(-2 - 2j))
    np.testing.assert_allclose(logabs.item(), np.log(abs(-2 - 2j)))
    assert logabs.dtype is pg.float64
    h = pg.tensor(np.diag([4.0, 9.0]).astype(np.complex128), device=device)
    np.testing.assert_allclose(_to_np(pg.linalg.cholesky(h)), np.diag([2.0, 3.0]))
    u = pg.tensor(np.array([[1, 1j], [1j, 1]]) / np.sqrt(2), device=device)
    np.testing.assert_allclose(_to_np(pg.linalg.svdvals(u)), [1.0, 1.0], atol=1e-15)
    q, r = pg.linalg.qr(pg.tensor(R, device=device))
    np.testing.assert_allclose(_to_np(q.mH @ q), np.eye(3), atol=1e-14)
    np.testing.assert_allclose(_to_np(r).diagonal().imag, 0.0)  # LAPACK's real diagonal


def test_phase_dependent_losses_raise(device: str) -> None:
    need_complex(device)
    x = pg.tensor(R, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"svd_backward: The singular vectors in the complex "
                                           r"case are specified up to multiplication by "
                                           r"e\^\{i phi\}"):
        pg.linalg.svd(x, full_matrices=False).U.real.sum().backward()
    h = pg.tensor(HPD, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"linalg_eig_backward: The eigenvectors in the "
                                           r"complex case are specified up to multiplication"):
        pg.linalg.eigh(h).eigenvectors.real.sum().backward()


def test_declined_without_complex(device: str) -> None:
    if complex_ok(device):
        pytest.skip(f"{device} has complex tensors")
    with pytest.raises(DTypeError, match="complex"):
        pg.linalg.inv(pg.tensor(A, device=device))
