"""``torch.signal.windows``: window functions of length ``M``, symmetric (``sym=True``) or
periodic (the symmetric window of ``M + 1`` points without its last one), as SciPy defines them.

Computed by tensor operations on the requested device, in the requested float32 or float64 dtype
(PyTorch refuses other dtypes for these)."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from .. import _creation, _dtype
from .._layout import strided
from .._ops import elementwise
from .._ops.special import i0
from .._tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype: Any, layout: Any) -> Any:
    """PyTorch's checks, in its order (length, layout, dtype): the dtype to compute in."""
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    if dt not in (_dtype.float32, _dtype.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    return dt


def _window(name: str, M: int, sym: bool, dtype: Any, layout: Any, device: Any,
            requires_grad: bool, formula: Callable[[Tensor, int, Any], Tensor],
            check: Callable[[], None] | None = None) -> Tensor:
    """The window ``name`` of ``M`` points: PyTorch's checks (then the window's own ``check`` of
    its parameters), the windows of 0 and 1 points (empty; a single 1), else ``formula(n, N,
    dtype)`` of ``n = 0 .. M-1`` and the number of points ``N`` of the symmetric window they
    sample."""
    dt = _checks(name, M, dtype, layout)
    if check is not None:
        check()
    if M == 0:
        return _creation.empty((0,), dtype=dt, device=device, requires_grad=requires_grad)
    if M == 1:
        return _creation.ones((1,), dtype=dt, device=device, requires_grad=requires_grad)
    w = formula(_creation.arange(M, dtype=dt, device=device), M if sym else M + 1, dt)
    return w.requires_grad_(True) if requires_grad else w


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype: Any = None,
                   layout: Any = strided, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
    """``w[n] = sum_k (-1)^k a[k] cos(2 pi k n / (N - 1))``."""
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")

    def formula(n: Tensor, N: int, dt: Any) -> Tensor:
        phase = n * (2.0 * math.pi / (N - 1))
        w = _creation.full((M,), float(a[0]), dtype=dt, device=device)
        for k, c in enumerate(a[1:], start=1):
            w = w + elementwise.cos(phase * float(k)) * (-float(c) if k % 2 else float(c))
        return w
    return _window("general_cosine", M, sym, dtype, layout, device, requires_grad, formula)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None,
                    layout: Any = strided, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """``alpha - (1 - alpha) cos(2 pi n / (N - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hann window: ``general_hamming`` with ``alpha = 0.5``."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hamming window: ``general_hamming`` with ``alpha = 0.54``."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Blackman window: ``general_cosine`` with ``a = (0.42, 0.5, 0.08)``."""
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """The triangular window with zero ends: ``1 - |2 n / (N - 1) - 1|``."""
    return _window("bartlett", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N, dt: 1.0 - elementwise.abs(n * (2.0 / (N - 1)) - 1.0))


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """The cosine (sine) window: ``sin(pi (n + 1/2) / N)``."""
    return _window("cosine", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N, dt: elementwise.sin((n + 0.5) * (math.pi / N)))


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: Any = None, layout: Any = strided, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """``exp(-|n - center| / tau)``, centred on the window's middle unless ``center`` is given
    (periodic windows only)."""
    def check() -> None:
        if tau <= 0:
            raise ValueError(f"Tau must be positive, got: {tau} instead.")
        if sym and center is not None:
            raise ValueError("Center must be None for symmetric windows")

    def formula(n: Tensor, N: int, dt: Any) -> Tensor:
        c = (N - 1) / 2 if center is None else float(center)
        return elementwise.exp(elementwise.abs(n - c) * (-1.0 / tau))
    return _window("exponential", M, sym, dtype, layout, device, requires_grad, formula, check)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,
             layout: Any = strided, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``exp(-(n - (N - 1) / 2)^2 / (2 std^2))``."""
    def check() -> None:
        if std <= 0:
            raise ValueError(f"Standard deviation must be positive, got: {std} instead.")

    def formula(n: Tensor, N: int, dt: Any) -> Tensor:
        z = (n - (N - 1) / 2) * (1.0 / std)
        return elementwise.exp(z * z * -0.5)
    return _window("gaussian", M, sym, dtype, layout, device, requires_grad, formula, check)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,
           layout: Any = strided, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``I0(beta sqrt(1 - ((n - m) / m)^2)) / I0(beta)``, ``m = (N - 1) / 2``."""
    def check() -> None:
        if beta < 0:
            raise ValueError(f"beta must be non-negative, got: {beta} instead.")

    def formula(n: Tensor, N: int, dt: Any) -> Tensor:
        m = (N - 1) / 2
        r = (n - m) * (1.0 / m)
        arg = elementwise.sqrt(elementwise.clamp(1.0 - r * r, min=0.0)) * float(beta)
        return i0(arg) / i0(_creation.full((1,), float(beta), dtype=dt, device=device))
    return _window("kaiser", M, sym, dtype, layout, device, requires_grad, formula, check)
