"""numpy fast paths for exact GELU and its gradient (optional methods ``gelu``/``gelu_backward``).

Mixed into :class:`~portagrad.backends.numpy.backend.NumpyBackend`; the contract is in
:mod:`portagrad.backends.interface`, section "GELU". The core composes GELU from ``mul``, ``erf``,
``add`` and ``exp`` (a dozen passes over the activation, each through memory); here each call is
one pass with numba (``jit.gelu32``), or, without it, the same composition in cache-sized chunks:
the same operations in the same order as the core's, so the same values.
"""
from __future__ import annotations

import math

import numpy as np

from ..interface import View
from . import jit, special
from .arrays import BFLOAT16, nd

__all__ = ["ActivationsMixin"]

_CHUNK = 32768  # elements per pass of the numpy composition: its temporaries stay in the L2 cache
_F = np.float32
_HALF, _ONE, _MHALF = _F(0.5), _F(1), _F(-0.5)
_SQRT1_2 = _F(1.0 / math.sqrt(2.0))
_PDF = _F(1.0 / math.sqrt(2.0 * math.pi))


def _flat(v: View) -> np.ndarray:
    return nd(v).reshape(-1)


def _gelu_chunk(x: np.ndarray, o: np.ndarray) -> None:
    # (x * 0.5) * (erf(x * (1/sqrt 2)) + 1)
    e = x * _SQRT1_2
    special.erf(e, e)
    e += _ONE
    np.multiply(x, _HALF, out=o)
    o *= e


def _gelu_backward_chunk(g: np.ndarray, x: np.ndarray, o: np.ndarray) -> None:
    # g * ((erf(x * (1/sqrt 2)) + 1) * 0.5 + x * (exp(x * x * -0.5) * pdf))
    e = x * _SQRT1_2
    special.erf(e, e)
    e += _ONE
    e *= _HALF
    d = x * x
    d *= _MHALF
    np.exp(d, out=d)
    d *= _PDF
    d *= x
    e += d
    np.multiply(g, e, out=o)


class ActivationsMixin:
    """gelu / gelu_backward (exact, float32, contiguous) on numpy arrays."""

    @property
    def gelu_half_dtypes(self) -> tuple[str, ...]:
        # bfloat16 views with numba: widened, computed and rounded a block at a time (the
        # float32 copy and its rounding took twice the time of the GELU itself)
        return ("bfloat16",) if jit.available() else ()

    def gelu(self, x: View, out: View) -> None:
        """``out = x * Phi(x)``: exact GELU of the float32 ``x`` (contiguous, like ``out``), or
        of bfloat16 views with numba (computed in float32, rounded once)."""
        xa, o = _flat(x), _flat(out)
        if x.dtype is BFLOAT16:
            jit.bf16_gelu(xa, o)
            return
        if jit.available():
            jit.gelu32(xa, o)
            return
        with np.errstate(all="ignore"):
            for i in range(0, xa.size, _CHUNK):
                _gelu_chunk(xa[i:i + _CHUNK], o[i:i + _CHUNK])

    def gelu_backward(self, g: View, x: View, out: View) -> None:
        """``out = g * gelu'(x)`` for float32 ``g``, ``x`` and ``out`` of one shape (or
        bfloat16, as :meth:`gelu`)."""
        ga, xa, o = _flat(g), _flat(x), _flat(out)
        if x.dtype is BFLOAT16:
            jit.bf16_gelu_backward(ga, xa, o)
            return
        if jit.available():
            jit.gelu32_backward(ga, xa, o)
            return
        with np.errstate(all="ignore"):
            for i in range(0, xa.size, _CHUNK):
                _gelu_backward_chunk(ga[i:i + _CHUNK], xa[i:i + _CHUNK], o[i:i + _CHUNK])
