"""``nn.init``: in-place initialisations of parameters (``torch.nn.init``), under ``no_grad``."""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _creation, _random
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
           "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "_calculate_fan_in_and_fan_out",
           "_calculate_correct_fan", "_no_grad_uniform_"]


def calculate_gain(nonlinearity: str, param: Any = None) -> float:
    """The recommended gain for ``nonlinearity`` (``relu``: sqrt(2), ``tanh``: 5/3 ...)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _no_grad_uniform_(tensor: Tensor, a: float, b: float, generator: Any = None) -> Tensor:
    with _no_grad():
        return tensor.uniform_(a, b, generator=generator)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with values from U(a, b)."""
    return _no_grad_uniform_(tensor, a, b, generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with values from N(mean, std^2)."""
    with _no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Any = None) -> Tensor:
    """Values from N(mean, std^2) restricted to [a, b] (out-of-range draws are redrawn)."""
    with _no_grad():
        # drawn on the host (the redraw loop is host code), whatever the default device
        arr = _random.randn(tuple(tensor.shape), generator=generator, dtype=tensor.dtype,
                            device="cpu").numpy().astype(np.float64) * std + mean
        bad = (arr < a) | (arr > b)
        while bad.any():
            arr[bad] = _random.randn(int(bad.sum()), generator=generator, dtype=tensor.dtype,
                                     device="cpu").numpy() * std + mean
            bad = (arr < a) | (arr > b)
        tensor.copy_(_creation.from_host(arr.astype(tensor.dtype.numpy), device=tensor.device))
    return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    with _no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with _no_grad():
        n, m = tensor.shape
        tensor.copy_(_creation.eye(n, m, dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    out_per = sizes[0] // groups
    min_dim = min(out_per, sizes[1])
    arr = np.zeros(tuple(sizes), tensor.dtype.numpy)
    for g in range(groups):
        for i in range(min_dim):
            idx = (g * out_per + i, i) + tuple(s // 2 for s in sizes[2:])
            arr[idx] = 1
    with _no_grad():
        tensor.copy_(_creation.from_host(arr, device=tensor.device))
    return tensor


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return _no_grad_uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """U(-b, b) with ``b = gain * sqrt(3 / fan)`` (He et al.)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return _no_grad_uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """N(0, std^2) with ``std = gain / sqrt(fan)``."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    """He et al.'s ``gain / sqrt(fan)``, or ``None`` (with PyTorch's warning) for empty tensors."""
    if 0 in tensor.shape:
        # stacklevel 1: reported at this line, as PyTorch reports it from its own init module
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=1)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal matrix (on the host)."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _random.randn(rows, cols, generator=generator, dtype=tensor.dtype,
                         device="cpu").numpy().astype(np.float64)  # QR runs on the host
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    arr = (q * gain).reshape(tuple(tensor.shape)).astype(tensor.dtype.numpy)
    with _no_grad():
        tensor.copy_(_creation.from_host(arr, device=tensor.device))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with _no_grad():
        tensor.normal_(0, std, generator=generator)
        # the zeroed rows of each column from the global generator, as PyTorch (its randperm
        # takes no generator here): repeatable under manual_seed
        for c in range(cols):
            tensor[_random.randperm(rows)[:num_zeros].to(tensor.device), c] = 0
    return tensor


# deprecated non-underscore aliases, as torch.nn.init
uniform = uniform_
normal = normal_
constant = constant_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
orthogonal = orthogonal_


def eye(tensor: Tensor) -> Tensor:
    """Deprecated alias of :func:`eye_` (warns, as ``torch.nn.init.eye``)."""
    warnings.warn("`nn.init.eye` is now deprecated in favor of `nn.init.eye_`.", FutureWarning,
                  stacklevel=2)
    return eye_(tensor)


def dirac(tensor: Tensor, groups: int = 1) -> Tensor:
    """Deprecated alias of :func:`dirac_` (warns, as ``torch.nn.init.dirac``)."""
    warnings.warn("`nn.init.dirac` is now deprecated in favor of `nn.init.dirac_`.",
                  FutureWarning, stacklevel=2)
    return dirac_(tensor, groups)


def _reset_weight_and_bias(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and the convolutions: ``kaiming_uniform_(a=sqrt(5))`` on the
    weight and ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` on the bias."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)
