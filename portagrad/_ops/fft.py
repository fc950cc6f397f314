"""The discrete Fourier transforms' autograd nodes and PyTorch's argument rules.

The transforms themselves are backend primitives, unnormalised (``fft_c2c``, ``fft_r2c`` and
``fft_c2r`` of :class:`~portagrad.backends.interface.Backend`, whose default runs pocketfft on the
host); everything else is here, once for every backend: the three nodes with their derivatives
(PyTorch's ``fft_c2c_backward``, ``fft_r2c_backward`` and ``fft_c2r_backward`` of
``FunctionsManual.cpp``, written with the same primitives so that they can be differentiated
again), the ``norm`` scaling, padding or trimming to ``n``/``s``, and the canonical forms of the
``s``/``dim`` arguments with PyTorch's errors. The public functions (``portagrad.fft``) compose
these as PyTorch's reference decompositions (``torch/_refs/fft.py``) do.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _creation, _dtype, _raw
from .._shape import wrap_dim_no_scalar
from .._tensor import Tensor
from ..backends.interface import decline_complex
from ..autograd.function import Function
from . import elementwise, metadata, shape
from ._common import call
from .joining import cat

__all__ = ["c2c", "r2c", "c2r", "apply_norm", "resize", "promote", "check_tensor", "check_n",
           "canonical_dim", "shape_and_dims", "c2r_shape_and_dims", "check_norm", "check_norm_type",
           "check_nd_types", "check_points", "int_arg", "NORMS"]

NORMS = (None, "backward", "ortho", "forward")


# ------------------------------------------------------------------------------------ nodes
class _C2C(Function):
    """The unnormalised complex-to-complex transform over ``axes``. Its adjoint is the
    transform in the other direction (the DFT matrix is symmetric, and conjugating it flips
    the sign of the exponent), so the gradient is ``c2c(grad, axes, not forward)``."""

    _backward_name = "FftC2CBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple[int, ...], forward: bool) -> Tensor:
        ctx.axes, ctx.fwd = axes, forward
        return _raw.fft_c2c(x, axes, forward)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return call(_C2C, g, ctx.axes, not ctx.fwd), None, None


class _R2C(Function):
    """The unnormalised forward transform of a real tensor (one-sided or full). The gradient is
    the real part of the backward transform of the full-length gradient; a one-sided result's
    gradient is zero-padded to full length first (the dropped entries were not outputs)."""

    _backward_name = "FftR2CBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple[int, ...], onesided: bool) -> Tensor:
        ctx.axes, ctx.onesided, ctx.last = axes, onesided, x.shape[axes[-1]]
        return _raw.fft_r2c(x, axes, onesided)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        if ctx.onesided:
            g = resize(g, ctx.axes[-1:], (ctx.last,))
        return metadata.real(call(_C2C, g, ctx.axes, False)), None, None


class _C2R(Function):
    """The unnormalised backward transform of a one-sided Hermitian spectrum into a real
    tensor of ``last_dim_size`` entries along the last axis. It reads each stored entry ``k``
    once for itself and, for ``0 < k < n - (n // 2 + 1) + 1``, once more for its conjugate
    reflection ``n - k``, so the gradient is the one-sided forward transform of the gradient
    with those entries doubled (PyTorch's ``fft_c2r_backward``)."""

    _backward_name = "FftC2RBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple[int, ...], last_dim_size: int) -> Tensor:
        ctx.axes = axes
        return _raw.fft_c2r(x, axes, last_dim_size)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        gi = call(_R2C, g, ctx.axes, True)
        axis = ctx.axes[-1]
        half, n = gi.shape[axis], g.shape[axis]
        doubled = n - half  # entries 1 .. doubled have a reflection outside the stored half
        if doubled > 0:
            w = [1.0] + [2.0] * doubled + [1.0] * (half - 1 - doubled)
            bshape = [1] * gi.dim()
            bshape[axis] = half
            scale = _creation.tensor(w, dtype=g.dtype, device=g.device).reshape(bshape)
            gi = elementwise.mul(gi, scale)
        return gi, None, None


def c2c(x: Tensor, axes: tuple[int, ...], forward: bool) -> Tensor:
    """Unnormalised complex-to-complex transform of the complex ``x`` over ``axes``."""
    return call(_C2C, x, axes, forward)  # type: ignore[no-any-return]


def r2c(x: Tensor, axes: tuple[int, ...], onesided: bool) -> Tensor:
    """Unnormalised forward transform of the real ``x`` over ``axes`` (not empty)."""
    return call(_R2C, x, axes, onesided)  # type: ignore[no-any-return]


def c2r(x: Tensor, axes: tuple[int, ...], last_dim_size: int) -> Tensor:
    """Unnormalised backward transform of the one-sided complex ``x`` over ``axes`` (not empty)
    into a real tensor with ``last_dim_size`` entries along the last of them."""
    return call(_C2R, x, axes, last_dim_size)  # type: ignore[no-any-return]


# -------------------------------------------------------------------------- argument rules
def apply_norm(x: Tensor, norm: str | None, signal_numel: int, forward: bool) -> Tensor:
    """Scale an unnormalised transform as ``norm`` asks: ``"backward"`` (the default, None)
    divides the backward transform by the signal's size, ``"forward"`` the forward one,
    ``"ortho"`` both by its square root."""
    if norm == "ortho":
        return elementwise.mul(x, 1.0 / math.sqrt(signal_numel))
    if (forward and norm == "forward") or (not forward and norm in (None, "backward")):
        return elementwise.mul(x, 1.0 / signal_numel)
    return x


def check_norm_type(name: str, norm: Any) -> None:
    """PyTorch's argument parser: ``norm`` is None or a string (before any other check)."""
    if norm is not None and not isinstance(norm, str):
        raise TypeError(f"fft_{name}(): argument 'norm' must be str, not {type(norm).__name__}")


def check_norm(norm: Any) -> None:
    if norm not in NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def resize(x: Tensor, dims: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """``x`` with ``x.shape[dims[i]] == sizes[i]``: trimmed (the first entries kept) or
    zero-padded at the end, as PyTorch's ``n``/``s`` arguments ask."""
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if have > n:
            x = shape.narrow(x, d, 0, n)
        elif have < n:
            pad = list(x.shape)
            pad[d] = n - have
            x = cat([x, _creation.zeros(tuple(pad), dtype=x.dtype, device=x.device)], d)
    return x


def promote(x: Tensor, require_complex: bool) -> Tensor:
    """``x`` in a dtype the transforms compute in: integers and bool as the default float,
    float32/float64 as they are (their complex counterpart with ``require_complex``), complex
    as it is; 16-bit floats raise as PyTorch's CPU kernels do."""
    dt = x.dtype
    if dt.is_complex:
        return x
    if not dt.is_floating_point:
        dt = _dtype.get_default_dtype()
    if dt not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"Unsupported dtype {elementwise._type_name(dt)}")
    # every transform has a complex input or result: asked for here, so that a backend without
    # complex tensors declines (DTypeError) before anything is computed
    decline_complex(x._storage.backend, dt.to_complex(), x._storage.device)
    if require_complex:
        dt = dt.to_complex()
    return x if dt is x.dtype else x.to(dt)


def check_tensor(name: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def int_arg(v: Any) -> int | None:
    """``v`` as PyTorch's argument parser reads an ``int``: a Python or numpy integer (anything
    with ``__index__``), or an integer tensor of one element; None for anything else (bool,
    floats, other tensors)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, Tensor):
        dt = v.dtype
        if v.numel() != 1 or dt.is_floating_point or dt.is_complex or dt is _dtype.bool:
            return None
        return int(v.item())
    if isinstance(v, np.bool_):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def check_n(name: str, n: Any, dim: Any, norm: Any) -> tuple[int | None, int]:
    """A one-dimensional transform's ``n`` and ``dim`` as ints, their types and ``norm``'s
    checked first, as PyTorch's argument parser does."""
    n_int = None if n is None else int_arg(n)
    if n is not None and n_int is None:
        raise TypeError(f"fft_{name}(): argument 'n' must be int, not {type(n).__name__}")
    dim_int = int_arg(dim)
    if dim_int is None:
        raise TypeError(f"fft_{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    check_norm_type(name, norm)
    return n_int, dim_int


def check_nd_types(name: str, s: Any, dim: Any, norm: Any) -> None:
    """The types of an n-dimensional transform's ``s``, ``dim`` and ``norm`` (PyTorch's argument
    parser, before any check of the input's dtype or of the values)."""
    if s is not None:
        _int_tuple(name, "s", s)
    if dim is not None:
        _int_tuple(name, "dim", dim)
    check_norm_type(name, norm)


def check_points(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def canonical_dim(x: Tensor, dim: int) -> int:
    return wrap_dim_no_scalar(dim, x.dim())


def _int_tuple(name: str, arg: str, v: Any) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple (PyTorch's ``int[]`` arguments)."""
    one = None if isinstance(v, Tensor) else int_arg(v)  # (a whole tensor is not an int[])
    if one is not None:
        return (one,)
    if isinstance(v, (list, tuple)):
        ints = [int_arg(e) for e in v]
        if None not in ints:
            return tuple(ints)  # type: ignore[arg-type]
    raise TypeError(f"fft_{name}(): argument '{arg}' must be tuple of ints, not "
                    f"{type(v).__name__}")


def shape_and_dims(name: str, x: Tensor, s: Any, dim: Any
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """PyTorch's canonical ``(shape, dims)`` of an n-dimensional transform: ``dim`` defaults to
    the last ``len(s)`` dimensions when ``s`` is given, else to all; ``-1`` in ``s`` keeps a
    dimension's size; every size must be positive."""
    ndim = x.dim()
    dims: tuple[int, ...] = ()
    if dim is not None:
        dims = tuple(wrap_dim_no_scalar(d, ndim) for d in _int_tuple(name, "dim", dim))
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        sizes = _int_tuple(name, "s", s)
        if dim is not None and len(dims) != len(sizes):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(sizes) > ndim:
            raise RuntimeError(f"Got shape with {len(sizes)} values but input tensor only has "
                               f"{ndim} dimensions.")
        if dim is None:
            dims = tuple(range(ndim - len(sizes), ndim))
        out = tuple(x.shape[d] if n == -1 else n for n, d in zip(sizes, dims))
    elif dim is None:
        dims, out = tuple(range(ndim)), tuple(x.shape)
    else:
        out = tuple(x.shape[d] for d in dims)
    for n in out:
        check_points(n)
    return out, dims


def c2r_shape_and_dims(name: str, x: Tensor, s: Any, dim: Any
                       ) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """:func:`shape_and_dims` for a complex-to-real transform: the input shape to resize to (the
    last transformed dimension one-sided), the dims, and the output's last size (``2 * (m - 1)``
    for an input of ``m`` entries along it, unless ``s`` gives it)."""
    sizes, dims = shape_and_dims(name, x, s, dim)
    if not sizes:
        raise RuntimeError(f"{name} must transform at least one axis")
    given = None if s is None else _int_tuple(name, "s", s)[-1]
    last = 2 * (x.shape[dims[-1]] - 1) if given is None or given == -1 else sizes[-1]
    check_points(last)
    return (*sizes[:-1], last // 2 + 1), dims, last
