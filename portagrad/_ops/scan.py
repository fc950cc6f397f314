"""Prefix scans and differences: ``cumsum``, ``cumprod``, ``cummax``, ``cummin``, ``logcumsumexp``,
``diff``.

``cumsum`` is the backend's ``cumsum`` primitive (its derivative: the reversed cumsum). Any other
scan along a dimension of size ``n`` is computed in ``ceil(log2 n)`` rounds of whole-tensor ops
(Hillis-Steele: round ``k`` combines each element with the one ``2**k`` before it), so it runs on
every backend and ``cumprod``/``logcumsumexp`` are differentiated through those ops (correct with
zeros, unlike ``exp(cumsum(log x))``). ``cummax``/``cummin`` scan (value, index) pairs without
recording, then take their values with ``gather``, whose gradient routes to the chosen elements.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any
from collections.abc import Callable

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype, _raw
from .._shape import wrap_dim
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import _no_grad
from ._common import call, refuse_complex
from .reduction import _sum_dtype, reduce_out
from . import elementwise
from .shape import narrow, reshape
from .conversion import unaliased, write_out_pair
from .indexing import gather, where
from .joining import cat

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff"]

cummax_result = namedtuple("cummax_result", ["values", "indices"])


def _scan(x: Any, d: int, combine: Callable[[Any, Any], Any]) -> Any:
    """Inclusive scan of ``x`` (a tensor or a tuple of same-shape tensors) along ``d``:
    ``combine(earlier, later)``."""
    parts: tuple[Tensor, ...] = x if isinstance(x, tuple) else (x,)
    n = parts[0].shape[d]
    shift = 1
    while shift < n:
        head = tuple(narrow(p, d, 0, shift) for p in parts)
        early = tuple(narrow(p, d, 0, n - shift) for p in parts)
        late = tuple(narrow(p, d, shift, n - shift) for p in parts)
        comb = combine(early if len(parts) > 1 else early[0], late if len(parts) > 1 else late[0])
        comb = comb if isinstance(comb, tuple) else (comb,)
        parts = tuple(cat([h, c], d) for h, c in zip(head, comb))
        shift *= 2
    return parts if isinstance(x, tuple) else parts[0]


def _dim(input: Tensor, dim: int) -> int:
    return wrap_dim(dim, max(input.dim(), 1))


def _refuse_bool_scan(name: str, dtype: Any) -> None:
    # PyTorch's kernels have no bool accumulator (dtype=torch.bool, or a bool out=)
    if _dtype.as_dtype(dtype) is _dtype.bool:
        raise NotImplementedError(f"\"{name}_out_cpu\" not implemented for 'Bool'")


def cumprod(input: Tensor, dim: int, *, dtype: Any = None, out: Tensor | None = None) -> Tensor:
    """Inclusive prefix products along ``dim`` (integers and bools as int64)."""
    if out is not None:
        return reduce_out("cumprod", cumprod, input, (dim,), dtype, out)
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "cumprod", cumprod, input, dim=dim, dtype=dtype)) is not _SKIP:
        return _ac_out
    x = input
    if dtype is not None:
        _refuse_bool_scan("cumprod", dtype)
        x = x.to(dtype)
    elif not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(_dtype.int64)
    d = _dim(x, dim)
    if x.dim() == 0:
        return x.clone()
    return unaliased(_scan(x, d, elementwise.mul), input)  # a size-1 dimension scans to x itself


def _cumext(name: str, better: Callable[[Tensor, Tensor], Tensor], input: Tensor, dim: int
            ) -> Any:
    refuse_complex(f"{name}_cpu", input.dtype)
    if input.dim() == 0 and dim not in (0, -1) and isinstance(dim, int):  # PyTorch's own message
        raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
    d = _dim(input, dim)
    if input.dim() == 0:
        return cummax_result(input.clone(), _creation.zeros((), dtype=_dtype.int64,
                                                            device=input.device))
    with _no_grad():
        shape = [1] * input.dim()
        shape[d] = input.shape[d]
        pos = reshape(_creation.arange(input.shape[d], device=input.device), shape)
        idx0 = pos.expand(input.shape).contiguous()

        def combine(early: Any, late: Any) -> Any:
            (v1, i1), (v2, i2) = early, late
            # the later element wins ties (PyTorch's indices are the last extremum) and NaN sticks
            take = elementwise.logical_or(better(v2, v1), elementwise.eq(v2, v1))
            if v1.dtype.is_floating_point:
                take = elementwise.logical_and(elementwise.logical_or(take, elementwise.isnan(v2)),
                                     elementwise.logical_not(elementwise.logical_and(elementwise.isnan(v1),
                                                                 elementwise.logical_not(elementwise.isnan(v2)))))
            return where(take, v2, v1), where(take, i2, i1)

        _, idx = _scan((input.detach(), idx0), d, combine)
    return cummax_result(gather(input, d, idx), idx)


def cummax(input: Tensor, dim: int, *, out: Any = None) -> Any:
    """``(values, indices)`` of the running maximum along ``dim`` (NaN propagates)."""
    res = _cumext("cummax", elementwise.gt, input, dim)
    return res if out is None else write_out_pair("cummax", res, out, (input,),
                                                  dtype_errors="cummax")


def cummin(input: Tensor, dim: int, *, out: Any = None) -> Any:
    """``(values, indices)`` of the running minimum along ``dim`` (NaN propagates)."""
    res = _cumext("cummin", elementwise.lt, input, dim)
    return res if out is None else write_out_pair("cummin", res, out, (input,),
                                                  dtype_errors="cummax")


def _logaddexp_inf(a: Tensor, b: Tensor) -> Tensor:
    return call(_LogAddExpScan, a, b)


class _LogAddExpScan(Function):
    """One combining step of ``logcumsumexp``'s scan: ``log(exp(a) + exp(b))``, the max
    subtracted only where it is finite (-inf + -inf stays -inf instead of NaN).

    Its derivative is the pair's softmax weights, ``sigmoid(a - b)`` and ``sigmoid(b - a)``,
    1/2 each at a tie: defined where the composition's chain rule is not, where both are -inf
    (a prefix of masked entries), so that the zero gradient reaching such a step stays 0
    (``log``'s slope at 0 times 0 gave NaN: a -inf after a finite entry turned the whole
    gradient NaN, where PyTorch's is 0)."""

    _backward_name = "LogcumsumexpBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> Tensor:
        m = elementwise.maximum(a, b)
        m = where(elementwise.isinf(m), 0.0, m)
        ctx.save_for_backward(a, b)
        return m + elementwise.log(elementwise.exp(a - m) + elementwise.exp(b - m))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        a, b = ctx.saved_tensors
        tie = elementwise.eq(a, b)  # (equal infinities: a - b would be NaN)
        return (g * where(tie, 0.5, elementwise.sigmoid(a - b)),
                g * where(tie, 0.5, elementwise.sigmoid(b - a)))


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input)))`` along ``dim``, computed stably."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                           f"'{elementwise._type_name(input.dtype)}'")
    d = _dim(input, dim)
    if input.dim() == 0:
        return input.clone()
    return unaliased(_scan(input, d, _logaddexp_inf), input)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """``n``-th forward difference along ``dim`` (``logical_xor`` for bools), after
    concatenating ``prepend`` and ``append``."""
    for name, p in (("prepend", prepend), ("append", append)):
        if p is not None and not isinstance(p, Tensor):  # (PyTorch's argument parser)
            raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(p).__name__}")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.dim())
    x = input
    for p in (prepend, append):
        if p is None:
            continue
        if p.dim() != input.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        for i in range(input.dim()):
            if i != d and p.shape[i] != input.shape[i]:
                raise RuntimeError(f"diff expects the shape of tensor to prepend or append to "
                                   f"match that of input except along the differencing dimension;"
                                   f" input.size({i}) = {input.shape[i]}, but got tensor.size({i})"
                                   f" = {p.shape[i]}")
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, x, append) if p is not None]
        x = cat(parts, d)
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        a, b = narrow(x, d, 1, size - 1), narrow(x, d, 0, size - 1)
        x = elementwise.logical_xor(a, b) if x.dtype is _dtype.bool else a - b
    return unaliased(x, input)  # n == 0: a copy of the input, as PyTorch


class _Cumsum(Function):
    _backward_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, d: int, dtype: Any) -> Tensor:
        ctx.d = d
        return _raw.cumsum(x, d, dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        d = ctx.d
        return cumsum(g.flip((d,)), d).flip((d,)), None, None


def cumsum(input: Tensor, dim: int, *, dtype: Any = None, out: Tensor | None = None) -> Tensor:
    """Inclusive prefix sums along ``dim``."""
    if out is not None:
        return reduce_out("cumsum", cumsum, input, (dim,), dtype, out)
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "cumsum", cumsum, input, dim=dim, dtype=dtype)) is not _SKIP:
        return _ac_out
    d = wrap_dim(dim, input.dim())
    dt = _sum_dtype(input, dtype)
    _refuse_bool_scan("cumsum", dt)
    if input.dim() == 0:
        return input.to(dt, copy=True)
    return call(_Cumsum, input, d, dt)
