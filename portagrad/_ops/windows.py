"""Window functions for signal processing: ``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window``, ``kaiser_window`` (PyTorch's definitions: a periodic
window of length ``L`` is the symmetric window of length ``L + 1`` without its last point)."""
from __future__ import annotations

import math
from typing import Any

from .. import _creation, _dtype
from .._tensor import Tensor
from . import elementwise
from .shape import reshape
from .special import i0

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def _grid(name: str, length: int, periodic: bool, dtype: Any, device: Any) -> tuple[Tensor, int]:
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length="
                           f"{length}")
    dt = _dtype.get_default_dtype() if dtype is None else dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    n = length + 1 if periodic else length
    return _creation.arange(length, dtype=dt, device=device), n


def _small(length: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor | None:
    if length > 1:
        return None
    return _creation.ones(length, dtype=dtype, device=device, requires_grad=requires_grad)


def _cosine_sum(name: str, coefs: tuple[float, ...], length: int, periodic: bool, dtype: Any,
                device: Any, requires_grad: bool) -> Tensor:
    small = _small(length, dtype, device, requires_grad)
    if small is not None:
        return small
    k, n = _grid(name, length, periodic, dtype, device)
    out = _creation.full_like(k, coefs[0])
    for j, c in enumerate(coefs[1:], start=1):
        term = elementwise.cos(k * (2 * math.pi * j / (n - 1))) * c
        out = out + term if j % 2 == 0 else out - term
    return out.requires_grad_(requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    return _cosine_sum("hann_window", (0.5, 0.5), window_length, periodic, dtype, device,
                       requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False) -> Tensor:
    """``alpha - beta cos(2 pi n / (N - 1))``."""
    return _cosine_sum("hamming_window", (alpha, beta), window_length, periodic, dtype, device,
                       requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False
                    ) -> Tensor:
    """``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    return _cosine_sum("blackman_window", (0.42, 0.5, 0.08), window_length, periodic, dtype,
                       device, requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False
                    ) -> Tensor:
    """The triangular window ``1 - |2n / (N - 1) - 1|``."""
    small = _small(window_length, dtype, device, requires_grad)
    if small is not None:
        return small
    k, n = _grid("bartlett_window", window_length, periodic, dtype, device)
    out = 1.0 - elementwise.abs(k * (2.0 / (n - 1)) - 1.0)
    return out.requires_grad_(requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """``I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)``."""
    small = _small(window_length, dtype, device, requires_grad)
    if small is not None:
        return small
    k, n = _grid("kaiser_window", window_length, periodic, dtype, device)
    r = k * (2.0 / (n - 1)) - 1.0
    arg = elementwise.sqrt(elementwise.clamp(1.0 - r * r, 0.0, None)) * beta
    b = _creation.full((1,), beta, dtype=k.dtype, device=k.device)
    out = i0(arg) / reshape(i0(b), ())
    return out.requires_grad_(requires_grad)
