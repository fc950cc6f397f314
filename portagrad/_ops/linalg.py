"""Small dense linear algebra by elimination: ``det``, ``slogdet``, ``logdet``, ``inv``,
``solve``, ``cholesky``.

Gaussian elimination with partial pivoting, written with whole-tensor ops on batches of matrices
(one step per column: pick the pivot, swap rows with ``gather``, eliminate below or around it), so
it runs on every backend and its gradient comes from those ops. The cost is ``n`` steps of
``O(n^2)`` work each, meant for the small matrices training code inverts (covariances, Jacobians),
not for large solves. Complex matrices take the same paths (the pivot is the entry of largest
modulus; Cholesky and QR use conjugate transposes and LAPACK's real diagonals).
"""
from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype
from .._shape import broadcast_shapes
from .._tensor import Tensor
from ..errors import LinAlgError
from ..autograd.function import Function
from ..autograd.grad_mode import _no_grad, is_grad_enabled
from ._common import call
from . import complexnum, elementwise, reduction
from . import shape
from .diagonal import diagonal
from .indexing import gather, where
from .joining import cat, tril, triu
from .matmul import matmul
from .reduction import argmax, prod, sum as rsum

__all__ = ["det", "slogdet", "logdet", "inv", "inverse", "solve", "cholesky", "cholesky_solve",
           "cholesky_inverse", "triangular_solve", "qr", "qr_some", "lu_factor", "lu_unpack",
           "lu", "lu_solve", "lu_legacy", "lu_solve_legacy", "matrix_power", "matrix_exp"]

slogdet_result = namedtuple("slogdet_result", ["sign", "logabsdet"])


def _mH(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (the transpose for real ``x``)."""
    return complexnum.conj(shape.transpose(x, -1, -2))


def _square(name: str, a: Any) -> None:
    if not isinstance(a, Tensor):
        raise TypeError(f"{name}(): argument 'A' (position 1) must be Tensor, not "
                        f"{type(a).__name__}")
    if a.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{elementwise._type_name(a.dtype)}")


def lapack_pivot(col: Tensor) -> Tensor:
    """The pivot row (..., 1) among the magnitudes ``col`` (..., r) as LAPACK's ``i?amax``: the
    first largest, where a NaN is never larger (its running maximum compares with ``>``), so a
    NaN is the pivot only when it comes first (argmax alone would take any NaN)."""
    nan = elementwise.isnan(col)
    p = argmax(where(nan, -1.0, col), -1, keepdim=True)
    return where(shape.narrow(nan, -1, 0, 1), 0, p)


def _cabs1(x: Tensor) -> Tensor:
    """The pivot magnitude of LAPACK's ``i?amax``: ``|x|``, and ``|re| + |im|`` for complex."""
    if x.dtype.is_complex:
        return elementwise.abs(complexnum.real(x)) + elementwise.abs(complexnum.imag(x))
    return elementwise.abs(x)


def _pivot(m: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Rows ``k`` and the best pivot row (largest ``cabs1(m[..., i, k])``, ``i >= k``) swapped, and
    whether a swap happened (per matrix)."""
    n = m.shape[-2]
    with _no_grad():
        col = _cabs1(shape.narrow(shape.select(m, -1, k), -1, k, n - k))
        p = lapack_pivot(col) + k  # (..., 1)
        rows = _creation.arange(n, device=m.device)
        perm = where(elementwise.eq(rows, k), p, where(elementwise.eq(rows, p), k, rows))  # (..., n)
        swapped = shape.squeeze(elementwise.ne(p, k), -1)
    idx = shape.unsqueeze(perm, -1).expand(m.shape)
    return gather(m, -2, idx), swapped


def _lu_diag(a: Tensor) -> tuple[Tensor, Tensor]:
    """The diagonal of U in ``PA = LU`` and the sign of the permutation ``P``."""
    n = a.shape[-1]
    m = a
    sign = _creation.ones(a.shape[:-2], dtype=a.dtype, device=a.device)
    diags = []
    for k in range(n):
        m, swapped = _pivot(m, k)
        sign = where(swapped, -sign, sign)
        piv = shape.narrow(shape.narrow(m, -2, k, 1), -1, k, 1)  # (..., 1, 1)
        diags.append(shape.reshape(piv, piv.shape[:-2] + (1,)))
        if k + 1 < n:
            # a zero pivot means the whole column below is zero: nothing to eliminate
            safe = where(elementwise.eq(piv, 0), 1.0, piv)
            below = shape.narrow(m, -2, k + 1, n - k - 1)
            f = shape.narrow(below, -1, k, 1) / safe
            below = below - f * shape.narrow(m, -2, k, 1)
            m = cat([shape.narrow(m, -2, 0, k + 1), below], -2)
    return cat(diags, -1), sign


def det(A: Tensor) -> Tensor:
    """Determinant of a square matrix (or of each of a batch)."""
    _square("linalg.det", A)
    if A.shape[-1] == 0:  # 1, in the graph (a zero gradient, as PyTorch)
        return rsum(A, (-2, -1)) + 1
    d, sign = _lu_diag(A)
    out = prod(d, -1) * sign
    if A.shape[-1] == 1:  # (the entry itself: its gradient is 1, zero or not)
        return out
    # PyTorch's gradient is zero where the determinant is exactly zero (a singular matrix, or
    # one whose determinant underflows), not the adjugate the elimination's ops would give
    with _no_grad():
        zero = elementwise.eq(out, 0)
    return where(zero, out.detach(), out)


def slogdet(A: Tensor) -> Any:
    """``(sign, log|det|)`` of a square matrix (or of each of a batch); ``(0, -inf)`` when
    singular."""
    _square("linalg.slogdet", A)
    if A.shape[-1] == 0:  # (1, 0), log|det| real and in the graph (a zero gradient)
        one = _creation.ones(A.shape[:-2], dtype=A.dtype, device=A.device)
        zero = rsum(A, (-2, -1))
        return slogdet_result(one, complexnum.real(zero) if A.dtype.is_complex else zero)
    d, sign = _lu_diag(A)
    # complex: the sign is the determinant's phase, |det| / det's unit complex number
    s = prod((complexnum.sgn if A.dtype.is_complex else elementwise.sign)(d), -1) * sign
    return slogdet_result(s, rsum(elementwise.log(elementwise.abs(d)), -1))


def logdet(input: Tensor) -> Tensor:
    """``log(det(input))``: NaN for a negative determinant, ``-inf`` for zero; for a complex
    matrix the complex logarithm ``log(sign) + log|det|``."""
    _square("logdet", input)
    s, la = slogdet(input)
    if input.dtype.is_complex:
        return elementwise.log(s) + la
    return where(s < 0, float("nan"), la)


def _gauss_jordan(name: str, a: Tensor, b: Tensor) -> Tensor:
    """``a^-1 b`` by Gauss-Jordan elimination on ``[a | b]`` with partial pivoting; a singular
    matrix raises :class:`LinAlgError` with PyTorch's message."""
    x, zero = _gauss_jordan_pivots(a, b)
    with _no_grad():
        if zero is not None and zero.numel() and bool(zero.any().item()):
            _raise_singular(name, zero, a.dim() > 2, name.endswith(("solve", "solve_ex")))
    return x


def _raise_singular(name: str, zero: Tensor, batched: bool, solver: bool) -> None:
    """PyTorch's error for singular matrices, ``zero`` (batch..., n) marking the zero pivots: it
    names the first singular matrix (its flat batch index) and, for an inversion (not a
    ``solver``), that matrix's first zero pivot."""
    flat = zero.reshape(-1, zero.shape[-1])
    b_ = int(argmax(flat.any(-1).to(_dtype.int64), -1).item())
    where_ = f"(Batch element {b_}): " if batched else ""
    if solver:
        raise LinAlgError(f"{name}: {where_}The solver failed because the input matrix is "
                          f"singular.")
    first = int(argmax(flat[b_].to(_dtype.int64), -1).item()) + 1
    raise LinAlgError(f"{name}: {where_}The diagonal element {first} is zero, the inversion "
                      f"could not be completed because the input matrix is singular.")


def singular_info(zero: Tensor | None, batch: tuple[int, ...], device: Any) -> Tensor:
    """LAPACK's ``info`` (int32, per matrix) from the zero-pivot mask ``(..., n)``: 0, or the
    1-based index of the first zero pivot."""
    if zero is None or not zero.numel():
        return _creation.zeros(batch, dtype=_dtype.int32, device=device)
    with _no_grad():
        zero = shape.reshape(zero, tuple(batch) + (-1,))
        anyz = zero.any(-1)
        first = argmax(zero.to(_dtype.int64), -1) + 1
        return where(anyz, first, 0).to(_dtype.int32)


def _gauss_jordan_pivots(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor | None]:
    """``(a^-1 b, mask of the zero pivots (..., n))`` by Gauss-Jordan elimination on ``[a | b]``
    with partial pivoting, never raising (``None`` for a 0x0 matrix)."""
    n = a.shape[-1]
    m = cat([a, b], -1)
    pivots = []
    for k in range(n):
        m, _ = _pivot(m, k)
        row = shape.narrow(m, -2, k, 1)
        piv = shape.narrow(row, -1, k, 1)
        pivots.append(piv)
        safe = where(elementwise.eq(piv, 0), 1.0, piv)
        # the multipliers column / pivot applied to the pivot row as it is (LAPACK's order): a
        # row equal to the pivot row then clears to exact zeros, so an exactly singular matrix
        # shows a zero pivot (normalising the row first left rounding residue of 1e-16 there,
        # and the "inverse" came out as numbers near 1e16)
        f = shape.narrow(m, -1, k, 1) / safe  # (..., n, 1): the column to clear
        m = m - f * row
        row = row / safe
        m = cat([shape.narrow(m, -2, 0, k), row, shape.narrow(m, -2, k + 1, n - k - 1)], -2)
    with _no_grad():
        zero = elementwise.eq(cat(pivots, -1), 0) if pivots else None  # (a 0x0 matrix: none)
    return shape.narrow(m, -1, n, m.shape[-1] - n), zero


def inv(A: Tensor) -> Tensor:
    """Inverse of a square matrix (or of each of a batch); singular matrices raise."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("inverse", inv, A)) is not _SKIP:
        return _ac_out
    return inv_named(A, "linalg.inv")


def inv_named(A: Tensor, name: str) -> Tensor:
    """:func:`inv`, with the caller PyTorch names when ``A`` is singular (``linalg.inv_ex``)."""
    _square("linalg.inv", A)
    eye = _creation.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape)
    return _gauss_jordan(name, A, eye)


inverse = inv  # torch.inverse, Tensor.inverse


def _no_vector_xa(A: Tensor, B: Tensor) -> None:
    """``left=False`` takes no vector ``B`` (PyTorch's error)."""
    if B.dim() == 1 or (B.dim() == A.dim() - 1 and B.shape == A.shape[:-1]):
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"XA = B ({A.shape[-2]}x{A.shape[-1]} and {B.shape[-1]}x1)")


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """``X`` with ``A X = B`` (``B`` a vector or a matrix, batches broadcast); ``left=False``:
    ``X A = B``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_solve", solve, A, B=B, left=left)) is not _SKIP:
        return _ac_out
    return solve_named(A, B, left, "torch.linalg.solve")


def solve_named(A: Tensor, B: Tensor, left: bool, name: str) -> Tensor:
    """:func:`solve`, with the caller PyTorch names when ``A`` is singular
    (``torch.linalg.solve_ex``)."""
    _square("linalg.solve", A)
    if not left:
        _no_vector_xa(A, B)
        return shape.transpose(solve_named(shape.transpose(A, -1, -2),
                                           shape.transpose(B, -1, -2), True, name), -1, -2)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {elementwise._type_name(A.dtype)} and B of type "
                           f"{elementwise._type_name(B.dtype)} instead")
    vec = B.dim() == 1 or (B.dim() == A.dim() - 1 and B.shape == A.shape[:-1])
    b = shape.unsqueeze(B, -1) if vec else B
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({A.shape[-2]}x{A.shape[-1]} and {b.shape[-2]}x"
                           f"{b.shape[-1]})")
    batch = tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-2])))
    a = A.expand(batch + tuple(A.shape[-2:]))
    bb = b.expand(batch + tuple(b.shape[-2:]))
    x = _gauss_jordan(name, a, bb)
    return shape.squeeze(x, -1) if vec else x


class _Cholesky(Function):
    """The Cholesky factor as one node, with PyTorch's derivative: only one triangle of ``A`` is
    read (``upper``: the upper one, the factor then ``U = L^H`` of ``A^H``), but ``A`` stands for
    a Hermitian matrix, so its gradient is ``L^-H Phi L^-1`` with ``P = tril(L^H gL)`` and
    ``Phi = (P + tril(P, -1)^H) / 2`` (``gL = gU^H`` when ``upper``), not the one-triangle
    gradient of the elimination's ops."""

    _backward_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx: Any, A: Tensor, with_info: bool = False, upper: bool = False,
                name: str = "linalg.cholesky") -> Any:
        info: list[Tensor] | None = [] if with_info else None
        with _no_grad():
            L = _cholesky_lower(_mH(A) if upper else A, info, name)
        ctx.save_for_backward(L)
        ctx.upper = upper
        out = _mH(L) if upper else L
        if info is not None:  # cholesky_ex: (L, info), info an integer output
            ctx.mark_non_differentiable(info[0])
            return out, info[0]
        return out

    @staticmethod
    def backward(ctx: Any, gL: Tensor, *_info: Any) -> Any:
        (L,) = ctx.saved_tensors
        if ctx.upper:
            gL = _mH(gL)
        Lh = _mH(L)
        p = tril(matmul(Lh, gL))
        phi = (p + _mH(tril(p, -1))) * 0.5
        x = solve(Lh, phi)  # L^-H phi
        gA = _mH(solve(Lh, _mH(x)))  # (L^-H phi) L^-1
        return gA, None, None, None


def cholesky(A: Tensor, upper: bool = False) -> Tensor:
    """The Cholesky factor ``L`` (lower; ``upper=True``: ``L^H``) of a symmetric positive-definite
    matrix (or of each of a batch); raises when the matrix is not positive-definite. Only the
    lower (``upper``: upper) triangle of ``A`` is read; its gradient is symmetric, as PyTorch's."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("cholesky", cholesky, A, upper=upper)) is not _SKIP:
        return _ac_out
    _square("linalg.cholesky", A)
    if A.shape[-1] == 0:  # the factor of a 0x0 matrix is 0x0
        return A.clone()
    # upper: LAPACK's uplo='U' reads the upper triangle, i.e. the lower one of A^H
    return call(_Cholesky, A, False, upper)


def _cholesky_lower(A: Tensor, info: list[Tensor] | None = None,
                    name: str = "linalg.cholesky") -> Tensor:
    """The lower Cholesky factor by columns (ops, run without recording by :class:`_Cholesky`).
    A matrix that is not positive-definite raises, unless ``info`` is given: then LAPACK's
    ``info`` per matrix (int32: the order of the first leading minor that is not
    positive-definite, else 0) is appended to it, and the factor of such a matrix holds
    numbers that mean nothing past that column (LAPACK leaves it partial too)."""
    n = A.shape[-1]
    cols: list[Tensor] = []  # column j of L, (..., n, 1)
    failed = None if info is None else \
        _creation.zeros(A.shape[:-2] + (1, 1), dtype=_dtype.int32, device=A.device)
    for j in range(n):
        aj = shape.narrow(A, -1, j, 1)  # (..., n, 1)
        if cols:
            lj = cat(cols, -1)  # (..., n, j)
            rowj = complexnum.conj(shape.narrow(lj, -2, j, 1))  # (..., 1, j)
            aj = aj - rsum(lj * rowj, -1, keepdim=True)
        # the diagonal of a Hermitian matrix is real: its imaginary part is not read (LAPACK)
        d = complexnum.real(shape.narrow(aj, -2, j, 1))  # (..., 1, 1)
        with _no_grad():
            bad = elementwise.logical_not(d > 0)
            if failed is not None:
                failed = where(elementwise.logical_and(bad, elementwise.eq(failed, 0)),
                               j + 1, failed).to(_dtype.int32)
                d = where(bad, 1.0, d)  # carry on (the columns after it are not used)
            elif d.numel() and bool(bad.any().item()):
                _raise_not_pd(name, A, j)
        col = aj / elementwise.sqrt(d)
        rows = _creation.arange(n, device=A.device)
        if A.dtype.is_complex:  # the diagonal entry is the real sqrt(d) (no rounding residue)
            col = where(shape.unsqueeze(elementwise.eq(rows, j), -1), elementwise.sqrt(d), col)
        col = where(shape.unsqueeze(rows < j, -1), 0.0, col)  # above the diagonal: zero
        cols.append(col.to(A.dtype))
    if info is not None and failed is not None:
        info.append(shape.reshape(failed, A.shape[:-2]))
    return cat(cols, -1)


def _raise_not_pd(name: str, A: Tensor, j: int) -> None:
    """PyTorch's error for a matrix that is not positive-definite: the first matrix (in batch
    order) that fails, at the first order where it fails (some matrix fails at ``j + 1``)."""
    batch = A.shape[:-2]
    where_ = ""
    order = j + 1
    if len(batch):
        # the first failing matrix may fail only at a later order: factor each one alone
        flat = shape.reshape(A, (-1,) + tuple(A.shape[-2:]))
        for b in range(flat.shape[0]):
            info: list[Tensor] = []
            _cholesky_lower(flat[b], info)
            k = int(info[0].item())
            if k:
                where_, order = f"(Batch element {b}): ", k
                break
    raise LinAlgError(f"{name}: {where_}The factorization could not be completed because the "
                      f"input is not positive-definite (the leading minor of order {order} is "
                      f"not positive-definite).")


def substitute(t: Tensor, b: Tensor, upper: bool) -> Tensor:
    """``t^-1 b`` for the triangular ``t`` (batches broadcast), by substitution in LAPACK's
    ``trsm`` order (each unknown divided by its diagonal entry, then taken out of the rows
    still to solve): a zero on the diagonal gives IEEE ``inf``/``nan`` instead of an error, as
    PyTorch's triangular solves. One step per unknown, each on all the rows still to solve at
    once (n steps of a few ops, not one op per pair of rows)."""
    batch = tuple(broadcast_shapes(tuple(t.shape[:-2]), tuple(b.shape[:-2])))
    t = t.expand(batch + tuple(t.shape[-2:]))
    b = b.expand(batch + tuple(b.shape[-2:]))
    n = t.shape[-1]
    if n == 0:
        return b.clone()
    solved: list[Tensor] = []
    rest = b  # the rows still to solve: [0, m) when upper (solved from the bottom), else [j, n)
    for step in range(n):
        j = n - 1 - step if upper else step
        m = rest.shape[-2]
        col = shape.narrow(t, -1, j, 1)  # (..., n, 1): column j of t
        x = shape.narrow(rest, -2, m - 1 if upper else 0, 1) / shape.narrow(col, -2, j, 1)
        solved.append(x)
        if m > 1:  # the other rows lose x times their entry in column j
            others = (0 if upper else j + 1, m - 1)
            rest = (shape.narrow(rest, -2, 0 if upper else 1, m - 1)
                    - shape.narrow(col, -2, others[0], others[1]) * x)
    if upper:
        solved.reverse()
    return cat(solved, -2)


def _need_matrix(what: str, x: Tensor, prefix: str = "") -> None:
    if x.dim() < 2:
        raise RuntimeError(f"{prefix}Expected {what} to have at least 2 dimensions, but it has "
                           f"{x.dim()} dimensions instead" if prefix else
                           f"{what} should have at least 2 dimensions, but has {x.dim()} "
                           f"dimensions instead")


def _check_b_A(name: str, b: Tensor, A: Tensor) -> None:
    """PyTorch's checks of ``b`` and ``A`` for ``cholesky_solve`` and ``triangular_solve``."""
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is "
                           f"{A.shape[-2]} by {A.shape[-1]} but each b matrix is {b.shape[-2]} "
                           f"by {b.shape[-1]}")
    if A.dtype is not b.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{elementwise._type_name(b.dtype)} and A of type "
                           f"{elementwise._type_name(A.dtype)} instead.")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                  f"'{elementwise._type_name(A.dtype)}'")


def _cholesky_apply(L: Tensor, B: Tensor, upper: bool) -> Tensor:
    """``(L L^H)^-1 B`` (``upper``: ``(L^H L)^-1 B``), only the triangle of ``L`` read, by two
    substitutions; gradients as PyTorch's: in ``B`` the solve's, in ``L`` the derivative of
    ``A = L L^H`` taken at the whole of ``L`` (the triangle that is not read included),
    ``-(A^-1 dA X)`` with ``dA = dL L^H + L dL^H``."""
    tri = (triu(L) if upper else tril(L)).detach()

    def apply(Y: Tensor) -> Tensor:  # A^-1 Y, linear in Y, A's factor held constant
        if upper:  # A = U^H U: U^H y = Y, then U x = y
            return substitute(tri, substitute(_mH(tri), Y, False), True)
        return substitute(_mH(tri), substitute(tri, Y, False), True)

    X = apply(B)
    if not (is_grad_enabled() and L.requires_grad):
        return X
    Lc = L.detach()
    M = matmul(_mH(L), Lc) + matmul(_mH(Lc), L) if upper else \
        matmul(L, _mH(Lc)) + matmul(Lc, _mH(L))
    # (M - M.detach() is zero: this adds the gradient in L and leaves the value)
    return X - apply(matmul(M - M.detach(), X.detach()))


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """``X`` with ``A X = B`` given the Cholesky factor ``L`` of ``A`` (``upper``: ``L^H``); only
    that triangle of ``L`` is read, and a zero on its diagonal gives ``inf``/``nan`` (no
    error), as PyTorch."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "cholesky_solve", cholesky_solve, B, L=L, upper=upper)) is not _SKIP:
        return _ac_out
    _need_matrix("b", B)
    _need_matrix("u", L)
    _check_b_A("cholesky_solve", B, L)
    return _cholesky_apply(L, B, upper)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``A`` given its Cholesky factor ``L`` (``upper``: ``L^H``); only that
    triangle of ``L`` is read, and a zero on its diagonal raises, as PyTorch."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "cholesky_inverse", cholesky_inverse, L, upper=upper)) is not _SKIP:
        return _ac_out
    _square("cholesky_inverse", L)
    n = L.shape[-1]
    if n:  # a zero on the factor's diagonal: PyTorch's error for that element
        with _no_grad():
            zero = elementwise.eq(diagonal(L, 0, -2, -1), 0)
        if bool(zero.any().item()):
            _raise_singular("cholesky_inverse", zero, L.dim() > 2, False)
    eye = _creation.eye(n, dtype=L.dtype, device=L.device).expand(L.shape)
    return _cholesky_apply(L, eye, upper)


triangular_solve_result = namedtuple("triangular_solve_result", ["solution",
                                                                 "cloned_coefficient"])


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> Any:
    """``(X, A.clone())`` with ``op(T) X = b``, ``T`` the upper (or lower) triangle of ``A``
    (unit diagonal if ``unitriangular``; ``op`` transposes when ``transpose``); batches
    broadcast (the clone of ``A`` too), and a zero on the diagonal gives ``inf``/``nan``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "triangular_solve", triangular_solve, b, A=A, upper=upper, transpose=transpose,
            unitriangular=unitriangular)) is not _SKIP:
        return _ac_out
    _need_matrix("b", b, "torch.triangular_solve: ")
    _need_matrix("A", A, "torch.triangular_solve: ")
    _check_b_A("triangular_solve", b, A)
    t = triu(A) if upper else tril(A)
    if unitriangular:
        n = A.shape[-1]
        eye = _creation.eye(n, dtype=A.dtype, device=A.device)
        t = t * (1.0 - eye) + eye
    if transpose:
        t = shape.transpose(t, -1, -2)
        upper = not upper
    batch = tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-2])))
    return triangular_solve_result(substitute(t, b, upper),
                                   A.expand(batch + tuple(A.shape[-2:])).clone())


qr_result = namedtuple("qr_result", ["Q", "R"])


def qr(A: Tensor, mode: str = "reduced") -> Any:
    """``(Q, R)`` with ``A = Q R``, ``Q`` orthonormal columns, ``R`` upper triangular, by
    Householder reflections (LAPACK's sign convention: ``R[k, k] = -sign(A[k, k]) |column|``);
    ``mode``: ``"reduced"``, ``"complete"`` or ``"r"`` (``Q`` empty)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_qr", qr, A, mode=mode)) is not _SKIP:
        return _ac_out
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    if not isinstance(A, Tensor) or A.dim() < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    if A.dtype.is_complex:
        return _qr_complex(A, mode)
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.qr: Expected a floating point or complex tensor as input. "
                           f"Got {elementwise._type_name(A.dtype)}")
    m, n = A.shape[-2], A.shape[-1]
    k_max = min(m, n)
    r = A
    q = _creation.eye(m, dtype=A.dtype, device=A.device).expand(A.shape[:-2] + (m, m))
    rows = _creation.arange(m, device=A.device)
    for k in range(min(k_max, m - 1)):  # LAPACK: the last row, 1 element long, is not reflected
        col = shape.narrow(r, -1, k, 1)  # (..., m, 1)
        below = shape.unsqueeze(rows >= k, -1)  # rows k.. take part in the reflection
        x = where(below, col, 0.0)
        norm = elementwise.sqrt(rsum(x * x, -2, keepdim=True))  # (..., 1, 1)
        xk = shape.narrow(x, -2, k, 1)
        sign = where(xk < 0, -1.0, 1.0)
        alpha = -(sign * norm)
        ek = shape.unsqueeze(elementwise.eq(rows, k), -1).to(A.dtype)
        v = x - ek * alpha
        vv = rsum(v * v, -2, keepdim=True)
        # nothing below the diagonal: no reflection (H = I, as LAPACK's dlarfg)
        rest = rsum(where(shape.unsqueeze(rows > k, -1), col, 0.0) * col, -2,
                    keepdim=True)
        skip = elementwise.logical_or(elementwise.eq(rest, 0), elementwise.eq(vv, 0))
        scale = where(skip, 0.0, 2.0 / where(skip, 1.0, vv))
        r = r - v * scale * matmul(shape.transpose(v, -1, -2), r)
        q = q - matmul(q, v) * (shape.transpose(v, -1, -2) * scale)
    upper = triu(r)
    if mode == "r":
        return qr_result(_creation.empty(0, dtype=A.dtype, device=A.device),
                         shape.narrow(upper, -2, 0, k_max))
    if mode == "complete":
        return qr_result(q, upper)
    return qr_result(shape.narrow(q, -1, 0, k_max), shape.narrow(upper, -2, 0, k_max))


def _qr_complex(A: Tensor, mode: str) -> Any:
    """:func:`qr` of a complex matrix, with LAPACK's ``zgeqrf`` reflectors ``H = I - c w w^H``
    (not Hermitian): ``w = x - beta e_k`` with the real ``beta = -sign(re x_k) |x|``, so that
    ``H^H x = beta e_k`` and ``R`` has a real diagonal (as LAPACK's and PyTorch's), and
    ``c = 1 / (beta conj(beta - x_k))``; ``R = ... H_2^H H_1^H A``, ``Q = H_1 H_2 ...``."""
    m, n = A.shape[-2], A.shape[-1]
    k_max = min(m, n)
    r = A
    q = _creation.eye(m, dtype=A.dtype, device=A.device).expand(A.shape[:-2] + (m, m))
    rows = _creation.arange(m, device=A.device)
    cols = _creation.arange(n, device=A.device)
    # (unlike the real case the last row of a square or wide matrix is reflected too, to make
    # its diagonal entry real)
    for k in range(k_max):
        col = shape.narrow(r, -1, k, 1)  # (..., m, 1)
        x = where(shape.unsqueeze(rows >= k, -1), col, 0.0)
        sq = complexnum.real(x * complexnum.conj(x))
        norm = elementwise.sqrt(rsum(sq, -2, keepdim=True))  # (..., 1, 1)
        xk = shape.narrow(x, -2, k, 1)
        beta = -(where(complexnum.real(xk) < 0, -1.0, 1.0) * norm)
        ek = shape.unsqueeze(elementwise.eq(rows, k), -1).to(A.dtype)
        w = x - ek * beta
        # nothing below the diagonal and a real x_k: no reflection (H = I, as LAPACK's zlarfg)
        rest = rsum(where(shape.unsqueeze(rows > k, -1), sq, 0.0), -2, keepdim=True)
        skip = elementwise.logical_and(elementwise.eq(rest, 0),
                                       elementwise.eq(complexnum.imag(xk), 0))
        denom = beta * complexnum.conj(beta - xk)
        c = where(skip, 0.0, 1.0 / where(skip, 1.0, denom))
        wh = complexnum.conj(shape.transpose(w, -1, -2))
        r = r - w * complexnum.conj(c) * matmul(wh, r)
        # R[k, k] is beta exactly (LAPACK stores it; the update leaves rounding in its
        # imaginary part), or x_k where nothing was reflected
        at_kk = elementwise.logical_and(shape.unsqueeze(elementwise.eq(rows, k), -1),
                                        elementwise.eq(cols, k))
        r = where(at_kk, where(skip, xk, beta.to(A.dtype)), r)
        q = q - matmul(q, w) * (wh * c)
    upper = triu(r)
    if mode == "r":
        return qr_result(_creation.empty(0, dtype=A.dtype, device=A.device),
                         shape.narrow(upper, -2, 0, k_max))
    if mode == "complete":
        return qr_result(q, upper)
    return qr_result(shape.narrow(q, -1, 0, k_max), shape.narrow(upper, -2, 0, k_max))


def qr_some(input: Tensor, some: bool = True) -> Any:
    """``torch.qr``: the reduced (``some``) or complete QR decomposition."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("qr", qr_some, input, some=some)) is not _SKIP:
        return _ac_out
    return qr(input, "reduced" if some else "complete")


lu_factor_result = namedtuple("lu_factor_result", ["LU", "pivots"])
lu_unpack_result = namedtuple("lu_unpack_result", ["P", "L", "U"])


def lu_factor(A: Tensor, *, pivot: bool = True) -> Any:
    """``(LU, pivots)``: ``L`` (unit diagonal, below) and ``U`` packed in one matrix and LAPACK's
    1-based row interchanges (``int32``), by Gaussian elimination with partial pivoting. An exactly
    zero diagonal element of ``U`` raises :class:`LinAlgError`, as PyTorch's (``lu_factor_ex``
    and ``lu`` do not)."""
    LU, pivots = lu_eliminate(A, pivot)
    check_lu_info(lu_info(LU), "torch.linalg.lu_factor")
    return lu_factor_result(LU, pivots)


def lu_info(LU: Tensor) -> Tensor:
    """LAPACK's ``info`` of a packed ``LU`` (int32 per matrix): the 1-based index of the first
    exactly zero diagonal element of ``U``, else 0."""
    k = min(LU.shape[-2], LU.shape[-1])
    with _no_grad():
        d = shape.narrow(shape.narrow(LU, -2, 0, k), -1, 0, k)
        zero = elementwise.eq(diagonal(d, 0, -2, -1), 0) if k else None
        return singular_info(zero, LU.shape[:-2], LU.device)


def check_lu_info(info: Tensor, name: str) -> None:
    """Raise PyTorch's error for the first matrix (in batch order) whose ``info`` is nonzero."""
    if not info.numel():
        return
    flat = shape.reshape(info, (-1,))
    with _no_grad():
        bad = flat > 0
        if not bool(bad.any().item()):
            return
        b = int(argmax(bad.to(_dtype.int32), 0).item())
    i = int(flat[b].item())
    where_ = f"(Batch element {b}): " if info.dim() else ""
    raise LinAlgError(f"{name}: {where_}U[{i},{i}] is zero and using it on lu_solve would result "
                      f"in a division by zero. If you still want to perform the factorization, "
                      f"consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _multipliers(col: Tensor, pivot: Tensor) -> Tensor:
    """``col / pivot`` as LAPACK's ``getf2``/``getrf2`` scale the column below a pivot: times the
    pivot's reciprocal unless the pivot is below the smallest normal number (then divided), and
    left as it is by an exactly zero pivot. (``x * (1 / x)`` can be one unit below 1: equal rows
    then leave LAPACK's ``U`` a 1e-16 entry, not an exact zero.)"""
    p = where(elementwise.eq(pivot, 0), 1.0, pivot)
    tiny = _dtype.finfo(elementwise.abs(p).dtype).tiny
    return where(elementwise.abs(p) >= tiny, col * elementwise.reciprocal(p), col / p)


def lu_eliminate(A: Tensor, pivot: bool = True) -> lu_factor_result:
    """``lu_factor`` without its check of ``U``'s diagonal (the elimination ``lu``,
    ``lu_factor_ex`` and ``torch.lu`` share)."""
    if not isinstance(A, Tensor) or A.dim() < 2:
        raise RuntimeError("linalg.lu_factor: The input tensor A must have at least 2 "
                           "dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        if A.numel():  # PyTorch's kernel refuses the dtype; an empty input never reaches it
            raise NotImplementedError(f"linalg.lu_factor: \"lu\" not implemented for "
                                      f"'{elementwise._type_name(A.dtype)}' (a floating point or "
                                      f"complex tensor is expected)")
        return lu_factor_result(_creation.zeros(A.shape, dtype=A.dtype, device=A.device),
                                _creation.zeros(A.shape[:-2] + (min(m, n),), dtype=_dtype.int32,
                                                device=A.device))
    if not pivot:
        raise NotImplementedError("lu_factor(pivot=False) is not implemented")
    lu = A
    cols = _creation.arange(n, device=A.device)
    piv = []
    for k in range(min(m, n)):
        with _no_grad():
            col = _cabs1(shape.narrow(shape.select(lu, -1, k), -1, k, m - k))
            p = lapack_pivot(col) + k
        piv.append(p)
        lu, _ = _pivot(lu, k)
        if k + 1 < m:
            row = shape.narrow(lu, -2, k, 1)
            p_kk = shape.narrow(row, -1, k, 1)
            below = shape.narrow(lu, -2, k + 1, m - k - 1)
            f = _multipliers(shape.narrow(below, -1, k, 1), p_kk)
            updated = below - f * row
            # columns after k are eliminated, column k keeps the multipliers (L), the columns
            # before it hold earlier multipliers
            below = where(cols > k, updated, where(elementwise.eq(cols, k), f, below))
            lu = cat([shape.narrow(lu, -2, 0, k + 1), below], -2)
    pivots = (cat(piv, -1) + 1).to(_dtype.int32) if piv else \
        _creation.zeros(A.shape[:-2] + (0,), dtype=_dtype.int32, device=A.device)
    return lu_factor_result(lu, pivots)


def _permutation(pivots: Tensor, m: int) -> Tensor:
    """The row order ``perm`` (``(P^T A)[j] = A[perm[j]]``) of LAPACK interchanges."""
    rows = _creation.arange(m, device=pivots.device)
    perm = rows.expand(pivots.shape[:-1] + (m,))
    for i in range(pivots.shape[-1]):
        p = (shape.narrow(pivots, -1, i, 1) - 1).to(_dtype.int64)  # (..., 1)
        at_i = gather(perm, -1, _creation.full_like(p, i))
        at_p = gather(perm, -1, p)
        perm = where(elementwise.eq(rows, i), at_p, where(elementwise.eq(rows, p), at_i, perm))
    return perm


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True) -> Any:
    """``(P, L, U)`` with ``A = P L U`` from ``lu_factor``'s packed form."""
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    eye = _creation.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
    L = tril(shape.narrow(LU_data, -1, 0, k), -1) + eye
    U = triu(shape.narrow(LU_data, -2, 0, k))
    with _no_grad():
        perm = _permutation(LU_pivots, m)
        rows = shape.unsqueeze(_creation.arange(m, device=LU_data.device), -1)
        P = elementwise.eq(rows, shape.unsqueeze(perm, -2)).to(LU_data.dtype)
    return lu_unpack_result(P, L, U)


def lu(A: Tensor, *, pivot: bool = True) -> Any:
    """``(P, L, U)`` with ``A = P L U`` (``torch.linalg.lu``)."""
    return lu_unpack(*lu_eliminate(A, pivot))


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False) -> Tensor:
    """``X`` with ``A X = B`` from ``A``'s ``lu_factor`` (``torch.linalg.lu_solve``)."""
    P, L, U = lu_unpack(LU, pivots)
    a = matmul(P, matmul(L, U))
    if adjoint:
        a = _mH(a)
    return solve(a, B, left=left)


def lu_legacy(A: Tensor, pivot: bool = True, get_infos: bool = False) -> Any:
    """``torch.lu``: ``(LU, pivots)``, plus zero ``infos`` when ``get_infos``."""
    LU, pivots = lu_eliminate(A, pivot)
    if get_infos:
        return LU, pivots, _creation.zeros(A.shape[:-2], dtype=_dtype.int32, device=A.device)
    return LU, pivots


def lu_solve_legacy(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """``torch.lu_solve(b, LU_data, LU_pivots)``: ``X`` with ``A X = b``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "lu_solve", lu_solve_legacy, b, LU_data=LU_data, LU_pivots=LU_pivots)) is not _SKIP:
        return _ac_out
    return lu_solve(LU_data, LU_pivots, b)


def matrix_power(input: Tensor, n: int) -> Tensor:
    """``input`` (a square matrix or a batch of them) multiplied by itself ``n`` times
    (the identity for ``n == 0``)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "linalg_matrix_power", matrix_power, input, n=n)) is not _SKIP:
        return _ac_out
    if input.dim() < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they "
                           f"are {input.shape[-2] if input.dim() >= 2 else 1} by "
                           f"{input.shape[-1] if input.dim() else 1} matrices")
    if n < 0:  # the inverse's power (a singular matrix raises, as PyTorch)
        return matrix_power(inv(input), -n)
    if n == 0:  # the identity, in the graph with a zero gradient (as PyTorch)
        eye = _creation.eye(input.shape[-1], dtype=input.dtype, device=input.device)
        take = _creation.ones(tuple(input.shape), dtype=_dtype.bool, device=input.device)
        return where(take, eye.expand(input.shape), input)
    if n == 3:  # PyTorch's order for the cube ((A A) A): it places NaN from inf entries
        return matmul(matmul(input, input), input)
    result: Tensor | None = None
    base = input
    while n:  # binary exponentiation: log2(n) squarings
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    assert result is not None
    return result if result is not input else input.clone()


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential (of each matrix of a batch): scaling and squaring around a Taylor
    series, with matrix products only."""
    _square("linalg.matrix_exp", A)
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as input. "
                           f"Got {elementwise._type_name(A.dtype)}")
    n = A.shape[-1]
    if n == 1:  # exp of the one entry: exact, and right for +-inf too
        return elementwise.exp(A)
    norm = 0.0
    if A.numel():
        with _no_grad():
            # the largest finite norm of the batch: a matrix with inf or NaN comes out NaN anyway
            # (as PyTorch's), and must not decide the scaling of the others
            norms = reduction.amax(reduction.sum(elementwise.abs(A), -1), -1)
            norms = where(elementwise.isfinite(norms), norms, 0.0)
            norm = float(reduction.amax(norms).item())
    # scale so that the norm is at most 1/2: the 18-term series is then exact to rounding
    s = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0.5 else 0
    x = elementwise.div(A, float(2 ** s)) if s else A
    eye = _creation.eye(n, dtype=A.dtype, device=A.device).expand(A.shape)
    term, out = eye, eye
    for k in range(1, 19):
        term = matmul(term, x) / float(k)
        out = out + term
    for _ in range(s):
        out = matmul(out, out)
    return out
