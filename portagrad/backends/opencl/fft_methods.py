"""The OpenCL backend's discrete Fourier transforms: ``fft_c2c``, ``fft_r2c``, ``fft_c2r``.

Mixed into :class:`~portagrad.backends.opencl.backend.OpenCLBackend`, whose ``_dev`` and
``_empty_like`` (:mod:`.runtime`) and ``copy`` (:mod:`.primitives`) it uses. They override the
host defaults of :class:`~portagrad.backends.interface.Backend` (pocketfft through numpy) with
the device kernels of :mod:`.fft`, which read a contiguous input: a strided ``x`` is copied
first, and so is one sharing ``out``'s buffer (the transforms are out of place). Nothing waits.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..interface import View
from . import fft
from .errors import cl_errors
from .fusion import flushes

__all__ = ["FFTMixin"]

#: the real dtype the kernels compute in, per operand dtype
_REAL = {"complex64": "float32", "complex128": "float64", "float32": "float32",
         "float64": "float64"}


class FFTMixin:
    """``fft_c2c`` / ``fft_r2c`` / ``fft_c2r`` on the device (the contract is in
    :mod:`portagrad.backends.interface`, section "Fourier transforms")."""

    # provided by OpenCLBackend
    _dev: Any
    _empty_like: Any
    copy: Any

    def _fft(self, what: str, transform: Any, x: View, out: View, axes: Sequence[int],
             arg: Any) -> None:
        """Run ``transform`` (``fft.c2c``, ``fft.r2c`` or ``fft.c2r``, whose last argument is
        ``arg``) from ``x`` into ``out``: on a contiguous ``x`` that does not share ``out``'s
        buffer (copied first otherwise), into a contiguous stand-in copied back to a strided
        ``out``."""
        if out.numel == 0:
            return
        dev = self._dev(out)
        dev.require_dtypes([x.dtype.name, out.dtype.name])  # complex128 / float64 need fp64
        if not x.is_contiguous() or x.buffer is out.buffer:
            tmp = self._empty_like(dev, x.shape, x.dtype)
            self.copy(x, tmp)
            x = tmp
        o = out if out.is_contiguous() else self._empty_like(dev, out.shape, out.dtype)
        with cl_errors(dev.label, what):
            transform(dev, _REAL[out.dtype.name], (x.buffer.mem, x.offset),
                      (o.buffer.mem, o.offset), x.shape, list(axes), arg)
        if o is not out:
            self.copy(o, out)

    @flushes
    def fft_c2c(self, x: View, axes: Sequence[int], forward: bool, out: View) -> None:
        """Complex-to-complex transform over ``axes`` (Stockham passes or Bluestein per axis)."""
        self._fft("fft_c2c", fft.c2c, x, out, axes, forward)

    @flushes
    def fft_r2c(self, x: View, axes: Sequence[int], onesided: bool, out: View) -> None:
        """Real-to-complex forward transform (complexified input, complex passes)."""
        self._fft("fft_r2c", fft.r2c, x, out, axes, onesided)

    @flushes
    def fft_c2r(self, x: View, axes: Sequence[int], last_dim_size: int, out: View) -> None:
        """Complex-to-real backward transform (Hermitian extension, complex passes)."""
        self._fft("fft_c2r", fft.c2r, x, out, axes, last_dim_size)
