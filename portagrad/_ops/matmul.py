"""Matrix products: ``matmul``/``@`` (batched, broadcast), ``mm``, ``bmm``, ``dot``, ``outer``, ``mv``."""
from __future__ import annotations

import math
from typing import Any

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _dtype, _raw
from .._shape import broadcast_shapes, check_expandable
from .._tensor import Tensor
from ..autograd.function import Function
from ._common import call, check_same_device
from .complexnum import conj
from .conversion import write_out
from .elementwise import add, mul
from .reduction import _dtype_name
from .shape import expand, reshape, squeeze, transpose, unsqueeze

__all__ = ["matmul", "mm", "bmm", "dot", "vdot", "outer", "ger", "mv", "addmm", "inner", "baddbmm",
           "scaled_input"]


class _BMM(Function):
    """(B, M, K) @ (B, K, N): the one matmul primitive the core records."""

    _backward_name = "BmmBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> Tensor:
        # a's gradient needs b and b's needs a: each saved only when needed (as PyTorch)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)
        return _raw.bmm(a, b)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        a, b = (conj(t) for t in ctx.saved_tensors)  # Wirtinger: a^H, b^H
        ga = call(_BMM, g, transpose(b, 1, 2)) if ctx.needs_input_grad[0] else None
        gb = call(_BMM, transpose(a, 1, 2), g) if ctx.needs_input_grad[1] else None
        return ga, gb


class _MM(Function):
    """(M, K) @ (K, N) as one node: the 2-D case of ``matmul`` without reshapes around a batch."""

    _backward_name = "MmBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)  # as _BMM
        return _raw.mm(a, b)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        a, b = (conj(t) for t in ctx.saved_tensors)  # Wirtinger: a^H, b^H
        ga = call(_MM, g, transpose(b, 0, 1)) if ctx.needs_input_grad[0] else None
        gb = call(_MM, transpose(a, 0, 1), g) if ctx.needs_input_grad[1] else None
        return ga, gb


def _check(a: Tensor, b: Tensor, name: str) -> None:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"{name}(): expected Tensor arguments, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    check_same_device(a, b, name)
    if a.dtype is not b.dtype:
        names = _dtype.CPP_TYPE_NAMES
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{names.get(a.dtype.name, a.dtype.name)} != "
                           f"{names.get(b.dtype.name, b.dtype.name)}")


def _check_bool(a: Tensor, name: str, work: int) -> None:
    """Refuse bool operands of a product with ``work`` (output elements times the inner size)
    multiply-adds. Integers are fine (PyTorch's CPU matmul takes them); bool is not, except that
    PyTorch returns an empty or all-False result without looking at the dtype when there is
    nothing to multiply."""
    if a.dtype is _dtype.bool and work:
        kernel = {"matmul": "addmm_impl_cpu_"}.get(name, name)  # PyTorch's CPU kernel names
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _to3(x: Tensor, batch: tuple[int, ...]) -> Tensor:
    """View ``x`` (batch..., M, K) as (B, M, K) without copying when the batch dims merge."""
    B = math.prod(batch)
    m, k = x.shape[-2], x.shape[-1]
    if x.shape[:-2] != batch:
        x = expand(x, batch + (m, k))
    return reshape(x, (B, m, k))


def _sparse_product(a: Any, b: Any) -> Any:
    """The product of a sparse operand, which carries it (``_sparse_mm``: the sparse layout is
    defined above this module), or ``None``."""
    for x in (a, b):
        hook = getattr(x, "_sparse_mm", None)
        if hook is not None:
            return hook(a, b)
    return None


def _product_out(name: str, res: Tensor, out: Tensor | None, inputs: tuple) -> Tensor:
    # PyTorch's matrix products write only into an out of the result's dtype
    return res if out is None else write_out(name, res, out, inputs, dtype_rule="exact")


def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics for 1-D, 2-D and batched (broadcast) inputs."""
    if out is not None:
        return _product_out("matmul", matmul(input, other), out, (input, other))
    if _AUTOCAST.on and (_ac_out := _autocast_call("matmul", matmul, input, other=other)) is not _SKIP:
        return _ac_out
    a, b = input, other
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        sparse = _sparse_product(a, b)
        if sparse is not None:
            return sparse
    _check(a, b, "matmul")
    da, db = a.dim(), b.dim()
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D "
                           f"and {db}D")
    if da == 1 and db == 1:
        _check_bool(a, "dot", 1)  # PyTorch's dot refuses bool even when empty
        return dot(a, b)
    a2 = unsqueeze(a, 0) if da == 1 else a
    b2 = unsqueeze(b, -1) if db == 1 else b
    m, k = a2.shape[-2], a2.shape[-1]
    k2, n = b2.shape[-2], b2.shape[-1]
    if k != k2:
        if da == 2 and db == 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})")
        raise RuntimeError(f"matmul: inner dimensions do not match: {list(a.shape)} @ "
                           f"{list(b.shape)} ({k} != {k2})")
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    _check_bool(a, "matmul", math.prod(batch) * m * n * k)
    if not batch and b2.dim() == 2 and a2.dim() == 2:
        out = call(_MM, a2, b2)
    elif b2.dim() == 2 and a2.dim() > 2 and a2.is_contiguous():
        # (..., M, K) @ (K, N): fold the batch into M, one big GEMM instead of a batch of small ones
        flat = reshape(a2, (1, math.prod(a2.shape[:-1]), k))
        out = reshape(call(_BMM, flat, unsqueeze(b2, 0)), batch + (m, n))
    else:
        out = reshape(call(_BMM, _to3(a2, batch), _to3(b2, batch)), batch + (m, n))
    if da == 1:
        out = squeeze(out, -2)
    if db == 1:
        out = squeeze(out, -1)
    return out


def mm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """2-D matrix product (no broadcasting)."""
    if out is not None:
        return _product_out("mm", mm(input, mat2), out, (input, mat2))
    if _AUTOCAST.on and (_ac_out := _autocast_call("mm", mm, input, mat2=mat2)) is not _SKIP:
        return _ac_out
    if not (isinstance(input, Tensor) and isinstance(mat2, Tensor)):
        sparse = _sparse_product(input, mat2)
        if sparse is not None:
            return sparse
    _check(input, mat2, "mm")
    if input.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"{'self' if input.dim() != 2 else 'mat2'} must be a matrix")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Batched 3-D matrix product (no broadcasting)."""
    if out is not None:
        return _product_out("bmm", bmm(input, mat2), out, (input, mat2))
    if _AUTOCAST.on and (_ac_out := _autocast_call("bmm", bmm, input, mat2=mat2)) is not _SKIP:
        return _ac_out
    _check(input, mat2, "bmm")
    if input.dim() != 3 or mat2.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if input.dim() != 3
                           else "batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: "
                           f"[{mat2.shape[0]}, {mat2.shape[1]}].")
    _check_bool(input, "bmm", math.prod(input.shape) * mat2.shape[2])
    return call(_BMM, input, mat2)


def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of equal length."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("dot", dot, input, other=other)) is not _SKIP:
        return _ac_out
    if isinstance(input, Tensor) and isinstance(other, Tensor) and input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_dtype_name(input.dtype)} and {_dtype_name(other.dtype)}")
    _check(input, other, "dot")
    _check_bool(input, "dot", 1)
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{other.shape[0]}] to have the same number of elements, but got "
                           f"{input.shape[0]} and {other.shape[0]} elements respectively")
    out = call(_BMM, reshape(input, (1, 1, -1)), reshape(other, (1, -1, 1)))
    return reshape(out, ())


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``sum(conj(input) * other)`` of two 1-D tensors (``dot`` for real ones)."""
    return dot(conj(input), other)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The sums of products over the last dimension of both (``dot`` for vectors; a 0-d
    operand multiplies the other)."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.dim() == 1 and other.dim() == 1 and input.shape == other.shape:
        return dot(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input.shape)} and {list(other.shape)}")
    k = input.shape[-1]
    flat = matmul(reshape(input, (-1, k)), transpose(reshape(other, (-1, k)), 0, 1))
    return reshape(flat, tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two 1-D tensors."""
    if input.dim() != 1 or vec2.dim() != 1:
        bad, name = (input, "self") if input.dim() != 1 else (vec2, "vec2")
        raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {bad.dim()}-D")
    return mul(unsqueeze(input, 1), unsqueeze(vec2, 0))


ger = outer


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("mv", mv, input, vec=vec)) is not _SKIP:
        return _ac_out
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {vec.dim()}")
    return matmul(input, vec)


class _Ignored(Function):
    """Zeros shaped like the input, whose gradient is zeros: ``beta * input`` for ``beta == 0``,
    which never reads the input (so NaN and inf in it do not propagate) yet leaves it in the graph
    with a zero gradient, as PyTorch's ``addmm`` family does."""

    _backward_name = "MulBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        return _raw.fill(_raw.new_like(x, tuple(x._v.shape)), 0)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return mul(g, 0)


def scaled_input(input: Tensor, beta: Any) -> Tensor:
    """``beta * input`` as the ``add*`` ops use it: ``input`` itself for ``beta == 1``, and for
    ``beta == 0`` zeros that ignore the input's values (PyTorch: NaN in ``input`` is ignored)."""
    if beta == 0:
        return call(_Ignored, input)
    return input if beta == 1 else mul(input, beta)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1
          ) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` (``input`` ignored, NaN included, when
    ``beta == 0``)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "addmm", addmm, input, mat1=mat1, mat2=mat2, beta=beta, alpha=alpha)) is not _SKIP:
        return _ac_out
    if not mat1.dtype.is_complex:
        # PyTorch converts the Scalars to the real dtype, checked: a complex one is refused
        # unless its imaginary part is 0 (the result stays real)
        for scale in (beta, alpha):
            if isinstance(scale, complex) and scale.imag != 0:
                raise RuntimeError(f"value cannot be converted to type "
                                   f"{_dtype.scalar_ctype(mat1.dtype)} without overflow")
        beta, alpha = (v.real if isinstance(v, complex) else v for v in (beta, alpha))
    prod = mm(mat1, mat2)
    check_expandable(input.shape, prod.shape)  # input broadcasts to the product, never beyond
    if alpha != 1:
        prod = mul(prod, alpha)
    return add(scaled_input(input, beta), prod)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1
            ) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` (``input`` ignored when ``beta == 0``)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "baddbmm", baddbmm, input, batch1=batch1, batch2=batch2, beta=beta, alpha=alpha)) is not _SKIP:
        return _ac_out
    prod = bmm(batch1, batch2)
    check_expandable(input.shape, prod.shape)
    if alpha != 1:
        prod = mul(prod, alpha)
    return add(scaled_input(input, beta), prod)
