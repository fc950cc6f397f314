"""``svd_lowrank`` and ``pca_lowrank``: PyTorch's randomized low-rank SVD (Halko, Martinsson and
Tropp 2009, Algorithm 5 with ``niter`` power iterations), written as ``torch/_lowrank.py`` does
it with ``randn``, ``linalg.qr`` and ``linalg.svd``, so it is differentiable on every device.

The random test matrix comes from portagrad's generator, so results equal PyTorch's only where the
approximation is exact (``q`` at least the rank of ``A``), up to the signs of the vectors.
"""
from __future__ import annotations

from .._random import randn
from .._tensor import Tensor
from . import complexnum, reduction, shape
from .linalg import qr
from .matmul import matmul
from .spectral import svd

__all__ = ["svd_lowrank", "pca_lowrank"]


def _mT(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (the transpose of a real ``x``)."""
    return complexnum.conj(shape.transpose(x, -1, -2))


def _minus(a: Tensor, M: Tensor | None, right: Tensor, left: bool = True) -> Tensor:
    """``A R - M R`` (``left``) or ``R A - R M``; ``M`` ``None`` counts as zero."""
    if left:
        out = matmul(a, right)
        return out if M is None else out - matmul(M, right)
    out = matmul(right, a)
    return out if M is None else out - matmul(right, M)


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """An orthonormal ``(..., m, q)`` basis approximately spanning the range of ``A - M``."""
    R = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = qr(_minus(A, M, R)).Q
    for _ in range(niter):
        Q = qr(_minus(_mT(A), None if M is None else _mT(M), Q)).Q
        Q = qr(_minus(A, M, Q)).Q
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)``: an approximate rank-``q`` SVD of ``A - M`` (``A ~ U diag(S) V^T``), each
    of a batch, by ``niter`` subspace (power) iterations on a random basis."""
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    if not isinstance(A, Tensor) or A.dim() < 2:
        raise RuntimeError("svd_lowrank: A must have at least 2 dimensions")
    m, n = A.shape[-2], A.shape[-1]  # (q is not checked, as PyTorch: QR caps the basis)
    if M is not None:
        M = M.expand(A.shape)
    if m < n or n > q:
        # the SVD of the transpose keeps B small (m < n) or V thin (n > q)
        Q = _approximate_basis(_mT(A), q, niter, None if M is None else _mT(M))
        B_t = _minus(A, M, Q)  # (m, q)
        U, S, Vh = svd(B_t, full_matrices=False)
        return U, S, matmul(Q, _mT(Vh))
    Q = _approximate_basis(A, q, niter, M)
    B = _minus(A, M, _mT(Q), left=False)  # (q, n)
    U, S, Vh = svd(B, full_matrices=False)
    return matmul(Q, U), S, _mT(Vh)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True,
                niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)`` of :func:`svd_lowrank` on ``A`` centred over its rows (``center``), with
    ``q = min(6, m, n)`` by default: ``V``'s columns are the principal directions."""
    if not isinstance(A, Tensor) or A.dim() < 2:
        raise RuntimeError("pca_lowrank: A must have at least 2 dimensions")
    m, n = A.shape[-2], A.shape[-1]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not center:
        return svd_lowrank(A, q, niter)
    return svd_lowrank(A - reduction.mean(A, -2, keepdim=True), q, niter)
