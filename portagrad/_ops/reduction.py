"""Reductions (``sum``, ``mean``, ``max`` ...) and their derivatives."""
from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _dtype, _raw
from .._shape import wrap_dim, wrap_dims
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _flags
from ._common import call, refuse_complex, sparse_fallback, to_scalar
from ._gather import scatter_into_zeros
from . import complexnum
from .conversion import write_out, write_out_pair
from .indexing import where
from .shape import expand, reshape

__all__ = ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std",
           "var_mean", "std_mean", "logsumexp", "norm", "any", "all", "count_nonzero",
           "aminmax", "nansum"]

_builtin_sum, _builtin_max, _builtin_min, _builtin_any, _builtin_all = sum, max, min, any, all
values_indices = namedtuple("values_indices", ["values", "indices"])


def _unsqueeze_axes(g: Tensor, in_shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool
                    ) -> Tensor:
    """Put reduced axes back as size 1, then broadcast to the input's shape."""
    if not _flags.grad:
        # nothing records (a backward without create_graph): one raw stride-0 view, where the
        # public reshape and expand would parse their arguments and make a node each
        gs = g._v.strides
        if keepdim:
            strides = tuple([0 if i in axes else gs[i] for i in range(len(in_shape))])
        else:
            it = iter(gs)
            strides = tuple([0 if i in axes else next(it) for i in range(len(in_shape))])
        return _raw.view(g, in_shape, strides)
    if not keepdim:
        kshape = tuple(1 if i in axes else s for i, s in enumerate(in_shape))
        g = reshape(g, kshape)
    return expand(g, in_shape)


def _sum_dtype(x: Tensor, dtype: Any) -> Any:
    if dtype is not None:
        return _dtype.as_dtype(dtype)
    if x.dtype.is_floating_point or x.dtype.is_complex:
        return x.dtype
    return _dtype.int64


class _Sum(Function):
    _backward_name = "SumBackward1"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple[int, ...], keepdim: bool, dtype: Any) -> Tensor:
        ctx.meta = (x._v.shape, axes, keepdim)
        if x._v.dtype is not dtype:
            x = _raw.cast(x, dtype)
        return _raw.reduce("sum", x, axes, keepdim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        shape, axes, keepdim = ctx.meta
        return _unsqueeze_axes(g, shape, axes, keepdim), None, None, None


class _SumAll(_Sum):
    _backward_name = "SumBackward0"  # torch's name for a full reduction (``x.sum()``)


def _all_if_empty(dim: Any) -> Any:
    """``dim`` of ``sum``/``mean``/``var``/``std``/``amax``/``amin``/vector norms: an empty list or
    tuple reduces every dimension in PyTorch (``x.sum([])`` is ``x.sum()``), as ``None`` does."""
    return None if isinstance(dim, (list, tuple)) and len(dim) == 0 else dim


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None,
        out: Tensor | None = None) -> Tensor:
    """Sum over ``dim`` (all dimensions if ``None`` or empty)."""
    if out is not None:
        return reduce_out("sum", sum, input, (dim, keepdim), dtype, out)
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "sum", sum, input, dim=dim, keepdim=keepdim, dtype=dtype)) is not _SKIP:
        return _ac_out
    dim = _all_if_empty(dim)
    axes = wrap_dims(dim, input.dim())
    try:
        return call(_Sum if dim is not None else _SumAll, input, axes, keepdim,
                    _sum_dtype(input, dtype))
    except AttributeError:  # not a dense tensor: a sparse one (its own sum), or re-raised
        return sparse_fallback("sum", sum, input, dim, keepdim, dtype=dtype)


def refuse_complex_nansum(input: Tensor, dtype: Any = None) -> None:
    """PyTorch's errors for ``nansum`` of a complex tensor, or into a complex ``dtype`` (its
    ``nanmean`` too: a nansum)."""
    if input.dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if dtype is not None and input.dtype.is_floating_point:  # (integers: a plain sum)
        refuse_complex("nansum_cpu", _dtype.as_dtype(dtype))


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    refuse_complex_nansum(input, dtype)
    # the zero takes input's dtype (to_scalar), so integers keep sum's int64 accumulation
    return sum(where(input.isnan(), to_scalar(0, input.dtype), input), dim, keepdim, dtype=dtype)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None,
         out: Tensor | None = None) -> Tensor:
    """Arithmetic mean over ``dim``."""
    if out is not None:  # unlike sum's, mean's out does not choose the dtype computed in
        return write_out("mean", mean(input, dim, keepdim, dtype=dtype), out, (input,),
                         dtype_rule="cast" if dtype is None else "exact")
    dt = _dtype.as_dtype(dtype) if dtype is not None else input.dtype
    if not (dt.is_floating_point or dt.is_complex):
        which = "Input" if dtype is None else "Optional"  # (PyTorch names the one it checked)
        raise RuntimeError(f"mean(): could not infer output dtype. {which} dtype must be either a "
                           f"floating point or complex dtype. Got: {_dtype_name(dt)}")
    if dt in _HALF_TYPES:  # PyTorch's kernel sums and divides in float32, then rounds once
        return mean(input, dim, keepdim, dtype=_dtype.float32).to(dt)
    axes = wrap_dims(_all_if_empty(dim), input.dim())
    n = math.prod(input.shape[a] for a in axes)
    s = call(_Sum, input, axes, keepdim, dt)
    return s / n if n else s / 0.0  # mean of nothing is nan (0/0), as PyTorch


#: the 16-bit floating dtypes, whose statistics PyTorch accumulates in float32
_HALF_TYPES = _dtype.HALF_FLOATS


def _dtype_name(d: Any) -> str:
    return {"float32": "Float", "float64": "Double", "int32": "Int", "int64": "Long",
            "bool": "Bool", "float16": "Half", "uint8": "Byte", "int8": "Char", "int16": "Short",
            "bfloat16": "BFloat16", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble"}[d.name]


class _Prod(Function):
    _backward_name = "ProdBackward1"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple[int, ...], keepdim: bool, dtype: Any) -> Tensor:
        if x._v.dtype is not dtype:
            x = _raw.cast(x, dtype)
        ctx.meta = (x._v.shape, axes, keepdim)
        ctx.save_for_backward(x)
        return _raw.reduce("prod", x, axes, keepdim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        shape, axes, keepdim = ctx.meta
        g = _unsqueeze_axes(g, shape, axes, keepdim)
        # product of the others, exact with zeros: prod(x with this element set to 1) computed as
        # prod(nonzero) * [no other zero]; PyTorch's formula, written with portagrad ops
        is_zero = x == 0
        x_nz = where(is_zero, 1.0, x)
        p_nz = _unsqueeze_axes(prod(x_nz, axes, keepdim=True), shape, axes, True)
        nzeros = _unsqueeze_axes(sum(is_zero, axes, keepdim=True), shape, axes, True)
        others = where(is_zero, where(nzeros == 1, p_nz, 0.0),
                       where(nzeros == 0, p_nz / x_nz, 0.0))
        if others._v.dtype.is_complex:
            others = others.conj()  # Wirtinger: g times the conjugate derivative
        return g * others, None, None, None


def prod(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None,
         out: Tensor | None = None) -> Tensor:
    """Product over ``dim`` (one dimension, or all if ``None``)."""
    if out is not None:
        return reduce_out("prod", prod, input, (dim, keepdim), dtype, out)
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "prod", prod, input, dim=dim, keepdim=keepdim, dtype=dtype)) is not _SKIP:
        return _ac_out
    axes = wrap_dims(dim, input.dim())
    return call(_Prod, input, axes, keepdim, _sum_dtype(input, dtype))


def _check_nonempty(x: Tensor, axes: tuple[int, ...], name: str, specified: bool = True) -> None:
    # PyTorch: a reduction dim given explicitly is checked for size 0 (IndexError); with no dim
    # (or dim=()) the whole empty tensor is refused (RuntimeError)
    if x.numel() == 0:
        if not specified:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                               f"== 0. Specify the reduction dim with the 'dim' argument.")
        for a in axes:
            if x.shape[a] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")


class _AMax(Function):
    """amax/amin: gradient split evenly among ties (PyTorch's rule)."""

    _backward_name = "AmaxBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple[int, ...], keepdim: bool, op: str) -> Tensor:
        out = _raw.reduce(op, x, axes, keepdim)
        ctx.meta = (x._v.shape, axes, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, out = ctx.saved_tensors
        shape, axes, keepdim = ctx.meta
        out_b = _unsqueeze_axes(out, shape, axes, keepdim)
        mask = (x == out_b).to(dtype=g.dtype)
        count = _unsqueeze_axes(sum(mask, axes, keepdim=True), shape, axes, True)
        return mask / count * _unsqueeze_axes(g, shape, axes, keepdim), None, None, None


class EvenlyDistributed(Function):
    """A whole-tensor ``max()``/``min()`` (and ``median()``/``nanmedian()``): the value
    ``value_of(x)``, its gradient split evenly among the elements equal to it, or among the NaN
    elements when it is NaN (PyTorch's ``evenly_distribute_backward``; ``amax``'s rule would
    give every element NaN there). Subclasses name the backward node."""

    _backward_name = "MaxBackward1"

    @staticmethod
    def forward(ctx: Any, x: Tensor, value_of: Any) -> Tensor:
        out = value_of(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, out = ctx.saved_tensors
        mask = x == out
        if out.dtype.is_floating_point:  # (no host read: PyTorch's formula for devices)
            mask = mask.logical_or((x != x).logical_and(out != out))
        count = sum(mask.to(g.dtype))
        return where(mask, g / count, 0.0), None


class MinAll(EvenlyDistributed):
    _backward_name = "MinBackward1"


def reduce_out(name: str, fn: Any, input: Tensor, args: tuple, dtype: Any, out: Tensor) -> Tensor:
    """``fn(input, *args, dtype=...)`` written into ``out`` as PyTorch's ``sum``, ``prod``,
    ``cumsum`` and ``cumprod`` do: with no ``dtype``, ``out``'s dtype is the one computed in (the
    input is converted first: a float input summed into an integer ``out`` sums truncated values);
    a ``dtype`` given must be ``out``'s."""
    res = fn(input, *args, dtype=out.dtype if dtype is None else dtype)
    return write_out(name, res, out, (input,), dtype_rule="exact")


def _same_dtype_out(name: str, input: Tensor, res: Tensor, out: Tensor) -> Tensor:
    """``res`` written into ``out``, whose dtype must be the input's (``amax``, ``amin``)."""
    if out.dtype is not input.dtype:
        raise RuntimeError(f"Expected the dtype for input and out to match, but got "
                           f"{_dtype_name(input.dtype)} for input's dtype and "
                           f"{_dtype_name(out.dtype)} for out's dtype.")
    return write_out(name, res, out, (input,))


def amax(input: Tensor, dim: Any = (), keepdim: bool = False, *,
         out: Tensor | None = None) -> Tensor:
    """Maximum over ``dim`` (all dims when empty)."""
    if out is not None:
        return _same_dtype_out("amax", input, amax(input, dim, keepdim), out)
    refuse_complex("max_values_cpu", input.dtype)
    dim = _all_if_empty(dim)
    axes = wrap_dims(dim, input.dim())
    _check_nonempty(input, axes, "amax", dim is not None)
    return call(_AMax, input, axes, keepdim, "max")


def amin(input: Tensor, dim: Any = (), keepdim: bool = False, *,
         out: Tensor | None = None) -> Tensor:
    """Minimum over ``dim`` (all dims when empty)."""
    if out is not None:
        return _same_dtype_out("amin", input, amin(input, dim, keepdim), out)
    refuse_complex("min_values_cpu", input.dtype)
    dim = _all_if_empty(dim)
    axes = wrap_dims(dim, input.dim())
    _check_nonempty(input, axes, "amin", dim is not None)
    return call(_AMax, input, axes, keepdim, "min")


def aminmax(input: Tensor, *, dim: Any = None, keepdim: bool = False,
            out: Any = None) -> Any:
    """``(min, max)`` over ``dim`` (all elements when ``None``); ``out=(min, max)`` of the
    input's dtype."""
    if out is not None:
        return write_out_pair("aminmax", aminmax(input, dim=dim, keepdim=keepdim), out, (input,))
    mm = namedtuple("aminmax", ["min", "max"])  # type: ignore[name-match]  # PyTorch's type name
    _check_aminmax(input, dim)
    return mm(amin(input, () if dim is None else dim, keepdim),
              amax(input, () if dim is None else dim, keepdim))


def _check_aminmax(input: Tensor, dim: Any) -> None:
    """PyTorch's own checks and messages for ``aminmax`` (one ``int`` dim, no complex, a
    non-empty reduction), ahead of the ``amin``/``amax`` it is computed with."""
    if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool)):
        raise TypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
    refuse_complex("aminmax_cpu", input.dtype)
    if input.numel():
        return
    if dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    d = wrap_dim(dim, input.dim())
    if input.dim() and input.shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
           out: Tensor | None = None) -> Tensor:
    """Index of the (first) maximum, over the flattened tensor if ``dim`` is ``None``."""
    return _arg_out("argmax", _arg("argmax", input, dim, keepdim), input, out)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
           out: Tensor | None = None) -> Tensor:
    """Index of the (first) minimum."""
    return _arg_out("argmin", _arg("argmin", input, dim, keepdim), input, out)


def _arg_out(name: str, res: Tensor, input: Tensor, out: Tensor | None) -> Tensor:
    # an int64 out only; no derivative, so out= is allowed while the input requires grad
    if out is None:
        return res
    return write_out(name, res, out, (input,), dtype_rule="exact", differentiable=False)


def _arg(op: str, x: Tensor, dim: Any, keepdim: bool) -> Tensor:
    refuse_complex(f"{op}_cpu", x.dtype)
    if x.dtype is _dtype.bool:  # checked first, as PyTorch
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        if x.numel() == 0:  # IndexError here, as PyTorch (RuntimeError for max()/amax())
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() "
                               f"== 0.")
        flat = reshape(x.detach(), (-1,))
        out = _raw.arg_reduce(op, flat, 0, False)
        return reshape(out, (1,) * x.dim()) if keepdim else out
    d = wrap_dim(dim, x.dim())
    if x.dim() == 0:
        return _raw.fill(_raw.new_like(x, (), _dtype.int64), 0)
    _check_nonempty(x, (d,), op)
    return _raw.arg_reduce(op, x.detach(), d, keepdim)


class _MaxDim(Function):
    _backward_name = "MaxBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, d: int, keepdim: bool, op: str) -> Any:
        idx = _raw.arg_reduce("argmax" if op == "max" else "argmin", x, d, True)
        values = _raw.gather(x, d, idx)
        ctx.meta = (x._v.shape, d, keepdim)
        ctx.save_for_backward(idx)
        if not keepdim:
            values = _raw._drop_axes(values, (d,))
            idx = _raw._drop_axes(idx, (d,))
        ctx.mark_non_differentiable(idx)
        return values, idx

    @staticmethod
    def backward(ctx: Any, g: Tensor, g_idx: Any) -> Any:
        (idx,) = ctx.saved_tensors
        shape, d, keepdim = ctx.meta
        if not keepdim:
            g = reshape(g, tuple(1 if i == d else s for i, s in enumerate(shape)))
        return scatter_into_zeros(g, d, idx, shape), None, None, None


def _max_min(op: str, input: Tensor, dim: Any, keepdim: bool, other: Any) -> Any:
    if other is not None or (isinstance(dim, Tensor)):
        o = other if other is not None else dim
        return input.maximum(o) if op == "max" else input.minimum(o)
    if dim is None:
        axes = tuple(range(input.dim()))
        _check_nonempty(input, axes, op, False)
        # full reduction: gradient split among ties (NaN ones if NaN), as torch.max() without dim
        fn = EvenlyDistributed if op == "max" else MinAll
        return call(fn, input, lambda x: _raw.reduce(op, x, axes, False))
    d = wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return values_indices(input.clone(), _raw.fill(_raw.new_like(input, (), _dtype.int64), 0))
    _check_nonempty(input, (d,), op)
    v, i = call(_MaxDim, input, d, keepdim, op)
    return values_indices(v, i)


def _max_min_out(op: str, input: Tensor, dim: Any, keepdim: bool, other: Any, out: Any) -> Any:
    """``out=`` of ``max``/``min``, each form with its PyTorch rule: ``(values, indices)`` of
    exact dtypes along ``dim``; one tensor the result casts into for all elements; with another
    tensor, ``maximum``/``minimum``'s rule."""
    res = _max_min(op, input, dim, keepdim, other)
    if other is not None or isinstance(dim, Tensor):
        return write_out(op, res, out, (input, other if other is not None else dim))
    if dim is not None:
        return write_out_pair(op, res, out, (input,))
    if isinstance(out, Tensor) and not _dtype.can_cast(res.dtype, out.dtype):
        raise RuntimeError("Expected canCast( typeMetaToScalarType(self.dtype()), "
                           "typeMetaToScalarType(out.dtype())) to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an enhancement "
                           "request to PyTorch.)")
    return write_out(op, res, out, (input,))


def max(input: Tensor, dim: Any = None, keepdim: bool = False, *, other: Any = None,
        out: Any = None) -> Any:
    """Maximum of all elements, or ``(values, indices)`` along ``dim``, or elementwise with a
    tensor."""
    refuse_complex("max_all", input.dtype)
    if out is not None:
        return _max_min_out("max", input, dim, keepdim, other, out)
    return _max_min("max", input, dim, keepdim, other)


def min(input: Tensor, dim: Any = None, keepdim: bool = False, *, other: Any = None,
        out: Any = None) -> Any:
    """Minimum of all elements, or ``(values, indices)`` along ``dim``."""
    refuse_complex("min_all", input.dtype)
    if out is not None:
        return _max_min_out("min", input, dim, keepdim, other, out)
    return _max_min("min", input, dim, keepdim, other)


def _var_args(input: Tensor, dim: Any, unbiased: Any, correction: Any, name: str = "std and var"
              ) -> tuple[tuple[int, ...], Any, bool]:
    """``(axes, correction, all)`` of a ``var``/``std`` call; ``all``: no ``dim`` was given
    (PyTorch's derivative treats that case apart when there are no degrees of freedom)."""
    if isinstance(dim, bool) and unbiased is None:  # var(x, False): the unbiased= overload
        dim, unbiased = None, dim
    if isinstance(unbiased, bool):
        if correction is not None:
            raise RuntimeError("var(): cannot pass both unbiased and correction")
        correction = 1 if unbiased else 0
    elif unbiased is not None and dim is None:
        dim, unbiased = unbiased, None
    correction = 1 if correction is None else correction
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"{name} only support floating point and complex dtypes")
    dim = _all_if_empty(dim)
    return wrap_dims(dim, input.dim()), correction, dim is None or input.dim() == 0


def _var_value(x: Tensor, axes: tuple[int, ...], correction: Any, keepdim: bool,
               root: bool = False) -> Tensor:
    """The variance (its square root when ``root``) over ``axes``."""
    n = math.prod(x.shape[a] for a in axes)
    if x._v.dtype is _dtype.float32 and n > 1:
        return _var_f32(x, axes, n - correction, keepdim, root)
    d = x - mean(x, axes, keepdim=True)
    ss = sum(complexnum.abs2(d), axes, keepdim=keepdim)  # |z - mean|^2: real, as PyTorch's
    v = ss / (n - correction) if n - correction > 0 else ss / 0.0
    return v.sqrt() if root else v


# the smallest normal float32: the floor of the scale below, whose reciprocal stays finite
_F32_TINY = 2.0 ** -126


def _var_f32(x: Tensor, axes: tuple[int, ...], dof: Any, keepdim: bool, root: bool) -> Tensor:
    """:func:`_var_value` of a float32 ``x`` (``dof``: the count less the correction).

    PyTorch's CPU kernel sums float32 squares in float64, where a deviation beyond 1.8e19 would
    overflow float32 when squared (and one below 1e-19 underflow): its std of such data is
    finite (and its variance, where that fits float32). Float64 arrays would double the memory
    traffic; instead the deviations are divided by the largest of them (each square is then in
    [0, 1]) and the scale is multiplied back into the result, which overflows only where the
    result itself does. Raw primitives, in place where possible: a Python op per step would
    cost more than the extra passes."""
    shape, f32 = x._v.shape, x._v.dtype
    d = _raw.binary("sub", x, _raw.bare_expand(mean(x, axes, keepdim=True)._v, shape), f32)
    top = _raw.reduce("max", d, axes, True)
    low = _raw.reduce("min", d, axes, True)
    _raw.binary_into("mul", low, -1.0)
    _raw.binary_into("maximum", top, low._v)  # (NaN propagates: a row with NaN stays NaN)
    _raw.binary_into("maximum", top, _F32_TINY)  # a constant row (0): any scale will do
    inv = _raw.binary("div", 1.0, top, f32)
    _raw.binary_into("mul", d, _raw.bare_expand(inv._v, shape))
    _raw.binary_into("mul", d, d._v)  # the squares, in place
    v = _raw.reduce("sum", d, axes, True)
    _raw.binary_into("div", v, float(dof) if dof > 0 else 0.0)
    if root:
        v = _raw.unary("sqrt", v)
    _raw.binary_into("mul", v, top._v)
    if not root:
        _raw.binary_into("mul", v, top._v)
    return v if keepdim else _raw._drop_axes(v, axes)


def _var_backward(g: Tensor, x: Tensor, axes: tuple[int, ...], correction: Any, keepdim: bool,
                  whole: bool) -> Tensor:
    """PyTorch's ``var_backward``: ``2 / (N - correction) * g * (x - mean)``; without degrees of
    freedom, over all elements, ``inf`` (``nan`` at the mean) times ``g``."""
    dof = math.prod(x.shape[a] for a in axes) - correction
    g = _unsqueeze_axes(g, x._v.shape, axes, keepdim)
    if whole and dof <= 0:
        return g * where(x == mean(x), math.nan, math.inf)
    return (2.0 / dof if dof else math.inf) * g * (x - mean(x, axes, keepdim=True))


class _Var(Function):
    _backward_name = "VarBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple[int, ...], correction: Any, keepdim: bool,
                whole: bool) -> Tensor:
        ctx.meta = (axes, correction, keepdim, whole)
        ctx.save_for_backward(x)
        return _var_value(x, axes, correction, keepdim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        return _var_backward(g, x, *ctx.meta), None, None, None, None


class _Std(Function):
    _backward_name = "StdBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple[int, ...], correction: Any, keepdim: bool,
                whole: bool) -> Tensor:
        ctx.meta = (axes, correction, keepdim, whole)
        out = _var_value(x, axes, correction, keepdim, root=True)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        # PyTorch's std_backward: 0 where std is 0 (sqrt's chain rule would give 0 * inf = nan)
        x, out = ctx.saved_tensors
        gv = where(out == 0, 0.0, g / (out * 2.0))
        return _var_backward(gv, x, *ctx.meta), None, None, None, None


def _moment(fn: Any, input: Tensor, dim: Any, unbiased: Any, keepdim: bool,
            correction: Any, name: str = "std and var") -> Tensor:
    axes, correction, whole = _var_args(input, dim, unbiased, correction, name)
    if input.dtype in _HALF_TYPES:  # in float32, rounded once (PyTorch's kernel)
        return call(fn, input.to(_dtype.float32), axes, correction, keepdim, whole).to(input.dtype)
    return call(fn, input, axes, correction, keepdim, whole)


def var(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """Variance with Bessel's ``correction`` (default 1)."""
    return _moment(_Var, input, dim, unbiased, keepdim, correction)


def std(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """Standard deviation (``sqrt(var)``; its gradient is 0 where it is 0, as PyTorch's)."""
    return _moment(_Std, input, dim, unbiased, keepdim, correction)


def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    v = _moment(_Var, input, dim, unbiased, keepdim, correction, "var_mean")
    return v, mean(input, None if isinstance(dim, bool) else dim, keepdim)


def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    s = _moment(_Std, input, dim, unbiased, keepdim, correction, "std_mean")
    return s, mean(input, None if isinstance(dim, bool) else dim, keepdim)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` computed stably (max subtracted first)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "logsumexp", logsumexp, input, dim=dim, keepdim=keepdim)) is not _SKIP:
        return _ac_out
    x = input if input.dtype.is_floating_point or input.dtype.is_complex else \
        input.to(_dtype.get_default_dtype())
    axes = wrap_dims(dim, x.dim())
    if x.numel() == 0:
        return sum(x.exp(), axes, keepdim).log()
    # complex: the largest real part is subtracted (PyTorch's rule; exp(i y) has modulus 1)
    m = amax(x.real if x.dtype.is_complex else x, axes, keepdim=True).detach()
    m = where(m.isinf(), 0.0, m)  # all -inf (or inf) rows: keep the formula NaN-free
    s = sum((x - m).exp(), axes, keepdim=True).log()
    out = s + m
    if not keepdim:
        out = reshape(out, tuple(n for i, n in enumerate(x.shape) if i not in axes))
    return out


def _one_element(x: Tensor, axes: tuple[int, ...]) -> bool:
    """Whether a norm over ``axes`` reduces single elements (every reduced size is 1, or ``x`` is
    0-d): PyTorch's ``linalg_vector_norm`` then returns ``|x|`` without its norm kernel."""
    shape = x._v.shape
    return _builtin_all(shape[a] == 1 for a in axes)


class _Norm2(Function):
    _backward_name = "NormBackward1"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple[int, ...], keepdim: bool) -> Tensor:
        if _one_element(x, axes):  # |x| itself, as PyTorch: x * x would overflow from 1.8e19
            out = _raw.reduce("sum", _raw.unary("abs", x), axes, keepdim)
        else:
            sq = _raw.binary("mul", x, x, x._v.dtype)
            out = _raw.unary("sqrt", _raw.reduce("sum", sq, axes, keepdim))
        ctx.meta = (x._v.shape, axes, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, out = ctx.saved_tensors
        shape, axes, keepdim = ctx.meta
        n = _unsqueeze_axes(out, shape, axes, keepdim)
        gb = _unsqueeze_axes(g, shape, axes, keepdim)
        # subgradient 0 at the origin, instead of 0/0; PyTorch masks x / n and not the product,
        # so an incoming inf or nan still gives nan there
        return gb * where(n == 0, 0.0, x / n), None, None


class _NormP(Function):
    """The ``p``-norm for ``p`` other than 0, 1, 2 and the infinities (those have their own
    paths), with PyTorch's derivative (``norm_backward``): 0 where the norm is 0, and, for
    ``p < 1``, 0 at the zero elements, where the chain rule through ``pow`` gives ``nan``."""

    _backward_name = "NormBackward1"

    @staticmethod
    def forward(ctx: Any, x: Tensor, p: float, axes: tuple[int, ...], keepdim: bool) -> Tensor:
        if _one_element(x, axes):  # |x| itself, as PyTorch (|x| ** p may overflow or underflow)
            out = sum(x.abs(), axes, keepdim)
        else:
            out = sum(x.abs() ** p, axes, keepdim) ** (1.0 / p)
        ctx.meta = (x._v.shape, p, axes, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        x, out = ctx.saved_tensors
        shape, p, axes, keepdim = ctx.meta
        n = _unsqueeze_axes(out, shape, axes, keepdim)
        gb = _unsqueeze_axes(g, shape, axes, keepdim)
        if p < 1.0:
            scaled = x.sgn() * where(x == 0, 0.0, x.abs() ** (p - 1.0))
            return scaled * gb * n ** (1.0 - p), None, None, None
        scaled = x.sgn() * x.abs() ** (p - 1.0) if p < 2.0 else x * x.abs() ** (p - 2.0)
        return scaled * where(n == 0, 0.0, gb / n ** (p - 1.0)), None, None, None


class _CountNonzero(Function):
    """The 0-"norm": how many elements are nonzero. Recorded like PyTorch's (the result has a
    ``grad_fn``) but with no gradient: the count is piecewise constant, and PyTorch leaves the
    input's ``grad`` at ``None``."""

    _backward_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple, keepdim: bool) -> Tensor:
        nz = _raw.cast(_raw.binary("ne", x, 0, _dtype.bool), x._v.dtype)
        return _raw.reduce("sum", nz, axes, keepdim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return None, None, None


def _check_norm_identity(x: Tensor, p: Any, dim: Any, axes: tuple[int, ...]) -> None:
    """PyTorch's refusal of a norm with no identity (a max, a min, or a negative ``p``, whose
    value over nothing is undefined) over an empty dimension of the empty ``x``."""
    if _all_if_empty(dim) is None:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty tensor "
                           f"because the operation does not have an identity")
    for a in axes:
        if x.shape[a] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on the dimension "
                               f"{a}because this dimension is empty and the operation does not "
                               f"have an identity")


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
         dtype: Any = None) -> Tensor:
    """Vector p-norm over ``dim`` (2-norm by default; ``inf``, ``-inf``, 0, 1, any p)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "norm", norm, input, p=p, dim=dim, keepdim=keepdim, dtype=dtype)) is not _SKIP:
        return _ac_out
    # the input's dtype is checked, as PyTorch does, before dtype= converts it
    for t in (input, input if dtype is None else input.to(dtype)):
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                               f"as input. Got {_dtype_name(t.dtype)}")
    x = t.abs() if t.dtype.is_complex else t  # complex: the norm of the magnitudes (PyTorch's)
    if x.dtype in _HALF_TYPES:  # in float32, rounded once (PyTorch's kernel)
        return norm(x.to(_dtype.float32), p, dim, keepdim).to(x.dtype)
    axes = wrap_dims(_all_if_empty(dim), x.dim())
    if p.__class__ is str and p != "fro":
        if p == "nuc":  # (the public norm sends it to linalg_ext.norm, built on the SVD)
            raise NotImplementedError("the vector norm has no p='nuc': use linalg.matrix_norm")
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    if x.numel() == 0 and p.__class__ is not str and p is not None and (p < 0 or p == math.inf):
        _check_norm_identity(x, p, dim, axes)
    if p in ("fro", 2, 2.0, None):
        return call(_Norm2, x, axes, keepdim)
    if p == float("inf"):
        return amax(x.abs(), axes, keepdim)
    if p == float("-inf"):
        return amin(x.abs(), axes, keepdim)
    if p == 0:
        return call(_CountNonzero, x, axes, keepdim)
    if p == 1:
        return sum(x.abs(), axes, keepdim)
    return call(_NormP, x, float(p), axes, keepdim)


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether any element is nonzero (over ``dim``)."""
    axes = wrap_dims(dim, input.dim())
    b = input if input.dtype is _dtype.bool else _raw.binary("ne", input, 0, _dtype.bool)
    if b.numel() == 0:
        out = _raw.reduce("sum", _raw.cast(b, _dtype.int32), axes, keepdim)
        return _uint8_stays(input, _raw.binary("ne", out, 0, _dtype.bool))
    return _uint8_stays(input, _raw.reduce("max", b, axes, keepdim))


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether every element is nonzero (over ``dim``)."""
    axes = wrap_dims(dim, input.dim())
    b = input if input.dtype is _dtype.bool else _raw.binary("ne", input, 0, _dtype.bool)
    if b.numel() == 0:
        out = _raw.reduce("sum", _raw.cast(b, _dtype.int32), axes, keepdim)
        return _uint8_stays(input, _raw.binary("eq", out, 0, _dtype.bool))
    return _uint8_stays(input, _raw.reduce("min", b, axes, keepdim))


def _uint8_stays(input: Tensor, result: Tensor) -> Tensor:
    """PyTorch's any/all of a uint8 tensor are uint8 (0 or 1), of every other dtype bool."""
    return _raw.cast(result, _dtype.uint8) if input.dtype is _dtype.uint8 else result


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    return sum(input != 0, dim)


