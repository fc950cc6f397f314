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
import sys
from collections.abc import Sequence
from typing import Any

from .. import _creation, _dtype
from .._layout import sparse_coo
from .._shape import wrap_dim
from .._storage import Size
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _no_grad, is_grad_enabled
from . import elementwise
from .indexing import index_select, nonzero
from .joining import cat
from .sorting import sort
from .matmul import mm
from .search import searchsorted, unique_consecutive
from .segment import scatter_reduce
from ._common import call

__all__ = ["SPARSE_GRADS", "SparseCooTensor", "sparse_coo_tensor", "to_sparse", "sparse_mm", "sparse_sum",
           "sparse_addmm", "spmm", "sparse_softmax", "sparse_log_softmax", "is_sparse"]


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
        # whether this tensor was made to require grad itself (requires_grad=True,
        # requires_grad_()): a leaf then, unlike one built on values that have a gradient
        self._owns_grad = False

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
        self._owns_grad = requires_grad
        return self

    def _dense_leaf(self) -> Tensor:
        """A dense zero leaf standing in for this sparse leaf in the products whose gradient for
        it PyTorch makes dense (torch.mm, matmul, addmm): its ``.grad`` is that gradient."""
        leaf = self.__dict__.get("_dense_stand_in")
        if leaf is None:
            leaf = _creation.zeros(tuple(self._size), dtype=self.dtype, device=self.device)
            leaf.requires_grad_(True)
            self._dense_stand_in = leaf
        return leaf

    @property
    def grad(self) -> Any:
        """The gradient of a leaf sparse tensor: a sparse tensor at its (coalesced) indices, or a
        dense one where a torch.mm / matmul / addmm reached it (their sum where both did)."""
        if not self.is_leaf:  # (PyTorch keeps no .grad for a non-leaf either)
            return None
        stand_in = self.__dict__.get("_dense_stand_in")
        dense = None if stand_in is None else stand_in.grad
        sparse = self._sparse_grad()
        if dense is None:
            return sparse
        return dense if sparse is None else dense + sparse

    def _sparse_grad(self) -> SparseCooTensor | None:
        g = self._val.grad
        if g is None:
            return None
        if self._coalesced:
            return SparseCooTensor(self._idx, g, self._size, True)
        # every op sums duplicate entries, so each duplicate's value gradient is the gradient of
        # their shared position: one entry per position (summing them would count it twice)
        idx, pos, n = self._coalesce_plan()
        zeros = _creation.zeros((n,) + tuple(g.shape[1:]), dtype=g.dtype, device=g.device)
        return SparseCooTensor(idx, zeros.index_copy(0, pos, g), self._size, True)

    @property
    def is_leaf(self) -> bool:
        """A tensor made to require grad itself, or one that does not require grad."""
        return not self._val.requires_grad or (self._owns_grad and self._val.is_leaf)

    @staticmethod
    def _note_grad() -> None:
        """Called when a sparse tensor becomes a ``.grad`` (assigned): see :class:`SPARSE_GRADS`."""
        SPARSE_GRADS.made = True

    def detach(self) -> SparseCooTensor:
        return SparseCooTensor(self._idx, self._val.detach(), self._size, self._coalesced)

    # ------------------------------------------------------------------ conversion
    def _coalesce_plan(self) -> tuple[Tensor, Tensor, int]:
        """The coalesced indices, the slot of each entry among them, and their number."""
        sd = self.sparse_dim()
        dims = self._size[:sd]
        with _no_grad():
            if sd == 0:  # no sparse dimensions: every entry is the one position
                pos = _creation.zeros(self._nnz(), dtype=_dtype.int64, device=self._idx.device)
                return self._idx[:, :min(1, self._nnz())], pos, min(1, self._nnz())
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
            idx = cat([r.reshape((1, -1)) for r in reversed(rows)], 0).reshape((sd, -1))
        return idx, pos, uniq.shape[0]

    def coalesce(self) -> SparseCooTensor:
        """Sorted indices without duplicates (the values of duplicates summed)."""
        if self._coalesced:
            return self
        idx, pos, n = self._coalesce_plan()
        return SparseCooTensor(idx, self._sum_into(n, pos), self._size, True)

    def _sum_into(self, n: int, pos: Tensor) -> Tensor:
        """The values summed into ``n`` slots, entry ``k`` into slot ``pos[k]`` (bool values as
        counts, any count True: an Array API backend has no bool sums)."""
        as_bool = self.dtype is _dtype.bool
        zeros = _creation.zeros((n,) + tuple(self._val.shape[1:]),
                                dtype=_dtype.int64 if as_bool else self.dtype, device=self.device)
        val = zeros.index_add(0, pos, self._val.to(_dtype.int64) if as_bool else self._val)
        return val.ne(0) if as_bool else val

    def to_dense(self, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
        """The dense tensor (duplicates summed); differentiable with respect to the values."""
        if dtype is not None:
            raise RuntimeError("dtype argument is not supported by sparse_to_dense")
        sd = self.sparse_dim()
        n = math.prod(self._size[:sd])
        with _no_grad():
            lin = _linear(self._idx, self._size[:sd])
        return self._sum_into(n, lin).reshape(tuple(self._size))

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

    def to_sparse(self, sparse_dim: int | None = None, *, layout: Any = None) -> SparseCooTensor:
        """This tensor (already sparse COO); another ``sparse_dim`` is refused, as PyTorch."""
        if layout is not None and layout is not sparse_coo:
            _refuse(f"to_sparse(layout={layout!r}); only layout=portagrad.sparse_coo")
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               "argument !=self.sparse_dim() is not supported")
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

    def permute(self, *dims: Any) -> SparseCooTensor:
        """The dimensions reordered (the sparse ones among themselves; dense ones stay)."""
        order = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], (list, tuple)) \
            else list(dims)
        n, sd = self.dim(), self.sparse_dim()
        if len(order) != n:
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input "
                               f"does not match the length of the desired ordering of dimensions "
                               f"i.e. input.dim() = {n} is not equal to len(dims) = {len(order)}")
        order = [wrap_dim(d, n) for d in order]
        if len(set(order)) != n:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        if any(order[k] != k for k in range(sd, n)):
            _refuse("permute of a dense dimension")
        idx = index_select(self._idx, 0, _creation.tensor(order[:sd], dtype=_dtype.int64,
                                                            device=self._idx.device))
        same = order == list(range(n))
        return SparseCooTensor(idx, self._val, [self._size[d] for d in order],
                               same and self._coalesced)

    def unsqueeze(self, dim: int) -> SparseCooTensor:
        """A size-1 dimension inserted at ``dim``: a sparse one (a row of zero indices) among
        or after the sparse dimensions, else a dense one (in the values)."""
        d = wrap_dim(dim, self.dim() + 1)
        sd = self.sparse_dim()
        size = list(self._size[:d]) + [1] + list(self._size[d:])
        if d <= sd:
            zero = _creation.zeros((1, self._nnz()), dtype=_dtype.int64, device=self._idx.device)
            idx = cat([self._idx[:d], zero, self._idx[d:]], 0)
            return SparseCooTensor(idx, self._val, size, False)
        return SparseCooTensor(self._idx, self._val.unsqueeze(d - sd + 1), size, False)

    def index_select(self, dim: int, index: Tensor) -> SparseCooTensor:
        """The slices at ``index`` along ``dim``: along a sparse dimension, for each position
        of ``index`` in turn the entries at it (in their order), renumbered."""
        d = wrap_dim(dim, self.dim())
        if not isinstance(index, Tensor) or index.dim() > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        if index.dtype not in (_dtype.int64, _dtype.int32):
            raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
        index = index.reshape((-1,)).to(device=self._idx.device, dtype=_dtype.int64)
        n = self._size[d]
        lo, hi = (int(index.amin().item()), int(index.amax().item())) if index.numel() else (0, 0)
        if lo < -n or hi >= n:
            raise IndexError(f"index_select(): index contains {hi if hi >= n else lo} that is "
                             f"out of range for tensor of size {list(self._size)} at "
                             f"dimension {d}")
        index = elementwise.remainder(index, n) if n else index
        sd = self.sparse_dim()
        size = list(self._size)
        size[d] = index.shape[0]
        if d >= sd:  # a dense dimension: the same entries, their values' slices picked
            return SparseCooTensor(self._idx, index_select(self._val, d - sd + 1, index), size,
                                   self._coalesced)
        with _no_grad():
            hit = nonzero(elementwise.eq(index.unsqueeze(1), self._idx[d].unsqueeze(0)))
            k, entry = hit[:, 0], hit[:, 1]
            idx = index_select(self._idx, 1, entry)
            idx[d] = k
        return SparseCooTensor(idx, index_select(self._val, 0, entry), size, False)

    def nan_to_num(self, nan: Any = 0.0, posinf: Any = None, neginf: Any = None
                   ) -> SparseCooTensor:  # (numbers: ``float`` here is this class's method)
        """NaN and infinities of the stored values replaced (see ``portagrad.nan_to_num``)."""
        c = self.coalesce()
        return SparseCooTensor(c._idx, c._val.nan_to_num(nan, posinf, neginf), self._size, True)

    @staticmethod
    def _sparse_op(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        # the hook the top-level functions look up on their failure path (see _toplevel_op)
        return _toplevel_op(name, fn, *args, **kwargs)

    # ------------------------------------------------------------------ arithmetic
    def _scaled(self, factor: Any, op: Any) -> SparseCooTensor:
        if isinstance(factor, Tensor) and factor.dim() != 0:
            raise NotImplementedError("multiplying a tensor with layout=portagrad.sparse_coo by a "
                                      "dense tensor of more than 0 dimensions is not supported")
        return SparseCooTensor(self._idx, op(self._val, factor), self._size, self._coalesced)

    def mul(self, other: Any) -> SparseCooTensor:
        """Scale by a number or a 0-D tensor, multiply by a dense tensor that broadcasts to this
        shape (its elements at the stored indices), or by a sparse tensor of the same shape (see
        :meth:`_mul_sparse`): the result keeps this tensor's indices."""
        if isinstance(other, SparseCooTensor):
            return self._mul_sparse(other)
        if isinstance(other, Tensor) and other.dim() > 0:
            return SparseCooTensor(self._idx, self._val * self._dense_at_indices(other),
                                   self._size, self._coalesced)
        return self._scaled(other, elementwise.mul)

    __mul__ = __rmul__ = mul

    def _mul_sparse(self, other: SparseCooTensor) -> SparseCooTensor:
        """Sparse * sparse, as PyTorch lays it out: of two coalesced operands, the coalesced
        intersection; otherwise the entries of the uncoalesced operand (of both, the one with
        fewer entries; the second on a tie), each times the other's value at its position (0
        where the other stores nothing)."""
        if (self._size != other._size or self.sparse_dim() != other.sparse_dim()):
            raise RuntimeError("sparse_binary_op_intersection_cpu(): expects sparse inputs with "
                               "equal dimensionality, number of sparse dimensions, and shape of "
                               "sparse dimensions")
        dt = _dtype.promote_types(self.dtype, other.dtype)
        if self._coalesced and other._coalesced:
            base, look = self, other
        elif self._coalesced != other._coalesced:
            base, look = (other, self) if self._coalesced else (self, other)
        else:
            base, look = (self, other) if self._nnz() < other._nnz() else (other, self)
        look = look.coalesce()
        found, at = _lookup(look, base._idx)
        shape = (-1,) + (1,) * base.dense_dim()
        other_val = elementwise.where(found.reshape(shape), index_select(look._val, 0, at),
                                      _creation.zeros((), dtype=look.dtype, device=look.device))
        val = base._val.to(dt) * other_val.to(dt)
        if not (self._coalesced and other._coalesced):
            return SparseCooTensor(base._idx, val, self._size, False)
        keep = nonzero(found).reshape((-1,))
        return SparseCooTensor(index_select(base._idx, 1, keep), index_select(val, 0, keep),
                               self._size, True)

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

    neg = __neg__

    def _check_same_layout(self, other: SparseCooTensor) -> None:
        if other.shape != self.shape:
            raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                               f"{list(self.shape)} != {list(other.shape)}")
        if other.sparse_dim() != self.sparse_dim():
            raise RuntimeError(f"add: expected 'self' and 'other' to have same density, but "
                               f"'self' has {self.sparse_dim()} sparse dimensions while 'other' "
                               f"has {other.sparse_dim()} sparse dimensions")

    def add(self, other: Any, *, alpha: Any = 1) -> Any:
        """Sparse + ``alpha`` * sparse (same size) is sparse: coalesced when both are (their
        union), else their entries together, uncoalesced. Sparse + dense is refused, as
        PyTorch."""
        if not isinstance(other, SparseCooTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        self._check_same_layout(other)
        dt = _dtype.promote_types(self.dtype, other.dtype)
        oval = other._val.to(dt)
        if alpha != 1:
            oval = oval * alpha
        out = SparseCooTensor(cat([self._idx, other._idx], 1), cat([self._val.to(dt), oval], 0),
                              self._size)
        return out.coalesce() if self._coalesced and other._coalesced else out

    __add__ = add

    def sub(self, other: Any, *, alpha: Any = 1) -> Any:
        """Sparse - ``alpha`` * sparse (see :meth:`add`)."""
        if not isinstance(other, SparseCooTensor):
            # (PyTorch's subtraction is its addition: the message names add)
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        return self.add(other, alpha=-alpha)

    __sub__ = sub

    def _dense_operand(self, other: Tensor) -> None:
        # dense (op) sparse needs the same shape: PyTorch does not broadcast it
        if tuple(other.shape) != tuple(self._size):
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                               f"size {list(other.shape)} while other has size "
                               f"{list(self._size)} (FYI: dense-sparse addition does not "
                               f"currently support broadcasting)")

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, Tensor):  # dense + sparse is dense
            self._dense_operand(other)
            return other + self.to_dense()
        return NotImplemented

    def __rsub__(self, other: Any) -> Any:
        if isinstance(other, Tensor):
            self._dense_operand(other)
            return other - self.to_dense()
        return NotImplemented

    def _inplace(self, result: SparseCooTensor) -> SparseCooTensor:
        """Take ``result``'s entries as this tensor's own (the in-place ops)."""
        if self.requires_grad and self.is_leaf and is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        self._idx, self._val, self._coalesced = result._idx, result._val, result._coalesced
        return self

    def mul_(self, other: Any) -> SparseCooTensor:
        return self._inplace(self.mul(other))

    def div_(self, other: Any) -> SparseCooTensor:
        return self._inplace(self.div(other))

    def add_(self, other: Any, *, alpha: Any = 1) -> SparseCooTensor:
        if isinstance(other, SparseCooTensor):
            other = other.to(self.dtype)  # (the result keeps this tensor's dtype)
        return self._inplace(self.add(other, alpha=alpha))

    def sub_(self, other: Any, *, alpha: Any = 1) -> SparseCooTensor:
        return self.add_(other, alpha=-alpha)

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False,
             dtype: Any = None) -> Tensor:
        """The ``p``-norm of all elements (duplicates summed first): a dense 0-D tensor."""
        if dim is not None and sorted(wrap_dim(d, self.dim()) for d in (
                (dim,) if isinstance(dim, int) else dim)) != list(range(self.dim())):
            raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' "
                               "must either be empty or contain all dimensions of the input")
        val = self.coalesce()._val
        if dtype is not None:
            val = val.to(dtype)
        return val.norm(2 if p == "fro" else p)

    def sum(self, dim: Any = None, dtype: Any = None) -> Any:
        """Sum of all elements, or over ``dim`` (see :func:`sparse_sum`)."""
        return sparse_sum(self, dim, dtype=dtype)

    def mm(self, mat2: Any) -> Any:
        return _product(self, mat2, False, True)

    def matmul(self, other: Any) -> Any:
        return _product(self, other, True, True)

    __matmul__ = matmul

    def __rmatmul__(self, other: Any) -> Any:
        return _product(other, self, True, True)

    @staticmethod
    def _sparse_mm(a: Any, b: Any) -> Any:  # the hook pg.mm / pg.matmul look for
        # (shared by both: a 1-D dense operand is matmul's column)
        return _product(a, b, True, True)

    # ------------------------------------------------------------------ the rest
    def __repr__(self) -> str:
        """PyTorch's layout: the indices and the values without their dtypes, then the size,
        nnz, the dtype (unless a default one), the layout and the autograd state."""
        from .. import _format  # (imports the tensor machinery this module sits below)
        text = (f"tensor(indices={_repr_part(self._idx, 15)},\n       values="
                f"{_repr_part(self._val, 14)},\n       size={tuple(self._size)}, "
                f"nnz={self._nnz()}")
        suffixes = []
        if self.device.type != "cpu":
            suffixes.append(f"device='{self.device}'")
        if self.dtype not in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool):
            suffixes.append(f"dtype={self.dtype!r}")
        suffixes.append(f"layout={self.layout!r}")
        if self._val._grad_fn is not None:
            suffixes.append(f"grad_fn=<{self._val._grad_fn.name()}>")
        elif self._val.requires_grad:
            suffixes.append("requires_grad=True")
        return _format._with_suffixes(text, suffixes, 7)

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
                                      f"mm/matmul, sum, norm, add/sub of sparse tensors, mul by "
                                      f"a number, a dense or a sparse tensor, div by a number)")
        if not name.startswith("__"):  # a dense tensor's internals: a dense op got this tensor
            raise SparseLayoutError(f"{_public_caller()} is not supported for tensors with "
                             f"layout=portagrad.sparse_coo ('SparseCooTensor' object has no "
                             f"attribute '{name}')")
        raise AttributeError(f"'SparseCooTensor' object has no attribute '{name}'")

    def __getitem__(self, key: Any) -> Any:
        _refuse("indexing")

    def _compare(self, other: Any) -> Any:
        return _refuse("comparison")

    __lt__ = __le__ = __gt__ = __ge__ = _compare


class SparseLayoutError(NotImplementedError, AttributeError):
    """A dense op reached for a dense tensor's internals on a sparse tensor: to its caller a
    ``NotImplementedError`` naming the op; still an ``AttributeError`` to code that probes a
    tensor's internals (``getattr(x, "_storage", None)``)."""


def _public_caller() -> str:
    """The name of the portagrad function the user called (the outermost portagrad frame of
    the stack; computed on the error path only)."""
    frame = sys._getframe(2)
    name = "this operation"
    while frame is not None and frame.f_globals.get("__name__", "").startswith("portagrad."):
        name = frame.f_code.co_name
        frame = frame.f_back  # type: ignore[assignment]
    return name


def _repr_part(t: Tensor, column: int) -> str:
    """``tensor([...])`` of the indices or the values, printed from ``column`` on (continuation
    lines aligned under its first element), without a dtype: the sparse tensor names it once."""
    from .. import _format
    try:
        arr = _format._host_values(t)
    except Exception as exc:  # a repr must never raise
        return f"tensor(<unavailable: {exc}>)"
    if arr.size == 0:
        return f"tensor([], size={tuple(t.shape)})"
    opts = _format._opts
    summarize = arr.size > opts["threshold"]
    shown = _format._summarized(arr, opts["edgeitems"]) if summarize else arr
    fmt: Any = (_format._ComplexFormatter(shown) if arr.dtype.kind == "c"
                else _format._Formatter(shown))
    return "tensor(" + _format._nested(arr, column + len("tensor("), summarize, fmt) + ")"


def _lookup(table: SparseCooTensor, indices: Tensor) -> tuple[Tensor, Tensor]:
    """For each column of ``indices``: whether the coalesced ``table`` stores that position, and
    the slot where it does (a valid slot, to be masked, where it does not)."""
    n = table._nnz()
    with _no_grad():
        if n == 0:
            zero = _creation.zeros(indices.shape[1], dtype=_dtype.int64, device=indices.device)
            return zero.ne(0), zero
        dims = table._size[:table.sparse_dim()]
        keys = _linear(table._idx, dims)
        want = _linear(indices, dims)
        at = searchsorted(keys, want).clamp(None, n - 1)
        return index_select(keys, 0, at).eq(want), at


def _refuse(what: str) -> Any:
    raise NotImplementedError(f"{what} is not supported for tensors with "
                              f"layout=portagrad.sparse_coo")


def is_sparse(obj: Any) -> bool:
    return isinstance(obj, SparseCooTensor)


def _as_indices(indices: Any, device: Any) -> Tensor:
    """``indices`` as an int64 tensor on ``device`` (PyTorch converts float and bool indices)."""
    idx = indices.to(device) if isinstance(indices, Tensor) else _creation.tensor(indices,
                                                                                  device=device)
    return idx if idx.dtype is _dtype.int64 else idx.to(_dtype.int64)


def _check_coalesced_claim(idx: Tensor, size: Sequence[int]) -> None:
    """``is_coalesced=True`` under ``check_invariants``: the indices must be strictly increasing."""
    if idx.shape[1] < 2:
        return
    with _no_grad():
        lin = _linear(idx, size)
        ok = bool((lin[1:] > lin[:-1]).all().item())
    if not ok:
        raise RuntimeError("cannot set is_coalesced to true if indices correspond to uncoalesced "
                           "COO tensor")


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
    idx = _as_indices(indices, val.device)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if val.dim() == 0:  # one 0-d value: PyTorch takes it as the values of one entry
        val = val.reshape((1,))
    sd, nnz = idx.shape
    if val.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {val.shape[0]}")
    # (checked always, not only under check_invariants: an out-of-range index has no meaning)
    mins = [int(v) for v in idx.amin(1).tolist()] if nnz and sd else [0] * sd
    maxes = [int(v) for v in idx.amax(1).tolist()] if nnz and sd else [-1] * sd
    for d in range(sd):
        if mins[d] < 0:
            raise RuntimeError(f"found negative index {mins[d]} for dim {d}")
    if size is None:
        size = [m + 1 for m in maxes] + list(val.shape[1:])
    size = [int(s) for s in size]
    if len(size) != sd + val.dim() - 1:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(size)}, sparse_dim = {sd}, dense_dim = {val.dim() - 1}")
    for d in range(sd):
        if maxes[d] >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {maxes[d]}")
    if tuple(size[sd:]) != tuple(val.shape[1:]):
        raise RuntimeError(f"values has incorrect size, expected {[nnz] + size[sd:]}, got "
                           f"{list(val.shape)}")
    if is_coalesced and check_invariants:
        _check_coalesced_claim(idx, size[:sd])
    if requires_grad:
        val = val.detach().requires_grad_(True)
    coalesced = nnz <= 1 if is_coalesced is None else bool(is_coalesced)
    out = SparseCooTensor(idx, val, size, coalesced)
    out._owns_grad = requires_grad
    return out


def to_sparse(input: Tensor, sparse_dim: int | None = None, *, layout: Any = None) -> Any:
    """The sparse COO form of a dense tensor: the nonzero entries (of the first ``sparse_dim``
    dimensions; the rest stay dense in the values)."""
    if layout is not None and layout is not sparse_coo:
        _refuse(f"to_sparse(layout={layout!r}); only layout=portagrad.sparse_coo")
    n = input.dim()
    sd = n if sparse_dim is None else sparse_dim
    if not 0 <= sd <= n:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{n}] range, but "
                           f"{sd} is given")
    if sd == 0 and n > 0:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0")
    with _no_grad():
        nz = elementwise.ne(input, 0)
        if sd < input.dim():
            nz = nz.any(tuple(range(sd, input.dim())))
        idx = nonzero(nz).transpose(0, 1).contiguous()
        lin = _linear(idx, input.shape[:sd])
    flat = input.reshape((-1,) + tuple(input.shape[sd:]))
    val = index_select(flat, 0, lin)
    return SparseCooTensor(idx, val, input.shape, True)


def _scalar_name(dt: Any) -> str:
    return _dtype.SCALAR_TYPE_NAMES.get(dt.name, dt.name)


class _DenseGradTap(Function):
    """The identity on a product ``out``, whose backward also gives the sparse leaf's dense
    stand-in (:meth:`SparseCooTensor._dense_leaf`) the full gradient of the product with respect
    to it: ``g @ other^T`` (``sparse_left``) or ``other^T @ g``."""

    @staticmethod
    def forward(ctx: Any, out: Tensor, stand_in: Tensor, other: Tensor, sparse_left: bool
                ) -> Tensor:
        ctx.other, ctx.sparse_left = other, sparse_left
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        other = ctx.other
        full = mm(g, other.transpose(0, 1)) if ctx.sparse_left else mm(other.transpose(0, 1), g)
        return g, full, None, None


def _dense_grad_leaf(x: Any) -> bool:
    """Whether ``x`` is a sparse leaf whose gradient through mm / matmul / addmm is dense."""
    return (isinstance(x, SparseCooTensor) and x.requires_grad and x.is_leaf
            and is_grad_enabled())


def _product(mat1: Any, mat2: Any, vectors: bool, dense_grad: bool = False) -> Any:
    """``mat1 @ mat2`` where either may be sparse; ``vectors``: a 1-D dense ``mat2`` is a column
    (matmul's rule; mm and sparse.mm refuse it, as PyTorch). ``dense_grad``: a sparse leaf gets
    the full dense gradient (torch.mm, matmul, addmm), not one at its entries (sparse.mm)."""
    sparse_left = isinstance(mat1, SparseCooTensor)
    leaf = mat1 if sparse_left else mat2
    if dense_grad and _dense_grad_leaf(leaf) and isinstance(mat2 if sparse_left else mat1,
                                                            Tensor):
        other = mat2 if sparse_left else mat1
        vec = sparse_left and vectors and other.dim() == 1
        other2 = other.unsqueeze(1) if vec else other
        quiet = leaf.detach()
        out = _product(quiet, other2, False) if sparse_left else _product(other2, quiet, False)
        out = call(_DenseGradTap, out, leaf._dense_leaf(), other2.detach(), sparse_left)
        return out.squeeze(1) if vec else out
    if not isinstance(mat1, SparseCooTensor):
        if isinstance(mat2, SparseCooTensor):
            # dense @ sparse = (sparse^T @ dense^T)^T
            return _product(mat2.t(), mat1.transpose(0, 1), False).transpose(0, 1)
        return mm(mat1, mat2)  # torch.spmm of two dense matrices is mm
    if mat1.sparse_dim() != 2 or mat1.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {mat1.sparse_dim()}D tensor")
    if isinstance(mat2, SparseCooTensor):
        return _sparse_sparse_mm(mat1, mat2)
    vec = vectors and mat2.dim() == 1
    m2 = mat2.unsqueeze(1) if vec else mat2
    if m2.dim() == 1:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if m2.dim() != 2:
        raise RuntimeError(f"addmm: matrices expected, got {m2.dim()}D tensor")
    if mat1.shape[1] != m2.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1.shape[1]}, "
                           f"got {m2.shape[0]}")
    _check_same_dtype(mat1, m2)
    rows, cols = mat1._idx[0], mat1._idx[1]
    contrib = index_select(m2, 0, cols) * mat1._val.unsqueeze(1)
    out = _creation.zeros(mat1.shape[0], m2.shape[1], dtype=m2.dtype, device=m2.device)
    out = out.index_add(0, rows, contrib)
    return out.squeeze(1) if vec else out


def _check_same_dtype(a: Any, b: Any) -> None:
    """PyTorch's refusal of a sparse product of two dtypes."""
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(a.dtype)} but found "
                           f"{_scalar_name(b.dtype)}")


def _sparse_sparse_mm(a: SparseCooTensor, b: SparseCooTensor) -> SparseCooTensor:
    """Sparse @ sparse: a coalesced sparse result holding every position that some pair of
    stored entries reaches (even where their products cancel), as PyTorch."""
    if b.sparse_dim() != 2 or b.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {b.sparse_dim()}D tensor")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    _check_same_dtype(a, b)
    with _no_grad():  # the pattern: which positions some pair of entries reaches
        ones_a = SparseCooTensor(a._idx, _creation.ones(a._nnz(), device=a.device), a._size)
        ones_b = SparseCooTensor(b._idx, _creation.ones(b._nnz(), device=b.device), b._size)
        reach = _product(ones_a, ones_b.to_dense(), False)
        idx = nonzero(reach).transpose(0, 1).contiguous()
        lin = _linear(idx, reach.shape)
    full = _product(a, b.to_dense(), False)
    val = index_select(full.reshape((-1,)), 0, lin)
    return SparseCooTensor(idx, val, (a.shape[0], b.shape[1]), True)


def sparse_mm(mat1: Any, mat2: Any) -> Any:
    """``mat1 @ mat2`` for 2-D matrices, either of them sparse: dense with a dense operand, sparse
    for two sparse ones; differentiable with respect to the dense operand and the sparse
    operand's values."""
    return _product(mat1, mat2, False)


def spmm(mat1: Any, mat2: Any) -> Any:
    """``torch.spmm``: :func:`sparse_mm`, but a sparse leaf's gradient is dense, as torch.mm's."""
    return _product(mat1, mat2, False, True)


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
    name = "log_softmax" if log else "softmax"
    if not isinstance(input, SparseCooTensor):
        raise NotImplementedError(f"Could not run 'aten::_sparse_{name}' with arguments from the "
                                  f"'{getattr(input, 'device', 'cpu')}' backend: it takes a "
                                  f"sparse COO tensor")
    d = wrap_dim(dim, input.dim())
    out_dtype = input.dtype if dtype is None else dtype
    if not (out_dtype.is_floating_point or out_dtype.is_complex):
        raise NotImplementedError(f'"{name}" not implemented for '
                                  f"'{_scalar_name(out_dtype)}'")
    c = input.coalesce()
    val = c._val if dtype is None else c._val.to(dtype)
    sd = input.sparse_dim()
    if d >= sd:  # along a dense dimension: each entry's values on their own
        from .nn.softmax import softmax as dense_softmax  # (.nn imports this module)
        out = dense_softmax(val, d - sd + 1, log)
        return SparseCooTensor(c._idx, out, input.shape, True)
    # the entries of one slice along dim share all the other sparse coordinates: one group id
    # each (the dense dimensions are independent slices: they stay columns of the values)
    keep = [k for k in range(sd) if k != d]
    with _no_grad():
        if keep:
            rows = index_select(c._idx, 0, _creation.tensor(keep, device=c._idx.device))
            gid = _linear(rows, [input.shape[k] for k in keep])
            ngroups = math.prod(input.shape[k] for k in keep)
        else:
            gid = _creation.zeros(val.shape[0], dtype=_dtype.int64, device=val.device)
            ngroups = 1
    dense_shape = tuple(val.shape[1:])
    start = _creation.full((ngroups,) + dense_shape, -math.inf, dtype=val.dtype,
                           device=val.device)
    index = gid.reshape((-1,) + (1,) * len(dense_shape)).expand(tuple(val.shape))
    top = scatter_reduce(start, 0, index, val.detach(), "amax", include_self=False)
    z = val - index_select(top, 0, gid)
    e = elementwise.exp(z)
    tot = _creation.zeros((ngroups,) + dense_shape, dtype=val.dtype,
                          device=val.device).index_add(0, gid, e)
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
    if isinstance(input, Tensor):  # PyTorch's errors for a strided tensor
        if dim is None:
            raise RuntimeError("coalesce expected sparse coordinate tensor layout but got Strided")
        raise NotImplementedError(f"Could not run 'aten::_indices' with arguments from the "
                                  f"'{input.device.type.upper()}' backend: sparse.sum takes a "
                                  f"sparse COO tensor")
    if not isinstance(input, SparseCooTensor):
        raise TypeError(f"sparse.sum(): expected a tensor, got {type(input).__name__}")
    if input.dtype is _dtype.bool:  # duplicates of a bool tensor count once (True + True = True)
        input = input.coalesce()
    val = input._val if dtype is None else input._val.to(dtype)
    if dim is None:
        return val.sum()
    dims = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        d = wrap_dim(d, input.dim())
        if d in dims:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims.append(d)
    dims.sort()
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


# ---------------------------------------------------------------------- the top-level functions
# A top-level function (``portagrad.sqrt(s)``, ``portagrad.cat([s, s])``) meets a sparse tensor
# only on its failure path (a dense op reaching for a dense tensor's internals, or refusing an
# operand that is not a Tensor): there it looks up the ``_sparse_op`` hook (see
# ``_common.sparse_fallback``), which lands in :func:`_toplevel_op`. The dense hot path never
# checks for a sparse operand.

# unary functions with f(0) == 0: on a sparse tensor they act on the stored values (PyTorch
# supports these, and refuses the others: exp, cos, log ... would make every unstored zero
# nonzero)
_ZERO_PRESERVING = frozenset({
    "abs", "asin", "asinh", "atan", "atanh", "ceil", "deg2rad", "erf", "erfinv", "expm1",
    "floor", "frac", "isinf", "isnan", "log1p", "rad2deg", "relu", "round", "sgn", "sign",
    "signbit", "sin", "sinh", "sqrt", "tan", "tanh", "trunc"})
# ops linear in the values: duplicate entries may stay apart (the result keeps the coalesced
# state); a nonlinear f needs the duplicates summed first (f(a + b) != f(a) + f(b))
_LINEAR = frozenset({"neg", "negative"})


def _unary(name: str, fn: Any, input: SparseCooTensor, *args: Any, **kwargs: Any
           ) -> SparseCooTensor:
    """``fn`` (a zero-preserving elementwise function) of the stored values."""
    if kwargs.get("out") is not None:
        _refuse(f"{name}(out=...)")
    kwargs.pop("out", None)
    src = input if name in _LINEAR else input.coalesce()
    return SparseCooTensor(src._idx, fn(src._val, *args, **kwargs), input._size, src._coalesced)


def _binary(name: str, fn: Any, input: Any, other: Any, **kwargs: Any) -> Any:
    """add / sub / mul / div / pow with a sparse operand, as PyTorch: sparse (op) sparse and
    sparse (op) number are sparse, dense +/- sparse is dense, sparse * dense keeps the sparse
    entries; the rest is refused."""
    if kwargs.get("out") is not None:
        _refuse(f"{name}(out=...)")
    alpha = kwargs.get("alpha", 1)
    sparse_in = isinstance(input, SparseCooTensor)
    if name in ("add", "sub"):
        if sparse_in:
            return input.add(other, alpha=alpha) if name == "add" else input.sub(other,
                                                                                 alpha=alpha)
        if isinstance(input, Tensor):  # dense (op) sparse: dense
            other._dense_operand(input)
            return fn(input, other.to_dense(), alpha=alpha)
    elif name == "mul":
        return input.mul(other) if sparse_in else other.mul(input)
    elif name == "div":
        if sparse_in and not isinstance(other, SparseCooTensor) and not (
                isinstance(other, Tensor) and other.dim() != 0):
            mode = kwargs.get("rounding_mode")
            if mode is None:
                return input.div(other)
            return _unary(name, fn, input, other, rounding_mode=mode)
        shape = list(other.shape) if hasattr(other, "shape") else []
        raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor divisor "
                           f"(got shape {shape} for divisor)")
    elif name == "pow" and sparse_in and not isinstance(other, (Tensor, SparseCooTensor)):
        if other == 0:
            raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would "
                               "make the result tensor dense")
        return _unary(name, fn, input, other)
    return _refuse(f"{name} with these operands")


def _sum(fn: Any, input: SparseCooTensor, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None, out: Any = None) -> Any:
    if out is not None:
        _refuse("sum(out=...)")
    res = sparse_sum(input, dim, dtype)
    if keepdim and dim is not None and isinstance(res, SparseCooTensor):
        for d in sorted(wrap_dim(d, input.dim()) for d in ((dim,) if isinstance(dim, int)
                                                           else dim)):
            res = res.unsqueeze(d)
    return res


def _norm(fn: Any, input: SparseCooTensor, p: Any = "fro", dim: Any = None,
          keepdim: bool = False, dtype: Any = None) -> Tensor:
    return input.norm(p, dim, keepdim, dtype)


def _cat(fn: Any, tensors: Sequence[Any], dim: int = 0, *, out: Any = None) -> SparseCooTensor:
    """Sparse tensors concatenated along a sparse dimension (their entries together, the
    indices of each shifted past the ones before it)."""
    if out is not None:
        _refuse("cat(out=...)")
    for k, t in enumerate(tensors):
        if not isinstance(t, SparseCooTensor):
            raise RuntimeError(f"Concatenating sparse tensors, but a dense tensor was found at "
                               f"position {k}.")
    ref = tensors[0]
    d = wrap_dim(dim, ref.dim())
    sd = ref.sparse_dim()
    if d >= sd:
        _refuse("cat along a dense dimension")
    for k, t in enumerate(tensors):
        if t.dim() != ref.dim() or t.sparse_dim() != sd or any(
                t.shape[j] != ref.shape[j] for j in range(ref.dim()) if j != d):
            raise RuntimeError(f"concatenating sparse tensors: the tensor at position {k} has "
                               f"size {list(t.shape)} (sparse_dim {t.sparse_dim()}), expected "
                               f"{list(ref.shape)} (sparse_dim {sd}) except in dimension {d}")
    dt = ref.dtype
    for t in tensors[1:]:
        dt = _dtype.promote_types(dt, t.dtype)
    idxs, offset = [], 0
    shift = _creation.zeros((sd, 1), dtype=_dtype.int64, device=ref._idx.device)
    for t in tensors:
        shift[d, 0] = offset
        idxs.append(t._idx + shift)
        offset += t.shape[d]
    size = list(ref.shape)
    size[d] = offset
    return SparseCooTensor(cat(idxs, 1), cat([t._val.to(dt) for t in tensors], 0), size, False)


def _linear_op(fn: Any, input: Any, weight: Any, bias: Any = None) -> Any:
    """``F.linear`` with a sparse weight: ``input @ weight.T``, dense (no bias, as PyTorch)."""
    if not isinstance(weight, SparseCooTensor) or bias is not None:
        raise RuntimeError("addmm_sparse_dense: expected either 'mat1' to have sparse layout and "
                           "'mat2' to have strided layout, got 'mat1' with layout Strided and "
                           "'mat2' with layout Sparse")
    # as (weight @ input^T)^T: the leaf is the weight itself, whose gradient is then dense
    # (PyTorch's, as for torch.mm)
    if input.dim() == 1:
        return _product(weight, input, True, True)
    rows = input.reshape((-1, input.shape[-1]))
    out = _product(weight, rows.transpose(0, 1), False, True).transpose(0, 1)
    return out.reshape(tuple(input.shape[:-1]) + (weight.shape[0],))


def _unary_inplace(name: str, method: Any, input: SparseCooTensor, *args: Any, **kwargs: Any
                   ) -> SparseCooTensor:
    """``portagrad.sqrt_(s)``...: the dense in-place ``method`` on the stored values (of a
    coalesced tensor only, unless the op is linear, as PyTorch)."""
    if name[:-1] not in _LINEAR and not input._coalesced:
        raise RuntimeError(f"{name} requires coalesced input")
    method(input._val, *args, **kwargs)
    return input


def _method(name: str) -> Any:
    """The top-level form of a method of :class:`SparseCooTensor` (``fn`` unused)."""
    def op(fn: Any, input: SparseCooTensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, name)(*args, **kwargs)
    return op


_TOPLEVEL: dict[str, Any] = {
    "sum": _sum, "norm": _norm, "cat": _cat, "linear": _linear_op,
    "clone": _method("clone"), "t": _method("t"), "transpose": _method("transpose"),
    "permute": _method("permute"), "unsqueeze": _method("unsqueeze"),
    "index_select": _method("index_select"), "nan_to_num": _method("nan_to_num"),
}


def _toplevel_op(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Top-level function ``name`` (its dense implementation ``fn``) called with a sparse
    operand: this layout's result, or ``NotImplementedError`` naming the function."""
    impl = _TOPLEVEL.get(name)
    if impl is not None:
        return impl(fn, *args, **kwargs)
    if name in _ZERO_PRESERVING or name in _LINEAR:
        return _unary(name, fn, *args, **kwargs)
    if name in ("add", "sub", "mul", "div", "pow"):
        return _binary(name, fn, *args, **kwargs)
    if name.endswith("_") and (name[:-1] in _ZERO_PRESERVING or name[:-1] in _LINEAR):
        return _unary_inplace(name, fn, *args, **kwargs)
    if name == "zero_":
        return args[0].zero_()
    return _refuse(name)
