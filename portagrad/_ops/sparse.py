"""Sparse COO tensors: ``sparse_coo_tensor``, ``Tensor.to_sparse``, ``to_dense``, ``coalesce``,
sparse @ dense products and sums.

A :class:`SparseCooTensor` holds an ``(sparse_dim, nnz)`` int64 ``indices`` tensor and a
``(nnz, *dense_dims)`` ``values`` tensor on one device. Everything is computed with dense ops that
every backend has (``index_select``, ``index_add``, ``sort``), so it runs on any device, and the
products are differentiable with respect to the dense operand and to ``values``. It supports what
graph-network code uses; any other Tensor operation raises ``NotImplementedError`` naming the
operation and the layout.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import _creation, _dtype
from .._layout import sparse_coo
from .._shape import wrap_dim
from .._storage import Size
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from . import elementwise
from .indexing import index_select, nonzero
from .joining import cat
from .sorting import sort
from .matmul import mm
from .search import unique_consecutive
from .segment import scatter_reduce

__all__ = ["SPARSE_GRADS", "SparseCooTensor", "sparse_coo_tensor", "to_sparse", "sparse_mm", "sparse_sum",
           "sparse_addmm", "sparse_softmax", "sparse_log_softmax", "is_sparse"]


class SPARSE_GRADS:
    """``made`` turns true once a backward has produced a sparse gradient (``Embedding(sparse=
    True)``): until then the optimizers skip looking for sparse ``.grad`` s on each step."""

    made = False


def _linear(indices: Tensor, size: Sequence[int]) -> Tensor:
    """Row-major linear position of each column of ``indices`` in the sparse dimensions."""
    lin = _creation.zeros(indices.shape[1], dtype=_dtype.int64, device=indices.device)
    for d, n in enumerate(size):
        lin = lin * n + indices[d]
    return lin


class SparseCooTensor:
    """A tensor in the sparse COO layout (``layout=portagrad.sparse_coo``)."""

    is_sparse = True
    is_sparse_csr = False
    is_cuda = False
    is_quantized = False
    is_meta = False
    is_mkldnn = False
    layout = sparse_coo

    def __init__(self, indices: Tensor, values: Tensor, size: Sequence[int],
                 coalesced: bool = False) -> None:
        self._idx = indices
        self._val = values
        self._size = Size(tuple(int(s) for s in size))
        self._coalesced = coalesced

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return self._size

    def size(self, dim: int | None = None) -> Any:
        return self._size if dim is None else self._size[wrap_dim(dim, len(self._size))]

    def dim(self) -> int:
        return len(self._size)

    @property
    def ndim(self) -> int:
        return len(self._size)

    def numel(self) -> int:
        return math.prod(self._size)

    @property
    def dtype(self) -> _dtype.dtype:
        return self._val.dtype

    @property
    def device(self) -> Any:
        return self._val.device

    @property
    def is_cpu(self) -> bool:
        return self._val.is_cpu

    def sparse_dim(self) -> int:
        return self._idx.shape[0]

    def dense_dim(self) -> int:
        return self._val.dim() - 1

    def _nnz(self) -> int:
        return self._idx.shape[1]

    def is_coalesced(self) -> bool:
        return self._coalesced

    def _indices(self) -> Tensor:
        return self._idx

    def _values(self) -> Tensor:
        return self._val

    def indices(self) -> Tensor:
        """The ``(sparse_dim, nnz)`` indices (of a coalesced tensor, as PyTorch)."""
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._idx

    def values(self) -> Tensor:
        """The ``(nnz, *dense_dims)`` values (of a coalesced tensor, as PyTorch)."""
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._val

    # ------------------------------------------------------------------ autograd
    @property
    def requires_grad(self) -> bool:
        return self._val.requires_grad

    def requires_grad_(self, requires_grad: bool = True) -> SparseCooTensor:
        self._val.requires_grad_(requires_grad)
        return self

    @property
    def grad(self) -> SparseCooTensor | None:
        """The gradient of a leaf sparse tensor, as a sparse tensor with the same indices."""
        g = self._val.grad
        return None if g is None else SparseCooTensor(self._idx, g, self._size, self._coalesced)

    @property
    def is_leaf(self) -> bool:
        return self._val.is_leaf

    def detach(self) -> SparseCooTensor:
        return SparseCooTensor(self._idx, self._val.detach(), self._size, self._coalesced)

    # ------------------------------------------------------------------ conversion
    def coalesce(self) -> SparseCooTensor:
        """Sorted indices without duplicates (the values of duplicates summed)."""
        if self._coalesced:
            return self
        sd = self.sparse_dim()
        dims = self._size[:sd]
        with _no_grad():
            lin = _linear(self._idx, dims)
            s, order = sort(lin, stable=True)
            uniq, inv = unique_consecutive(s, return_inverse=True)
            pos = _creation.zeros(lin.shape[0], dtype=_dtype.int64, device=lin.device)
            pos = pos.scatter(0, order, inv)  # entry k goes to unique slot pos[k]
            rows = []
            rest = uniq
            for n in reversed(dims):
                rows.append(elementwise.remainder(rest, n))
                rest = elementwise.floor_divide(rest, n)
            idx = cat([r.reshape((1, -1)) for r in reversed(rows)], 0).reshape((sd, -1)) if sd else self._idx
        zeros = _creation.zeros((uniq.shape[0],) + tuple(self._val.shape[1:]),
                                dtype=self.dtype, device=self.device)
        val = zeros.index_add(0, pos, self._val)
        return SparseCooTensor(idx, val, self._size, True)

    def to_dense(self, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
        """The dense tensor (duplicates summed); differentiable with respect to the values."""
        sd = self.sparse_dim()
        dense_shape = tuple(self._val.shape[1:])
        n = math.prod(self._size[:sd])
        with _no_grad():
            lin = _linear(self._idx, self._size[:sd])
        flat = _creation.zeros((n,) + dense_shape, dtype=self.dtype, device=self.device)
        out = flat.index_add(0, lin, self._val).reshape(tuple(self._size))
        return out if dtype is None else out.to(dtype)

    def to(self, *args: Any, **kwargs: Any) -> SparseCooTensor:
        """Moved to another device and/or dtype (the values converted, the indices moved)."""
        val = self._val.to(*args, **kwargs)
        return SparseCooTensor(self._idx.to(val.device), val, self._size, self._coalesced)

    def cpu(self) -> SparseCooTensor:
        return self.to("cpu")

    def double(self) -> SparseCooTensor:
        return self.to(_dtype.float64)

    def float(self) -> SparseCooTensor:
        return self.to(_dtype.float32)

    def clone(self) -> SparseCooTensor:
        return SparseCooTensor(self._idx.clone(), self._val.clone(), self._size, self._coalesced)

    def to_sparse(self, sparse_dim: int | None = None) -> SparseCooTensor:
        return self

    def t(self) -> SparseCooTensor:
        """The transpose of a 2-D sparse matrix (indices rows swapped)."""
        if self.dim() != 2 or self.sparse_dim() != 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                               f"self is {self.sparse_dim()} sparse and {self.dense_dim()} dense")
        idx = index_select(self._idx, 0, _creation.tensor([1, 0], device=self._idx.device))
        return SparseCooTensor(idx, self._val, (self._size[1], self._size[0]), False)

    def transpose(self, dim0: int, dim1: int) -> SparseCooTensor:
        """Swap two sparse dimensions."""
        sd = self.sparse_dim()
        d0, d1 = wrap_dim(dim0, self.dim()), wrap_dim(dim1, self.dim())
        if d0 >= sd or d1 >= sd:
            _refuse("transpose of a dense dimension")
        order = list(range(sd))
        order[d0], order[d1] = order[d1], order[d0]
        idx = index_select(self._idx, 0, _creation.tensor(order, device=self._idx.device))
        size = list(self._size)
        size[d0], size[d1] = size[d1], size[d0]
        return SparseCooTensor(idx, self._val, size, d0 == d1 and self._coalesced)

    # ------------------------------------------------------------------ arithmetic
    def _scaled(self, factor: Any, op: Any) -> SparseCooTensor:
        if isinstance(factor, Tensor) and factor.dim() != 0:
            raise NotImplementedError("multiplying a tensor with layout=portagrad.sparse_coo by a "
                                      "dense tensor of more than 0 dimensions is not supported")
        return SparseCooTensor(self._idx, op(self._val, factor), self._size, self._coalesced)

    def mul(self, other: Any) -> SparseCooTensor:
        """Scale by a number or a 0-D tensor, or multiply by a dense tensor that broadcasts to
        this shape (its elements at the stored indices): the result keeps the indices."""
        if isinstance(other, Tensor) and other.dim() > 0:
            return SparseCooTensor(self._idx, self._val * self._dense_at_indices(other),
                                   self._size, self._coalesced)
        if isinstance(other, SparseCooTensor):
            _refuse("mul(sparse, sparse)")
        return self._scaled(other, elementwise.mul)

    __mul__ = __rmul__ = mul

    def _dense_at_indices(self, dense: Tensor) -> Tensor:
        """The elements of ``dense`` (broadcast to this shape) at the stored indices:
        ``(nnz, *dense_dims)``."""
        sd = self.sparse_dim()
        full = dense.expand(tuple(self._size))
        flat = full.reshape((-1,) + tuple(self._size[sd:]))
        with _no_grad():
            lin = _linear(self._idx, self._size[:sd])
        return index_select(flat, 0, lin)

    def div(self, other: Any) -> SparseCooTensor:
        """Divide by a number or a 0-D tensor."""
        return self._scaled(other, elementwise.div)

    __truediv__ = div

    def __neg__(self) -> SparseCooTensor:
        return SparseCooTensor(self._idx, -self._val, self._size, self._coalesced)

    def add(self, other: Any) -> Any:
        """Sparse + sparse (same size) is sparse; sparse + dense is refused, as PyTorch."""
        if isinstance(other, SparseCooTensor):
            if other.shape != self.shape:
                raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self "
                                   f"has size {list(self.shape)} while other has size "
                                   f"{list(other.shape)}")
            return SparseCooTensor(cat([self._idx, other._idx], 1),
                                   cat([self._val, other._val.to(self.dtype)], 0), self._size)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")

    __add__ = add

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, Tensor):  # dense + sparse is dense
            return other + self.to_dense()
        return NotImplemented

    def __rsub__(self, other: Any) -> Any:
        if isinstance(other, Tensor):
            return other - self.to_dense()
        return NotImplemented

    def sum(self, dim: Any = None, dtype: Any = None) -> Any:
        """Sum of all elements, or over ``dim`` (see :func:`sparse_sum`)."""
        return sparse_sum(self, dim, dtype=dtype)

    def mm(self, mat2: Tensor) -> Tensor:
        return sparse_mm(self, mat2)

    def matmul(self, other: Tensor) -> Tensor:
        return sparse_mm(self, other)

    __matmul__ = matmul

    @staticmethod
    def _sparse_mm(a: Any, b: Any) -> Tensor:  # the hook pg.mm / pg.matmul look for
        return sparse_mm(a, b)

    # ------------------------------------------------------------------ the rest
    def __repr__(self) -> str:
        return (f"tensor(indices={self._idx!r},\n       values={self._val!r},\n       size="
                f"{tuple(self._size)}, nnz={self._nnz()}, layout={self.layout!r})")

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def zero_(self) -> SparseCooTensor:
        """Emptied in place (no entries left), as PyTorch's ``zero_`` of a sparse tensor."""
        self._idx = self._idx.new_zeros((self._idx.shape[0], 0))
        self._val = self._val.new_zeros((0,) + tuple(self._val.shape[1:]))
        self._coalesced = True
        return self

    def __getattr__(self, name: str) -> Any:
        # a private name (``_storage``...) is an AttributeError, so that code probing a dense
        # tensor's internals with getattr(x, name, default) sees "not a dense tensor"
        if not name.startswith("_") and hasattr(Tensor, name):
            raise NotImplementedError(f"{name} is not supported for tensors with "
                                      f"layout=portagrad.sparse_coo (portagrad's sparse COO "
                                      f"tensors support to_dense, coalesce, indices, values, "
                                      f"mm/matmul with a dense matrix, sum, mul by a number or a "
                                      f"dense tensor, div by a number)")
        raise AttributeError(f"'SparseCooTensor' object has no attribute '{name}'")

    def __getitem__(self, key: Any) -> Any:
        _refuse("indexing")


def _refuse(what: str) -> Any:
    raise NotImplementedError(f"{what} is not supported for tensors with "
                              f"layout=portagrad.sparse_coo")


def is_sparse(obj: Any) -> bool:
    return isinstance(obj, SparseCooTensor)


def sparse_coo_tensor(indices: Any, values: Any, size: Sequence[int] | None = None, *,
                      dtype: Any = None, device: Any = None, requires_grad: bool = False,
                      check_invariants: bool | None = None, is_coalesced: bool | None = None
                      ) -> SparseCooTensor:
    """A sparse COO tensor with the given ``indices`` (``(sparse_dim, nnz)`` integers) and
    ``values`` (``(nnz, *dense_dims)``); ``size`` is inferred from the indices when omitted."""
    if isinstance(values, Tensor):
        val = values if dtype is None and device is None else values.to(device=device,
                                                                           dtype=dtype)
    else:
        val = _creation.tensor(values, dtype=dtype, device=device)
    if isinstance(indices, Tensor):
        idx = indices.to(val.device)
    else:
        idx = _creation.tensor(indices, dtype=_dtype.int64, device=val.device)
    if idx.dtype.is_floating_point or idx.dtype is _dtype.bool:
        raise RuntimeError(f"indices must be an int64 tensor, got {idx.dtype}")
    idx = idx.to(_dtype.int64)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if val.dim() == 0:
        raise RuntimeError("values must be a tensor of at least 1 dimension (nnz, *dense_dims)")
    sd, nnz = idx.shape
    if val.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {val.shape[0]}")
    if nnz and int(idx.min().item()) < 0:
        raise RuntimeError("found negative index in the indices of a sparse COO tensor")
    maxes = [int(idx[d].max().item()) if nnz else -1 for d in range(sd)]
    if size is None:
        size = [m + 1 for m in maxes] + list(val.shape[1:])
    size = [int(s) for s in size]
    if len(size) != sd + val.dim() - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sd}) + dense_dim "
                           f"({val.dim() - 1}), but got {len(size)}")
    for d in range(sd):
        if maxes[d] >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {maxes[d]}")
    if tuple(size[sd:]) != tuple(val.shape[1:]):
        raise RuntimeError(f"values has incorrect size, expected {[nnz] + size[sd:]}, got "
                           f"{list(val.shape)}")
    if requires_grad:
        val = val.detach().requires_grad_(True)
    return SparseCooTensor(idx, val, size, bool(is_coalesced) or nnz <= 1)


def to_sparse(input: Tensor, sparse_dim: int | None = None, *, layout: Any = None) -> Any:
    """The sparse COO form of a dense tensor: the nonzero entries (of the first ``sparse_dim``
    dimensions; the rest stay dense in the values)."""
    if layout is not None and layout is not sparse_coo:
        _refuse(f"to_sparse(layout={layout!r}); only layout=portagrad.sparse_coo")
    sd = input.dim() if sparse_dim is None else sparse_dim
    if not 0 < sd <= input.dim() and not (input.dim() == 0 and sd == 0):
        raise RuntimeError(f"sparse_dim must be in [1, {input.dim()}], got {sd}")
    with _no_grad():
        nz = elementwise.ne(input, 0)
        if sd < input.dim():
            nz = nz.any(tuple(range(sd, input.dim())))
        idx = nonzero(nz).transpose(0, 1).contiguous()
        lin = _linear(idx, input.shape[:sd])
    flat = input.reshape((-1,) + tuple(input.shape[sd:]))
    val = index_select(flat, 0, lin)
    return SparseCooTensor(idx, val, input.shape, True)


def sparse_mm(mat1: Any, mat2: Tensor) -> Tensor:
    """``mat1 @ mat2`` for a 2-D sparse ``mat1`` and a dense 1-D or 2-D ``mat2`` (dense result;
    also dense @ sparse, and dense @ dense); differentiable with respect to the dense operand and
    the sparse operand's values."""
    if not isinstance(mat1, SparseCooTensor):
        if isinstance(mat2, SparseCooTensor):
            # dense @ sparse = (sparse^T @ dense^T)^T
            return sparse_mm(mat2.t(), mat1.transpose(0, 1)).transpose(0, 1)
        return mm(mat1, mat2)  # torch.spmm of two dense matrices is mm
    if mat1.sparse_dim() != 2 or mat1.dense_dim() != 0:
        _refuse(f"mm with a {mat1.sparse_dim()}-sparse-dim, {mat1.dense_dim()}-dense-dim tensor")
    if isinstance(mat2, SparseCooTensor):
        _refuse("mm(sparse, sparse)")
    vec = mat2.dim() == 1
    m2 = mat2.unsqueeze(1) if vec else mat2
    if m2.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {mat2.dim()}-D tensor")
    if mat1.shape[1] != m2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {m2.shape[0]}x{m2.shape[1]})")
    if mat1.dtype is not m2.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: "
                           f"{mat1.dtype} != {m2.dtype}")
    rows, cols = mat1._idx[0], mat1._idx[1]
    contrib = index_select(m2, 0, cols) * mat1._val.unsqueeze(1)
    out = _creation.zeros(mat1.shape[0], m2.shape[1], dtype=m2.dtype, device=m2.device)
    out = out.index_add(0, rows, contrib)
    return out.squeeze(1) if vec else out


def sparse_addmm(input: Tensor, mat1: Any, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1
                 ) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` (dense result)."""
    prod = sparse_mm(mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return (input if beta == 1 else input * beta) + prod


def _sparse_softmax(input: Any, dim: int, log: bool, dtype: Any) -> SparseCooTensor:
    if not isinstance(input, SparseCooTensor):
        raise TypeError("sparse.softmax(): expected a sparse COO tensor")
    if input.dense_dim():
        _refuse("sparse softmax with dense dimensions")
    c = input.coalesce()
    d = wrap_dim(dim, input.dim())
    val = c._val if dtype is None else c._val.to(dtype)
    # the entries of one slice along dim share all the other coordinates: one group id each
    keep = [k for k in range(input.dim()) if k != d]
    with _no_grad():
        if keep:
            rows = index_select(c._idx, 0, _creation.tensor(keep, device=c._idx.device))
            gid = _linear(rows, [input.shape[k] for k in keep])
            ngroups = math.prod(input.shape[k] for k in keep)
        else:
            gid = _creation.zeros(val.shape[0], dtype=_dtype.int64, device=val.device)
            ngroups = 1
    start = _creation.full((ngroups,), -math.inf, dtype=val.dtype, device=val.device)
    top = scatter_reduce(start, 0, gid, val.detach(), "amax", include_self=False)
    z = val - index_select(top, 0, gid)
    e = elementwise.exp(z)
    tot = _creation.zeros(ngroups, dtype=val.dtype, device=val.device).index_add(0, gid, e)
    tot_at = index_select(tot, 0, gid)
    out = z - elementwise.log(tot_at) if log else e / tot_at
    return SparseCooTensor(c._idx, out, input.shape, True)


def sparse_softmax(input: Any, dim: int, *, dtype: Any = None) -> SparseCooTensor:
    """Softmax over the stored entries of each slice along ``dim`` (unstored entries count as
    ``-inf``: they stay unstored)."""
    return _sparse_softmax(input, dim, False, dtype)


def sparse_log_softmax(input: Any, dim: int, *, dtype: Any = None) -> SparseCooTensor:
    """Log-softmax over the stored entries of each slice along ``dim``."""
    return _sparse_softmax(input, dim, True, dtype)


def sparse_sum(input: Any, dim: Any = None, dtype: Any = None) -> Any:
    """Sum of all elements (a dense 0-D tensor), or over ``dim``: sparse while sparse
    dimensions remain, dense otherwise."""
    if isinstance(input, Tensor):
        return input.sum(dim, dtype=dtype) if dim is not None else input.sum(dtype=dtype)
    if not isinstance(input, SparseCooTensor):
        raise TypeError(f"sparse.sum(): expected a tensor, got {type(input).__name__}")
    val = input._val if dtype is None else input._val.to(dtype)
    if dim is None:
        return val.sum()
    dims = sorted({wrap_dim(d, input.dim()) for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = input.sparse_dim()
    sdims = [d for d in dims if d < sd]
    ddims = [d - sd + 1 for d in dims if d >= sd]
    if ddims:
        val = val.sum(ddims)
    keep = [d for d in range(sd) if d not in sdims]
    size = [s for k, s in enumerate(input.shape) if k not in dims]
    if not keep:
        return val.sum(0)
    idx = index_select(input._idx, 0, _creation.tensor(keep, device=input._idx.device))
    return SparseCooTensor(idx, val, size).coalesce()
