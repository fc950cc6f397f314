"""``portagrad.linalg``: PyTorch's ``torch.linalg`` for what small training code uses.

Determinants, inverses, solves and Cholesky factors come from elimination written with tensor
ops (``portagrad/_ops/linalg.py``), so they run on every backend and are differentiable; norms are
the reductions. ``qr`` uses Householder reflections, ``lu``/``lu_factor`` the same elimination.
Decompositions that need an iterative eigen- or singular-value solver (``svd``, ``eigh``, the
nuclear and spectral norms) are not implemented.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._autocast import SKIP as _SKIP
from ._autocast import STATE as _AUTOCAST
from ._autocast import autocast_call as _autocast_call
from ._ops import elementwise
from ._ops import reduction
from ._ops.contraction import cross as _cross
from ._ops.linalg import matrix_exp, matrix_power
from ._ops.linalg import cholesky, det, inv, lu, lu_factor, lu_solve, qr, slogdet, solve
from ._ops.diagonal import diagonal as _diagonal
from ._ops.matmul import matmul
from ._tensor import Tensor
from .errors import LinAlgError

__all__ = ["det", "slogdet", "inv", "solve", "cholesky", "matrix_power", "cross", "vector_norm",
           "matrix_norm", "norm", "vecdot", "multi_dot", "diagonal", "qr", "lu", "lu_factor",
           "lu_solve", "matrix_exp", "LinAlgError"]


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (the last dimension by default)."""
    return _cross(input, other, dim)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """The ``ord``-norm of ``x`` as a vector (over ``dim``, or all elements)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "linalg_vector_norm", vector_norm, x, ord=ord, dim=dim, keepdim=keepdim,
            dtype=dtype)) is not _SKIP:
        return _ac_out
    return reduction.norm(x, ord, dim, keepdim, dtype)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Sequence[int] = (-2, -1),
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Frobenius (``"fro"``) or induced 1/inf norms (``1``, ``-1``, ``inf``, ``-inf``) of the
    matrices in ``dim``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "linalg_matrix_norm", matrix_norm, A, ord=ord, dim=dim, keepdim=keepdim,
            dtype=dtype)) is not _SKIP:
        return _ac_out
    x = A if dtype is None else A.to(dtype)
    d0, d1 = dim
    if ord == "fro":
        return reduction.norm(x, 2, (d0, d1), keepdim)
    if ord in (1, -1, float("inf"), float("-inf")):
        # 1: the largest absolute column sum (summed over rows, d0); inf: the largest row sum
        over, then = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = reduction.sum(elementwise.abs(x), over, keepdim=True)
        pick = reduction.amax if ord in (1, float("inf")) else reduction.amin
        out = pick(sums, then, keepdim=True)
        return out if keepdim else reduction.sum(out, (d0, d1))  # drop the two size-1 dimensions
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"linalg.matrix_norm(ord={ord!r}) needs singular values, which "
                                  f"portagrad does not compute; use ord='fro', 1 or inf")
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """A matrix norm when ``dim`` names two dimensions (or ``ord`` is given for a 2-D input),
    else a vector norm (2-norm of all elements by default)."""
    if isinstance(dim, int):
        dim = (dim,)
    if (dim is not None and len(dim) == 2) or (dim is None and ord is not None and A.dim() == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim or (-2, -1), keepdim,
                           dtype=dtype)
    if dim is None and ord is not None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.dim()}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Dot products of the vectors along ``dim`` (broadcasting the rest)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_vecdot", vecdot, x, y=y, dim=dim)) is not _SKIP:
        return _ac_out
    return reduction.sum(x * y, dim)


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of a chain of matrices (the first and last may be vectors)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_multi_dot", multi_dot, tensors)) is not _SKIP:
        return _ac_out
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The view of the diagonals of the matrices in ``dim1`` x ``dim2``."""
    return _diagonal(A, offset, dim1, dim2)
