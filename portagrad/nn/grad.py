"""Gradients of the convolutions w.r.t. their input or weight (``torch.nn.grad``), computed by
running the convolution under autograd (the derivative is written once, in the core)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import _creation
from .._tensor import Tensor
from ..autograd.engine import grad as _grad
from ..autograd.grad_mode import enable_grad
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _input_grad(conv: Callable[..., Tensor], input_size: Sequence[int], weight: Tensor,
                grad_output: Tensor, *geom: Any) -> Tensor:
    x = _creation.zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device,
                        requires_grad=True)
    with enable_grad():
        out = conv(x, weight.detach(), None, *geom)
    if tuple(out.shape) != tuple(grad_output.shape):
        raise RuntimeError(f"grad_output has shape {list(grad_output.shape)}, but the convolution "
                           f"of an input of size {list(input_size)} gives {list(out.shape)}")
    return _grad(out, x, grad_output)[0]


def _weight_grad(conv: Callable[..., Tensor], input: Tensor, weight_size: Sequence[int],
                 grad_output: Tensor, *geom: Any) -> Tensor:
    w = _creation.zeros(tuple(weight_size), dtype=input.dtype, device=input.device,
                        requires_grad=True)
    with enable_grad():
        out = conv(input.detach(), w, None, *geom)
    if tuple(out.shape) != tuple(grad_output.shape):
        raise RuntimeError(f"grad_output has shape {list(grad_output.shape)}, but the convolution "
                           f"with a weight of size {list(weight_size)} gives {list(out.shape)}")
    return _grad(out, w, grad_output)[0]


def conv1d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of :func:`~portagrad.nn.functional.conv1d` w.r.t. its input."""
    return _input_grad(F.conv1d, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv1d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                  stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of :func:`~portagrad.nn.functional.conv1d` w.r.t. its weight."""
    return _weight_grad(F.conv1d, input, weight_size, grad_output, stride, padding, dilation,
                        groups)


def conv2d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of :func:`~portagrad.nn.functional.conv2d` w.r.t. its input."""
    return _input_grad(F.conv2d, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv2d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                  stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of :func:`~portagrad.nn.functional.conv2d` w.r.t. its weight."""
    return _weight_grad(F.conv2d, input, weight_size, grad_output, stride, padding, dilation,
                        groups)


def conv3d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of :func:`~portagrad.nn.functional.conv3d` w.r.t. its input."""
    return _input_grad(F.conv3d, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv3d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                  stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of :func:`~portagrad.nn.functional.conv3d` w.r.t. its weight."""
    return _weight_grad(F.conv3d, input, weight_size, grad_output, stride, padding, dilation,
                        groups)
