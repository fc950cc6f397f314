"""Linear algebra composed from the decompositions: ``pinv``, ``matrix_rank``, ``lstsq``, the
spectral and nuclear matrix norms (and ``torch.norm``'s ``p="nuc"``).

Each is written as PyTorch's ``LinearAlgebra.cpp`` composes it (the SVD or ``eigh`` for the
pseudo-inverse and the rank), from public ops, so that it runs on every backend and its
gradient is the composition's.
"""
from __future__ import annotations

import warnings
from collections import namedtuple
from typing import Any

from .. import _creation, _dtype
from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .._shape import wrap_dim
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from . import complexnum, elementwise, reduction, shape
from ._common import sparse_fallback
from .indexing import where
from .matmul import matmul
from .spectral import eigh, eigvalsh, svd, svdvals

__all__ = ["pinv", "pinverse", "matrix_rank", "lstsq", "spectral_norm", "norm", "nuclear_norm",
           "linalg_lstsq"]

linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank",
                                           "singular_values"])


def _mT(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (the transpose of a real ``x``)."""
    return complexnum.conj(shape.transpose(x, -1, -2))


def _eps(dtype: Any) -> float:
    return 1.1920928955078125e-07 if dtype.to_real() is _dtype.float32 else 2.220446049250313e-16


def _floating(name: str, A: Any) -> None:
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument 'A' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    if A.dim() < 2 or A.dtype.name not in ("float32", "float64", "complex64", "complex128"):
        raise RuntimeError(f"{name}({elementwise._type_name(A.dtype)}{{{list(A.shape)}}}): expected "
                           f"a tensor with 2 or more dimensions of float, double, cfloat or "
                           f"cdouble types")


def _tolerances(A: Tensor, atol: Any, rtol: Any) -> tuple[Any, Any]:
    """PyTorch's ``get_atol_rtol``: ``atol`` 0 by default; ``rtol`` ``eps * max(m, n)`` by
    default, but 0 when a positive ``atol`` is given. Tensors are per matrix of the batch
    (returned with a trailing axis, to compare with the singular values)."""
    default = _eps(A.dtype) * max(A.shape[-1], A.shape[-2])
    if rtol is None:
        if atol is None:
            rtol = default
        elif isinstance(atol, Tensor):
            rtol = where(atol > 0, 0.0, default)
        else:
            rtol = 0.0 if atol > 0 else default
    if atol is None:
        atol = 0.0
    if isinstance(atol, Tensor):
        atol = shape.unsqueeze(atol.to(A.dtype.to_real()), -1)
    if isinstance(rtol, Tensor):
        rtol = shape.unsqueeze(rtol.to(A.dtype.to_real()), -1)
    return atol, rtol


def _threshold(values: Tensor, atol: Any, rtol: Any) -> Tensor:
    """``max(atol, rtol * largest)`` per matrix, ``(..., 1)``; ``values >= 0``."""
    largest = reduction.amax(values, -1, keepdim=True)
    tol = largest * rtol
    return elementwise.maximum(tol, atol if isinstance(atol, Tensor) else
                               _creation.full((), float(atol), dtype=values.dtype,
                                              device=values.device))


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,
         rcond: Any = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse of ``A`` (each of a batch), from its SVD (``hermitian``:
    from ``eigh``, reading the lower triangle): singular values at most ``max(atol, rtol *
    largest)`` count as zero. ``rcond`` is PyTorch's older name of ``rtol``."""
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError("linalg.pinv: cannot specify both rtol and rcond")
        rtol = rcond
    _floating("linalg.pinv", A)
    if A.numel() == 0:  # (no entries: in the graph, as PyTorch)
        return _mT(A).clone()
    atol, rtol = _tolerances(A, atol, rtol)
    if hermitian:
        w, V = eigh(A)
        tol = _threshold(elementwise.abs(w), atol, rtol)
        keep = elementwise.abs(w) > tol
        # 1/w where kept; the reciprocal of a safe 1 elsewhere keeps the gradient finite
        inv_w = where(keep, 1.0 / where(keep, w, 1.0), 0.0)
        return matmul(V * shape.unsqueeze(inv_w, -2), _mT(V))
    U, S, Vh = svd(A, full_matrices=False)
    tol = _threshold(S, atol, rtol)
    keep = S > tol
    inv_s = where(keep, 1.0 / where(keep, S, 1.0), 0.0)
    return matmul(_mT(Vh) * shape.unsqueeze(inv_s, -2), _mT(U))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: :func:`pinv` with ``rtol=rcond``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("pinverse", pinverse, input,
                                                   rcond=rcond)) is not _SKIP:
        return _ac_out
    return pinv(input, rtol=rcond)


def matrix_rank(A: Tensor, tol: Any = None, hermitian: bool = False, *, atol: Any = None,
                rtol: Any = None) -> Tensor:
    """The number of singular values (``hermitian``: absolute eigenvalues) larger than
    ``max(atol, rtol * largest)``, int64 per matrix. ``tol`` is PyTorch's older form:
    ``atol=tol, rtol=0``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "linalg_matrix_rank", matrix_rank, A, tol=tol, hermitian=hermitian, atol=atol,
            rtol=rtol)) is not _SKIP:
        return _ac_out
    if tol is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError("linalg.matrix_rank: tol cannot be given with atol or rtol")
        atol, rtol = tol, 0.0
    if not isinstance(A, Tensor) or A.dim() < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor input must have at least 2 "
                           "dimensions.")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"linalg.matrix_rank: Expected a floating point or complex tensor as "
                           f"input. Got {elementwise._type_name(A.dtype)}")
    if A.numel() == 0:
        return _creation.zeros(A.shape[:-2], dtype=_dtype.int64, device=A.device)
    with _no_grad():
        S = elementwise.abs(eigvalsh(A)) if hermitian else svdvals(A)
        atol, rtol = _tolerances(A, atol, rtol)
        return reduction.sum(S > _threshold(S, atol, rtol), -1)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> Any:
    """The least-squares solution of ``A X = B`` (the minimum-norm one when ``A`` is wide or
    rank-deficient), as ``(solution, residuals, rank, singular_values)`` with PyTorch's CPU
    rules for what each driver fills (default ``"gelsy"``): ``residuals`` (the squared
    residual norms of the columns) for ``gels``/``gelsd``/``gelss`` when ``m > n`` and every
    matrix has full rank, ``rank`` for all but ``gels``, ``singular_values`` for ``gelsd`` and
    ``gelss``; the others are empty. The solution is ``pinv(A, rtol=rcond) @ B``: singular
    values at most ``rcond`` times the largest count as zero (default ``eps * max(m, n)``).
    ``gelsy`` decides the rank by a pivoted QR; here the SVD decides it for every driver, which
    agrees except for a singular value within rounding of the threshold."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_lstsq", lstsq, A, B, rcond=rcond,
                                                   driver=driver)) is not _SKIP:
        return _ac_out
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    if not isinstance(A, Tensor) or A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if not isinstance(B, Tensor) or B.dim() < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {elementwise._type_name(A.dtype)} and "
                           f"other's dtype {elementwise._type_name(B.dtype)}")
    _floating("torch.linalg.lstsq", A)
    vector = B.dim() == A.dim() - 1
    b = shape.unsqueeze(B, -1) if vector else B
    if b.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)"
                           + (" when other is a vector" if vector else ""))
    m, n = A.shape[-2], A.shape[-1]
    if rcond is None:
        rcond = _eps(A.dtype) * max(m, n)
    empty = _creation.zeros(0, dtype=A.dtype.to_real(), device=A.device)  # (real, as PyTorch)
    if A.numel() == 0:
        X = _creation.zeros(A.shape[:-2] + (n, b.shape[-1]), dtype=A.dtype, device=A.device)
        X = matmul(_mT(A), b) + X  # zeros of the broadcast shape, linked to the inputs
        sv = _creation.zeros(A.shape[:-2] + (min(m, n),), dtype=A.dtype.to_real(),
                             device=A.device)
        rank = _creation.zeros(A.shape[:-2], dtype=_dtype.int64, device=A.device)
        res = empty
        if driver != "gelsy" and m > n:  # no columns: the whole of B is the residual
            res = reduction.sum(complexnum.abs2(b), -2)
            if driver == "gels":  # (PyTorch's gels path reports zeros here)
                res = res * 0.0
            # (a vector B keeps its residual's trailing dimension of 1, as PyTorch)
        return linalg_lstsq(shape.squeeze(X, -1) if vector else X, res,
                            rank if driver != "gels" else empty.to(_dtype.int64),
                            sv if driver in ("gelsd", "gelss") else empty)
    U, S, Vh = svd(A, full_matrices=False)
    with _no_grad():
        # gels (QR, full rank assumed) takes no rcond: only exact zeros drop out
        keep = S > reduction.amax(S, -1, keepdim=True) * (0.0 if driver == "gels" else
                                                          float(rcond))
        rank = reduction.sum(keep, -1)
    inv_s = where(keep, 1.0 / where(keep, S, 1.0), 0.0)
    X = matmul(_mT(Vh) * shape.unsqueeze(inv_s, -2), matmul(_mT(U), b))
    residuals = empty
    if driver != "gelsy" and m > n:
        full = driver == "gels" or bool(elementwise.eq(rank, n).all().item())
        if full:
            r = matmul(A, X) - b
            residuals = reduction.sum(complexnum.abs2(r), -2)  # (vector B: (..., 1), as PyTorch)
    return linalg_lstsq(shape.squeeze(X, -1) if vector else X, residuals,
                        rank if driver != "gels" else empty.to(_dtype.int64),
                        S if driver in ("gelsd", "gelss") else empty)


def spectral_norm(A: Tensor, ord: Any, dim: tuple[int, int], keepdim: bool) -> Tensor:
    """``matrix_norm`` for ``ord`` ``"nuc"`` (sum of the singular values), ``2`` (the largest)
    and ``-2`` (the smallest) over the two dimensions ``dim``."""
    nd = A.dim()
    if nd < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    d0, d1 = (wrap_dim(d, nd) for d in dim)  # out of range: IndexError, as PyTorch
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    x = shape.movedim(A, (d0, d1), (-2, -1))
    s = svdvals(x)
    if s.shape[-1] == 0 and ord == -2:  # the smallest of none: PyTorch's amin error
        raise IndexError("amin(): Expected reduction dim -1 to have non-zero size.")
    if s.shape[-1] == 0:  # no singular values: a norm of 0 (as PyTorch)
        out = reduction.sum(s, -1)
    elif ord == "nuc":
        out = reduction.sum(s, -1)
    else:
        out = (reduction.amax if ord == 2 else reduction.amin)(s, -1)
    if keepdim:
        for d in sorted((d0, d1)):
            out = shape.unsqueeze(out, d)
    return out


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
         dtype: Any = None) -> Tensor:
    """``torch.norm``: :func:`~portagrad._ops.reduction.norm`'s vector norms, and for
    ``p="nuc"`` the nuclear norm of the matrices in the two dimensions ``dim`` (both of a 2-D
    input by default)."""
    # the public entry point is here, so autocast's policy for "norm" is applied here (the
    # reduction's own check sees a call from inside an op and stands aside)
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "norm", norm, input, p=p, dim=dim, keepdim=keepdim, dtype=dtype)) is not _SKIP:
        return _ac_out
    if p.__class__ is str and p == "nuc":
        x = input if dtype is None else input.to(dtype)
        dims = tuple(range(x.dim())) if dim is None else \
            ((dim,) if isinstance(dim, int) else tuple(dim))
        if len(dims) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                               f"{' '.join(str(d) for d in dims)}")
        return spectral_norm(x, "nuc", (dims[0], dims[1]), keepdim)
    try:
        return reduction.norm(input, p, dim, keepdim, dtype)
    except (AttributeError, NotImplementedError):  # a sparse input (its own norm), or re-raised
        return sparse_fallback("norm", norm, input, p, dim, keepdim, dtype)


def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Deprecated in PyTorch (as there, it warns): ``linalg.matrix_norm(input, "nuc", dim,
    keepdim)``, ``dim`` the last two dimensions of a 2-D input by default (the older form
    ``nuclear_norm(input, keepdim)`` is accepted too)."""
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It "
                  "will be removed in a future PyTorch release. Please use "
                  "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead", UserWarning,
                  stacklevel=2)
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    if dim is None and input.dim() != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(d) for d in range(input.dim()))}")
    return norm(input, "nuc", dim, keepdim)
