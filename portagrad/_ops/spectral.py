"""Spectral decompositions: ``eigh``, ``eigvalsh``, ``svd``, ``svdvals`` (and ``torch.svd``),
``eig`` and ``eigvals``; real or complex matrices.

The decompositions themselves need an iterative solver, so they are backend primitives
(:meth:`~portagrad.backends.interface.Backend.eigh` and ``svd``, whose default runs LAPACK on the
host); their derivatives are here, as PyTorch's (``linalg_eig_backward`` for the symmetric case
and ``svd_backward`` in its ``FunctionsManual.cpp``), written with tensor ops so that they run on
every backend and can be differentiated again.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

from .. import _creation, _raw
from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _flags, _no_grad
from . import complexnum, elementwise, shape
from ._common import call
from .diagonal import diag_embed, diagonal
from .linalg import solve
from .matmul import matmul

__all__ = ["eigh", "eigvalsh", "svd", "svdvals", "svd_legacy", "eig", "eigvals",
           "linalg_eigh", "linalg_svd", "linalg_eig", "svd_legacy_result"]

linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])
linalg_eig = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
svd_legacy_result = namedtuple("svd_legacy_result", ["U", "S", "V"])


def _mT(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (the transpose of a real ``x``)."""
    return complexnum.conj(shape.transpose(x, -1, -2))


def _phase_check(name: str, imdiag: Tensor, what: str) -> None:
    """PyTorch's refusal of a loss that depends on the vectors' phases: ``imdiag`` (the loss's
    derivative along them) must be ~0 (``allclose(..., 0, 1e-2, 1e-2)``)."""
    with _no_grad():
        if imdiag.numel() and bool((elementwise.abs(imdiag) > 1e-2).any().item()):
            raise RuntimeError(f"{name}: The {what} in the complex case are specified up to "
                               f"multiplication by e^{{i phi}}. The specified loss function "
                               f"depends on this quantity, so it is ill-defined.")


def _check(name: str, kernel: str, A: Any, square: bool) -> None:
    """PyTorch's argument checks: a tensor of at least two dimensions (square ones for the
    symmetric routines) of float32 or float64; other dtypes raise as PyTorch's CPU kernels
    do (integers a ``RuntimeError`` for ``svd``, a ``NotImplementedError`` naming the kernel
    otherwise; 16-bit floats, which LAPACK has no routine for, a ``NotImplementedError``)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument 'A' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.dtype.name in ("float32", "float64", "complex64", "complex128"):
        return
    tname = elementwise._type_name(A.dtype)
    if not A.dtype.is_floating_point and not square:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{tname}")
    raise NotImplementedError(f'"{kernel}_{A.device.type}" not implemented for \'{tname}\'')


def _driver(name: str, driver: Any) -> None:
    if driver is not None:
        raise RuntimeError(f"torch.{name}: keyword argument `driver=` is only supported on CUDA "
                           f"inputs with cuSOLVER backend.")


# ------------------------------------------------------------------------------------ eigh
class _Eigh(Function):
    """``(L, V)`` with ``A = V diag(L) V^H``; the derivative of PyTorch's ``linalg_eig_backward``
    for symmetric (Hermitian) input: ``gA = V (diag(gL) + skew(V^H gV) / E) V^H`` with ``E[i, j]
    = L[j] - L[i]`` off the diagonal, where ``skew(X) = (X - X^H) / 2``. A complex eigenvector is
    determined up to a phase: a loss depending on it raises PyTorch's error. A repeated eigenvalue divides by
    zero when the eigenvectors' gradient is used (inf/NaN, as PyTorch: the vectors of a repeated
    eigenvalue are not unique)."""

    _backward_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx: Any, A: Tensor, uplo: str) -> Any:
        w, v = _raw.eigh(A, uplo, True)
        assert v is not None
        ctx.save_for_backward(w, v)
        ctx.set_materialize_grads(False)
        return w, v

    @staticmethod
    def backward(ctx: Any, gL: Any, gV: Any) -> Any:
        L, V = ctx.saved_tensors
        if gV is None:
            if gL is None:
                return None, None
            return matmul(V * shape.unsqueeze(gL, -2), _mT(V)), None
        VtgV = matmul(_mT(V), gV)
        if V.dtype.is_complex:
            _phase_check("linalg_eig_backward", complexnum.imag(diagonal(VtgV, 0, -2, -1)),
                         "eigenvectors")
        inner = (VtgV - _mT(VtgV)) * 0.5
        E = shape.unsqueeze(L, -2) - shape.unsqueeze(L, -1)  # E[i, j] = L[j] - L[i]
        n = L.shape[-1]
        eye = _creation.eye(n, dtype=L.dtype, device=L.device)
        inner = inner / (E + eye)  # the diagonal of inner is 0 (real), ~0 (complex): divided by 1
        if V.dtype.is_complex:
            inner = inner * (1.0 - eye)
        if gL is not None:
            inner = inner + diag_embed(gL)
        return matmul(V, matmul(inner, _mT(V))), None


def eigh(A: Tensor, UPLO: str = "L") -> Any:
    """``(eigenvalues, eigenvectors)`` of the symmetric matrix ``A`` (or each of a batch):
    eigenvalues ascending, eigenvectors the orthonormal columns, ``A = V diag(L) V^T``; only
    the ``UPLO`` triangle (``"L"`` or ``"U"``) is read. An eigenvector's sign is arbitrary."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_eigh", eigh, A, UPLO=UPLO)) \
            is not _SKIP:
        return _ac_out
    _check("linalg.eigh", "linalg_eigh", A, True)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    w, v = call(_Eigh, A, UPLO)
    return linalg_eigh(w, v)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending) of the symmetric matrix ``A`` (or each of a batch), reading
    the ``UPLO`` triangle; the eigenvectors are computed only when a gradient will be asked
    for (the gradient ``V diag(gL) V^T`` needs them), as PyTorch."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_eigvalsh", eigvalsh, A,
                                                   UPLO=UPLO)) is not _SKIP:
        return _ac_out
    _check("linalg.eigh", "linalg_eigh", A, True)  # (PyTorch names eigh in these errors)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    if A.requires_grad and _grad_enabled():
        return call(_Eigh, A, UPLO)[0]
    return _raw.eigh(A.detach(), UPLO, False)[0]


def _grad_enabled() -> bool:
    return bool(_flags.grad)


# ------------------------------------------------------------------------------------- svd
class _Svd(Function):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``; the derivative of PyTorch's ``svd_backward``.
    With ``full_matrices`` only the first ``k = min(m, n)`` columns of ``U`` (rows of ``Vh``) are
    differentiated, the rest being an arbitrary completion of the basis, as
    PyTorch does. Repeated (or, for ``m != n``, zero) singular values divide by zero when the
    singular vectors' gradient is used, as PyTorch."""

    _backward_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx: Any, A: Tensor, full_matrices: bool) -> Any:
        U, S, Vh = _svd_values(A, full_matrices, True)
        ctx.full = full_matrices
        ctx.save_for_backward(U, S, Vh)
        ctx.set_materialize_grads(False)
        return U, S, Vh

    @staticmethod
    def backward(ctx: Any, gU: Any, gS: Any, gVh: Any) -> Any:
        U, S, Vh = ctx.saved_tensors
        k = S.shape[-1]
        if ctx.full:  # differentiate the first k vectors only
            U, Vh = shape.narrow(U, -1, 0, k), shape.narrow(Vh, -2, 0, k)
            gU = None if gU is None else shape.narrow(gU, -1, 0, k)
            gVh = None if gVh is None else shape.narrow(gVh, -2, 0, k)
        return _svd_backward(gU, gS, gVh, U, S, Vh), None


def _svd_backward(gU: Any, gS: Any, gVh: Any, U: Tensor, S: Tensor, Vh: Tensor) -> Any:
    """PyTorch's ``svd_backward``, ``U`` (m, k), ``Vh`` (k, n). For complex matrices the
    transposes are conjugate transposes, a loss that depends on the vectors' phases raises
    PyTorch's error, and the diagonal gets PyTorch's extra ``i im(U^H gU)_ii / S_i``."""
    if gU is None and gS is None and gVh is None:
        return None
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:  # only the singular values: U diag(gS) Vh
        return matmul(U, shape.unsqueeze(gS, -1) * Vh)
    k = S.shape[-1]
    eye = _creation.eye(k, dtype=S.dtype, device=S.device)
    S2 = S * S
    E = shape.unsqueeze(S2, -2) - shape.unsqueeze(S2, -1) + eye  # S_j^2 - S_i^2, 1 on the diagonal
    row, col = shape.unsqueeze(S, -2), shape.unsqueeze(S, -1)
    UtgU = None if gU is None else matmul(_mT(U), gU)
    VtgV = None if gVh is None else matmul(Vh, _mT(gVh))
    if UtgU is not None:
        UtgU = UtgU - _mT(UtgU)
    if VtgV is not None:
        VtgV = VtgV - _mT(VtgV)
    imdiag_U = None
    if U.dtype.is_complex and (UtgU is not None or VtgV is not None):
        # the phases: (u_i, v_i) -> e^{i phi} (u_i, v_i) leaves A; a loss may not see them
        zero = _creation.zeros(S.shape, dtype=S.dtype, device=S.device)
        imdiag_U = zero if UtgU is None else complexnum.imag(diagonal(UtgU, 0, -2, -1))
        imdiag_V = zero if VtgV is None else complexnum.imag(diagonal(VtgV, 0, -2, -1))
        _phase_check("svd_backward", imdiag_U + imdiag_V, "singular vectors")
    if UtgU is not None and VtgV is not None:
        gA = (UtgU * row + col * VtgV) / E
    elif UtgU is not None:
        gA = (UtgU / E) * row
    else:
        assert VtgV is not None
        gA = col * (VtgV / E)
    if gS is not None:
        gA = gA + diag_embed(gS)
    if imdiag_U is not None and UtgU is not None:
        # the imaginary part of U^H dA V on the diagonal turns u_i's phase against v_i's:
        # i im(U^H gU)_ii / S_i (the skew part's diagonal holds 2i im(U^H gU)_ii)
        gA = gA + diag_embed(diagonal(UtgU, 0, -2, -1) / (S * 2.0))
    if m > n and gU is not None:
        # gA = [U gA + (I - U U^H) gU S^-1] Vh
        gA = matmul(U, gA)
        gUSinv = gU / row
        gA = gA + gUSinv - matmul(U, matmul(_mT(U), gUSinv))
        return matmul(gA, Vh)
    if m < n and gVh is not None:
        # gA = U [gA Vh + S^-1 gVh (I - V Vh)] (V = Vh^H)
        gA = matmul(gA, Vh)
        SinvgVh = gVh / col
        gA = gA + SinvgVh - matmul(matmul(SinvgVh, _mT(Vh)), Vh)
        return matmul(U, gA)
    return matmul(U, matmul(gA, Vh))


def _svd_values(A: Tensor, full_matrices: bool, vectors: bool) -> tuple[Any, Tensor, Any]:
    """The backend's SVD, with PyTorch's results for ``k = min(m, n) = 0``: no singular values
    and, for ``full_matrices``, identity bases."""
    *batch, m, n = A.shape
    if min(m, n) == 0:
        S = _creation.zeros(tuple(batch) + (0,), dtype=A.dtype.to_real(), device=A.device)
        if not vectors:
            return None, S, None

        def basis(rows: int, cols: int) -> Tensor:
            eye = _creation.eye(rows, cols, dtype=A.dtype, device=A.device)
            return eye.expand(tuple(batch) + (rows, cols)).contiguous()
        if full_matrices:
            return basis(m, m), S, basis(n, n)
        return basis(m, 0), S, basis(0, n)
    return _raw.svd(A, full_matrices, vectors)


def svd(A: Tensor, full_matrices: bool = True, *, driver: Any = None) -> Any:
    """``(U, S, Vh)`` with ``A = U diag(S) Vh`` (each of a batch), singular values descending;
    ``full_matrices``: ``U`` is ``(m, m)`` and ``Vh`` ``(n, n)``, else ``(m, k)`` and ``(k, n)``,
    ``k = min(m, n)``. Singular vectors' signs are arbitrary."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "linalg_svd", svd, A, full_matrices=full_matrices, driver=driver)) is not _SKIP:
        return _ac_out
    _check("linalg.svd", "linalg_svd", A, False)
    _driver("linalg.svd", driver)
    U, S, Vh = call(_Svd, A, bool(full_matrices))
    return linalg_svd(U, S, Vh)


def svdvals(A: Tensor, *, driver: Any = None) -> Tensor:
    """The singular values (descending) of ``A`` (each of a batch); the singular vectors are
    computed only when a gradient will be asked for (it is ``U diag(gS) Vh``)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_svdvals", svdvals, A,
                                                   driver=driver)) is not _SKIP:
        return _ac_out
    _check("linalg.svd", "linalg_svd", A, False)
    _driver("linalg.svd", driver)
    if A.requires_grad and _grad_enabled():
        return call(_Svd, A, False)[1]
    return _svd_values(A, False, False)[1]


def svd_legacy(input: Tensor, some: bool = True, compute_uv: bool = True) -> Any:
    """``torch.svd``: ``(U, S, V)`` (``V``, not ``Vh``); ``some``: the reduced decomposition;
    without ``compute_uv``, ``U`` and ``V`` are zero matrices of the full shapes, as PyTorch."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("svd", svd_legacy, input, some=some,
                                                   compute_uv=compute_uv)) is not _SKIP:
        return _ac_out
    _check("linalg.svd", "linalg_svd", input, False)
    if not compute_uv:
        *batch, m, n = input.shape
        S = svdvals(input)
        zeros = _creation.zeros
        return svd_legacy_result(zeros(tuple(batch) + (m, m), dtype=input.dtype,
                                       device=input.device), S,
                                 zeros(tuple(batch) + (n, n), dtype=input.dtype,
                                       device=input.device))
    U, S, Vh = svd(input, full_matrices=not some)
    return svd_legacy_result(U, S, _mT(Vh))


# --------------------------------------------------------------- general (complex) spectra
class _Eig(Function):
    """``(L, V)`` with ``A V = V diag(L)``, complex, eigenvectors of unit norm; the derivative of
    PyTorch's ``linalg_eig_backward``: ``gA = V^-H (diag(gL) + P(V^H gV) / conj(E)) V^H`` with
    ``E[i, j] = L[j] - L[i]`` off the diagonal (the diagonal of the quotient is dropped), where
    ``P(X) = X - V^H V diag(re diag(X))`` projects out the change of each eigenvector along
    itself (the norm is fixed at 1). An eigenvector is determined only up to a phase
    ``e^{i phi}``: a loss that depends on it has no gradient, and (as PyTorch) the backward
    raises when ``im diag(V^H gV)``, the loss's derivative along the phases, is not ~0. A real
    ``A`` gets the real part of ``gA``."""

    _backward_name = "LinalgEigBackward0"

    @staticmethod
    def forward(ctx: Any, A: Tensor) -> Any:
        L, V = _raw.eig(A, True)
        assert V is not None
        ctx.save_for_backward(L, V)
        ctx.real_input = not A.dtype.is_complex
        ctx.set_materialize_grads(False)
        return L, V

    @staticmethod
    def backward(ctx: Any, gL: Any, gV: Any) -> Any:
        L, V = ctx.saved_tensors
        if gL is None and gV is None:
            return None
        Vh = complexnum.adjoint(V)
        n = L.shape[-1]
        eye = _creation.eye(n, dtype=L.dtype.to_real(), device=L.device)
        if gV is None:
            inner = diag_embed(gL)
        else:
            VhgV = matmul(Vh, gV)
            d = diagonal(VhgV, 0, -2, -1)
            with _no_grad():
                phase = elementwise.abs(complexnum.imag(d))
                if phase.numel() and bool((phase > 1e-2).any().item()):
                    raise RuntimeError(
                        "linalg_eig_backward: The eigenvectors in the complex case are specified "
                        "up to multiplication by e^{i phi}. The specified loss function depends "
                        "on this quantity, so it is ill-defined.")
            VhgV = VhgV - matmul(Vh, V * shape.unsqueeze(complexnum.real(d), -2))
            Lc = complexnum.conj(L)
            E = shape.unsqueeze(Lc, -2) - shape.unsqueeze(Lc, -1) + eye  # 1 on the diagonal
            inner = (VhgV / E) * (1.0 - eye)
            if gL is not None:
                inner = inner + diag_embed(gL)
        gA = solve(Vh, matmul(inner, Vh))  # V^-H inner V^H
        return complexnum.real(gA) if ctx.real_input else gA


def _check_eig(name: str, A: Any) -> None:
    """PyTorch's checks for ``eig``/``eigvals``: square matrices of float32, float64, complex64
    or complex128 (integers: PyTorch's ``RuntimeError``; 16-bit floats, which LAPACK has no
    routine for, its ``NotImplementedError``)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.dtype.name in ("float32", "float64", "complex64", "complex128"):
        return
    tname = elementwise._type_name(A.dtype)
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"Unknown Complex ScalarType for {tname}")
    raise NotImplementedError(f'"linalg_eig_out_{A.device.type}" not implemented for '
                              f"'{tname}'")


def eig(A: Tensor) -> Any:
    """``(eigenvalues, eigenvectors)`` of the general square matrix ``A`` (or each of a batch),
    both complex (float32 gives complex64, float64 complex128): ``A V = V diag(L)``, each
    eigenvector of unit norm with LAPACK's phase (its largest component real), eigenvalues in
    LAPACK's order. Gradients are defined for losses that do not depend on the eigenvectors'
    phases (see :class:`_Eig`). A device that declines complex tensors raises its
    :class:`~portagrad.errors.DTypeError`."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_eig", eig, A)) is not _SKIP:
        return _ac_out
    _check_eig("linalg.eig", A)
    L, V = call(_Eig, A)
    return linalg_eig(L, V)


def eigvals(A: Tensor) -> Tensor:
    """The (complex) eigenvalues of the general square matrix ``A`` (or each of a batch), in
    :func:`eig`'s order; the eigenvectors are computed only when a gradient will be asked for
    (it is ``V^-H diag(gL) V^H``)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_eigvals", eigvals, A)) is not _SKIP:
        return _ac_out
    _check_eig("linalg.eigvals", A)
    if A.requires_grad and _grad_enabled():
        return call(_Eig, A)[0]
    return _raw.eig(A.detach(), False)[0]
