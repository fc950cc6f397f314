"""``lobpcg``: the ``k`` largest (or smallest) eigenpairs of a symmetric positive-definite
(generalized) eigenproblem ``A x = e B x`` by the locally optimal block preconditioned conjugate
gradient method (Knyazev 2001), as ``torch.lobpcg``.

Each step Rayleigh-Ritz projects the problem onto the span of the current block ``X``, the
(preconditioned) residuals ``W`` and the previous search directions ``P``; the span is
orthonormalised by a Householder QR first (whose ``Q`` stays orthonormal when the block becomes
linearly dependent near convergence), which is what PyTorch's ``"ortho"`` method buys; ``"basic"``
runs the same iteration here. The iteration runs without recording; the result's derivative is
that of the converged eigenpairs, as PyTorch's (``A`` is symmetrised first when it requires a
gradient): ``X (diag(gE) + skew(X^T gX) / E) X^T`` within the found subspace, and, off it,
``-(A - e_i)^+ gX_i x_i^T`` per pair, the pseudo-inverse taken on the complement of ``X``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _creation, _dtype
from .._random import randn
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _no_grad
from . import elementwise, reduction, shape
from ._common import call
from .joining import cat, stack
from .linalg import cholesky, qr, solve
from .matmul import matmul
from .sorting import argsort
from .indexing import index_select
from .spectral import eigh

__all__ = ["lobpcg"]


def _mT(x: Tensor) -> Tensor:
    return shape.transpose(x, -1, -2)


def _rayleigh_ritz(A: Tensor, B: Tensor | None, S: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(e, C, Q)``: ``Q`` an orthonormal basis of ``S``'s span, ``(e, C)`` the eigenpairs of
    ``A`` projected onto it (``C^T Q^T B Q C = I``), ascending."""
    Q = qr(S).Q
    H = matmul(_mT(Q), matmul(A, Q))
    H = (H + _mT(H)) * 0.5
    if B is None:
        e, Z = eigh(H)
        return e, Z, Q
    G = matmul(_mT(Q), matmul(B, Q))
    L = cholesky((G + _mT(G)) * 0.5)
    Li = solve(L, _creation.eye(L.shape[-1], dtype=L.dtype, device=L.device))
    e, Z = eigh(matmul(Li, matmul(H, _mT(Li))))
    return e, matmul(_mT(Li), Z), Q


def _pick(e: Tensor, C: Tensor, n: int, largest: bool) -> tuple[Tensor, Tensor]:
    """The ``n`` largest (descending) or smallest (ascending) Ritz pairs."""
    order = argsort(e, descending=largest)
    idx = shape.narrow(order, 0, 0, n)
    return index_select(e, 0, idx), index_select(C, 1, idx)


def _run(A: Tensor, B: Tensor | None, X: Tensor, iK: Tensor | None, k: int, niter: int,
         tol: float, largest: bool, tracker: Callable | None) -> tuple[Tensor, Tensor]:
    """The iteration on one ``(m, m)`` problem from the ``(m, n)`` start ``X``."""
    n = X.shape[-1]
    normA = float(reduction.amax(elementwise.abs(A)).item()) * A.shape[-1]
    normB = 1.0 if B is None else float(reduction.amax(elementwise.abs(B)).item()) * A.shape[-1]
    e, C, Q = _rayleigh_ritz(A, B, X)
    E, Cn = _pick(e, C, n, largest)
    X = matmul(Q, Cn)
    P: Tensor | None = None
    for _ in range(niter):
        BX = X if B is None else matmul(B, X)
        R = matmul(A, X) - BX * shape.unsqueeze(E, -2)
        rnorm = reduction.norm(R, 2, -2)
        bound = (elementwise.abs(E) * normB + normA) * tol
        if tracker is not None:
            tracker(E, X, rnorm)
        if bool(reduction.amax(shape.narrow(rnorm - bound, 0, 0, k)).item() <= 0):
            break
        W = R if iK is None else matmul(iK, R)
        S = cat([X, W] if P is None else [X, W, P], -1)
        e, C, Q = _rayleigh_ritz(A, B, S)
        E, Cn = _pick(e, C, n, largest)
        X = matmul(Q, Cn)
        # the new search directions: the part of the update outside the old block
        P = matmul(shape.narrow(Q, -1, n, Q.shape[-1] - n), shape.narrow(Cn, 0, n, Q.shape[-1] - n))
    return shape.narrow(E, 0, 0, k), shape.narrow(X, -1, 0, k)


class _Lobpcg(Function):
    """The converged pairs ``(E, X)`` of the symmetric ``A`` (one matrix), with the eigenpairs'
    derivative (see the module's docstring)."""

    _backward_name = "LOBPCGAutogradFunctionBackward"

    @staticmethod
    def forward(ctx: Any, A: Tensor, E: Tensor, X: Tensor) -> Any:
        ctx.save_for_backward(A, E, X)
        ctx.set_materialize_grads(False)
        return E.clone(), X.clone()

    @staticmethod
    def backward(ctx: Any, gE: Any, gX: Any) -> Any:
        A, E, X = ctx.saved_tensors
        m, k = X.shape
        gA = _creation.zeros((m, m), dtype=A.dtype, device=A.device)
        if gE is not None:
            gA = gA + matmul(X * shape.unsqueeze(gE, -2), _mT(X))
        if gX is not None:
            eye_k = _creation.eye(k, dtype=A.dtype, device=A.device)
            XtgX = matmul(_mT(X), gX)
            D = shape.unsqueeze(E, -2) - shape.unsqueeze(E, -1) + eye_k  # E[j] - E[i]
            gA = gA + matmul(X, matmul(((XtgX - _mT(XtgX)) * 0.5) / D, _mT(X)))
            # off the subspace: y_i = (A - e_i)^+ P gX_i, P = I - X X^T; A - e_i + s X X^T is
            # invertible (s shifts the subspace's eigenvalues away from 0) and leaves the
            # complement alone
            XXt = matmul(X, _mT(X))
            Pg = gX - matmul(XXt, gX)
            with _no_grad():
                s = float(reduction.amax(elementwise.abs(E)).item()) * 2.0 + \
                    float(reduction.amax(elementwise.abs(A)).item()) * m + 1.0
            eye_m = _creation.eye(m, dtype=A.dtype, device=A.device)
            M = shape.unsqueeze(A + XXt * s, 0) - \
                shape.reshape(E, (k, 1, 1)) * shape.unsqueeze(eye_m, 0)  # (k, m, m)
            rhs = shape.unsqueeze(_mT(Pg), -1)  # (k, m, 1)
            Y = shape.squeeze(solve(M, rhs), -1)  # (k, m)
            Y = _mT(Y) - matmul(XXt, _mT(Y))  # (m, k), projected off the subspace
            gA = gA - matmul(Y, _mT(X))
        return gA, None, None


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None,
           n: int | None = None, iK: Tensor | None = None, niter: int | None = None,
           tol: float | None = None, largest: bool | None = None, method: str | None = None,
           tracker: Callable | None = None, ortho_iparams: dict | None = None,
           ortho_fparams: dict | None = None, ortho_bparams: dict | None = None) -> Any:
    """``(E, X)``: the ``k`` largest (``largest=False``: smallest) eigenvalues (``(*, k)``,
    descending, resp. ascending) and eigenvectors (``(*, m, k)``) of the symmetric ``A``
    (``B``: of ``A x = e B x``, ``B`` symmetric positive-definite), iterating from ``X`` (``(*,
    m, n)``) or a random block of ``n`` (default ``k``) columns; ``iK`` a preconditioner of
    the residuals; at most ``niter`` (default 1000) steps, until every residual norm is at most
    ``tol`` (default ``sqrt(eps)``) times ``||A|| + |e| ||B||``. ``method`` ``"basic"`` or
    ``"ortho"`` (the same orthonormalised iteration here: see the module's docstring); the
    ``ortho_*`` parameters are accepted and unused. ``tracker(E, X, residual_norms)`` is
    called each step. Requires ``m >= 3 n``. Differentiable in ``A`` (symmetrised first), not
    in ``B``."""
    if not isinstance(A, Tensor):
        raise TypeError(f"lobpcg(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2 or A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and tuple(A.shape) != tuple(B.shape):
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    if method not in (None, "basic", "ortho"):
        raise ValueError(f"lobpcg: method must be 'basic' or 'ortho', got {method!r}")
    dtype = A.dtype if A.dtype in (_dtype.float32, _dtype.float64) else _dtype.float32
    if A.dtype.is_complex:
        raise NotImplementedError("lobpcg: complex matrices are not supported")
    if tol is None:
        tol = {_dtype.float32: 1.2e-07, _dtype.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={n})")
    if X is not None and tuple(X.shape[-2:]) != (m, n):
        raise AssertionError(f"X shape mismatch: got {X.shape}, expected {(m, n)}")
    need_grad = A.requires_grad
    if need_grad and B is not None:
        raise ValueError("lobpcg.backward does not support backward with B != I yet.")
    a = A.to(dtype) if A.dtype is not dtype else A
    if need_grad:  # as PyTorch: the gradient is that of the symmetric part
        a = (a + _mT(a)) * 0.5
    batch = tuple(A.shape[:-2])
    flat = shape.reshape(a, (-1, m, m))
    fB = None if B is None else shape.reshape(B.to(dtype), (-1, m, m))
    fX = None if X is None else shape.reshape(X.to(dtype), (-1, m, n))
    Es, Xs = [], []
    for i in range(flat.shape[0]):
        Ai = shape.select(flat, 0, i)
        with _no_grad():
            X0 = randn(m, n, dtype=dtype, device=A.device) if fX is None else \
                shape.select(fX, 0, i)
            E, V = _run(Ai.detach(), None if fB is None else shape.select(fB, 0, i), X0,
                        iK, k, 1000 if niter is None else niter, float(tol),
                        True if largest is None else bool(largest), tracker)
        if need_grad:
            E, V = call(_Lobpcg, Ai, E, V)
        Es.append(E)
        Xs.append(V)
    E_out = shape.reshape(stack(Es, 0), batch + (k,))
    X_out = shape.reshape(stack(Xs, 0), batch + (m, k))
    return E_out, X_out

