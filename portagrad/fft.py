"""``portagrad.fft``: PyTorch's ``torch.fft``, the discrete Fourier transforms and their helpers.

The transforms run on the backend's unnormalised primitives (``fft_c2c``, ``fft_r2c``,
``fft_c2r``; pocketfft on the host by default) and are composed here as PyTorch's reference
decompositions (``torch/_refs/fft.py``) compose them: ``n``/``s`` trim or zero-pad the input,
``dim`` picks the transformed dimensions, ``norm`` is ``"backward"`` (the default: the inverse
transforms divide by the signal size), ``"forward"`` (the forward ones do) or ``"ortho"`` (both
by its square root). Integer and bool inputs compute in the default float dtype; float32 gives
complex64 (or float32 for the complex-to-real transforms) and float64 complex128; 16-bit floats
raise, as on PyTorch's CPU. Derivatives are the core's (``portagrad/_ops/fft.py``).

The transforms need complex tensors: on a backend that declines complex storage they raise its
``DTypeError``. ``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` are real and run
everywhere.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._autocast import SKIP as _SKIP
from ._autocast import STATE as _AUTOCAST
from ._autocast import autocast_call as _autocast_call
from . import _creation, _dtype
from ._shape import wrap_dim_no_scalar as _wrap_dim
from ._ops import elementwise as _elementwise
from ._ops import fft as _f
from ._ops import metadata as _metadata
from ._ops.conversion import write_out as _write_out
from ._ops.joining import roll as _roll
from ._tensor import Tensor

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift", "Tensor"]


def _done(name: str, res: Tensor, out: Tensor | None, input: Tensor) -> Tensor:
    """``res``, or ``res`` written into ``out`` (of the result's kind: complex or real float)."""
    if out is None:
        return res
    if res.dtype.is_complex and not out.dtype.is_complex:
        raise RuntimeError(f"{name} expects a complex output tensor, but got "
                           f"{_elementwise._type_name(out.dtype)}")
    if not res.dtype.is_complex and not out.dtype.is_floating_point:
        raise RuntimeError(f"{name} expects a floating point output tensor, but got "
                           f"{_elementwise._type_name(out.dtype)}")
    return _write_out(f"fft_{name}", res, out, (input,))


# ------------------------------------------------------------------ one-dimensional transforms
def _check_16bit(input: Tensor) -> None:
    """The one-dimensional transforms refuse 16-bit floats before looking at ``n`` or ``dim``
    (the n-dimensional ones after them, in :func:`~portagrad._ops.fft.promote`), as PyTorch's."""
    if input.dtype in (_dtype.float16, _dtype.bfloat16):
        raise RuntimeError(f"Unsupported dtype {_elementwise._type_name(input.dtype)}")


def _c2c_1d(name: str, input: Any, n: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    _f.check_tensor(name, input)
    n, dim = _f.check_n(name, n, dim, norm)
    _check_16bit(input)
    if not input.dtype.is_complex:
        return _r2c_1d(name, input, n, dim, norm, forward, onesided=False)
    d = _f.canonical_dim(input, dim)
    size = input.shape[d] if n is None else n
    _f.check_points(size)
    _f.check_norm(norm)
    x = _f.resize(input, (d,), (size,))
    return _f.apply_norm(_f.c2c(x, (d,), forward), norm, size, forward)


def _r2c_1d(name: str, input: Any, n: Any, dim: Any, norm: Any, forward: bool,
            onesided: bool) -> Tensor:
    _f.check_tensor(name, input)
    n, dim = _f.check_n(name, n, dim, norm)
    _check_16bit(input)
    if input.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got "
                           f"{_elementwise._type_name(input.dtype)}")
    d = _f.canonical_dim(input, dim)
    size = input.shape[d] if n is None else n
    _f.check_points(size)
    _f.check_norm(norm)
    x = _f.resize(_f.promote(input, False), (d,), (size,))
    res = _f.apply_norm(_f.r2c(x, (d,), onesided), norm, size, forward)
    # the backward transform of real data is the conjugate of the forward one
    return res if forward else _metadata.conj(res)


def _c2r_1d(name: str, input: Any, n: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    _f.check_tensor(name, input)
    n, dim = _f.check_n(name, n, dim, norm)
    _check_16bit(input)
    d = _f.canonical_dim(input, dim)
    last = 2 * (input.shape[d] - 1) if n is None else n
    _f.check_points(last)
    _f.check_norm(norm)
    x = _f.resize(_f.promote(input, True), (d,), (last // 2 + 1,))
    if forward:  # hfft: the forward transform of a Hermitian signal given by its first half
        x = _metadata.conj(x)
    return _f.apply_norm(_f.c2r(x, (d,), last), norm, last, forward)


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
        out: Tensor | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim`` (trimmed or
    zero-padded to ``n`` entries)."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_fft", fft, input, n, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("fft", _c2c_1d("fft", input, n, dim, norm, True), out, input)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`fft`."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_ifft", ifft, input, n, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("ifft", _c2c_1d("ifft", input, n, dim, norm, False), out, input)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out: Tensor | None = None) -> Tensor:
    """The transform of real ``input`` along ``dim``: the ``n // 2 + 1`` non-negative
    frequencies (the others are their complex conjugates)."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_rfft", rfft, input, n, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("rfft", _r2c_1d("rfft", input, n, dim, norm, True, True), out, input)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`rfft`: a real signal of ``n`` entries (``2 * (m - 1)`` for an
    input of ``m``) from its non-negative frequencies."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_irfft", irfft, input, n, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("irfft", _c2r_1d("irfft", input, n, dim, norm, False), out, input)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out: Tensor | None = None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: real, of ``n``
    entries (``2 * (m - 1)`` for an input of ``m``)."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_hfft", hfft, input, n, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("hfft", _c2r_1d("hfft", input, n, dim, norm, True), out, input)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`hfft`: the first ``n // 2 + 1`` entries of the inverse transform
    of real ``input``."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_ihfft", ihfft, input, n, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("ihfft", _r2c_1d("ihfft", input, n, dim, norm, False, True), out, input)


# ---------------------------------------------------------------- n-dimensional transforms
def _c2c_nd(name: str, input: Any, s: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    _f.check_tensor(name, input)
    _f.check_nd_types(name, s, dim, norm)
    sizes, dims = _f.shape_and_dims(name, input, s, dim)
    _f.check_norm(norm)
    if dims and not input.dtype.is_complex:
        # real input: the full real-to-complex transform, without a complex copy of the input
        # (PyTorch's kernels do the same; the backward one is the forward one's conjugate)
        x = _f.resize(_f.promote(input, False), dims, sizes)
        res = _f.apply_norm(_f.r2c(x, dims, False), norm, _prod(sizes), forward)
        return res if forward else _metadata.conj(res)
    x = _f.resize(_f.promote(input, True), dims, sizes)
    return _f.apply_norm(_f.c2c(x, dims, forward), norm, _prod(sizes), forward)


def _prod(sizes: tuple[int, ...]) -> int:
    return int(np.prod(sizes, dtype=np.int64))


def _real_only(name: str, input: Tensor) -> None:
    if input.dtype.is_complex:
        tname = _elementwise._type_name(input.dtype)
        if name == "ihfftn":  # (PyTorch's message for it comes from a generic dtype check)
            raise RuntimeError(f"Only supports floating-point dtypes, but found: {tname}")
        raise RuntimeError(f"{name} expects a real-valued input tensor, but got {tname}")


def _rfftn(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Tensor:
    _f.check_tensor(name, input)
    _f.check_nd_types(name, s, dim, norm)
    _real_only(name, input)
    sizes, dims = _f.shape_and_dims(name, input, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    _f.check_norm(norm)
    x = _f.resize(_f.promote(input, False), dims, sizes)
    return _f.apply_norm(_f.r2c(x, dims, True), norm, _prod(sizes), True)


def _irfftn(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Tensor:
    _f.check_tensor(name, input)
    _f.check_nd_types(name, s, dim, norm)
    sizes, dims, last = _f.c2r_shape_and_dims(name, input, s, dim)
    _f.check_norm(norm)
    x = _f.resize(_f.promote(input, True), dims, sizes)
    res = _f.c2r(x, dims, last)
    return _f.apply_norm(res, norm, _prod(tuple(res.shape[d] for d in dims)), False)


def _hfftn(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Tensor:
    _f.check_tensor(name, input)
    _f.check_nd_types(name, s, dim, norm)
    sizes, dims, last = _f.c2r_shape_and_dims(name, input, s, dim)
    _f.check_norm(norm)
    x = _f.resize(_f.promote(input, True), dims, sizes)
    if len(dims) > 1:
        x = _f.c2c(x, dims[:-1], True)
    x = _f.apply_norm(x, norm, _prod(sizes[:-1]), True)
    res = _f.c2r(_metadata.conj(x), dims[-1:], last)
    return _f.apply_norm(res, norm, last, True)


def _ihfftn(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Tensor:
    _f.check_tensor(name, input)
    _f.check_nd_types(name, s, dim, norm)
    sizes, dims = _f.shape_and_dims(name, input, s, dim)
    _real_only(name, input)  # (after the dims: PyTorch's ihfftn checks them first)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    _f.check_norm(norm)
    x = _f.resize(_f.promote(input, False), dims, sizes)
    res = _metadata.conj(_f.r2c(x, dims[-1:], True))
    if len(dims) > 1:
        res = _f.c2c(res, dims[:-1], False)
    return _f.apply_norm(res, norm, _prod(sizes), False)


def fftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *,
         out: Tensor | None = None) -> Tensor:
    """The n-dimensional transform over ``dim`` (all dimensions, or the last ``len(s)``),
    each trimmed or zero-padded to ``s`` (``-1``: kept)."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_fftn", fftn, input, s, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("fftn", _c2c_nd("fftn", input, s, dim, norm, True), out, input)


def ifftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`fftn`."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_ifftn", ifftn, input, s, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("ifftn", _c2c_nd("ifftn", input, s, dim, norm, False), out, input)


def fft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
         out: Tensor | None = None) -> Tensor:
    """:func:`fftn` over the last two dimensions by default."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_fft2", fft2, input, s, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("fftn", _c2c_nd("fft2", input, s, dim, norm, True), out, input)


def ifft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """:func:`ifftn` over the last two dimensions by default."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_ifft2", ifft2, input, s, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("ifftn", _c2c_nd("ifft2", input, s, dim, norm, False), out, input)


def rfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """The n-dimensional transform of real ``input``, one-sided in the last of ``dim``."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_rfftn", rfftn, input, s, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("rfftn", _rfftn("rfftn", input, s, dim, norm), out, input)


def rfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """:func:`rfftn` over the last two dimensions by default."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_rfft2", rfft2, input, s, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("rfftn", _rfftn("rfftn", input, s, dim, norm), out, input)


def irfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *,
           out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`rfftn`: real, the last of ``dim`` of size ``s[-1]`` (``2 * (m -
    1)`` by default)."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_irfftn", irfftn, input, s, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("irfftn", _irfftn("irfftn", input, s, dim, norm), out, input)


def irfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
           out: Tensor | None = None) -> Tensor:
    """:func:`irfftn` over the last two dimensions by default."""
    if _AUTOCAST.on and (_ac := _autocast_call("fft_irfft2", irfft2, input, s, dim, norm,
                                               out=out)) is not _SKIP:
        return _ac  # type: ignore[no-any-return]
    return _done("irfftn", _irfftn("irfftn", input, s, dim, norm), out, input)


def hfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """The n-dimensional transform of a Hermitian-symmetric signal given by its one-sided
    half in the last of ``dim``: real."""
    return _done("hfftn", _hfftn("hfftn", input, s, dim, norm), out, input)


def hfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """:func:`hfftn` over the last two dimensions by default."""
    return _done("hfftn", _hfftn("hfftn", input, s, dim, norm), out, input)


def ihfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None, *,
           out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`hfftn`: one-sided in the last of ``dim``."""
    return _done("ihfftn", _ihfftn("ihfftn", input, s, dim, norm), out, input)


def ihfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None, *,
           out: Tensor | None = None) -> Tensor:
    """:func:`ihfftn` over the last two dimensions by default."""
    return _done("ihfftn", _ihfftn("ihfftn", input, s, dim, norm), out, input)


# ------------------------------------------------------------------------------- helpers
def _freq(name: str, n: Any, d: float, count: int, values: np.ndarray, out: Tensor | None,
          dtype: Any, layout: Any, device: Any, requires_grad: bool) -> Tensor:
    """``values / (n * d)`` in ``dtype``, as PyTorch computes it: the integer grid in the dtype,
    then one multiplication by ``1 / (n * d)``."""
    if count < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {count}: [{count}]")
    if layout is not None and str(layout) not in ("torch.strided", "portagrad.strided"):
        raise RuntimeError(f"fft_{name}(): only the strided layout is supported, got {layout}")
    # (with out= and no dtype or device, PyTorch computes in out's, on its device)
    dt = _dtype.as_dtype(dtype) if dtype is not None else out.dtype if out is not None \
        else _dtype.get_default_dtype()
    if device is None and out is not None:
        device = out.device
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dt.is_complex:  # (PyTorch builds the grid with arange, which has no complex kernel)
        raise NotImplementedError(f'"arange_cpu" not implemented for '
                                  f"'{_elementwise._type_name(dt)}'")
    grid = _creation.from_host(values.astype(dt.numpy), device=device)
    # n * d == 0: an infinite scale, as in C++ (0 * inf is NaN there too, silently)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = float(np.float64(1.0) / np.float64(n * d))
        res = _elementwise.mul(grid, scale)
    if out is not None:
        return _write_out(f"fft_{name}", res, out)
    return res.requires_grad_(requires_grad) if requires_grad else res


def _trunc_half(n: int) -> int:
    """``n / 2`` rounded toward zero (C++'s integer division, which PyTorch's sizes use)."""
    return int(n / 2)


def _freq_n(name: str, n: Any) -> int:
    """``n`` of ``fftfreq``/``rfftfreq`` as an int (Python or numpy integer, one-element integer
    tensor), else PyTorch's ``TypeError``."""
    m = _f.int_arg(n)
    if m is None:
        raise TypeError(f"fft_{name}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    return m


def fftfreq(n: int, d: float = 1.0, *, out: Tensor | None = None, dtype: Any = None,
            layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of :func:`fft` of a signal of ``n`` samples spaced ``d`` apart:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (n * d)``."""
    n = m = _freq_n("fftfreq", n)
    values = np.concatenate([np.arange((m + 1) // 2), np.arange(-(m // 2), 0)]) if m > 0 \
        else np.zeros(0)
    return _freq("fftfreq", n, d, m, values, out, dtype, layout, device, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, out: Tensor | None = None, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of :func:`rfft` of a signal of ``n`` samples spaced ``d`` apart:
    ``[0, 1, ..., n // 2] / (n * d)``."""
    n = _freq_n("rfftfreq", n)
    count = _trunc_half(n) + 1
    return _freq("rfftfreq", n, d, count, np.arange(max(count, 0)), out, dtype, layout, device,
                 requires_grad)


def _shift(input: Tensor, dim: Any, inverse: bool) -> Tensor:
    if dim is None:
        dims = list(range(input.dim()))
    elif isinstance(dim, (list, tuple)):
        dims = list(dim)
    else:
        dims = [dim]
    if not dims:
        raise RuntimeError("`shifts` required")  # (PyTorch's roll, given no dimension)
    shifts = [(input.shape[_wrap_dim(d, input.dim())] + inverse) // 2 for d in dims]
    return _roll(input, shifts, dims)


def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """``input`` rolled so that the zero frequency of an :func:`fftn` result is in the middle
    of each dimension of ``dim`` (all by default)."""
    return _shift(input, dim, False)


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """The inverse of :func:`fftshift`."""
    return _shift(input, dim, True)
