"""Bessel functions of ``torch.special`` that PyTorch does not differentiate:
``spherical_bessel_j0``.

Composed from elementwise ops (so they run on every backend) and computed without recording:
PyTorch defines no derivative for them, and their results never require grad.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from ._common import type_name
from . import elementwise
from .elementwise import _float_input
from .indexing import where
from .special import _check_tensor

__all__ = ["spherical_bessel_j0"]

# sin(x)/x = sum (-1)^k x^2k / (2k+1)!, to x^12: PyTorch's series below |x| = 1/2, where
# sin(x)/x would lose the last bits to the division
_J0_SERIES = (1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
              1.0 / 120.0, -1.0 / 6.0, 1.0)


def _float_checked(name: str, input: Tensor) -> Tensor:
    _check_tensor(name, input)
    x = _float_input(input)
    if x.dtype in (_dtype.float16, _dtype.bfloat16):  # PyTorch has no 16-bit kernel
        raise NotImplementedError(f'"{name}" not implemented for \'{type_name(x.dtype)}\'')
    return x


def spherical_bessel_j0(input: Tensor) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x`` (1 at 0, 0 at
    +-inf)."""
    x = _float_checked("spherical_bessel_j0", input)
    with _no_grad():
        small = elementwise.abs(x) < 0.5
        xs = where(small, x, 0.0)
        x2 = xs * xs
        series = x2 * 0.0 + _J0_SERIES[0]
        for c in _J0_SERIES[1:]:
            series = series * x2 + c
        xb = where(small, 1.0, x)
        out = where(small, series, elementwise.sin(xb) / xb)
        return where(elementwise.isinf(x), 0.0, out)
