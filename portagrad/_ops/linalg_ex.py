"""Linear algebra by elimination and tensor ops, beside :mod:`.linalg`: ``solve_triangular``, the
``*_ex`` variants (LAPACK's ``info`` instead of an exception), ``householder_product``,
``vander``, ``tensorinv`` and ``tensorsolve``, each as PyTorch defines it.
"""
from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from .. import _creation, _dtype
from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from . import complexnum, elementwise, reduction, shape
from ._common import call
from .diagonal import diagonal
from .indexing import where
from .joining import cat, tril, triu
from .linalg import (_Cholesky, _gauss_jordan_pivots, _no_vector_xa, _square, check_lu_info, inv,
                     inv_named, lu_eliminate, lu_info, singular_info, solve, solve_named,
                     substitute)
from .matmul import matmul
from .scan import cumprod

__all__ = ["solve_triangular", "inv_ex", "solve_ex", "cholesky_ex", "lu_factor_ex",
           "householder_product", "vander", "tensorinv", "tensorsolve", "linalg_inv_ex",
           "linalg_solve_ex", "linalg_cholesky_ex", "linalg_lu_factor_ex", "geqrf", "ormqr",
           "geqrf_result"]

linalg_inv_ex = namedtuple("linalg_inv_ex", ["inverse", "info"])
linalg_solve_ex = namedtuple("linalg_solve_ex", ["result", "info"])
linalg_cholesky_ex = namedtuple("linalg_cholesky_ex", ["L", "info"])
linalg_lu_factor_ex = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])


def _mH(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (the transpose of a real ``x``)."""
    return complexnum.conj(shape.transpose(x, -1, -2))


def _mT(x: Tensor) -> Tensor:
    return shape.transpose(x, -1, -2)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """``X`` with ``A X = B`` (``left=False``: ``X A = B``) for the triangular ``A``: only its
    upper (``upper``) or lower triangle is read, its diagonal taken as ones when
    ``unitriangular``. Batches broadcast."""
    for name, t in (("A", A), ("B", B)):
        if not isinstance(t, Tensor) or t.dim() < 2:
            raise RuntimeError(f"linalg.solve_triangular: The input tensor {name} must have at "
                               f"least 2 dimensions.")
    _square("linalg.solve_triangular", A)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, "
                           f"but found A of type {elementwise._type_name(A.dtype)} and B of type "
                           f"{elementwise._type_name(B.dtype)} instead")
    if not left:
        if B.shape[-1] != A.shape[-2]:
            raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                               f"equation XA = B ({A.shape[-2]}x{A.shape[-1]} and "
                               f"{B.shape[-2]}x{B.shape[-1]})")
        return _mT(solve_triangular(_mT(A), _mT(B), upper=not upper,
                                    unitriangular=unitriangular))
    if B.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation AX = B ({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x"
                           f"{B.shape[-1]})")
    t = triu(A) if upper else tril(A)
    if unitriangular:
        eye = _creation.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        t = t * (1.0 - eye) + eye
    # substitution, not elimination: a zero on the diagonal gives inf/nan, as PyTorch (no error)
    return substitute(t, B, upper)


def inv_ex(A: Tensor, *, check_errors: bool = False) -> Any:
    """``(inverse, info)``: ``info`` (int32 per matrix) is 0, or the 1-based index of the first
    zero pivot of a singular matrix (whose "inverse" then means nothing); ``check_errors``
    raises for it instead, as :func:`inv`."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_inv_ex", inv_ex, A,
                                                   check_errors=check_errors)) is not _SKIP:
        return _ac_out
    if check_errors:
        return linalg_inv_ex(inv_named(A, "linalg.inv_ex"), _creation.zeros(A.shape[:-2], dtype=_dtype.int32,
                                                     device=A.device))
    _square("linalg.inv_ex", A)
    eye = _creation.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape)
    x, zero = _gauss_jordan_pivots(A, eye)
    return linalg_inv_ex(x, singular_info(zero, A.shape[:-2], A.device))


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> Any:
    """``(result, info)`` of :func:`solve` with ``info`` as :func:`inv_ex` instead of an
    exception (``check_errors``: raise)."""
    if check_errors:
        X = solve_named(A, B, left, "torch.linalg.solve_ex")
        return linalg_solve_ex(X, _creation.zeros(A.shape[:-2], dtype=_dtype.int32,
                                                  device=A.device))
    _square("linalg.solve_ex", A)
    if not left:
        _no_vector_xa(A, B)
    Ainv, info = inv_ex(A)
    if not left:
        return linalg_solve_ex(matmul(B, Ainv), info)
    vec = B.dim() == 1 or (B.dim() == A.dim() - 1 and B.shape == A.shape[:-1])
    if vec:
        return linalg_solve_ex(shape.squeeze(matmul(Ainv, shape.unsqueeze(B, -1)), -1), info)
    return linalg_solve_ex(matmul(Ainv, B), info)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> Any:
    """``(L, info)``: the Cholesky factor and LAPACK's ``info`` per matrix (int32: 0, or the
    order of the first leading minor that is not positive-definite); ``check_errors`` raises
    as :func:`cholesky` instead."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "linalg_cholesky_ex", cholesky_ex, A, upper=upper,
            check_errors=check_errors)) is not _SKIP:
        return _ac_out
    _square("linalg.cholesky_ex", A)
    if A.shape[-1] == 0:
        return linalg_cholesky_ex(A.clone(), _creation.zeros(A.shape[:-2], dtype=_dtype.int32,
                                                             device=A.device))
    # upper: the upper triangle is read (LAPACK's uplo='U')
    if check_errors:
        L = call(_Cholesky, A, False, upper, "linalg.cholesky_ex")
        info = _creation.zeros(A.shape[:-2], dtype=_dtype.int32, device=A.device)
    else:
        L, info = call(_Cholesky, A, True, upper)
    return linalg_cholesky_ex(L, info)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> Any:
    """``(LU, pivots, info)``: :func:`lu_factor` and LAPACK's ``info`` (int32 per matrix: the
    1-based index of the first exactly zero diagonal element of ``U``, else 0); with
    ``check_errors`` a nonzero ``info`` raises."""
    LU, pivots = lu_eliminate(A, pivot)
    info = lu_info(LU)
    if check_errors:
        check_lu_info(info, "torch.linalg.lu_factor_ex")
    return linalg_lu_factor_ex(LU, pivots, info)


def _diag(x: Tensor) -> Tensor:
    return diagonal(x, 0, -2, -1)


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of ``H_1 ... H_k`` for the ``(m, n)`` ``A`` (``m >= n >= k``),
    ``H_i = I - tau_i v_i v_i^H`` with ``v_i`` the ``i``-th column of ``A`` below the
    diagonal, 1 on it and 0 above (LAPACK's ``orgqr``; ``torch.orgqr``)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_householder_product",
                                                   householder_product, A, tau)) is not _SKIP:
        return _ac_out
    name = "torch.linalg.householder_product"
    if not isinstance(A, Tensor) or A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if not isinstance(tau, Tensor) or tau.dim() < 1:
        raise RuntimeError(f"{name}: tau must have at least 1 dimension.")
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if n < k:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if A.dim() - tau.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{A.dim()}")
    if A.dtype is not tau.dtype:
        raise RuntimeError(f"{name}: tau dtype {elementwise._type_name(tau.dtype)} does not "
                           f"match input dtype {elementwise._type_name(A.dtype)}")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{elementwise._type_name(A.dtype)}")
    rows = shape.unsqueeze(_creation.arange(m, device=A.device), -1)  # (m, 1)
    eye = _creation.eye(m, n, dtype=A.dtype, device=A.device)
    Q = eye.expand(A.shape[:-2] + (m, n))
    # Q = H_1 (H_2 (... (H_k I))): apply the reflections last first, to the n columns
    for i in reversed(range(k)):
        col = shape.narrow(A, -1, i, 1)  # (..., m, 1)
        v = where(rows > i, col, where(elementwise.eq(rows, i), 1.0, 0.0))
        t = shape.unsqueeze(shape.narrow(tau, -1, i, 1), -1)  # (..., 1, 1)
        Q = Q - matmul(v * t, matmul(_mH(v), Q))
    return Q


geqrf_result = namedtuple("geqrf_result", ["a", "tau"])


def geqrf(input: Tensor) -> Any:
    """LAPACK's compact QR (``geqrf``): ``(a, tau)`` with ``R`` on and above ``a``'s diagonal and
    the Householder vectors below it (their leading 1 implied), ``Q = H_1 ... H_k``,
    ``H_i = I - tau_i v_i v_i^T``, ``k = min(m, n)`` (what :func:`householder_product` and
    :func:`ormqr` take). The reflections are LAPACK's ``dlarfg`` (``R[i, i] = -sign(a_ii) |x|``;
    none when nothing lies below the diagonal). Not differentiable, as in PyTorch."""
    if not isinstance(input, Tensor) or input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"torch.geqrf: Expected a floating point or complex tensor as input. "
                           f"Got {elementwise._type_name(input.dtype)}")
    m, n = input.shape[-2], input.shape[-1]
    k = min(m, n)
    with _no_grad():
        r = input.detach()
        rows = shape.unsqueeze(_creation.arange(m, device=input.device), -1)  # (m, 1)
        vs: list[Tensor] = []
        taus: list[Tensor] = []
        cplx = input.dtype.is_complex
        for i in range(k):
            col = shape.narrow(r, -1, i, 1)  # (..., m, 1)
            below = where(rows > i, col, 0.0)
            xnorm2 = reduction.sum(complexnum.abs2(below), -2, keepdim=True)  # (..., 1, 1)
            alpha = shape.narrow(col, -2, i, 1)  # (..., 1, 1)
            norm = elementwise.sqrt(complexnum.abs2(alpha) + xnorm2)
            # (complex: zlarfg's real beta, -sign(re alpha) |x|; no reflection only when
            # nothing lies below and alpha is real)
            beta = where(complexnum.real(alpha) < 0, norm, -norm)
            skip = elementwise.eq(xnorm2, 0)  # H = I: tau 0, v = e_i
            if cplx:
                skip = elementwise.logical_and(skip, elementwise.eq(complexnum.imag(alpha), 0))
            denom = where(skip, 1.0, alpha - beta)
            v = where(elementwise.eq(rows, i), 1.0, below / denom)
            tau = where(skip, 0.0, (beta - alpha) / where(skip, 1.0, beta))
            # R = H_k^H ... H_1^H A (H^H = H for real reflectors)
            r = r - v * complexnum.conj(tau) * matmul(_mH(v), r)
            if cplx:  # R[i, i] is beta exactly (no rounding residue in its imaginary part)
                at_ii = elementwise.logical_and(elementwise.eq(rows, i), elementwise.eq(
                    _creation.arange(n, device=input.device), i))
                r = where(at_ii, where(skip, alpha, beta.to(input.dtype)), r)
            vs.append(v)
            taus.append(shape.reshape(tau, tuple(tau.shape[:-2]) + (1,)))
        # R on and above the diagonal, the vectors below it (column by column)
        a = triu(r) if k else r.clone()
        for i, v in enumerate(vs):
            sel = elementwise.logical_and(rows > i, elementwise.eq(
                _creation.arange(n, device=input.device), i))
            a = where(sel, v, a)
        tau_all = cat(taus, -1) if taus else _creation.empty(
            tuple(input.shape[:-2]) + (0,), dtype=input.dtype, device=input.device)
    return geqrf_result(a, tau_all)


def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """``other`` multiplied by the ``Q`` of a :func:`geqrf` factorisation (``input``, ``tau``):
    ``op(Q) @ other`` when ``left``, else ``other @ op(Q)``, ``op`` transposing when
    ``transpose`` (the conjugate transpose for complex ``Q``, LAPACK's ``unmqr``); ``Q`` is the
    full square product of the reflectors (LAPACK's ``ormqr``).
    Differentiable in all three tensors (through :func:`householder_product`)."""
    name = "torch.ormqr"
    if not isinstance(input, Tensor) or input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if not isinstance(other, Tensor) or other.dim() < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    if tau.dim() != input.dim() - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{input.dim()}")
    if other.dim() != input.dim():
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {other.dim()} and input.ndim is "
                           f"equal to {input.dim()}")
    mn = input.shape[-2]
    side = -2 if left else -1
    if other.shape[side] != mn:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           f"input.shape[-1])")
    for what, t in (("tau", tau), ("other", other)):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"{name}: Expected input and {what} to have the same dtype, but "
                               f"input has dtype{elementwise._type_name(input.dtype)} and {what} "
                               f"has dtype {elementwise._type_name(t.dtype)}")
    t = tau.shape[-1]
    # the full (mn, mn) Q: the t reflector columns, padded with zero columns (no reflection)
    refl = shape.narrow(input, -1, 0, t)
    pad = _creation.zeros(tuple(refl.shape[:-1]) + (mn - t,), dtype=input.dtype,
                          device=input.device)
    q = householder_product(cat([refl, pad], -1) if mn > t else refl, tau)
    if transpose:
        q = _mH(q)
    return matmul(q, other) if left else matmul(other, q)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """``linalg.vander``: the powers ``x^0, x^1, ..., x^(N-1)`` of the last dimension of ``x``
    as the columns of ``(..., n, N)`` matrices (``N`` defaults to ``n``), as a cumulative
    product (so the gradient is finite at 0)."""
    n = x.shape[-1] if isinstance(x, Tensor) and x.dim() >= 1 and N is None else N
    if not isinstance(x, Tensor) or x.dim() < 1 or n is None or n <= 1:
        raise RuntimeError("N must be greater than 1.")
    if x.dtype is _dtype.bool:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, "
                           "but got Bool")
    # (integers: cumprod's int64, as torch)
    base = x if x.dtype.is_floating_point or x.dtype.is_complex else x.to(_dtype.int64)
    col = shape.unsqueeze(base, -1)
    ones = _creation.ones(tuple(col.shape), dtype=base.dtype, device=x.device)
    return cumprod(cat([ones, col.expand(tuple(col.shape[:-1]) + (n - 1,))], -1), -1)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` seen as a linear map from its last ``A.dim() - ind`` dimensions to
    its first ``ind`` ones: shaped ``A.shape[ind:] + A.shape[:ind]``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_tensorinv", tensorinv, A,
                                                   ind=ind)) is not _SKIP:
        return _ac_out
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    outer, inner = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    po, pi = math.prod(outer), math.prod(inner)
    if po != pi:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {pi} != {po}")
    return shape.reshape(inv(shape.reshape(A, (po, pi))), inner + outer)


def tensorsolve(A: Tensor, B: Tensor, dims: Any = None) -> Tensor:
    """``X`` with ``tensordot(A, X, X.dim()) == B``: ``X`` has the shape of ``A``'s trailing
    dimensions after ``B.dim()``; ``dims`` moves those dimensions of ``A`` to the end first."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_tensorsolve", tensorsolve, A, B,
                                                   dims=dims)) is not _SKIP:
        return _ac_out
    if dims is not None:
        dims = [dims] if isinstance(dims, int) else list(dims)
        nd = A.dim()
        A = shape.movedim(A, [d % nd for d in dims], list(range(nd - len(dims), nd)))
    rest = tuple(A.shape[B.dim():])
    pr, pb = math.prod(rest), B.numel()
    if pr != pb:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                           f"== prod(self.shape[:other.ndim]), but got {pr} != {pb}")
    x = solve(shape.reshape(A, (pb, pr)), shape.reshape(B, (pb,)))
    return shape.reshape(x, rest)
