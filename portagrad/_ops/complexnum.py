"""Complex tensors' own ops: the real/complex views, conjugation, parts, magnitude and phase.

A complex tensor is stored as pairs ``(real, imag)`` of its real dtype (numpy's and PyTorch's
layout), so :func:`view_as_real` and :func:`view_as_complex` are views of the same storage, and
everything here is built from those two views and real ops: a backend needs no complex kernel
for ``conj``, ``real``, ``imag``, ``angle``, ``complex`` or ``polar``.

Derivatives follow PyTorch's convention ("Autograd for Complex Numbers"): the gradient of a real
loss ``L`` with respect to ``z`` is ``dL/dRe z + i dL/dIm z`` (twice the conjugate Wirtinger
derivative), so the views' backward passes are views again, and a holomorphic op's backward is
``g * conj(f'(z))``.

Conjugation is materialised: ``conj()`` of a complex tensor returns a new tensor holding the
conjugate (PyTorch returns a lazy view with its conjugate bit set). ``is_conj()`` is therefore
always ``False``, ``resolve_conj()`` returns its input, and ``conj_physical()`` is ``conj()``;
values and gradients are PyTorch's, only the aliasing differs (writing into ``x.conj()`` does not
change ``x``).

The views in another dtype share storage and version counter with their source, but autograd
does not treat them as views of it (its view machinery re-derives a view from its base in the
base's dtype). So an in-place change of ``x.real``/``x.imag``/``view_as_real(x)`` is allowed where
nothing records it (values are right), and raises ``RuntimeError`` where autograd would record it
(:data:`portagrad.autograd.inplace.DTYPE_VIEWS`); PyTorch rebases ``x``'s history there. Likewise,
a ``view_as_real(x)`` taken before an in-place change of ``x`` itself keeps ``x``'s earlier history
for its gradient.
"""
from __future__ import annotations

from typing import Any

from .. import _dtype, _raw
from .._shape import broadcast_shapes
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.inplace import DTYPE_VIEWS
from ..backends.interface import decline_complex
from ._common import call, check_same_device
from .conversion import _TYPE_NAMES
from .shape import adjoint as shape_adjoint

__all__ = ["view_as_real", "view_as_complex", "real", "imag", "conj", "conj_physical",
           "resolve_conj", "is_conj", "complex", "polar", "angle", "abs_complex", "sgn",
           "view_as_real_copy", "view_as_complex_copy", "adjoint", "abs2"]


def _dtype_view(x: Tensor, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
                dt: _dtype.dtype) -> Tensor:
    """A raw view of ``x``'s storage in another dtype (sharing its version counter)."""
    return Tensor._make(x._storage, offset, shape, strides, dt, x._vc)


def _as_real(x: Tensor) -> Tensor:
    v = x._v
    return _dtype_view(x, v.offset * 2, v.shape + (2,), tuple(s * 2 for s in v.strides) + (1,),
                       v.dtype.to_real())


def _as_complex(x: Tensor) -> Tensor:
    v = x._v
    return _dtype_view(x, v.offset // 2, v.shape[:-1], tuple(s // 2 for s in v.strides[:-1]),
                       v.dtype.to_complex())


class _ViewAsReal(Function):
    _backward_name = "ViewAsRealBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        return _as_real(x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return view_as_complex(g.contiguous())


class _ViewAsComplex(Function):
    _backward_name = "ViewAsComplexBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        return _as_complex(x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return view_as_real(g.contiguous())


def view_as_real(input: Tensor) -> Tensor:
    """The complex tensor ``input`` as a real one with a last dimension of 2 (real, imaginary
    parts), sharing its storage."""
    if not input._v.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    out = call(_ViewAsReal, input)
    DTYPE_VIEWS[id(out)] = out
    return out


def view_as_complex(input: Tensor) -> Tensor:
    """A float32/float64 tensor whose last dimension (size 2, stride 1) holds (real, imaginary)
    parts, as a complex tensor sharing its storage (PyTorch's checks and errors)."""
    v = input._v
    if v.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, "
                           f"but got a tensor of scalar type: {_TYPE_NAMES.get(v.dtype.name)}")
    if not v.shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if v.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if v.strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for n, s in zip(v.shape[:-1], v.strides[:-1]) if n != 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if v.offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    decline_complex(input._storage.backend, v.dtype.to_complex(), input.device)
    out = call(_ViewAsComplex, input)
    DTYPE_VIEWS[id(out)] = out
    return out


def view_as_real_copy(input: Tensor) -> Tensor:
    """:func:`view_as_real` in new memory."""
    return view_as_real(input).clone()


def view_as_complex_copy(input: Tensor) -> Tensor:
    """:func:`view_as_complex` in new memory."""
    return view_as_complex(input).clone()


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (for real tensors the transposed view,
    with ``shape.adjoint``'s rules for 0-d and 1-d inputs)."""
    return conj(shape_adjoint(input))


def real(input: Tensor) -> Tensor:
    """The real part: a view for a complex tensor, ``input`` itself for a real one."""
    if not input._v.dtype.is_complex:
        return input
    return view_as_real(input).select(-1, 0)


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a (writable) view."""
    if not input._v.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return view_as_real(input).select(-1, 1)


class _Conj(Function):
    _backward_name = "ConjPhysicalBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        out = _raw.new_on(x._storage, x._v.shape, x._v.dtype)
        # the real part copied, the imaginary part negated: exact, infinities and NaN included
        parts, src = _as_real(out), _as_real(x)
        _raw.copy_into(parts.select(-1, 0), src.select(-1, 0))
        be = x._storage.backend
        be.unary("neg", src.select(-1, 1)._v, parts.select(-1, 1)._v)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return conj(g)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate (a new tensor; see the module's note); a real ``input`` itself."""
    if input is None or not input._v.dtype.is_complex:  # (None: an operand a node did not save)
        return input
    return call(_Conj, input)


def abs2(x: Tensor) -> Tensor:
    """``|x|^2`` elementwise, real (``x * x`` for a real ``x``)."""
    return real(x * conj(x)) if x.dtype.is_complex else x * x


def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate in new memory (a copy for real tensors, as PyTorch)."""
    if not input._v.dtype.is_complex:
        return input.clone()
    return call(_Conj, input)


def resolve_conj(input: Tensor) -> Tensor:
    """``input``: conjugation is never lazy here, so there is no conjugate bit to resolve."""
    return input


def is_conj(input: Tensor) -> bool:
    """``False``: ``conj`` materialises, so no tensor carries PyTorch's conjugate bit."""
    return False


class _Complex(Function):
    _backward_name = "ComplexBackward0"

    @staticmethod
    def forward(ctx: Any, re: Tensor, im: Tensor) -> Tensor:
        out = _raw.new_on(re._storage, re._v.shape, re._v.dtype.to_complex())
        parts = _as_real(out)
        _raw.copy_into(parts.select(-1, 0), re)
        _raw.copy_into(parts.select(-1, 1), im)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return real(g), imag(g)


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """The complex tensor ``real + i imag`` (both float32, or both float64; broadcast)."""
    if not isinstance(real, Tensor) or not isinstance(imag, Tensor):
        raise TypeError("complex(): argument 'real' and 'imag' must be Tensor")
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {_name(real.dtype)} but got scalar "
                           f"type {_name(imag.dtype)} for second argument")
    if real.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_name(real.dtype)} and {_name(imag.dtype)}")
    check_same_device(real, imag, "complex")
    decline_complex(real._storage.backend, real.dtype.to_complex(), real.device)
    r, i = real, imag
    if r.shape != i.shape:
        shape = broadcast_shapes(r.shape, i.shape)
        r, i = r.expand(shape), i.expand(shape)
    return call(_Complex, r, i)


def _name(d: _dtype.dtype) -> str:
    return _TYPE_NAMES.get(d.name, d.name)


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """The complex tensor ``abs * (cos(angle) + i sin(angle))``."""
    if abs.dtype is not angle.dtype:
        raise RuntimeError(f"Expected object of scalar type {_name(abs.dtype)} but got scalar "
                           f"type {_name(angle.dtype)} for second argument")
    return complex(abs * angle.cos(), abs * angle.sin())


class _AbsComplex(Function):
    _backward_name = "AbsBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return _raw.unary("abs", x, x._v.dtype.to_real())

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        return g * sgn(x)  # PyTorch's abs_backward: grad * sgn(z)


def abs_complex(input: Tensor) -> Tensor:
    """``|z|`` of a complex tensor, in its real dtype (the backend's ``abs`` with a real ``out``)."""
    return call(_AbsComplex, input)


def sgn(input: Tensor) -> Tensor:
    """``z / |z|`` (0 where ``z`` is 0) of a complex tensor."""
    a = abs_complex(input)
    zero = a == 0
    # the denominator is 1 where |z| is 0, so that neither value nor gradient is NaN there
    return (input / a.masked_fill(zero, 1.0)).masked_fill(zero, 0)


class _AngleComplex(Function):
    _backward_name = "AngleBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        parts = _as_real(x)
        return _raw.binary("atan2", parts.select(-1, 1), parts.select(-1, 0),
                           x._v.dtype.to_real(), like=parts.select(-1, 0))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (x,) = ctx.saved_tensors
        # PyTorch's angle_backward: g * i z / |z|^2, and 0 where z is 0
        a2 = abs_complex(x) ** 2
        zero = a2 == 0
        return (g * (x * 1j) / a2.masked_fill(zero, 1.0)).masked_fill(zero, 0)


def angle(input: Tensor) -> Tensor:
    """The argument ``atan2(imag, real)`` of a complex tensor, in its real dtype."""
    return call(_AngleComplex, input)

