"""Window functions for signal processing: ``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window``, ``kaiser_window`` (PyTorch's definitions: a periodic
window of length ``L`` is the symmetric window of length ``L + 1`` without its last point)."""
from __future__ import annotations

import math
from typing import Any

from .. import _creation, _dtype
from .._tensor import Tensor
from . import elementwise
from .special import i0

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


# C++'s names of the non-floating dtypes, in PyTorch's "expects floating point dtypes" message
_CPP_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "uint16": "short unsigned int", "uint32": "unsigned int",
              "uint64": "long unsigned int", "bool": "bool"}


def _length(name: str, length: Any) -> int:
    """``window_length`` as PyTorch's argument parser reads an ``int`` (bools, floats and
    tensors of more than one element refused with its ``TypeError``)."""
    if isinstance(length, Tensor) and length.numel() == 1 and length.dim() == 0 \
            and not (length.dtype.is_floating_point or length.dtype.is_complex
                     or length.dtype is _dtype.bool):
        return int(length.item())
    if isinstance(length, bool) or not hasattr(length, "__index__") or isinstance(length, Tensor):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(length).__name__}")
    return int(length.__index__())


def _check(name: str, length: Any, dtype: Any, device: Any) -> tuple[int, Any]:
    """PyTorch's checks, in its order: the dtype (floating or complex), then the length."""
    n = _length(name, length)
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        dev = "cpu" if device is None else str(device)
        raise RuntimeError(
            f"{name} expects floating point dtypes, got: TensorOptions(dtype="
            f"{_CPP_NAMES.get(dt.name, dt.name)}, device={dev}, layout=Strided (default), "
            f"requires_grad=false (default), pinned_memory=false, memory_format=(nullopt))")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    return n, dt


def _grid(length: int, periodic: bool, dt: Any, device: Any) -> tuple[Tensor, int]:
    if dt.is_complex:  # (lengths 0 and 1 are ones; a longer complex window needs a complex arange)
        raise NotImplementedError(f'"arange_cpu" not implemented for '
                                  f"'{elementwise._type_name(dt)}'")
    n = length + 1 if periodic else length
    return _creation.arange(length, dtype=dt, device=device), n


def _scaled(k: Tensor, scale: float) -> Tensor:
    """``k * scale`` with ``scale`` first rounded to ``k``'s dtype, as PyTorch's grid is (it
    shows in float16/bfloat16 windows)."""
    return k * _creation.tensor(scale, dtype=k.dtype, device=k.device)


def _const(k: Tensor, value: float) -> Tensor:
    """``value`` as a 0-d tensor of ``k``'s dtype (rounded to it)."""
    return _creation.tensor(value, dtype=k.dtype, device=k.device)


def _small(length: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor | None:
    if length > 1:
        return None
    return _creation.ones(length, dtype=dtype, device=device, requires_grad=requires_grad)


def _cosine_sum(name: str, coefs: tuple[float, ...], length: Any, periodic: bool, dtype: Any,
                device: Any, requires_grad: bool) -> Tensor:
    length, dt = _check(name, length, dtype, device)
    small = _small(length, dt, device, requires_grad)
    if small is not None:
        return small
    k, n = _grid(length, periodic, dt, device)
    # the coefficients rounded to the dtype, the highest-order term first and the constant
    # last: PyTorch's rounding, which shows in float16/bfloat16 windows
    out = _const(k, 0.0)
    for j in range(len(coefs) - 1, 0, -1):  # (odd terms negated: the signs alternate)
        c = coefs[j] if j % 2 == 0 else -coefs[j]
        out = elementwise.cos(_scaled(k, 2 * math.pi * j / (n - 1))) * _const(k, c) + out
    out = out + _const(k, coefs[0])
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
    length, dt = _check("bartlett_window", window_length, dtype, device)
    small = _small(length, dt, device, requires_grad)
    if small is not None:
        return small
    k, n = _grid(length, periodic, dt, device)
    # the rising half 2n / (N - 1), the falling one 2 - 2n / (N - 1) (PyTorch's rounding)
    up = _scaled(k, 2.0 / (n - 1))
    out = elementwise.where(up <= 1.0, up, 2.0 - up)
    return out.requires_grad_(requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """``I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)``."""
    length, dt = _check("kaiser_window", window_length, dtype, device)
    small = _small(length, dt, device, requires_grad)
    if small is not None:
        return small
    k, n = _grid(length, periodic, dt, device)
    b = _const(k, beta)  # (beta rounded to the dtype)
    # float16/bfloat16 compute in float32 and round once, as PyTorch's
    low = dt in (_dtype.float16, _dtype.bfloat16)
    if low:
        k, b = k.to(_dtype.float32), b.to(_dtype.float32)
    half = (n - 1) / 2
    r = (k - half) / half
    out = i0(elementwise.sqrt(elementwise.clamp(1.0 - r * r, 0.0, None)) * b) / i0(b)
    if low:
        out = out.to(dt)
    return out.requires_grad_(requires_grad)
