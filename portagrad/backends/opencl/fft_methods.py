"""The OpenCL backend's discrete Fourier transforms: ``fft_c2c``, ``fft_r2c``, ``fft_c2r``.

Mixed into :class:`~portagrad.backends.opencl.backend.OpenCLBackend`, whose ``_dev`` and
``_empty_like`` (:mod:`.runtime`) and ``copy`` (:mod:`.primitives`) it uses. They override the
host defaults of :class:`~portagrad.backends.interface.Backend` (pocketfft through numpy) with
the device kernels of :mod:`.fft`, which read a contiguous input: a strided ``x`` is copied
first, and so is one sharing ``out``'s buffer (the transforms are out of place). Nothing waits.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..interface import View
from . import fft
from .errors import cl_errors
from .fusion import flushes

if TYPE_CHECKING:
    from .devices import Device

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

    def _fft_operands(self, x: View, out: View) -> tuple[Device, str, View, View, Any]:
        """The device, the real dtype, a contiguous ``x`` not sharing ``out``'s buffer, a
        contiguous stand-in for ``out`` and what to copy back into ``out`` (or ``None``)."""
        dev = self._dev(out)
        dev.require_dtypes([x.dtype.name, out.dtype.name])  # complex128 / float64 need fp64
        dt = _REAL[out.dtype.name]
        if not x.is_contiguous() or x.buffer is out.buffer:
            tmp = self._empty_like(dev, x.shape, x.dtype)
            self.copy(x, tmp)
            x = tmp
        back = None
        if not out.is_contiguous():
            back = out
            out = self._empty_like(dev, out.shape, out.dtype)
        return dev, dt, x, out, back

    @flushes
    def fft_c2c(self, x: View, axes: Sequence[int], forward: bool, out: View) -> None:
        """Complex-to-complex transform over ``axes`` (Stockham passes or Bluestein per axis)."""
        if out.numel == 0:
            return
        dev, dt, xc, o, back = self._fft_operands(x, out)
        with cl_errors(dev.label, "fft_c2c"):
            fft.c2c(dev, dt, (xc.buffer.mem, xc.offset), (o.buffer.mem, o.offset), xc.shape,
                    list(axes), forward)
        if back is not None:
            self.copy(o, back)

    @flushes
    def fft_r2c(self, x: View, axes: Sequence[int], onesided: bool, out: View) -> None:
        """Real-to-complex forward transform (complexified input, complex passes)."""
        if out.numel == 0:
            return
        dev, dt, xc, o, back = self._fft_operands(x, out)
        with cl_errors(dev.label, "fft_r2c"):
            fft.r2c(dev, dt, (xc.buffer.mem, xc.offset), (o.buffer.mem, o.offset), xc.shape,
                    list(axes), onesided)
        if back is not None:
            self.copy(o, back)

    @flushes
    def fft_c2r(self, x: View, axes: Sequence[int], last_dim_size: int, out: View) -> None:
        """Complex-to-real backward transform (Hermitian extension, complex passes)."""
        if out.numel == 0:
            return
        dev, dt, xc, o, back = self._fft_operands(x, out)
        with cl_errors(dev.label, "fft_c2r"):
            fft.c2r(dev, dt, (xc.buffer.mem, xc.offset), (o.buffer.mem, o.offset), xc.shape,
                    list(axes), last_dim_size)
        if back is not None:
            self.copy(o, back)
