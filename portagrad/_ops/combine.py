"""Compositions of existing differentiable ops that training code calls by name: ``einsum``,
``tensordot``, ``cdist``, ``cross``, ``meshgrid``, ``cartesian_prod``, ``atleast_1d/2d/3d``,
``dstack``, ``column_stack``, ``cov``, ``corrcoef``, ``addmv``, ``addr``, ``dist``, ``renorm``,
``take``, ``nanmean``, ``masked_scatter``, ``unfold``, ``rot90``, ``fliplr``/``flipud`` ...

Each is written with ops that already have derivatives, so gradients come from those.
"""
from __future__ import annotations

import math
import string
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _creation, _dtype
from .._shape import broadcast_shapes, wrap_dim
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from . import elementwise
from . import reduction
from .shape import (
    StridedView, as_strided, narrow, permute, reshape, select, strided_view, transpose,
    unsqueeze,
)
from .conversion import contiguous, copy_
from .diagonal import diagonal
from .indexing import flip, index_select, nonzero, setitem, where
from .joining import cat, split, stack
from .matmul import matmul, mm, mv, outer

__all__ = [
    "einsum", "tensordot", "cdist", "cross", "meshgrid", "cartesian_prod", "atleast_1d",
    "atleast_2d", "atleast_3d", "dstack", "column_stack", "row_stack", "cov", "corrcoef",
    "addmv", "addr", "dist", "renorm", "take", "nanmean", "masked_scatter", "unfold", "rot90",
    "fliplr", "flipud", "split_with_sizes", "ravel", "argwhere", "hsplit", "vsplit", "dsplit",
    "matrix_power", "put", "index_put", "apply_", "map_", "resize_", "diagonal_scatter",
    "select_scatter", "slice_scatter", "as_strided_scatter", "addbmm", "matrix_exp",
]


# ------------------------------------------------------------------------------- einsum
def _einsum_parse(equation: str, operands: Sequence[Tensor]) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the equation")
    # an ellipsis stands for the leading (broadcast) dimensions: name them with spare letters
    spare = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in eq]
    nell = max((op.dim() - len(t.replace("...", "")) for t, op in zip(terms, operands)
                if "..." in t), default=0)
    ell = "".join(spare[:nell])
    out_terms: list[str] = []
    for t, op in zip(terms, operands):
        if "..." in t:
            k = op.dim() - len(t.replace("...", ""))
            t = t.replace("...", ell[nell - k:] if k else "")
        if len(t) != op.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) "
                               f"does not match the number of dimensions ({op.dim()}) for "
                               f"operand {len(out_terms)}" + ("" if "..." in lhs else
                                                              " and no ellipsis was given"))
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    for c in out:
        if not any(c in t for t in out_terms):
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                               f"for any input operand")
    return out_terms, out


def _einsum_align(op: Tensor, term: str, letters: str) -> Tensor:
    """``op`` with repeated subscripts reduced to their diagonal, permuted and unsqueezed to the
    order of ``letters``."""
    from_term = term
    while True:
        dup = next((c for c in from_term if from_term.count(c) > 1), None)
        if dup is None:
            break
        i = from_term.index(dup)
        j = from_term.index(dup, i + 1)
        op = diagonal(op, 0, i, j)
        from_term = from_term[:i] + from_term[i + 1:j] + from_term[j + 1:] + dup
    present = [c for c in letters if c in from_term]
    op = permute(op, [from_term.index(c) for c in present])
    shape = []
    it = iter(op.shape)
    for c in letters:
        shape.append(next(it) if c in from_term else 1)
    return reshape(op, shape)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation (``"ij,jk->ik"``; ``...`` for broadcast dimensions). The operands are
    multiplied pairwise from the left, each index summed as soon as no later operand needs it."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, out = _einsum_parse(equation, operands)
    letters = "".join(dict.fromkeys(out + "".join(terms)))
    aligned = [_einsum_align(op, t, letters) for op, t in zip(operands, terms)]
    acc = aligned[0]
    for k in range(1, len(aligned)):
        acc = acc * aligned[k]
        later = set(out + "".join(terms[k + 1:]))
        dims = [i for i, c in enumerate(letters) if c not in later and acc.shape[i] != 1
                and c not in out]
        if dims:
            acc = reduction.sum(acc, dims, keepdim=True)
    rest = [i for i, c in enumerate(letters) if c not in out]
    if rest:
        acc = reduction.sum(acc, rest, keepdim=True)
    acc = reshape(acc, [acc.shape[i] for i, c in enumerate(letters) if c in out]) \
        if out else reshape(acc, ())
    present = [c for c in letters if c in out]
    return permute(acc, [present.index(c) for c in out]) if out else acc


def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Tensor | None = None) -> Tensor:
    """Sum of products over ``dims`` (the last ``dims`` of ``a`` with the first of ``b``, or
    two lists of dimensions)."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    elif isinstance(dims, Tensor):
        return tensordot(a, b, dims.tolist())
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da = [wrap_dim(d, a.dim()) for d in da]
    db = [wrap_dim(d, b.dim()) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in "
                               f"dim {y}")
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    am = reshape(permute(a, fa + da), (-1, k))
    bm = reshape(permute(b, db + fb), (k, -1))
    return reshape(mm(am, bm), [a.shape[d] for d in fa] + [b.shape[d] for d in fb])


# ------------------------------------------------------------------------------- distances
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """Pairwise ``p``-norm distances between the rows of ``x1`` (``..., P, M``) and ``x2``
    (``..., R, M``): ``(..., P, R)``."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D"
                           if x1.dim() < 2 else
                           f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    diff = unsqueeze(x1, -2) - unsqueeze(x2, -3)
    return reduction.norm(diff, p, -1)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other``."""
    return reduction.norm(input - other, p)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default: the first dimension of size 3)."""
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.",
                      UserWarning, stacklevel=2)
        dim = next((k for k, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = wrap_dim(dim, input.dim())
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    a0, a1, a2 = (narrow(input, d, k, 1) for k in range(3))
    b0, b1, b2 = (narrow(other, d, k, 1) for k in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2,
                a0 * b1 - a1 * b0], d)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` rescaled so that its ``p``-norm is at most ``maxnorm``."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    d = wrap_dim(dim, input.dim())
    others = [k for k in range(input.dim()) if k != d]
    norms = reduction.norm(input, p, others, keepdim=True)
    # PyTorch's scale: maxnorm / (norm + 1e-7) where the norm exceeds maxnorm
    scale = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * scale.to(input.dtype)


# ------------------------------------------------------------------------------- grids, stacks
def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (``indexing="ij"``, the default, or ``"xy"``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t.dim()}D tensor")
    ts = [reshape(t, (-1,)) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    out = []
    for k, t in enumerate(ts):
        v = [1] * len(ts)
        v[k] = shape[k]
        out.append(reshape(t, v).expand(shape))
    if swap:  # "xy": the grids of the first two swapped back (shapes (len(y), len(x), ...))
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of the elements of 1-D ``tensors`` (``(N, len(tensors))``)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


def atleast_1d(*tensors: Any) -> Any:
    """Views with at least 1 dimension (one tensor in, one out)."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = tuple(reshape(t, (1,)) if t.dim() == 0 else t for t in ts)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else out


def atleast_2d(*tensors: Any) -> Any:
    """Views with at least 2 dimensions (1-D ``(n,)`` becomes ``(1, n)``)."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = tuple(reshape(t, (1, -1) if t.dim() == 1 else (1, 1)) if t.dim() < 2 else t
                for t in ts)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else out


def atleast_3d(*tensors: Any) -> Any:
    """Views with at least 3 dimensions (``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``)."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors

    def up(t: Tensor) -> Tensor:
        if t.dim() == 0:
            return reshape(t, (1, 1, 1))
        if t.dim() == 1:
            return reshape(t, (1, -1, 1))
        if t.dim() == 2:
            return unsqueeze(t, -1)
        return t

    out = tuple(up(t) for t in ts)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else out


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along the third dimension (after ``atleast_3d``)."""
    return cat(list(atleast_3d(list(tensors))), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack 0-D/1-D tensors as columns (and concatenate 2-D ones) along dimension 1."""
    cols = [reshape(t, (-1, 1)) if t.dim() <= 1 else t for t in tensors]
    return cat(cols, 1)


def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """``vstack``: concatenate along dimension 0 after ``atleast_2d``."""
    return cat(list(atleast_2d(list(tensors))), 0)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0
                     ) -> tuple[Tensor, ...]:
    """Views of consecutive pieces of the given sizes along ``dim`` (they must add up)."""
    d = wrap_dim(dim, input.dim())
    if sum(split_sizes) != input.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[d]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={list(split_sizes)}")
    return split(input, list(split_sizes), d)


def _split_n(name: str, input: Tensor, sections: Any, dim: int, min_dim: int) -> tuple:
    if input.dim() < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {input.dim()} dimensions!")
    if isinstance(sections, int):
        if input.shape[dim] % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {input.shape[dim]} is not divisible by the "
                               f"split_size {sections}!")
        return split(input, input.shape[dim] // sections, dim)
    return input.tensor_split(list(sections), dim)


def hsplit(input: Tensor, sections: Any) -> tuple:
    """Split along dimension 1 (dimension 0 for 1-D input)."""
    return _split_n("hsplit", input, sections, 1 if input.dim() > 1 else 0, 1)


def vsplit(input: Tensor, sections: Any) -> tuple:
    """Split along dimension 0."""
    return _split_n("vsplit", input, sections, 0, 2)


def dsplit(input: Tensor, sections: Any) -> tuple:
    """Split along dimension 2."""
    return _split_n("dsplit", input, sections, 2, 3)


# ------------------------------------------------------------------------------- statistics
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """Covariance of the variables in the rows of ``input`` (observations in columns)."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    x = input if input.dim() == 2 else reshape(input, (1, -1))
    if not x.dtype.is_floating_point:
        x = x.to(_dtype.get_default_dtype())
    n = x.shape[1]
    w: Tensor | None = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        mean = reduction.mean(x, 1, keepdim=True)
        wsum: Any = float(n)
        norm: Any = float(n - correction)
        xc = x - mean
        c = matmul(xc, transpose(xc, 0, 1))
    else:
        wsum = reduction.sum(w)
        mean = reduction.sum(x * w, 1, keepdim=True) / wsum
        xc = x - mean
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - reduction.sum(w * aweights.to(x.dtype)) * correction / wsum
        c = matmul(xc * w, transpose(xc, 0, 1))
    norm = norm if isinstance(norm, Tensor) else max(norm, 0.0)
    c = c / norm
    return reshape(c, ()) if input.dim() < 2 else c


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of ``input``."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = elementwise.sqrt(diagonal(c))
    c = c / unsqueeze(d, 1) / unsqueeze(d, 0)
    return elementwise.clamp(c, -1.0, 1.0)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
            ) -> Tensor:
    """Mean over ``dim`` of the non-NaN elements."""
    if not input.dtype.is_floating_point and dtype is None:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{elementwise._type_name(input.dtype)}")
    x = input if dtype is None else input.to(dtype)
    ok = elementwise.logical_not(elementwise.isnan(x))
    n = reduction.sum(ok, dim, keepdim).to(x.dtype)
    return reduction.nansum(x, dim, keepdim) / n


# ------------------------------------------------------------------------------- matrix-vector
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    prod = mv(mat, vec)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # input is ignored (NaN in it does not propagate), as PyTorch
        return prod
    return (input if beta == 1 else input * beta) + prod


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    prod = outer(vec1, vec2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return (input if beta == 1 else input * beta) + prod


# ------------------------------------------------------------------------------- indexing
def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened ``input`` at ``index`` (result shaped like ``index``)."""
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{elementwise._type_name(index.dtype)}")
    flat = reshape(input, (-1,))
    n = flat.shape[0]
    if index.numel():
        lo, hi = int(index.min().item()), int(index.max().item())
        if lo < -n or hi >= n:
            bad = hi if hi >= n else lo
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                             f"elements.")
    idx = reshape(index, (-1,))
    idx = where(idx < 0, idx + n, idx)
    return reshape(index_select(flat, 0, idx), index.shape)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` whose elements where ``mask`` is true are taken, in order, from
    ``source``."""
    if mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_scatter_only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype}")
    m = reshape(mask.expand(input.shape), (-1,))
    pos = reshape(nonzero(m), (-1,))
    k = pos.shape[0]
    if source.numel() < k:
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as "
                           "the ones selected by the mask")
    flat = reshape(input, (-1,))
    src = narrow(reshape(source, (-1,)), 0, 0, k).to(input.dtype)
    out = flat.index_copy(0, pos, src)
    return reshape(out, input.shape)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """The view of all windows of ``size`` elements, ``step`` apart, along ``dimension`` (a new
    last dimension of length ``size``)."""
    nd = max(input.dim(), 1)
    d = wrap_dim(dimension, nd)
    shape = list(input.shape) or [1]
    if size > shape[d]:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {shape[d]} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if input.dim() == 0:  # PyTorch: the 0-d tensor as its only window, of stride 1
        return strided_view(reshape(input, (1,)), (0,), (size,), ((1,),), _Unfold)
    n = (shape[d] - size) // step + 1
    steps = [[int(j == k) * (step if k == d else 1) for j in range(nd)] for k in range(nd)]
    steps.append([int(j == d) for j in range(nd)])  # along a window: one element at a time
    return strided_view(input, [0] * nd, shape[:d] + [n] + shape[d + 1:] + [size], steps,
                          _Unfold)


class _Unfold(StridedView):
    _backward_name = "UnfoldBackward0"


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane ``dims`` (from the first towards the
    second)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = wrap_dim(dims[0], input.dim()), wrap_dim(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return transpose(flip(input, [d1]), d0, d1)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return flip(transpose(input, d0, d1), [d1])
    return input.clone()


def fliplr(input: Tensor) -> Tensor:
    """Reverse the columns (dimension 1)."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, [1])


def flipud(input: Tensor) -> Tensor:
    """Reverse the rows (dimension 0)."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, [0])


def ravel(input: Tensor) -> Tensor:
    """The flattened contiguous tensor: a view of a contiguous input, else a copy (PyTorch's
    ``contiguous().view(-1)``: a copy even where a strided view would do, unlike ``flatten``)."""
    return reshape(contiguous(input), (-1,))


def argwhere(input: Tensor) -> Tensor:
    """Indices of the nonzero elements, ``(n, ndim)``."""
    return nonzero(input)



def matrix_power(input: Tensor, n: int) -> Tensor:
    """``input`` (a square matrix or a batch of them) multiplied by itself ``n`` times
    (the identity for ``n == 0``)."""
    if input.dim() < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they "
                           f"are {input.shape[-2] if input.dim() >= 2 else 1} by "
                           f"{input.shape[-1] if input.dim() else 1} matrices")
    if n < 0:
        raise NotImplementedError("matrix_power with a negative exponent needs a matrix inverse, "
                                  "which portagrad does not implement")
    if n == 0:
        eye = _creation.eye(input.shape[-1], dtype=input.dtype, device=input.device)
        return eye.expand(input.shape).clone()
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


def _flat_index(index: Tensor, n: int, what: str) -> Tensor:
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"{what}(): Expected a long tensor for index, but got "
                           f"{elementwise._type_name(index.dtype)}")
    idx = reshape(index, (-1,))
    if idx.numel():
        lo, hi = int(idx.min().item()), int(idx.max().item())
        if lo < -n or hi >= n:
            bad = hi if hi >= n else lo
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                             f"elements.")
    return where(idx < 0, idx + n, idx)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source`` written at the flat positions ``index`` (added when
    ``accumulate``)."""
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, index.numel() = "
                           f"{index.numel()}")
    flat = reshape(input, (-1,))
    idx = _flat_index(index, flat.shape[0], "put_")
    src = reshape(source, (-1,)).to(input.dtype)
    out = flat.index_add(0, idx, src) if accumulate else flat.index_copy(0, idx, src)
    return reshape(out, input.shape)


def index_put(input: Tensor, indices: Sequence[Any], values: Any, accumulate: bool = False
              ) -> Tensor:
    """A copy of ``input`` with ``values`` written at ``input[indices]`` (``indices``: a tuple of
    index tensors for the leading dimensions); duplicates added when ``accumulate``."""
    indices = tuple(indices)
    if len(indices) > input.dim():
        raise IndexError(f"too many indices for tensor of dimension {input.dim()} (got "
                         f"{len(indices)})")
    if not accumulate:
        out = input.clone()
        setitem(out, indices, values)
        return out
    idx: list[Tensor] = []
    for t in indices:
        if isinstance(t, Tensor) and t.dtype is _dtype.bool:
            idx.extend(nonzero(t, as_tuple=True))
        else:
            idx.append(t if isinstance(t, Tensor) else
                       _creation.tensor(t, dtype=_dtype.int64, device=input.device))
    k = len(idx)
    lead, rest = tuple(input.shape[:k]), tuple(input.shape[k:])
    shape = broadcast_shapes(*(t.shape for t in idx))
    lin = _creation.zeros(shape, dtype=_dtype.int64, device=input.device)
    for t, n in zip(idx, lead):
        t = t.to(_dtype.int64)
        lin = lin * n + where(t < 0, t + n, t)
    v = values if isinstance(values, Tensor) else _creation.tensor(values, dtype=input.dtype,
                                                                   device=input.device)
    v = reshape(v.to(input.dtype).expand(tuple(shape) + rest), (-1,) + rest)
    flat = reshape(input, (-1,) + rest)
    return reshape(flat.index_add(0, reshape(lin, (-1,)), v), input.shape)


def apply_(input: Tensor, fn: Any) -> Tensor:
    """``fn`` applied to every element (a Python call each, on the host), in place."""
    arr = input.detach().numpy(force=True)
    res = np.vectorize(fn, otypes=[arr.dtype])(arr) if arr.size else arr
    copy_(input, _creation.tensor(res, dtype=input.dtype, device=input.device))
    return input


def map_(input: Tensor, other: Tensor, fn: Any, other2: Tensor | None = None) -> Tensor:
    """``input[i] = fn(input[i], other[i])`` (``other`` broadcast to ``input``), in place;
    with ``other2``: ``fn(input[i], other[i], other2[i])``."""
    arr = input.detach().numpy(force=True)
    more = [o.detach().expand(input.shape).numpy(force=True)
            for o in (other, other2) if o is not None]
    res = np.vectorize(fn, otypes=[arr.dtype])(arr, *more) if arr.size else arr
    copy_(input, _creation.tensor(res, dtype=input.dtype, device=input.device))
    return input


def resize_(input: Tensor, *sizes: Any) -> Tensor:
    """Give ``input`` the contiguous shape ``sizes``: a view of its own storage when the elements
    fit and it is contiguous, else a new storage holding the old elements first (the rest
    uninitialised)."""
    shape = _creation.parse_size(sizes, "resize_")
    if input.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = math.prod(shape)
    with _no_grad():
        if input.is_contiguous() and n <= input.numel():
            new = as_strided(input, shape, _contiguous_strides(shape))
        else:
            new = _creation.empty(shape, dtype=input.dtype, device=input.device)
            k = min(n, input.numel())
            if k:
                copy_(narrow(reshape(new, (-1,)), 0, 0, k),
                      narrow(reshape(input, (-1,)), 0, 0, k))
    input._set_from(new)
    return input


def _contiguous_strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return out[::-1]


def _embed(input: Tensor, src: Tensor, view: Any, name: str) -> Tensor:
    """A copy of ``input`` with ``src`` written into the view ``view(copy)``."""
    out = input.clone()
    target = view(out)
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(f"{name}: expected src to have a size equal to the slice of self. src "
                           f"size = {list(src.shape)}, slice size = {list(target.shape)}")
    copy_(target, src)
    return out


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
                     ) -> Tensor:
    """A copy of ``input`` with ``src`` written on the diagonal ``diagonal(offset, dim1, dim2)``."""
    return _embed(input, src, lambda t: diagonal(t, offset, dim1, dim2), "diagonal_scatter")


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``select(dim, index)``."""
    return _embed(input, src, lambda t: select(t, dim, index), "select_scatter")


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input[..., start:end:step, ...]`` along
    ``dim``."""
    d = wrap_dim(dim, input.dim())
    key = (slice(None),) * d + (slice(start, end, step),)
    return _embed(input, src, lambda t: t[key], "slice_scatter")


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``as_strided(size, stride, offset)``."""
    return _embed(input, src, lambda t: as_strided(t, size, stride, storage_offset),
                  "as_strided_scatter")


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
           ) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.dim() != 3 else
                           "batch2 must be a 3D tensor")
    prod = reduction.sum(matmul(batch1, batch2), 0)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod + _creation.zeros(input.shape, dtype=prod.dtype, device=prod.device)
    return (input if beta == 1 else input * beta) + prod


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential (of each matrix of a batch): scaling and squaring around a Taylor
    series, with matrix products only."""
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("matrix_exp: expected a tensor of squares matrices")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"matrix_exp: Expected a floating point or complex tensor as input. "
                           f"Got {elementwise._type_name(A.dtype)}")
    n = A.shape[-1]
    with _no_grad():
        norm = float(reduction.amax(reduction.sum(elementwise.abs(A), -1)).item()) if A.numel() else 0.0
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
