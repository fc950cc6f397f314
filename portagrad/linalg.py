"""``portagrad.linalg``: PyTorch's ``torch.linalg``.

Determinants, inverses, solves and Cholesky factors come from elimination written with tensor
ops (``portagrad/_ops/linalg.py``), so they run on every backend and are differentiable; norms are
the reductions. ``qr`` uses Householder reflections, ``lu``/``lu_factor`` the same elimination.
The symmetric eigendecomposition (``eigh``, ``eigvalsh``) and the SVD (``svd``, ``svdvals``)
need an iterative solver: they are backend primitives (LAPACK on the host by default), with
their derivatives in the core (``portagrad/_ops/spectral.py``); ``pinv``, ``matrix_rank``,
``lstsq``, ``cond`` and the nuclear and spectral norms are composed from them
(``portagrad/_ops/linalg_ext.py``); the ``*_ex`` variants, ``solve_triangular``,
``householder_product``, ``vander``, ``tensorinv`` and ``tensorsolve`` build on the elimination
(``portagrad/_ops/linalg_ex.py``). ``eig`` and ``eigvals`` (general matrices, complex results)
are a backend primitive too (LAPACK's ``geev`` by default), on devices that store complex
tensors. ``ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve`` raise ``NotImplementedError``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from . import _dtype
from ._autocast import SKIP as _SKIP
from ._autocast import STATE as _AUTOCAST
from ._autocast import autocast_call as _autocast_call
from ._shape import wrap_dim
from ._ops import elementwise
from ._ops import reduction
from ._ops.complexnum import conj as _conj
from ._ops.contraction import cross as _cross
from ._ops.indexing import where as _where
from ._ops.linalg import matrix_exp, matrix_power
from ._ops.linalg_ex import (cholesky_ex, householder_product, inv_ex, lu_factor_ex, solve_ex,
                             solve_triangular, tensorinv, tensorsolve, vander)
from ._ops.linalg_ext import lstsq, matrix_rank, pinv, spectral_norm
from ._ops.spectral import eig, eigh, eigvals, eigvalsh, svd, svdvals
from ._ops.linalg import cholesky, det, inv, lu, lu_factor, lu_solve, qr, slogdet, solve
from ._ops.diagonal import diagonal as _diagonal
from ._ops.matmul import matmul
from ._tensor import Tensor
from .errors import LinAlgError

__all__ = ["det", "slogdet", "inv", "solve", "cholesky", "matrix_power", "cross", "vector_norm",
           "matrix_norm", "norm", "vecdot", "multi_dot", "diagonal", "qr", "lu", "lu_factor",
           "lu_solve", "matrix_exp", "LinAlgError", "eigh", "eigvalsh", "svd", "svdvals", "pinv",
           "matrix_rank", "lstsq", "cond", "solve_triangular", "inv_ex", "solve_ex",
           "cholesky_ex", "lu_factor_ex", "householder_product", "vander", "tensorinv",
           "tensorsolve", "matmul", "eig", "eigvals", "ldl_factor", "ldl_factor_ex",
           "ldl_solve"]


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
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    if dtype is not None and (x.dtype.is_floating_point or x.dtype.is_complex):
        name = _dtype.SCALAR_TYPE_NAMES[dtype.name]
        if not (dtype.is_floating_point or dtype.is_complex):
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, "
                               f"but got {name}")
        if dtype.is_complex != x.dtype.is_complex:
            raise RuntimeError(f"linalg.vector_norm: dtype should be "
                               f"{'complex' if x.dtype.is_complex else 'real'} for "
                               f"{'complex' if x.dtype.is_complex else 'real'} inputs, but got "
                               f"{name}")
        if _dtype.promote_types(x.dtype, dtype) != dtype:
            raise RuntimeError(f"linalg.vector_norm: the dtype of the input "
                               f"({_dtype.SCALAR_TYPE_NAMES[x.dtype.name]}) should be "
                               f"convertible without narrowing to the specified dtype ({name})")
    return reduction.norm(x, ord, dim, keepdim, dtype)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Sequence[int] = (-2, -1),
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Frobenius (``"fro"``), nuclear (``"nuc"``), spectral (``2``, ``-2``: the largest and
    smallest singular values) or induced 1/inf norms (``1``, ``-1``, ``inf``, ``-inf``) of the
    matrices in ``dim``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "linalg_matrix_norm", matrix_norm, A, ord=ord, dim=dim, keepdim=keepdim,
            dtype=dtype)) is not _SKIP:
        return _ac_out
    # PyTorch's order of checks: the order, the rank, then the dtype
    if ord not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_dtype.SCALAR_TYPE_NAMES[A.dtype.name]}")
    if ord in ("nuc", 2, -2) and A.dtype in _dtype.HALF_FLOATS:  # (they need an SVD)
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                           f"{_dtype.SCALAR_TYPE_NAMES[A.dtype.name]}")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(d) for d in dim)}")
    d0, d1 = (wrap_dim(d, A.dim()) for d in dim)  # out of range: IndexError, as PyTorch
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    x = A if dtype is None else A.to(dtype)
    if ord == "fro":
        return reduction.norm(x, 2, (d0, d1), keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        # 1: the largest absolute column sum (summed over rows, d0); inf: the largest row sum
        over, then = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = reduction.sum(elementwise.abs(x), over, keepdim=True)
        if ord > 0 and sums.shape[then] == 0:  # the largest of no sums: 0, as PyTorch
            out = reduction.sum(sums, then, keepdim=True)
        else:  # (the smallest of none raises amin's error, as PyTorch's)
            out = (reduction.amax if ord > 0 else reduction.amin)(sums, then, keepdim=True)
        return out if keepdim else reduction.sum(out, (d0, d1))  # drop the two size-1 dimensions
    if ord in ("nuc", 2, -2):
        return spectral_norm(x, ord, (d0, d1), keepdim)
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """A matrix norm when ``dim`` names two dimensions (or ``ord`` is given for a 2-D input),
    else a vector norm (2-norm of all elements by default)."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                           f"{list(dim)}")
    if isinstance(ord, str):  # a matrix norm, whatever dim and the rank (as PyTorch)
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if (dim is not None and len(dim) == 2) or (dim is None and ord is not None and A.dim() == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim or (-2, -1), keepdim,
                           dtype=dtype)
    if dim is None and ord is not None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.dim()}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Dot products of the vectors along ``dim`` (broadcasting the rest); ``x`` is conjugated
    (``sum(conj(x) * y)``, as PyTorch)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_vecdot", vecdot, x, y=y, dim=dim)) is not _SKIP:
        return _ac_out
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. "
                           f"Got {_dtype.SCALAR_TYPE_NAMES[x.dtype.name]}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {_dtype.SCALAR_TYPE_NAMES[x.dtype.name]} and y of type "
                           f"{_dtype.SCALAR_TYPE_NAMES[y.dtype.name]} instead")
    return reduction.sum(_conj(x) * y, dim)


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of a chain of matrices (the first and last may be vectors)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_multi_dot", multi_dot, tensors)) is not _SKIP:
        return _ac_out
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    n = len(tensors)
    for i, what in ((0, "the first"), (n - 1, "the last")):
        if tensors[i].dim() not in (1, 2):
            raise RuntimeError(f"multi_dot(): {what} tensor must be 1D or 2D but got "
                               f"{tensors[i].dim()}D")
    for i in range(1, n - 1):
        if tensors[i].dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i].dim()}D")
    c10 = {"float32": "float", "float64": "double"}  # (c10's names in this message)
    for i in range(1, n):
        if tensors[i].dtype is not tensors[0].dtype:
            n0, ni = (c10.get(t.dtype.name, _dtype.SCALAR_TYPE_NAMES[t.dtype.name])
                      for t in (tensors[0], tensors[i]))
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {n0} and tensor {i} {ni}")
    for i in range(n - 1):
        a, b = tensors[i], tensors[i + 1]
        if a.shape[-1] != b.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(a.shape)} "
                               f"and {list(b.shape)} cannot be multiplied")
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The view of the diagonals of the matrices in ``dim1`` x ``dim2``."""
    return _diagonal(A, offset, dim1, dim2)


def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number of ``A`` (each of a batch) in the norm ``p``: ``None``/``2``: the
    largest singular value over the smallest, ``-2`` the inverse ratio (any shape); ``"fro"``,
    ``"nuc"``, ``inf``, ``-inf``, ``1``, ``-1`` (square matrices): ``norm(A) * norm(A^-1)``,
    ``inf`` for a singular matrix."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("linalg_cond", cond, A, p=p)) is not _SKIP:
        return _ac_out
    inf = float("inf")
    if p not in (None, 2, -2, "fro", "nuc", 1, -1, inf, -inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if not isinstance(A, Tensor) or A.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p in (None, 2, -2):
        if A.numel() == 0 and A.dtype.is_floating_point:
            return reduction.sum(A, (-2, -1))  # zeros of the batch shape
        s = svdvals(A)
        big, small = s.select(-1, 0), s.select(-1, s.shape[-1] - 1)
        return small / big if p == -2 else big / small
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    if A.numel() == 0 and A.dtype.is_floating_point:
        return reduction.sum(A, (-2, -1))
    Ainv, info = inv_ex(A)
    out = matrix_norm(A, p) * matrix_norm(Ainv, p)
    return _where(info > 0, inf, out)


def _ldl(name: str) -> Any:
    raise NotImplementedError(f"linalg.{name} is not implemented by portagrad (its LAPACK "
                              f"Bunch-Kaufman pivoting is not reproduced); use linalg.solve, "
                              f"linalg.cholesky or linalg.eigh")


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> Any:
    """Not implemented (see the module's docstring)."""
    _ldl("ldl_factor")


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> Any:
    """Not implemented (see the module's docstring)."""
    _ldl("ldl_factor_ex")


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Any:
    """Not implemented (see the module's docstring)."""
    _ldl("ldl_solve")
