"""The Tensor API, declared: :class:`TensorOps`, the base class of :class:`~portagrad.Tensor`.

Every method here delegates in one line to the op function of the same name (``x.add(y)`` is
``portagrad.add(x, y)``), so ``pg.X`` and ``Tensor.X`` share one implementation and a reader or a
type checker finds each method in a class body. ``_tensor.py`` holds the data model.

The op modules import ``Tensor``, which derives from this class, so this module cannot import them
when it is loaded: ``_ops`` (the op package, whose ``__init__`` imports every op module, so a
method reads ``_ops.elementwise.add(self, other)``), ``_creation``, ``_random`` and ``_autograd``
are imported here for type checkers only, and bound at runtime by :func:`_bind`, which
``portagrad/__init__.py`` calls once the op modules are loaded.
That call is the one place where ``Tensor`` and the layers above it are tied together.
"""
from __future__ import annotations

import builtins
import numbers as _numbers
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as _np

from . import _dtype, _layout
from ._shape import broadcast_shapes
from ._storage import Size
from .autograd.grad_mode import _flags

if TYPE_CHECKING:
    import portagrad as _portagrad
    from . import _creation, _ops, _random
    from . import autograd as _autograd
    from ._device import device as _Device
    from ._tensor import Tensor

__all__ = ["TensorOps"]

# methods named float, int and bool live in the class below: its annotations use these names
_int = builtins.int
_float = builtins.float
_bool = builtins.bool

# _raw.binary_views and _raw.bare_expand, bound by _bind: plain globals are the cheapest lookups on
# the operators' fast path
_binary_views: Callable[..., Tensor]
_bare_expand: Callable[..., Any]


def _bind(tensor: type[Tensor], package: ModuleType, raw: ModuleType, creation: ModuleType,
          random: ModuleType, autograd: ModuleType, ops: ModuleType) -> None:
    """Bind the names the methods call (once, from ``portagrad/__init__.py``, after it has
    imported ``ops``, the ``portagrad._ops`` package, which imports every op module)."""
    global Tensor, _binary_views, _bare_expand, _portagrad, _creation, _random, _autograd, _ops
    Tensor = tensor  # type: ignore[misc]  # the class itself, imported above for type checkers
    _binary_views, _bare_expand = raw.binary_views, raw.bare_expand
    _portagrad, _creation, _random, _autograd, _ops = package, creation, random, autograd, ops


# ------------------------------------------------------------------------------- operators
def _is_numeric_ndarray(x: Any) -> _bool:
    """Whether ``x`` is a numpy array of numbers or bools (what ``==`` turns into a tensor)."""
    return isinstance(x, _np.ndarray) and x.dtype.kind in "biufc"


_T_WARNED: list[_bool] = []  # PyTorch warns once per process about x.T off 2-D tensors


def _warn_deprecated(message: str, stacklevel: int = 3) -> None:
    """A deprecation of PyTorch's that it reports as a UserWarning, pointed at the user's line
    (``stacklevel`` 3: the caller of the property that calls this)."""
    import warnings
    warnings.warn(message, UserWarning, stacklevel=stacklevel)


def _deprecated_T(d: int) -> None:
    """PyTorch's warnings for ``x.T`` on a tensor that is not 2-D."""
    if d == 0:
        _warn_deprecated("Tensor.T is deprecated on 0-D tensors. This function is the identity "
                         "in these cases.", 4)
    elif not _T_WARNED:
        _T_WARNED.append(True)
        _warn_deprecated("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                         "shape is deprecated and it will throw an error in a future release. "
                         "Consider `x.mT` to transpose batches of matrices or "
                         "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                         "dimensions of a tensor.", 4)


def _binop(fn: Callable[[Any, Any], Tensor], reflected: _bool = False
           ) -> Callable[[Any, Any], Tensor]:
    """The operator for ``fn``: ``NotImplemented`` unless the other operand is a tensor or a
    number (so Python tries the other side), operands swapped when ``reflected``."""
    def op(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, Tensor) and not _ops._common.is_scalar(other):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)

    return op


def _fast_binop(fn: Callable[[Any, Any], Tensor], prim: str, float_only: _bool = False,
                reflected: _bool = False) -> Callable[[Any, Any], Tensor]:
    """Operator with a fast path for the common cases, nothing to record: two tensors of one shape,
    dtype and device, or a tensor and a Python number that keeps the tensor's dtype (a float with
    a floating tensor, an int with an integer tensor). It goes straight to the backend primitive
    through ``_raw.binary_views``; everything else takes the general path, ``_binop(fn)``."""
    slow = _binop(fn, reflected)
    is_sub = prim == "sub"  # (sub raises on bools): decided once, not compared per call

    def op(self: Tensor, other: Any) -> Tensor:
        cls = other.__class__
        sv = self._v
        if cls is Tensor:
            ov = other._v
            st = self._storage
            dt = sv.dtype
            if (dt is ov.dtype and st.device is other._storage.device and not reflected
                    and not ((self._requires_grad or other._requires_grad) and _flags.grad)
                    and (not float_only or dt.is_floating_point)
                    and not (is_sub and dt is _dtype.bool)):
                shape = sv.shape
                if shape == ov.shape:
                    return _binary_views(prim, st, sv, ov, shape, dt)
                # broadcasting: stride-0 views straight to the primitive (no recorded expand)
                shape = broadcast_shapes(shape, ov.shape)
                a = sv if sv.shape == shape else _bare_expand(sv, shape)
                b = ov if ov.shape == shape else _bare_expand(ov, shape)
                return _binary_views(prim, st, a, b, shape, dt)
        elif ((cls is float and sv.dtype.is_floating_point)
              or (cls is int and sv.dtype._kind == 1 and not float_only)) \
                and not (self._requires_grad and _flags.grad):
            if reflected:
                return _binary_views(prim, self._storage, other, sv, sv.shape, sv.dtype)
            return _binary_views(prim, self._storage, sv, other, sv.shape, sv.dtype)
        return slow(self, other)

    op.__name__ = f"__{'r' if reflected else ''}{prim}__"
    return op


class TensorOps:
    """The computing methods and operators of :class:`~portagrad.Tensor` (its base class)."""

    __slots__ = ()

    if TYPE_CHECKING:  # the part of the data model (Tensor, in _tensor.py) used below
        @property
        def dtype(self) -> _dtype.dtype: ...
        @property
        def device(self) -> _Device: ...
        def dim(self) -> _int: ...
        def _set_from(self, other: Tensor) -> None: ...

    def __init__(self, *args: Any, device: Any = None) -> None:
        """``Tensor(data)`` copies ``data`` (default float dtype); ``Tensor(*sizes)`` is
        uninitialised (``torch.Tensor``; prefer ``pg.tensor``, ``pg.empty``)."""
        if getattr(self, "_v", None) is not None:
            return
        if len(args) == 1 and not isinstance(args[0], int):
            src = _creation.tensor(args[0], dtype=_dtype.get_default_dtype(), device=device)
        elif not args:  # Tensor(): an empty 1-D tensor, as PyTorch
            src = _creation.empty(0, device=device)
        else:
            src = _creation.empty(*args, device=device)
        self._set_from(src)

    def backward(self, gradient: Tensor | None = None, retain_graph: _bool | None = None,
                 create_graph: _bool = False, inputs: Sequence[Tensor] | None = None) -> None:
        """Compute the gradient of this tensor w.r.t. graph leaves (accumulated into ``.grad``)."""
        _autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ----------------------------------------------------------------------------- elementwise
    def add(self, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
        """``input + alpha * other`` with broadcasting."""
        return _ops.elementwise.add(self, other, alpha=alpha, out=out)

    def sub(self, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
        """``input - alpha * other``."""
        return _ops.elementwise.sub(self, other, alpha=alpha, out=out)

    subtract = sub

    def mul(self, other: Any, *, out: Tensor | None = None) -> Tensor:
        """Elementwise product."""
        return _ops.elementwise.mul(self, other, out=out)

    multiply = mul

    def div(self, other: Any, *, rounding_mode: str | None = None, out: Tensor | None = None
        ) -> Tensor:
        """Division: true (``None``), ``"trunc"`` or ``"floor"`` rounding."""
        return _ops.elementwise.div(self, other, rounding_mode=rounding_mode, out=out)

    divide = div
    true_divide = div

    def floor_divide(self, other: Any) -> Tensor:
        return _ops.elementwise.floor_divide(self, other)

    def remainder(self, other: Any) -> Tensor:
        """Python-style modulus (sign of the divisor)."""
        return _ops.elementwise.remainder(self, other)

    def fmod(self, other: Any) -> Tensor:
        """C-style modulus (sign of the dividend): ``a - trunc(a / b) * b``."""
        return _ops.elementwise.fmod(self, other)

    def pow(self, exponent: Any) -> Tensor:
        """``input ** exponent`` (tensor or scalar on either side)."""
        return _ops.elementwise.pow(self, exponent)

    def maximum(self, other: Any) -> Tensor:
        """Elementwise maximum (NaN propagates)."""
        return _ops.elementwise.maximum(self, other)

    def minimum(self, other: Any) -> Tensor:
        """Elementwise minimum (NaN propagates)."""
        return _ops.elementwise.minimum(self, other)

    def atan2(self, other: Tensor) -> Tensor:
        return _ops.elementwise.atan2(self, other)

    def neg(self) -> Tensor:
        return _ops.elementwise.neg(self)

    negative = neg

    def abs(self) -> Tensor:
        return _ops.elementwise.abs(self)

    absolute = abs

    def sign(self) -> Tensor:
        return _ops.elementwise.sign(self)

    def sgn(self) -> Tensor:
        return _ops.elementwise.sgn(self)

    def exp(self) -> Tensor:
        return _ops.elementwise.exp(self)

    def expm1(self) -> Tensor:
        return _ops.elementwise.expm1(self)

    def log(self) -> Tensor:
        return _ops.elementwise.log(self)

    def log2(self) -> Tensor:
        return _ops.elementwise.log2(self)

    def log10(self) -> Tensor:
        return _ops.elementwise.log10(self)

    def log1p(self) -> Tensor:
        return _ops.elementwise.log1p(self)

    def sqrt(self) -> Tensor:
        return _ops.elementwise.sqrt(self)

    def rsqrt(self) -> Tensor:
        return _ops.elementwise.rsqrt(self)

    def square(self) -> Tensor:
        return _ops.elementwise.square(self)

    def sin(self) -> Tensor:
        return _ops.elementwise.sin(self)

    def cos(self) -> Tensor:
        return _ops.elementwise.cos(self)

    def tan(self) -> Tensor:
        return _ops.elementwise.tan(self)

    def tanh(self) -> Tensor:
        return _ops.elementwise.tanh(self)

    def sigmoid(self) -> Tensor:
        return _ops.elementwise.sigmoid(self)

    def relu(self) -> Tensor:
        return _ops.elementwise.relu(self)

    def erf(self) -> Tensor:
        return _ops.elementwise.erf(self)

    def floor(self) -> Tensor:
        return _ops.elementwise.floor(self)

    def ceil(self) -> Tensor:
        return _ops.elementwise.ceil(self)

    def round(self, *, decimals: _int = 0) -> Tensor:
        """Round half to even (``decimals`` digits)."""
        return _ops.elementwise.round(self, decimals=decimals)

    def trunc(self) -> Tensor:
        return _ops.elementwise.trunc(self)

    def frac(self) -> Tensor:
        return _ops.elementwise.frac(self)

    def reciprocal(self) -> Tensor:
        return _ops.elementwise.reciprocal(self)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:
        """Limit values to ``[min, max]`` (either may be ``None``; tensors broadcast)."""
        return _ops.elementwise.clamp(self, min, max)

    clip = clamp

    def lerp(self, end: Tensor, weight: Any) -> Tensor:
        """``input + weight * (end - input)``."""
        return _ops.elementwise.lerp(self, end, weight)

    def eq(self, other: Any) -> Tensor:
        return _ops.elementwise.eq(self, other)

    def ne(self, other: Any) -> Tensor:
        return _ops.elementwise.ne(self, other)

    not_equal = ne

    def lt(self, other: Any) -> Tensor:
        return _ops.elementwise.lt(self, other)

    less = lt

    def le(self, other: Any) -> Tensor:
        return _ops.elementwise.le(self, other)

    less_equal = le

    def gt(self, other: Any) -> Tensor:
        return _ops.elementwise.gt(self, other)

    greater = gt

    def ge(self, other: Any) -> Tensor:
        return _ops.elementwise.ge(self, other)

    greater_equal = ge

    def logical_not(self) -> Tensor:
        return _ops.elementwise.logical_not(self)

    def logical_and(self, other: Any) -> Tensor:
        return _ops.elementwise.logical_and(self, other)

    def logical_or(self, other: Any) -> Tensor:
        return _ops.elementwise.logical_or(self, other)

    def logical_xor(self, other: Any) -> Tensor:
        return _ops.elementwise.logical_xor(self, other)

    def bitwise_and(self, other: Any) -> Tensor:
        return _ops.elementwise.bitwise_and(self, other)

    def bitwise_or(self, other: Any) -> Tensor:
        return _ops.elementwise.bitwise_or(self, other)

    def bitwise_xor(self, other: Any) -> Tensor:
        return _ops.elementwise.bitwise_xor(self, other)

    def bitwise_not(self) -> Tensor:
        return _ops.elementwise.bitwise_not(self)

    def isnan(self) -> Tensor:
        return _ops.elementwise.isnan(self)

    def isinf(self) -> Tensor:
        return _ops.elementwise.isinf(self)

    def isfinite(self) -> Tensor:
        return _ops.elementwise.isfinite(self)

    def nan_to_num(self, nan: _float = 0.0, posinf: _float | None = None,
                   neginf: _float | None = None) -> Tensor:
        return _ops.elementwise.nan_to_num(self, nan, posinf, neginf)

    def exp2(self) -> Tensor:
        return _ops.elementwise.exp2(self)

    def logaddexp(self, other: Tensor) -> Tensor:
        return _ops.elementwise.logaddexp(self, other)

    def hypot(self, other: Tensor) -> Tensor:
        return _ops.elementwise.hypot(self, other)

    def signbit(self) -> Tensor:
        return _ops.elementwise.signbit(self)

    def positive(self) -> Tensor:
        return _ops.elementwise.positive(self)

    # ----------------------------------------------------------------------------- reductions
    def sum(self, dim: Any = None, keepdim: _bool = False, *, dtype: Any = None) -> Tensor:
        """Sum over ``dim`` (all dimensions if ``None``)."""
        return _ops.reduction.sum(self, dim, keepdim, dtype=dtype)

    def nansum(self, dim: Any = None, keepdim: _bool = False, *, dtype: Any = None) -> Tensor:
        return _ops.reduction.nansum(self, dim, keepdim, dtype=dtype)

    def mean(self, dim: Any = None, keepdim: _bool = False, *, dtype: Any = None) -> Tensor:
        """Arithmetic mean over ``dim``."""
        return _ops.reduction.mean(self, dim, keepdim, dtype=dtype)

    def prod(self, dim: Any = None, keepdim: _bool = False, *, dtype: Any = None) -> Tensor:
        """Product over ``dim`` (one dimension, or all if ``None``)."""
        return _ops.reduction.prod(self, dim, keepdim, dtype=dtype)

    def max(self, dim: Any = None, keepdim: _bool = False, *, other: Any = None) -> Any:
        """Maximum of all elements, or ``(values, indices)`` along ``dim``."""
        return _ops.reduction.max(self, dim, keepdim, other=other)

    def min(self, dim: Any = None, keepdim: _bool = False, *, other: Any = None) -> Any:
        """Minimum of all elements, or ``(values, indices)`` along ``dim``."""
        return _ops.reduction.min(self, dim, keepdim, other=other)

    def amax(self, dim: Any = (), keepdim: _bool = False) -> Tensor:
        """Maximum over ``dim`` (all dims when empty)."""
        return _ops.reduction.amax(self, dim, keepdim)

    def amin(self, dim: Any = (), keepdim: _bool = False) -> Tensor:
        """Minimum over ``dim`` (all dims when empty)."""
        return _ops.reduction.amin(self, dim, keepdim)

    def aminmax(self, *, dim: Any = None, keepdim: _bool = False) -> Any:
        return _ops.reduction.aminmax(self, dim=dim, keepdim=keepdim)

    def argmax(self, dim: _int | None = None, keepdim: _bool = False) -> Tensor:
        """Index of the (first) maximum, over the flattened tensor if ``dim`` is ``None``."""
        return _ops.reduction.argmax(self, dim, keepdim)

    def argmin(self, dim: _int | None = None, keepdim: _bool = False) -> Tensor:
        """Index of the (first) minimum."""
        return _ops.reduction.argmin(self, dim, keepdim)

    def var(self, dim: Any = None, unbiased: Any = None, keepdim: _bool = False, *,
            correction: Any = None) -> Tensor:
        """Variance with Bessel's ``correction`` (default 1)."""
        return _ops.reduction.var(self, dim, unbiased, keepdim, correction=correction)

    def std(self, dim: Any = None, unbiased: Any = None, keepdim: _bool = False, *,
            correction: Any = None) -> Tensor:
        """Standard deviation (``sqrt(var)``)."""
        return _ops.reduction.std(self, dim, unbiased, keepdim, correction=correction)

    def logsumexp(self, dim: Any, keepdim: _bool = False) -> Tensor:
        """``log(sum(exp(x)))`` computed stably (max subtracted first)."""
        return _ops.reduction.logsumexp(self, dim, keepdim)

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: _bool = False, dtype: Any = None
             ) -> Tensor:
        """Vector p-norm over ``dim`` (2-norm by default; ``inf``, ``-inf``, 0, 1, any p), or
        ``p="nuc"``: the nuclear norm of the matrices in ``dim``."""
        return _ops.linalg_ext.norm(self, p, dim, keepdim, dtype)

    def any(self, dim: Any = None, keepdim: _bool = False) -> Tensor:
        """Whether any element is nonzero (over ``dim``)."""
        return _ops.reduction.any(self, dim, keepdim)

    def all(self, dim: Any = None, keepdim: _bool = False) -> Tensor:
        """Whether every element is nonzero (over ``dim``)."""
        return _ops.reduction.all(self, dim, keepdim)

    def cumsum(self, dim: _int, *, dtype: Any = None) -> Tensor:
        """Inclusive prefix sums along ``dim``."""
        return _ops.scan.cumsum(self, dim, dtype=dtype)

    def count_nonzero(self, dim: Any = None) -> Tensor:
        return _ops.reduction.count_nonzero(self, dim)

    # ------------------------------------------------------------------------- linear algebra
    def matmul(self, other: Tensor) -> Tensor:
        """Matrix product (NumPy/PyTorch semantics for 1-D, 2-D and batched inputs)."""
        return _ops.matmul.matmul(self, other)

    def mm(self, mat2: Tensor) -> Tensor:
        """2-D matrix product (no broadcasting)."""
        return _ops.matmul.mm(self, mat2)

    def bmm(self, mat2: Tensor) -> Tensor:
        """Batched 3-D matrix product (no broadcasting)."""
        return _ops.matmul.bmm(self, mat2)

    def dot(self, other: Tensor) -> Tensor:
        """Inner product of two 1-D tensors of equal length."""
        return _ops.matmul.dot(self, other)

    def vdot(self, other: Tensor) -> Tensor:
        return _ops.matmul.vdot(self, other)

    def inner(self, other: Tensor) -> Tensor:
        """Sums of products over the last dimension of both."""
        return _ops.matmul.inner(self, other)

    def outer(self, vec2: Tensor) -> Tensor:
        """Outer product of two 1-D tensors."""
        return _ops.matmul.outer(self, vec2)

    ger = outer

    def mv(self, vec: Tensor) -> Tensor:
        """Matrix-vector product."""
        return _ops.matmul.mv(self, vec)

    def addmm(self, mat1: Tensor, mat2: Tensor, *, beta: _float = 1, alpha: _float = 1) -> Tensor:
        """``beta * input + alpha * (mat1 @ mat2)``."""
        return _ops.matmul.addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def baddbmm(self, batch1: Tensor, batch2: Tensor, *, beta: _float = 1, alpha: _float = 1
                ) -> Tensor:
        return _ops.matmul.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    # ----------------------------------------------------------------------- views and shapes
    def view(self, *shape: Any) -> Tensor:
        """A view with a new shape (no copy; errors when the strides do not allow it)."""
        return _ops.shape.view(self, *shape)

    def reshape(self, *shape: Any) -> Tensor:
        """A tensor with a new shape: a view when possible, else a copy."""
        return _ops.shape.reshape(self, *shape)

    def view_as(self, other: Tensor) -> Tensor:
        return _ops.shape.view_as(self, other)

    def reshape_as(self, other: Tensor) -> Tensor:
        return _ops.shape.reshape_as(self, other)

    def expand(self, *sizes: Any) -> Tensor:
        """A broadcast view (stride 0 along new or size-1 dimensions); ``-1`` keeps a size."""
        return _ops.shape.expand(self, *sizes)

    def expand_as(self, other: Tensor) -> Tensor:
        return _ops.shape.expand_as(self, other)

    def broadcast_to(self, shape: Sequence[_int]) -> Tensor:
        return _ops.shape.broadcast_to(self, shape)

    def transpose(self, dim0: _int, dim1: _int) -> Tensor:
        """Swap two dimensions (a view)."""
        return _ops.shape.transpose(self, dim0, dim1)

    swapaxes = transpose
    swapdims = transpose

    def t(self) -> Tensor:
        """Transpose a tensor of at most 2 dimensions."""
        return _ops.shape.t(self)

    def permute(self, *dims: Any) -> Tensor:
        """Reorder dimensions (a view)."""
        return _ops.shape.permute(self, *dims)

    def movedim(self, source: Any, destination: Any) -> Tensor:
        return _ops.shape.movedim(self, source, destination)

    moveaxis = movedim

    def squeeze(self, dim: Any = None) -> Tensor:
        """Drop size-1 dimensions (all, or the given ones)."""
        return _ops.shape.squeeze(self, dim)

    def unsqueeze(self, dim: _int) -> Tensor:
        """Insert a size-1 dimension at ``dim``."""
        return _ops.shape.unsqueeze(self, dim)

    def flatten(self, start_dim: _int = 0, end_dim: _int = -1) -> Tensor:
        """Merge dimensions ``start_dim..end_dim`` into one."""
        return _ops.shape.flatten(self, start_dim, end_dim)

    def unflatten(self, dim: _int, sizes: Sequence[_int]) -> Tensor:
        return _ops.shape.unflatten(self, dim, sizes)

    def narrow(self, dim: _int, start: _int, length: _int) -> Tensor:
        """The view ``x[..., start:start+length, ...]`` along ``dim``."""
        return _ops.shape.narrow(self, dim, start, length)

    def select(self, dim: _int, index: _int) -> Tensor:
        """The view ``x[..., index, ...]`` along ``dim`` (that dimension removed)."""
        return _ops.shape.select(self, dim, index)

    def unbind(self, dim: _int = 0) -> tuple[Tensor, ...]:
        """Views of each slice along ``dim``."""
        return _ops.shape.unbind(self, dim)

    def as_strided(self, size: Sequence[_int], stride: Sequence[_int],
                   storage_offset: _int | None = None) -> Tensor:
        """A view with explicit sizes, strides (in elements) and storage offset."""
        return _ops.shape.as_strided(self, size, stride, storage_offset)

    # ------------------------------------------------------------------------------- indexing
    def gather(self, dim: _int, index: Tensor, *, sparse_grad: _bool = False) -> Tensor:
        """``out[i][j] = input[index[i][j]][j]`` along ``dim`` (``torch.gather``)."""
        return _ops.indexing.gather(self, dim, index, sparse_grad=sparse_grad)

    def scatter(self, dim: _int, index: Tensor, src: Any = None, *, value: Any = None,
                reduce: str | None = None) -> Tensor:
        """A copy of ``self`` with ``src`` (or ``value``) written at ``index``."""
        return _ops.indexing.scatter(self, dim, index, src, value=value, reduce=reduce)

    def scatter_add(self, dim: _int, index: Tensor, src: Tensor) -> Tensor:
        """Out-of-place scatter with accumulation of duplicates."""
        return _ops.indexing.scatter_add(self, dim, index, src)

    def index_select(self, dim: _int, index: Tensor) -> Tensor:
        """Rows (or slices along ``dim``) picked by the 1-D integer ``index``."""
        return _ops.indexing.index_select(self, dim, index)

    def masked_fill(self, mask: Tensor, value: Any) -> Tensor:
        """``input`` with ``value`` where the _bool ``mask`` (broadcast) is true."""
        return _ops.indexing.masked_fill(self, mask, value)

    def masked_select(self, mask: Tensor) -> Tensor:
        return _ops.indexing.masked_select(self, mask)

    def nonzero(self, *, as_tuple: _bool = False) -> Any:
        """Indices of nonzero elements (``(n, ndim)`` int64, or a tuple of 1-D index tensors)."""
        return _ops.indexing.nonzero(self, as_tuple=as_tuple)

    def flip(self, *dims: Any) -> Tensor:
        """Reverse the order along ``dims`` (a copy, as PyTorch): ``flip(0, 1)`` or
        ``flip((0, 1))``."""
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        return _ops.indexing.flip(self, dims)

    def take_along_dim(self, indices: Tensor, dim: _int | None = None) -> Tensor:
        return _ops.indexing.take_along_dim(self, indices, dim)

    def index_add(self, dim: _int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        return _ops.indexing.index_add(self, dim, index, source, alpha=alpha)

    def index_fill(self, dim: _int, index: Tensor, value: Any) -> Tensor:
        return _ops.indexing.index_fill(self, dim, index, value)

    def index_copy(self, dim: _int, index: Tensor, source: Tensor) -> Tensor:
        return _ops.indexing.index_copy(self, dim, index, source)

    # -------------------------------------------------------------- joining, splitting, order
    def split(self, split_size_or_sections: Any, dim: _int = 0) -> tuple[Tensor, ...]:
        """Views of chunks of ``split_size`` (last may be smaller) or of the given section sizes."""
        return _ops.joining.split(self, split_size_or_sections, dim)

    def chunk(self, chunks: _int, dim: _int = 0) -> tuple[Tensor, ...]:
        """Split into ``chunks`` nearly equal views (fewer if the size is small)."""
        return _ops.joining.chunk(self, chunks, dim)

    def tensor_split(self, *args: Any, **kwargs: Any) -> tuple[Tensor, ...]:
        """Views split into sections or at indices along ``dim`` (see ``portagrad.tensor_split``)."""
        return _ops.joining.tensor_split(self, *args, **kwargs)

    def sort(self, dim: _int = -1, descending: _bool = False, stable: _bool = False) -> Any:
        """Sorted values and their indices along ``dim`` (stable)."""
        return _ops.sorting.sort(self, dim, descending, stable)

    def argsort(self, dim: _int = -1, descending: _bool = False, stable: _bool = False) -> Tensor:
        """Indices that sort ``input`` along ``dim``."""
        return _ops.sorting.argsort(self, dim, descending, stable)

    def msort(self) -> Tensor:
        return _ops.sorting.msort(self)

    def topk(self, k: _int, dim: _int = -1, largest: _bool = True, sorted: _bool = True) -> Any:
        """The ``k`` largest (or smallest) values and their indices along ``dim``."""
        return _ops.sorting.topk(self, k, dim, largest, sorted)

    def kthvalue(self, k: _int, dim: _int = -1, keepdim: _bool = False) -> Any:
        return _ops.sorting.kthvalue(self, k, dim, keepdim)

    def median(self, dim: Any = None, keepdim: _bool = False) -> Any:
        """Lower median (of all elements, or ``(values, indices)`` along ``dim``)."""
        return _ops.sorting.median(self, dim, keepdim)

    def repeat(self, *sizes: Any) -> Tensor:
        """Tile ``input`` ``sizes`` times along each dimension (a copy)."""
        return _ops.joining.repeat(self, *sizes)

    def tile(self, *dims: Any) -> Tensor:
        """``repeat`` with ones prepended to ``dims``; ``x.tile(3)``, ``x.tile(2, 2)`` and
        ``x.tile((2, 2))`` (PyTorch's method takes sizes as separate ints or one sequence)."""
        return _ops.joining.tile(self,
                                 dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims)

    def repeat_interleave(self, repeats: Any, dim: _int | None = None) -> Tensor:
        return _ops.joining.repeat_interleave(self, repeats, dim)

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        return _ops.joining.roll(self, shifts, dims)

    def tril(self, diagonal: _int = 0) -> Tensor:
        """Lower triangle (the rest zeroed)."""
        return _ops.joining.tril(self, diagonal)

    def triu(self, diagonal: _int = 0) -> Tensor:
        """Upper triangle (the rest zeroed)."""
        return _ops.joining.triu(self, diagonal)

    # ----------------------------------------------------------------------------- conversion
    def to(self, *args: Any, device: Any = None, dtype: Any = None, non_blocking: _bool = False,
           copy: _bool = False, memory_format: Any = None) -> Tensor:
        """``self`` on another device and/or dtype (``self`` when nothing changes)."""
        return _ops.conversion.to(self, *args, device=device, dtype=dtype, non_blocking=non_blocking,
                                  copy=copy,
                     memory_format=memory_format)

    def clone(self, memory_format: Any = None) -> Tensor:
        """A copy with its own storage (recorded: gradients flow back to ``x``)."""
        return _ops.conversion.clone(self, memory_format)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        """``x`` if contiguous, else a contiguous copy."""
        return _ops.conversion.contiguous(self, memory_format)

    def type_as(self, other: Tensor) -> Tensor:
        return _ops.conversion.type_as(self, other)

    def cpu(self) -> Tensor:
        """A copy on the ``cpu`` device (``x`` itself if already there)."""
        return _ops.conversion.cpu(self)

    # ------------------------------------------------------------------------------ in place
    # Computed by the out-of-place op and written into self (see _ops.conversion.inplace).
    # Keyword arguments are passed only when given: binary_inplace's one-pass path needs none.
    def add_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        if alpha != 1 or isinstance(alpha, _bool):  # (True is 1, but PyTorch checks a bool alpha)
            return _ops.elementwise.binary_inplace(_ops.elementwise.add, self, other, alpha=alpha)
        return _ops.elementwise.binary_inplace(_ops.elementwise.add, self, other)

    def sub_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        if alpha != 1 or isinstance(alpha, _bool):  # (True is 1, but PyTorch checks a bool alpha)
            return _ops.elementwise.binary_inplace(_ops.elementwise.sub, self, other, alpha=alpha)
        return _ops.elementwise.binary_inplace(_ops.elementwise.sub, self, other)

    subtract_ = sub_

    def mul_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.mul, self, other)

    multiply_ = mul_

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is not None:
            return _ops.elementwise.binary_inplace(_ops.elementwise.div, self, other,
                                                   rounding_mode=rounding_mode)
        return _ops.elementwise.binary_inplace(_ops.elementwise.div, self, other)

    divide_ = div_
    true_divide_ = div_

    def pow_(self, exponent: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.pow, self, exponent)

    def remainder_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.remainder, self, other)

    def fmod_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.fmod, self, other)

    def floor_divide_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.floor_divide, self, other)

    def maximum_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.maximum, self, other)

    def minimum_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.minimum, self, other)

    def atan2_(self, other: Tensor) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.atan2, self, other)

    def lerp_(self, end: Tensor, weight: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.lerp, self, end, weight)

    def bitwise_and_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.bitwise_and, self, other)

    def bitwise_or_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.bitwise_or, self, other)

    def bitwise_xor_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.bitwise_xor, self, other)

    # comparisons and logical ops give bools: the result is cast back to self's dtype
    def eq_(self, other: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t, o: _ops.elementwise.eq(t, o).to(t.dtype), self, other)

    def ne_(self, other: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t, o: _ops.elementwise.ne(t, o).to(t.dtype), self, other)

    def lt_(self, other: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t, o: _ops.elementwise.lt(t, o).to(t.dtype), self, other)

    def le_(self, other: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t, o: _ops.elementwise.le(t, o).to(t.dtype), self, other)

    def gt_(self, other: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t, o: _ops.elementwise.gt(t, o).to(t.dtype), self, other)

    def ge_(self, other: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t, o: _ops.elementwise.ge(t, o).to(t.dtype), self, other)

    def logical_and_(self, other: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t, o: _ops.elementwise.logical_and(t, o).to(t.dtype),
                                              self, other)

    def logical_or_(self, other: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t, o: _ops.elementwise.logical_or(t, o).to(t.dtype),
                                              self, other)

    def logical_xor_(self, other: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t, o: _ops.elementwise.logical_xor(t, o).to(t.dtype),
                                              self, other)

    def logical_not_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t: _ops.elementwise.logical_not(t).to(t.dtype), self)

    def neg_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.neg, self)

    negative_ = neg_

    def abs_(self) -> Tensor:
        if self.dtype.is_complex:  # the result is real: it cannot be stored in place
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        return _ops.elementwise.unary_inplace(_ops.elementwise.abs, self)

    def sign_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.sign, self)

    def exp_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.exp, self)

    def expm1_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.expm1, self)

    def log_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.log, self)

    def log1p_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.log1p, self)

    def log2_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.log2, self)

    def log10_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.log10, self)

    def sqrt_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.sqrt, self)

    def rsqrt_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.rsqrt, self)

    def square_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.square, self)

    def sin_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.sin, self)

    def cos_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.cos, self)

    def tan_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.tan, self)

    def tanh_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.tanh, self)

    def sigmoid_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.sigmoid, self)

    def relu_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.relu, self)

    def erf_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.erf, self)

    def floor_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.floor, self)

    def ceil_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.ceil, self)

    def round_(self, *, decimals: _int = 0) -> Tensor:
        if decimals:
            return _ops.elementwise.unary_inplace(_ops.elementwise.round, self, decimals=decimals)
        return _ops.elementwise.unary_inplace(_ops.elementwise.round, self)

    def trunc_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.trunc, self)

    def frac_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.frac, self)

    def reciprocal_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.reciprocal, self)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.clamp, self, min, max)

    clip_ = clamp_

    def nan_to_num_(self, nan: _float = 0.0, posinf: _float | None = None,
                    neginf: _float | None = None) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.nan_to_num, self, nan, posinf, neginf)

    def bitwise_not_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.bitwise_not, self)

    def masked_fill_(self, mask: Tensor, value: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.indexing.masked_fill, self, mask, value)

    def scatter_(self, dim: _int, index: Tensor, src: Any = None, *, value: Any = None,
                 reduce: str | None = None) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.indexing.scatter, self, dim, index, src, value=value,
                                              reduce=reduce)

    def scatter_add_(self, dim: _int, index: Tensor, src: Tensor) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.indexing.scatter_add, self, dim, index, src)

    def index_add_(self, dim: _int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.indexing.index_add, self, dim, index, source, alpha=alpha)

    def index_fill_(self, dim: _int, index: Tensor, value: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.indexing.index_fill, self, dim, index, value)

    def index_copy_(self, dim: _int, index: Tensor, source: Tensor) -> Tensor:
        return _ops.elementwise.index_copy_inplace(self, dim, index, source)

    def tril_(self, diagonal: _int = 0) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.joining.tril, self, diagonal)

    def triu_(self, diagonal: _int = 0) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.joining.triu, self, diagonal)

    def fill_(self, value: Any) -> Tensor:
        """Fill with ``value`` in place."""
        return _ops.conversion.fill_(self, value)

    def zero_(self) -> Tensor:
        """Fill with zeros in place."""
        return _ops.conversion.fill_(self, 0)

    def copy_(self, src: Any, non_blocking: _bool = False) -> Tensor:
        """Copy ``src`` into ``self`` in place (broadcasting, casting, across devices)."""
        return _ops.conversion.copy_(self, src, non_blocking)

    # ------------------------------------------------------------------------- random fills
    def uniform_(self, a: _float = 0.0, b: _float = 1.0, *, generator: _random.Generator | None = None
                 ) -> Tensor:
        """Fill in place with uniform numbers in ``[a, b)``."""
        return _random.uniform_(self, a, b, generator=generator)

    def normal_(self, mean: _float = 0.0, std: _float = 1.0, *,
                generator: _random.Generator | None = None) -> Tensor:
        """Fill in place with normal numbers."""
        return _random.normal_(self, mean, std, generator=generator)

    def random_(self, *args: Any, generator: _random.Generator | None = None, **kwargs: Any
                ) -> Tensor:
        """Fill in place with integers: ``random_()`` over the dtype's exact range,
        ``random_(to)`` over ``[0, to)``, ``random_(from, to)`` over ``[from, to)``."""
        return _random.random_(self, *args, generator=generator, **kwargs)

    def bernoulli_(self, p: Any = 0.5, *, generator: _random.Generator | None = None) -> Tensor:
        """Fill in place with 0/1 draws of probability ``p``."""
        return _random.bernoulli_(self, p, generator=generator)

    def bernoulli(self, *, generator: _random.Generator | None = None) -> Tensor:
        """0/1 draws with probabilities ``self``."""
        return _random.bernoulli(self, generator=generator)

    def exponential_(self, lambd: _float = 1.0, *, generator: _random.Generator | None = None
                     ) -> Tensor:
        """Fill in place with exponentially distributed numbers of rate ``lambd``."""
        return _random.exponential_(self, lambd, generator=generator)

    # ------------------------------------------------------------------------ dtype shortcuts
    def float(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.float32)``."""
        return _ops.conversion.to(self, dtype=_dtype.float32)

    def double(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.float64)``."""
        return _ops.conversion.to(self, dtype=_dtype.float64)

    def cfloat(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.complex64)``."""
        return _ops.conversion.to(self, dtype=_dtype.complex64)

    def chalf(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.complex32)``: raises ``DTypeError`` (portagrad names complex32
        but has no tensors of it)."""
        return _ops.conversion.to(self, dtype=_dtype.complex32)

    def cdouble(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.complex128)``."""
        return _ops.conversion.to(self, dtype=_dtype.complex128)

    def half(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.float16)``."""
        return _ops.conversion.to(self, dtype=_dtype.float16)

    def int(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.int32)``."""
        return _ops.conversion.to(self, dtype=_dtype.int32)

    def long(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.int64)``."""
        return _ops.conversion.to(self, dtype=_dtype.int64)

    def bool(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.bool)``."""
        return _ops.conversion.to(self, dtype=_dtype.bool)

    def byte(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.uint8)``."""
        return _ops.conversion.to(self, dtype=_dtype.uint8)

    def char(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.int8)``."""
        return _ops.conversion.to(self, dtype=_dtype.int8)

    def short(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.int16)``."""
        return _ops.conversion.to(self, dtype=_dtype.int16)

    def bfloat16(self, memory_format: Any = None) -> Tensor:
        """``self.to(portagrad.bfloat16)``."""
        return _ops.conversion.to(self, dtype=_dtype.bfloat16)

    # ------------------------------------------------ factories on self's dtype and device
    def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: _bool = False, **kwargs: Any) -> Tensor:
        return _creation.zeros(*size, size=kwargs.get("size"), dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device,
                         requires_grad=requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, device: Any = None,
                 requires_grad: _bool = False, **kwargs: Any) -> Tensor:
        return _creation.ones(*size, size=kwargs.get("size"), dtype=self.dtype if dtype is None else dtype,
                        device=self.device if device is None else device,
                        requires_grad=requires_grad)

    def new_empty(self, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: _bool = False, **kwargs: Any) -> Tensor:
        return _creation.empty(*size, size=kwargs.get("size"), dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device,
                         requires_grad=requires_grad)

    def new_full(self, size: Sequence[_int], fill_value: Any, *, dtype: Any = None,
                 device: Any = None, requires_grad: _bool = False, **kwargs: Any) -> Tensor:
        return _creation.full(size, fill_value, dtype=self.dtype if dtype is None else dtype,
                        device=self.device if device is None else device,
                        requires_grad=requires_grad)

    def new(self, *args: Any, device: Any = None) -> Tensor:
        """Legacy ``x.new(...)``: with sizes, an uninitialised tensor; with data (a list, tuple or
        array), a copy; either with ``x``'s dtype and device."""
        dev = self.device if device is None else device
        if len(args) == 1 and not isinstance(args[0], (builtins.int, Size)):
            return _creation.tensor(args[0], dtype=self.dtype, device=dev)
        return _creation.empty(*(args or (0,)), dtype=self.dtype, device=dev)

    def new_tensor(self, data: Any, *, dtype: Any = None, device: Any = None,
                   requires_grad: _bool = False, **kwargs: Any) -> Tensor:
        if isinstance(data, Tensor):
            _creation.warn_tensor_copy("tensor.new_tensor", 2)
        return _creation.tensor(data, dtype=self.dtype if dtype is None else dtype,
                          device=self.device if device is None else device,
                          requires_grad=requires_grad)

    # ---------------------------------------------------------------------------- memory
    def pin_memory(self, device: Any = None) -> Tensor:
        """A copy in page-locked host memory (for fast, asynchronous copies to devices), pinned
        by the backend of ``device`` when given (default: the accelerator's)."""
        return _creation.pin_memory(self, device)

    def share_memory_(self) -> Tensor:
        """Move the storage (and ``.grad``'s) to shared memory, for other processes to map."""
        # loaded on first use: it brings in Python's multiprocessing machinery
        from .multiprocessing.reductions import share_memory_

        return share_memory_(self)

    # ------------------------------------------------------------------------- operators
    # ``add``, ``sub`` ... here are the functions defined above in this class body; a reflected
    # operator calls them with the number first (``2.0 - x`` is ``sub(2.0, x)``)
    # (as PyTorch: ``2.0 + x`` and ``2.0 * x`` are ``x.add(2.0)`` and ``x.mul(2.0)``, which
    # matters where a 16-bit float kernel takes the second operand's scalar at float32.
    # ``2.0 / x`` stays one correctly rounded division, ``div(2.0, x)``: PyTorch's operator is
    # ``x.reciprocal() * 2.0``, rounded twice, but the special functions composed here rely on
    # one rounding, where PyTorch's are kernels)
    __add__ = _fast_binop(add, "add")
    __radd__ = _fast_binop(add, "add")
    __sub__ = _fast_binop(sub, "sub")
    __rsub__ = _fast_binop(sub, "sub", reflected=True)
    __mul__ = _fast_binop(mul, "mul")
    __rmul__ = _fast_binop(mul, "mul")
    __truediv__ = _fast_binop(div, "div", float_only=True)

    __rtruediv__ = _binop(div, reflected=True)
    __floordiv__ = _binop(floor_divide)
    __rfloordiv__ = _binop(floor_divide, reflected=True)
    __mod__ = _binop(remainder)
    __rmod__ = _binop(remainder, reflected=True)
    __pow__ = _binop(pow)
    __rpow__ = _binop(pow, reflected=True)
    __and__ = _binop(bitwise_and)
    __rand__ = _binop(bitwise_and, reflected=True)
    __or__ = _binop(bitwise_or)
    __ror__ = _binop(bitwise_or, reflected=True)
    __xor__ = _binop(bitwise_xor)
    __rxor__ = _binop(bitwise_xor, reflected=True)
    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        """``t == other``; a numpy array compares element by element as a tensor of its own
        dtype (PyTorch's ``==`` takes arrays; ``!=`` and the orderings do not, there as here).
        Without this, Python's fallback gave a plain ``False``."""
        if isinstance(other, Tensor) or _ops._common.is_scalar(other):
            return _ops.elementwise.eq(self, other)
        if _is_numeric_ndarray(other):
            return _ops.elementwise.eq(self, _creation.from_numpy(other))
        return NotImplemented  # type: ignore[return-value]

    __ne__ = _binop(ne)  # type: ignore[assignment]
    __lt__ = _binop(lt)
    __le__ = _binop(le)
    __gt__ = _binop(gt)
    __ge__ = _binop(ge)

    def __matmul__(self, other: Tensor) -> Tensor:
        if isinstance(other, Tensor):
            return _ops.matmul.matmul(self, other)
        try:  # operands matmul knows besides tensors (sparse COO tensors)
            return _ops.matmul.matmul(self, other)
        except TypeError:
            # as torch: Python then tries other.__rmatmul__ (a user's operator class), else
            # raises its own "unsupported operand type(s) for @"
            return NotImplemented  # type: ignore[return-value]

    def __rmatmul__(self, other: Tensor) -> Tensor:
        if isinstance(other, Tensor):
            return _ops.matmul.matmul(other, self)
        try:
            return _ops.matmul.matmul(other, self)
        except TypeError:
            return NotImplemented  # type: ignore[return-value]

    def __neg__(self) -> Tensor:
        return _ops.elementwise.neg(self)

    def __contains__(self, element: Any) -> _bool:
        """``element in t``: whether any element of ``t`` equals ``element`` (a number or a
        tensor, broadcast), as PyTorch's."""
        if not isinstance(element, (Tensor, _numbers.Number)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element)}.")
        return _bool(_ops.elementwise.eq(self, element).any().item())

    def __reversed__(self) -> Tensor:
        """``reversed(t)``: ``t`` flipped along dimension 0 (a tensor, as PyTorch's; a 0-d
        tensor is returned as it is)."""
        if self.dim() == 0:
            return self  # type: ignore[return-value]
        return self.flip(0)

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: _bool = False
                       ) -> Tensor:
        """numpy's results on tensors (``np.exp(t)``, ``t + ndarray``, where the tensor's
        operator declines the array and numpy computes) come back as CPU tensors sharing the
        result's memory, as PyTorch's, 0-d ones too; a bool result is a uint8 tensor there."""
        if array.dtype == _np.bool_:
            array = array.view(_np.uint8)
        return _creation.from_numpy(_np.asarray(array))

    def __pos__(self) -> Tensor:
        return _ops.elementwise.positive(self)

    def __abs__(self) -> Tensor:
        return _ops.elementwise.abs(self)

    def __invert__(self) -> Tensor:
        return _ops.elementwise.bitwise_not(self)

    def __getitem__(self, key: Any) -> Tensor:
        return _ops.indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _ops.indexing.setitem(self, key, value)

    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)

    def __ipow__(self, other: Any) -> Tensor:
        return self.pow_(other)

    def __imod__(self, other: Any) -> Tensor:
        return self.remainder_(other)

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self.floor_divide_(other)

    def __iand__(self, other: Any) -> Tensor:
        return self.bitwise_and_(other)

    def __ior__(self, other: Any) -> Tensor:
        return self.bitwise_or_(other)

    def __ixor__(self, other: Any) -> Tensor:
        return self.bitwise_xor_(other)

    @property
    def T(self) -> Tensor:
        """All dimensions reversed (PyTorch deprecates it, with a warning, on a tensor that is not
        2-D: the identity on a 0-d one, a reversal of every dimension otherwise)."""
        d = self.dim()
        if d != 2:
            _deprecated_T(d)
        return _ops.shape.permute(self, *reversed(range(d)))

    @property
    def mT(self) -> Tensor:
        """Last two dimensions swapped (a 0-d tensor: itself, deprecated in PyTorch)."""
        d = self.dim()
        if d < 2:
            if d == 0:
                _warn_deprecated("Tensor.mT is deprecated on 0-D tensors. This function is the "
                                 "identity in these cases.")
                return _ops.shape.permute(self)  # (a view of itself, as x.T)
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {d}-D tensor.")
        return _ops.shape.transpose(self, -2, -1)

    @property
    def H(self) -> Tensor:
        """The conjugate transpose of a matrix (PyTorch's ``numpy_H``: 2-D only; a 0-d tensor's
        conjugate, deprecated there)."""
        d = self.dim()
        if d == 0:
            _warn_deprecated("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
            return _ops.complexnum.conj(self)
        if d != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {d}-D "
                               "tensor." + (" For batches of matrices, consider using tensor.mH"
                                            if d > 2 else ""))
        return _ops.complexnum.conj(_ops.shape.transpose(self, 0, 1))

    # -------------------------------------------- more math, diagonals, scans, search, sparse
    # (bound by _bind: special, diagonal, scan, search, combine, sparse, the package)
    def asin(self) -> Tensor:
        return _ops.special.asin(self)

    arcsin = asin

    def acos(self) -> Tensor:
        return _ops.special.acos(self)

    arccos = acos

    def atan(self) -> Tensor:
        return _ops.special.atan(self)

    arctan = atan

    def sinh(self) -> Tensor:
        return _ops.special.sinh(self)

    def cosh(self) -> Tensor:
        return _ops.special.cosh(self)

    def asinh(self) -> Tensor:
        return _ops.special.asinh(self)

    arcsinh = asinh

    def acosh(self) -> Tensor:
        return _ops.special.acosh(self)

    arccosh = acosh

    def atanh(self) -> Tensor:
        return _ops.special.atanh(self)

    arctanh = atanh

    def arctan2(self, other: Tensor) -> Tensor:
        return _ops.special.arctan2(self, other)

    def asin_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.asin, self)

    arcsin_ = asin_

    def acos_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.acos, self)

    arccos_ = acos_

    def atan_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.atan, self)

    arctan_ = atan_

    def sinh_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.sinh, self)

    def cosh_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.cosh, self)

    def asinh_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.asinh, self)

    arcsinh_ = asinh_

    def acosh_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.acosh, self)

    arccosh_ = acosh_

    def atanh_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.atanh, self)

    arctanh_ = atanh_

    def arctan2_(self, other: Tensor) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.atan2, self, other)

    def deg2rad(self) -> Tensor:
        return _ops.special.deg2rad(self)

    def deg2rad_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.deg2rad, self)

    def rad2deg(self) -> Tensor:
        return _ops.special.rad2deg(self)

    def rad2deg_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.rad2deg, self)

    def sinc(self) -> Tensor:
        return _ops.special.sinc(self)

    def sinc_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.sinc, self)

    def logit(self, eps: _float | None = None) -> Tensor:
        return _ops.special.logit(self, eps)

    def logit_(self, eps: _float | None = None) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.logit, self, eps)

    def xlogy(self, other: Any) -> Tensor:
        return _ops.special.xlogy(self, other)

    def xlogy_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.special.xlogy, self, other)

    def erfc(self) -> Tensor:
        return _ops.special.erfc(self)

    def erfc_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.erfc, self)

    def erfinv(self) -> Tensor:
        return _ops.special.erfinv(self)

    def erfinv_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.erfinv, self)

    def heaviside(self, values: Tensor) -> Tensor:
        return _ops.special.heaviside(self, values)

    def heaviside_(self, values: Tensor) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.heaviside, self, values)

    def copysign(self, other: Any) -> Tensor:
        return _ops.special.copysign(self, other)

    def copysign_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.special.copysign, self, other)

    def addcmul(self, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
        return _ops.special.addcmul(self, tensor1, tensor2, value=value)

    def addcmul_(self, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.addcmul, self, tensor1, tensor2, value=value)

    def addcdiv(self, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
        return _ops.special.addcdiv(self, tensor1, tensor2, value=value)

    def addcdiv_(self, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.addcdiv, self, tensor1, tensor2, value=value)

    def clamp_min(self, min: Any) -> Tensor:
        return _ops.special.clamp_min(self, min)

    def clamp_min_(self, min: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.clamp_min, self, min)

    def clamp_max(self, max: Any) -> Tensor:
        return _ops.special.clamp_max(self, max)

    def clamp_max_(self, max: Any) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.clamp_max, self, max)

    def float_power(self, exponent: Any) -> Tensor:
        return _ops.special.float_power(self, exponent)

    def float_power_(self, exponent: Any) -> Tensor:
        if self.dtype is not _dtype.float64:
            raise RuntimeError(f"the base given to float_power_ has dtype "
                               f"{_ops.elementwise._type_name(self.dtype)} but the operation's "
                               f"result requires dtype Double")
        return _ops.elementwise.binary_inplace(_ops.special.float_power, self, exponent)

    def logaddexp2(self, other: Tensor) -> Tensor:
        return _ops.special.logaddexp2(self, other)

    def fmax(self, other: Tensor) -> Tensor:
        return _ops.special.fmax(self, other)

    def fmin(self, other: Tensor) -> Tensor:
        return _ops.special.fmin(self, other)

    def isposinf(self) -> Tensor:
        return _ops.special.isposinf(self)

    def isneginf(self) -> Tensor:
        return _ops.special.isneginf(self)

    def isreal(self) -> Tensor:
        return _ops.special.isreal(self)

    def fix(self) -> Tensor:
        return _ops.special.fix(self)

    def fix_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.trunc, self)

    def exp2_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.exp2, self)

    def hypot_(self, other: Tensor) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.elementwise.hypot, self, other)

    def cumsum_(self, dim: _int, *, dtype: Any = None) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.scan.cumsum, self, dim, dtype=dtype)

    absolute_ = abs_

    def sgn_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.elementwise.sgn, self)

    greater_ = gt_
    greater_equal_ = ge_
    less_ = lt_
    less_equal_ = le_
    not_equal_ = ne_

    def softmax(self, dim: _int, dtype: Any = None) -> Tensor:
        """``exp(x) / sum(exp(x))`` along ``dim``."""
        return _portagrad.softmax(self, dim, dtype=dtype)

    def log_softmax(self, dim: _int, dtype: Any = None) -> Tensor:
        """``x - logsumexp(x)`` along ``dim``."""
        return _portagrad.log_softmax(self, dim, dtype=dtype)

    def diagonal(self, offset: _int = 0, dim1: _int = 0, dim2: _int = 1) -> Tensor:
        """The view of a diagonal (appended as the last dimension)."""
        return _ops.diagonal.diagonal(self, offset, dim1, dim2)

    def diag(self, diagonal: _int = 0) -> Tensor:
        return _ops.diagonal.diag(self, diagonal)

    def diag_embed(self, offset: _int = 0, dim1: _int = -2, dim2: _int = -1) -> Tensor:
        return _ops.diagonal.diag_embed(self, offset, dim1, dim2)

    def diagflat(self, offset: _int = 0) -> Tensor:
        return _ops.diagonal.diagflat(self, offset)

    def trace(self) -> Tensor:
        return _ops.diagonal.trace(self)

    def fill_diagonal_(self, fill_value: Any, wrap: _bool = False) -> Tensor:
        return _ops.diagonal.fill_diagonal_(self, fill_value, wrap)

    def kron(self, other: Tensor) -> Tensor:
        return _ops.diagonal.kron(self, other)

    def cumprod(self, dim: _int, *, dtype: Any = None) -> Tensor:
        return _ops.scan.cumprod(self, dim, dtype=dtype)

    def cumprod_(self, dim: _int, *, dtype: Any = None) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.scan.cumprod, self, dim, dtype=dtype)

    def cummax(self, dim: _int) -> Any:
        return _ops.scan.cummax(self, dim)

    def cummin(self, dim: _int) -> Any:
        return _ops.scan.cummin(self, dim)

    def logcumsumexp(self, dim: _int) -> Tensor:
        return _ops.scan.logcumsumexp(self, dim)

    def diff(self, n: _int = 1, dim: _int = -1, prepend: Tensor | None = None,
             append: Tensor | None = None) -> Tensor:
        return _ops.scan.diff(self, n, dim, prepend, append)

    def bincount(self, weights: Tensor | None = None, minlength: _int = 0) -> Tensor:
        return _ops.search.bincount(self, weights, minlength)

    def histc(self, bins: _int = 100, min: Any = 0, max: Any = 0) -> Tensor:
        return _ops.search.histc(self, bins, min, max)

    def unique(self, sorted: _bool = True, return_inverse: _bool = False,
               return_counts: _bool = False, dim: _int | None = None) -> Any:
        return _ops.search.unique(self, sorted, return_inverse, return_counts, dim)

    def unique_consecutive(self, return_inverse: _bool = False, return_counts: _bool = False,
                           dim: _int | None = None) -> Any:
        return _ops.search.unique_consecutive(self, return_inverse, return_counts, dim)

    def cross(self, other: Tensor, dim: _int | None = None) -> Tensor:
        return _ops.contraction.cross(self, other, dim)

    def dist(self, other: Tensor, p: _float = 2) -> Tensor:
        return _ops.norms.dist(self, other, p)

    def renorm(self, p: _float, dim: _int, maxnorm: _float) -> Tensor:
        return _ops.norms.renorm(self, p, dim, maxnorm)

    def renorm_(self, p: _float, dim: _int, maxnorm: _float) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.norms.renorm, self, p, dim, maxnorm)

    def take(self, index: Tensor) -> Tensor:
        return _ops.scatter.take(self, index)

    def nanmean(self, dim: Any = None, keepdim: _bool = False, *, dtype: Any = None) -> Tensor:
        return _ops.stats.nanmean(self, dim, keepdim, dtype=dtype)

    def masked_scatter(self, mask: Tensor, source: Tensor) -> Tensor:
        return _ops.scatter.masked_scatter(self, mask, source)

    def masked_scatter_(self, mask: Tensor, source: Tensor) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.scatter.masked_scatter, self, mask, source)

    def unfold(self, dimension: _int, size: _int, step: _int) -> Tensor:
        """The view of the windows of ``size`` elements, ``step`` apart, along ``dimension``."""
        return _ops.rearrange.unfold(self, dimension, size, step)

    def rot90(self, k: _int = 1, dims: Sequence[_int] = (0, 1)) -> Tensor:
        return _ops.rearrange.rot90(self, k, dims)

    def fliplr(self) -> Tensor:
        return _ops.rearrange.fliplr(self)

    def flipud(self) -> Tensor:
        return _ops.rearrange.flipud(self)

    def split_with_sizes(self, split_sizes: Sequence[_int], dim: _int = 0) -> tuple[Tensor, ...]:
        return _ops.stacking.split_with_sizes(self, split_sizes, dim)

    unsafe_split_with_sizes = split_with_sizes
    unsafe_split = split
    unsafe_chunk = chunk

    def hsplit(self, sections: Any) -> tuple[Tensor, ...]:
        return _ops.stacking.hsplit(self, sections)

    def vsplit(self, sections: Any) -> tuple[Tensor, ...]:
        return _ops.stacking.vsplit(self, sections)

    def dsplit(self, sections: Any) -> tuple[Tensor, ...]:
        return _ops.stacking.dsplit(self, sections)

    def ravel(self) -> Tensor:
        return _ops.rearrange.ravel(self)

    def argwhere(self) -> Tensor:
        return _ops.scatter.argwhere(self)

    def addmv(self, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return _ops.contraction.addmv(self, mat, vec, beta=beta, alpha=alpha)

    def addmv_(self, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.contraction.addmv, self, mat, vec, beta=beta, alpha=alpha)

    def addr(self, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return _ops.contraction.addr(self, vec1, vec2, beta=beta, alpha=alpha)

    def addr_(self, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.contraction.addr, self, vec1, vec2, beta=beta, alpha=alpha)

    def addmm_(self, mat1: Tensor, mat2: Tensor, *, beta: _float = 1, alpha: _float = 1
               ) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.matmul.addmm, self, mat1, mat2, beta=beta, alpha=alpha)

    def baddbmm_(self, batch1: Tensor, batch2: Tensor, *, beta: _float = 1, alpha: _float = 1
                 ) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.matmul.baddbmm, self, batch1, batch2, beta=beta,
                                              alpha=alpha)

    def cov(self, *, correction: _int = 1, fweights: Tensor | None = None,
            aweights: Tensor | None = None) -> Tensor:
        return _ops.stats.cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self) -> Tensor:
        return _ops.stats.corrcoef(self)

    def isclose(self, other: Tensor, rtol: _float = 1e-05, atol: _float = 1e-08,
                equal_nan: _bool = False) -> Tensor:
        return _portagrad.isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other: Tensor, rtol: _float = 1e-05, atol: _float = 1e-08,
                 equal_nan: _bool = False) -> _bool:
        return _portagrad.allclose(self, other, rtol, atol, equal_nan)

    def equal(self, other: Tensor) -> _bool:
        return _portagrad.equal(self, other)

    def is_nonzero(self) -> _bool:
        return _portagrad.is_nonzero(self)

    def is_same_size(self, other: Tensor) -> _bool:
        """Whether ``other`` has the same shape."""
        return self.shape == other.shape  # type: ignore[attr-defined]

    def where(self, condition: Tensor, y: Any) -> Tensor:
        """``self`` where ``condition`` holds, else ``y`` (``portagrad.where(condition, self, y)``)."""
        return _ops.indexing.where(condition, self, y)

    def sum_to_size(self, *size: Any) -> Tensor:
        """Sum broadcast dimensions away, down to ``size`` (which ``self`` must expand from)."""
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], _int) else size
        try:
            if broadcast_shapes(shape, self.shape) != tuple(self.shape):  # type: ignore[attr-defined]
                raise ValueError
        except (ValueError, RuntimeError):
            raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size "
                               f"{{{list(self.shape)}}}.") from None  # type: ignore[attr-defined]
        return _ops.shape.sum_to_shape(self, shape)

    def narrow_copy(self, dim: _int, start: _int, length: _int) -> Tensor:
        """A copy of ``narrow(dim, start, length)``."""
        return _ops.conversion.clone(_ops.shape.narrow(self, dim, start, length))

    def new_empty_strided(self, size: Sequence[_int], stride: Sequence[_int], *,
                          dtype: Any = None, device: Any = None, requires_grad: _bool = False,
                          **kwargs: Any) -> Tensor:
        return _creation.empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                                 device=self.device if device is None else device,
                                 requires_grad=requires_grad)

    def hardshrink(self, lambd: _float = 0.5) -> Tensor:
        return _portagrad.nn.functional.hardshrink(self, lambd)

    def prelu(self, weight: Tensor) -> Tensor:
        return _portagrad.nn.functional.prelu(self, weight)

    def multinomial(self, num_samples: _int, replacement: _bool = False, *,
                    generator: Any = None) -> Tensor:
        return _random.multinomial(self, num_samples, replacement, generator=generator)

    def matrix_power(self, n: _int) -> Tensor:
        """``self`` (a square matrix or a batch of them) multiplied by itself ``n`` times."""
        return _ops.linalg.matrix_power(self, n)

    def put_(self, index: Tensor, source: Tensor, accumulate: _bool = False) -> Tensor:
        """Write ``source`` at the flat positions ``index`` (added when ``accumulate``)."""
        return _ops.elementwise.unary_inplace(_ops.scatter.put, self, index, source, accumulate)

    def put(self, index: Tensor, source: Tensor, accumulate: _bool = False) -> Tensor:
        return _ops.scatter.put(self, index, source, accumulate)

    def index_put(self, indices: Sequence[Tensor], values: Any, accumulate: _bool = False
                  ) -> Tensor:
        return _ops.scatter.index_put(self, indices, values, accumulate)

    def index_put_(self, indices: Sequence[Tensor], values: Any, accumulate: _bool = False
                   ) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.scatter.index_put, self, indices, values, accumulate)

    def apply_(self, callable: Callable[[Any], Any]) -> Tensor:
        """Apply the Python function ``callable`` to every element, in place (on the host)."""
        return _ops.metadata.apply_(self, callable)

    def map_(self, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:
        """``self[i] = callable(self[i], tensor[i])`` (``tensor`` broadcast), in place."""
        return _ops.metadata.map_(self, tensor, callable)

    def resize_(self, *sizes: Any, memory_format: Any = None) -> Tensor:
        """Give ``self`` the shape ``sizes`` (contiguous), keeping the leading elements; storage
        grows when needed, new elements are uninitialised."""
        return _ops.metadata.resize_(self, *sizes)

    def resize_as_(self, the_template: Tensor, memory_format: Any = None) -> Tensor:
        return _ops.metadata.resize_(self, the_template.shape)

    def to_dense(self, dtype: Any = None, *, masked_grad: _bool | None = None) -> Tensor:
        """A dense tensor is its own dense form."""
        return self if dtype is None else _ops.conversion.to(self, dtype=dtype)  # type: ignore[return-value]

    def to_sparse(self, sparse_dim: _int | None = None, *, layout: Any = None) -> Any:
        """The sparse COO form (``layout=portagrad.sparse_coo``) of this dense tensor."""
        return _ops.sparse.to_sparse(self, sparse_dim, layout=layout)

    def to_sparse_coo(self) -> Any:
        return _ops.sparse.to_sparse(self)

    def _not_sparse(self, what: str) -> Any:
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got Strided")

    def indices(self) -> Any:
        return self._not_sparse("indices")

    def values(self) -> Any:
        return self._not_sparse("values")

    def coalesce(self) -> Any:
        return self._not_sparse("coalesce")

    def is_coalesced(self) -> Any:
        return self._not_sparse("is_coalesced")

    def sparse_dim(self) -> _int:
        return 0

    def dense_dim(self) -> _int:
        return self.dim()

    @property
    def layout(self) -> _layout.layout:
        """``portagrad.strided``: every dense tensor is a strided view."""
        return _layout.strided

    @property
    def name(self) -> None:
        """``None``: portagrad has no named tensors (PyTorch gives ``None`` too)."""
        return None

    @property
    def output_nr(self) -> _int:
        """Which output of its ``grad_fn`` this tensor is."""
        return self._output_nr  # type: ignore[attr-defined]

    def as_subclass(self, cls: type) -> Any:
        """This tensor's data as an instance of ``cls`` (a subclass of Tensor): same memory, and
        still in the autograd graph (a view of ``self`` when it requires grad)."""
        if not isinstance(cls, type) or not issubclass(cls, type(self).__mro__[-2]):
            raise TypeError(f"as_subclass: expected a subclass of Tensor, got {cls!r}")
        out = self.view_as(self) if self.requires_grad else self._alias()  # type: ignore[attr-defined]
        out.__class__ = cls
        return out

    @staticmethod
    def _make_subclass(cls: type, data: Any, require_grad: _bool = False, **kwargs: Any) -> Any:
        """A detached alias of ``data`` as an instance of ``cls`` with ``requires_grad`` set to
        ``require_grad`` (how subclasses build themselves in ``__new__``)."""
        out = data._alias()
        out.__class__ = cls
        out.requires_grad_(require_grad)
        return out

    # device kinds and representations portagrad tensors never have (PyTorch's flags)
    is_sparse = property(lambda self: False, doc="Always ``False`` for a dense tensor.")
    is_sparse_csr = property(lambda self: False, doc="Always ``False``.")
    is_xpu = property(lambda self: False, doc="Always ``False``.")
    is_mps = property(lambda self: False, doc="Always ``False``.")
    is_meta = property(lambda self: False, doc="Always ``False``.")
    is_quantized = property(lambda self: False, doc="Always ``False``.")
    is_mkldnn = property(lambda self: False, doc="Always ``False``.")
    is_vulkan = property(lambda self: False, doc="Always ``False``.")
    is_xla = property(lambda self: False, doc="Always ``False``.")
    is_ipu = property(lambda self: False, doc="Always ``False``.")
    is_maia = property(lambda self: False, doc="Always ``False``.")
    is_mtia = property(lambda self: False, doc="Always ``False``.")
    is_nested = property(lambda self: False, doc="Always ``False``.")

    def is_conj(self) -> _bool:
        """``False``: ``conj`` materialises (no lazy conjugate bit; see ``_ops/complexnum``)."""
        return False

    def is_neg(self) -> _bool:
        return False

    def conj(self) -> Tensor:
        """The complex conjugate (a new tensor); ``self`` for a real tensor (as PyTorch)."""
        return _ops.complexnum.conj(self)

    def resolve_conj(self) -> Tensor:
        return self  # type: ignore[return-value]

    def resolve_neg(self) -> Tensor:
        return self  # type: ignore[return-value]

    def conj_physical(self) -> Tensor:
        return _ops.complexnum.conj_physical(self)

    def conj_physical_(self) -> Tensor:
        if self.dtype.is_complex:
            _ops.complexnum.imag(self).neg_()
        return self  # type: ignore[return-value]

    @property
    def real(self) -> Tensor:
        """The real part, a view (``self`` for a real tensor)."""
        return _ops.complexnum.real(self)

    @real.setter
    def real(self, value: Any) -> None:
        _ops.complexnum.real(self).copy_(value)

    @property
    def imag(self) -> Tensor:
        """The imaginary part of a complex tensor, a view."""
        return _ops.complexnum.imag(self)

    @imag.setter
    def imag(self, value: Any) -> None:
        _ops.complexnum.imag(self).copy_(value)

    def angle(self) -> Tensor:
        """Argument of each element: 0 for non-negative, pi for negative (NaN stays NaN)."""
        return _ops.special.angle(self)

    def scatter_reduce(self, dim: _int, index: Tensor, src: Tensor, reduce: str, *,
                       include_self: _bool = True) -> Tensor:
        """``src`` reduced (sum, prod, mean, amax, amin) into the slots ``index`` names."""
        return _ops.segment.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)

    def scatter_reduce_(self, dim: _int, index: Tensor, src: Tensor, reduce: str, *,
                        include_self: _bool = True) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.segment.scatter_reduce, self, dim, index, src, reduce,
                                include_self=include_self)

    def index_reduce(self, dim: _int, index: Tensor, source: Tensor, reduce: str, *,
                     include_self: _bool = True) -> Tensor:
        return _ops.segment.index_reduce(self, dim, index, source, reduce, include_self=include_self)

    def index_reduce_(self, dim: _int, index: Tensor, source: Tensor, reduce: str, *,
                      include_self: _bool = True) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.segment.index_reduce, self, dim, index, source, reduce,
                                include_self=include_self)

    def lgamma(self) -> Tensor:
        return _ops.gammafn.lgamma(self)

    def lgamma_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.gammafn.lgamma, self)

    def digamma(self) -> Tensor:
        return _ops.gammafn.digamma(self)

    def digamma_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.gammafn.digamma, self)

    def polygamma(self, n: _int) -> Tensor:
        """The ``n``-th derivative of ``digamma`` (``portagrad.polygamma(n, self)``)."""
        return _ops.gammafn.polygamma(n, self)

    def polygamma_(self, n: _int) -> Tensor:
        return _ops.elementwise.unary_inplace(lambda t: _ops.gammafn.polygamma(n, t), self)

    def mvlgamma(self, p: _int) -> Tensor:
        return _ops.gammafn.mvlgamma(self, p)

    def mvlgamma_(self, p: _int) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.gammafn.mvlgamma, self, p)

    def det(self) -> Tensor:
        """Determinant (of each matrix of a batch)."""
        return _ops.linalg.det(self)

    def logdet(self) -> Tensor:
        return _ops.linalg.logdet(self)

    def slogdet(self) -> Any:
        """``(sign, log|det|)``."""
        return _ops.linalg.slogdet(self)

    def inverse(self) -> Tensor:
        """Matrix inverse (of each matrix of a batch)."""
        return _ops.linalg.inverse(self)

    def cholesky(self, upper: _bool = False) -> Tensor:
        """Cholesky factor of a symmetric positive-definite matrix."""
        return _ops.linalg.cholesky(self, upper)

    def bitwise_left_shift(self, other: Any) -> Tensor:
        return _ops.bits.bitwise_left_shift(self, other)

    def bitwise_left_shift_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.bits.bitwise_left_shift, self, other)

    def bitwise_right_shift(self, other: Any) -> Tensor:
        return _ops.bits.bitwise_right_shift(self, other)

    def bitwise_right_shift_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.bits.bitwise_right_shift, self, other)

    # the shift operators (PyTorch's ``x << n``, ``1 << x``, ``x >>= n``): the functions above
    __lshift__ = _binop(bitwise_left_shift)
    __rlshift__ = _binop(bitwise_left_shift, reflected=True)
    __rshift__ = _binop(bitwise_right_shift)
    __rrshift__ = _binop(bitwise_right_shift, reflected=True)

    def __ilshift__(self, other: Any) -> Tensor:
        return self.bitwise_left_shift_(other)

    def __irshift__(self, other: Any) -> Tensor:
        return self.bitwise_right_shift_(other)

    def gcd(self, other: Tensor) -> Tensor:
        return _ops.bits.gcd(self, other)

    def gcd_(self, other: Tensor) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.bits.gcd, self, other)

    def lcm(self, other: Tensor) -> Tensor:
        return _ops.bits.lcm(self, other)

    def lcm_(self, other: Tensor) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.bits.lcm, self, other)

    def ldexp(self, other: Tensor) -> Tensor:
        return _ops.bits.ldexp(self, other)

    def ldexp_(self, other: Tensor) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.bits.ldexp, self, other)

    def frexp(self) -> Any:
        """``(mantissa, exponent)`` with ``self == mantissa * 2 ** exponent``."""
        return _ops.bits.frexp(self)

    def nextafter(self, other: Tensor) -> Tensor:
        return _ops.bits.nextafter(self, other)

    def nextafter_(self, other: Tensor) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.bits.nextafter, self, other)

    def i0(self) -> Tensor:
        return _ops.special.i0(self)

    def i0_(self) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.special.i0, self)

    def quantile(self, q: Any, dim: _int | None = None, keepdim: _bool = False, *,
                 interpolation: str = "linear") -> Tensor:
        return _ops.stats.quantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanquantile(self, q: Any, dim: _int | None = None, keepdim: _bool = False, *,
                    interpolation: str = "linear") -> Tensor:
        return _ops.stats.nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanmedian(self, dim: _int | None = None, keepdim: _bool = False) -> Any:
        return _ops.sorting.nanmedian(self, dim, keepdim)

    def histogram(self, bins: Any = 100, *, range: Any = None, weight: Tensor | None = None,
                  density: _bool = False) -> Any:
        return _ops.stats.histogram(self, bins, range=range, weight=weight, density=density)

    def diagonal_scatter(self, src: Tensor, offset: _int = 0, dim1: _int = 0, dim2: _int = 1
                         ) -> Tensor:
        return _ops.scatter.diagonal_scatter(self, src, offset, dim1, dim2)

    def select_scatter(self, src: Tensor, dim: _int, index: _int) -> Tensor:
        return _ops.scatter.select_scatter(self, src, dim, index)

    def slice_scatter(self, src: Tensor, dim: _int = 0, start: _int | None = None,
                      end: _int | None = None, step: _int = 1) -> Tensor:
        return _ops.scatter.slice_scatter(self, src, dim, start, end, step)

    def as_strided_scatter(self, src: Tensor, size: Sequence[_int], stride: Sequence[_int],
                           storage_offset: _int | None = None) -> Tensor:
        return _ops.scatter.as_strided_scatter(self, src, size, stride, storage_offset)

    def addbmm(self, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
               ) -> Tensor:
        return _ops.contraction.addbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def addbmm_(self, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
                ) -> Tensor:
        return _ops.elementwise.unary_inplace(_ops.contraction.addbmm, self, batch1, batch2, beta=beta,
                                              alpha=alpha)

    def stft(self, n_fft: _int, hop_length: _int | None = None, win_length: _int | None = None,
             window: Tensor | None = None, center: _bool = True, pad_mode: str = "reflect",
             normalized: _bool = False, onesided: _bool | None = None,
             return_complex: _bool | None = None, align_to_window: _bool | None = None
             ) -> Tensor:
        """The short-time Fourier transform (``torch.stft``)."""
        return _ops.stft.stft(self, n_fft, hop_length, win_length, window, center, pad_mode,
                              normalized, onesided, return_complex, align_to_window)

    def istft(self, n_fft: _int, hop_length: _int | None = None, win_length: _int | None = None,
              window: Tensor | None = None, center: _bool = True, normalized: _bool = False,
              onesided: _bool | None = None, length: _int | None = None,
              return_complex: _bool = False) -> Tensor:
        """The inverse short-time Fourier transform (``torch.istft``)."""
        return _ops.stft.istft(self, n_fft, hop_length, win_length, window, center, normalized,
                               onesided, length, return_complex)

    def matrix_exp(self) -> Tensor:
        return _ops.linalg.matrix_exp(self)

    def t_(self) -> Tensor:
        """Transpose in place (a change of geometry: no data moves)."""
        return _ops.metadata.inplace_view(self, "t_", _ops.shape.t)

    def transpose_(self, dim0: _int, dim1: _int) -> Tensor:
        return _ops.metadata.inplace_view(self, "transpose_", lambda t: _ops.shape.transpose(t, dim0, dim1))

    swapaxes_ = transpose_
    swapdims_ = transpose_

    def squeeze_(self, dim: Any = None) -> Tensor:
        return _ops.metadata.inplace_view(self, "squeeze_", lambda t: _ops.shape.squeeze(t, dim))

    def unsqueeze_(self, dim: _int) -> Tensor:
        return _ops.metadata.inplace_view(self, "unsqueeze_", lambda t: _ops.shape.unsqueeze(t, dim))

    def as_strided_(self, size: Sequence[_int], stride: Sequence[_int],
                    storage_offset: _int | None = None) -> Tensor:
        return _ops.metadata.inplace_view(self, "as_strided_",
                                lambda t: _ops.shape.as_strided(t, size, stride, storage_offset))

    def dim_order(self, *, ambiguity_check: Any = False) -> tuple[_int, ...]:
        """Dimensions from outermost to innermost in memory."""
        return _ops.metadata.dim_order(self, ambiguity_check=ambiguity_check)

    def get_device(self) -> _int:
        """``-1`` on ``cpu``, else the device index."""
        return _ops.metadata.get_device(self)

    def slice_inverse(self, src: Tensor, dim: _int = 0, start: _int | None = None,
                      end: _int | None = None, step: _int = 1) -> Tensor:
        """``src``'s geometry over this tensor's memory (``torch.slice_inverse``)."""
        return _ops.scatter.slice_inverse(self, src, dim, start, end, step)

    def set_(self, source: Any = None, storage_offset: _int = 0, size: Any = None,
             stride: Any = None) -> Tensor:
        """Re-point this tensor at ``source``'s memory (a tensor or a storage), in place."""
        return _ops.metadata.set_(self, source, storage_offset, size, stride)

    def is_set_to(self, tensor: Tensor) -> _bool:
        return _ops.metadata.is_set_to(self, tensor)

    def nonzero_static(self, *, size: _int, fill_value: _int = -1) -> Tensor:
        return _ops.metadata.nonzero_static(self, size=size, fill_value=fill_value)

    def cauchy_(self, median: _float = 0.0, sigma: _float = 1.0, *, generator: Any = None
                ) -> Tensor:
        return _ops.fills.cauchy_(self, median, sigma, generator=generator)

    def log_normal_(self, mean: _float = 1.0, std: _float = 2.0, *, generator: Any = None
                    ) -> Tensor:
        return _ops.fills.log_normal_(self, mean, std, generator=generator)

    def geometric_(self, p: _float, *, generator: Any = None) -> Tensor:
        return _ops.fills.geometric_(self, p, generator=generator)

    def map2_(self, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:
        """``self[i] = callable(self[i], x[i], y[i])`` (broadcast), in place."""
        return _ops.metadata.map_(self, x, callable, y)

    @property
    def mH(self) -> Tensor:
        """The conjugate transpose of the last two dimensions (``mT`` for real tensors; a 0-d
        tensor's conjugate, deprecated in PyTorch)."""
        d = self.dim()
        if d < 2:
            if d == 0:
                _warn_deprecated("Tensor.mH is deprecated on 0-D tensors. Consider using "
                                 "x.conj().")
                return _ops.complexnum.conj(self)
            raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                               f"Got {d}-D tensor.")
        return _ops.complexnum.conj(_ops.shape.transpose(self, -2, -1))

    def adjoint(self) -> Tensor:
        return _ops.complexnum.adjoint(self)

    def to_sparse_csr(self, dense_dim: _int | None = None) -> Any:
        raise NotImplementedError("to_sparse_csr: layout=torch.sparse_csr is not supported; "
                                  "portagrad has sparse COO tensors (to_sparse())")

    def to_sparse_csc(self, dense_dim: _int | None = None) -> Any:
        raise NotImplementedError("to_sparse_csc: layout=torch.sparse_csc is not supported; "
                                  "portagrad has sparse COO tensors (to_sparse())")

    def to_sparse_bsr(self, blocksize: Any, dense_dim: _int | None = None) -> Any:
        raise NotImplementedError("to_sparse_bsr: layout=torch.sparse_bsr is not supported; "
                                  "portagrad has sparse COO tensors (to_sparse())")

    def to_sparse_bsc(self, blocksize: Any, dense_dim: _int | None = None) -> Any:
        raise NotImplementedError("to_sparse_bsc: layout=torch.sparse_bsc is not supported; "
                                  "portagrad has sparse COO tensors (to_sparse())")

    def is_distributed(self) -> _bool:
        """``False``: portagrad tensors are never distributed."""
        return False

    def mode(self, dim: _int = -1, keepdim: _bool = False) -> Any:
        """``(values, indices)`` of the most frequent value along ``dim``."""
        return _ops.sorting.mode(self, dim, keepdim)

    def cholesky_solve(self, input2: Tensor, upper: _bool = False) -> Tensor:
        """``X`` with ``A X = self`` given ``A``'s Cholesky factor ``input2``."""
        return _ops.linalg.cholesky_solve(self, input2, upper)

    def cholesky_inverse(self, upper: _bool = False) -> Tensor:
        return _ops.linalg.cholesky_inverse(self, upper)

    def triangular_solve(self, A: Tensor, upper: _bool = True, transpose: _bool = False,
                         unitriangular: _bool = False) -> Any:
        return _ops.linalg.triangular_solve(self, A, upper, transpose, unitriangular)

    def resize(self, *sizes: Any) -> Tensor:
        """A resized copy (deprecated in PyTorch: prefer ``reshape`` or ``resize_``)."""
        return _ops.metadata.resize_(_ops.conversion.clone(self).detach(), *sizes)

    def resize_as(self, tensor: Tensor) -> Tensor:
        return _ops.metadata.resize_(_ops.conversion.clone(self).detach(), tensor.shape)

    # removed from PyTorch: they raise PyTorch's message, which names the replacement
    def solve(self, A: Tensor) -> Any:
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                           "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
                           "`torch.linalg.solve` has its arguments reversed and does not return "
                           "the LU factorization.")

    def symeig(self, eigenvectors: _bool = False, upper: _bool = True) -> Any:
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                           "Use `torch.linalg.eigh`.")

    def eig(self, eigenvectors: _bool = False) -> Any:
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                           "Use `torch.linalg.eig`.")

    def lstsq(self, A: Tensor) -> Any:
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                           "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.")

    def svd(self, some: _bool = True, compute_uv: _bool = True) -> Any:
        """``(U, S, V)`` (``torch.svd``: ``V``, not ``Vh``); ``some``: the reduced form."""
        return _ops.spectral.svd_legacy(self, some, compute_uv)

    def pinverse(self, rcond: _float = 1e-15) -> Tensor:
        """The pseudo-inverse (``torch.pinverse``)."""
        return _ops.linalg_ext.pinverse(self, rcond)

    def orgqr(self, input2: Tensor) -> Tensor:
        """``torch.orgqr``: :func:`portagrad.linalg.householder_product` of ``self`` and the
        scalar factors ``input2``."""
        return _ops.linalg_ex.householder_product(self, input2)

    def geqrf(self) -> Any:
        return _ops.linalg_ex.geqrf(self)

    def ormqr(self, input2: Tensor, input3: Tensor, left: _bool = True,
              transpose: _bool = False) -> Tensor:
        return _ops.linalg_ex.ormqr(self, input2, input3, left, transpose)

    def reinforce(self, reward: Any) -> Any:
        raise RuntimeError("reinforce() was removed. Use torch.distributions instead.")

    @property
    def volatile(self) -> _bool:
        """``False`` (removed from PyTorch: use ``portagrad.no_grad()``)."""
        return False

    def igamma(self, other: Any) -> Tensor:
        """The regularized lower incomplete gamma ``P(self, other)``."""
        return _ops.gammafn.igamma(self, other)

    def igamma_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.gammafn.igamma, self, other)

    def igammac(self, other: Any) -> Tensor:
        """The regularized upper incomplete gamma ``Q(self, other)``."""
        return _ops.gammafn.igammac(self, other)

    def igammac_(self, other: Any) -> Tensor:
        return _ops.elementwise.binary_inplace(_ops.gammafn.igammac, self, other)

    def qr(self, some: _bool = True) -> Any:
        """``(Q, R)``: the reduced (``some``) or complete QR decomposition."""
        return _ops.linalg.qr_some(self, some)

    def lu(self, pivot: _bool = True, get_infos: _bool = False) -> Any:
        """``(LU, pivots)`` of the LU factorization with partial pivoting."""
        return _ops.linalg.lu_legacy(self, pivot, get_infos)

    def lu_solve(self, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
        """``X`` with ``A X = self``, given ``A``'s ``lu()``."""
        return _ops.linalg.lu_solve_legacy(self, LU_data, LU_pivots)
