"""The numpy reference of the discrete Fourier transform primitives ``fft_c2c``, ``fft_r2c`` and
``fft_c2r``: the default methods of :class:`~portagrad.backends.interface.Backend` (and so the
numpy backend's), computed by pocketfft through ``numpy.fft``.

All three are unnormalised (the core applies ``norm``): the forward transform is
``X[k] = sum_j x[j] exp(-2 pi i j k / n)`` and the backward one the same sum with ``+``, without
the ``1 / n`` of ``numpy.fft.ifft`` (asked for with ``norm="forward"``, which moves numpy's scale
to the forward direction, where these functions never call it). Results are in the precision of
the input (complex64 for float32/complex64, as PyTorch's pocketfft and MKL kernels), written
into ``out`` when given (an array of the result's shape and dtype, any strides).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["fft_c2c", "fft_r2c", "fft_c2r"]

_COMPLEX_OF: dict[np.dtype[Any], np.dtype[Any]] = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128),
               np.dtype(np.complex64): np.dtype(np.complex64),
               np.dtype(np.complex128): np.dtype(np.complex128)}
_REAL_OF: dict[np.dtype[Any], np.dtype[Any]] = {np.dtype(np.complex64): np.dtype(np.float32),
            np.dtype(np.complex128): np.dtype(np.float64)}


def _finish(result: np.ndarray, dtype: np.dtype[Any], out: np.ndarray | None) -> np.ndarray:
    if out is None:
        return result.astype(dtype, copy=False)
    out[...] = result
    return out


def fft_c2c(x: np.ndarray, axes: Sequence[int], forward: bool,
            out: np.ndarray | None = None) -> np.ndarray:
    """The complex-to-complex transform of the complex ``x`` over ``axes`` (sizes kept)."""
    dtype = _COMPLEX_OF[x.dtype]
    if not axes or x.size == 0:
        return _finish(x.copy(), dtype, out)
    if forward:
        res = np.fft.fftn(x, axes=list(axes))
    else:
        res = np.fft.ifftn(x, axes=list(axes), norm="forward")
    return _finish(res, dtype, out)


def fft_r2c(x: np.ndarray, axes: Sequence[int], onesided: bool,
            out: np.ndarray | None = None) -> np.ndarray:
    """The forward transform of the real (float32/float64) ``x`` over ``axes``; with
    ``onesided`` only the ``n // 2 + 1`` non-redundant entries of the last of ``axes`` are kept
    (the others are their complex conjugates' reflections)."""
    dtype = _COMPLEX_OF[x.dtype]
    if x.size == 0:
        shape = list(x.shape)
        if onesided:
            shape[axes[-1]] = shape[axes[-1]] // 2 + 1
        return _finish(np.zeros(shape, dtype), dtype, out)
    if onesided:
        res = np.fft.rfftn(x, axes=list(axes))
    else:
        res = np.fft.fftn(x, axes=list(axes))
    return _finish(res, dtype, out)


def fft_c2r(x: np.ndarray, axes: Sequence[int], last_dim_size: int,
            out: np.ndarray | None = None) -> np.ndarray:
    """The backward transform of the one-sided, Hermitian-symmetric complex ``x`` over ``axes``:
    a real result whose last of ``axes`` has ``last_dim_size`` entries (``x`` holds
    ``last_dim_size // 2 + 1`` of them along it). The imaginary parts that symmetry forces to
    zero (the zero frequency, and the Nyquist one for an even size) are ignored, as pocketfft
    and PyTorch do."""
    dtype = _REAL_OF[_COMPLEX_OF[x.dtype]]
    sizes = [x.shape[a] for a in axes[:-1]] + [last_dim_size]
    if x.size == 0:
        shape = list(x.shape)
        shape[axes[-1]] = last_dim_size
        return _finish(np.zeros(shape, dtype), dtype, out)
    res = np.fft.irfftn(x, s=sizes, axes=list(axes), norm="forward")
    return _finish(res, dtype, out)
