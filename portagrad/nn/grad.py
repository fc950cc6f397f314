"""Gradients of the convolutions w.r.t. their input or weight (``torch.nn.grad``): the backend's
one call that the convolution's backward makes, where it applies and nothing records; otherwise
by running the convolution under autograd (the derivative is written once, in the core)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import _creation
from .._tensor import Tensor
from ..autograd.engine import grad as _grad
from .._ops import nn as nodes
from .._ops.nn.conv import conv_fast_path
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from . import functional as F
from .functional import _pair

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _records(*tensors: Tensor) -> bool:
    return is_grad_enabled() and any(t.requires_grad for t in tensors)


def _direct_geometry(conv: Callable[..., Tensor], x_shape: Sequence[int], w_shape: Sequence[int],
                     grad_output: Tensor, other: Tensor, geom: tuple) -> tuple | None:
    """``(stride, padding, dilation, groups)`` where the gradient can be the backend's one call
    (the same call as the convolution's backward): a batched 1-D or 2-D convolution on a backend
    with the convolution fast paths, nothing to record, integer geometry, and ``grad_output`` of
    the convolution's shape. Otherwise None: the convolution runs under autograd (with its
    checks and errors), which also computes a forward the gradient does not need."""
    nd = {F.conv1d: 1, F.conv2d: 2}.get(conv)
    stride, padding, dilation, groups = geom
    if nd is None or isinstance(padding, str) or not conv_fast_path(grad_output):
        return None
    if _records(grad_output, other):
        return None
    if other.dtype is not grad_output.dtype or other.device != grad_output.device:
        return None
    x_shape, w_shape = tuple(int(v) for v in x_shape), tuple(int(v) for v in w_shape)
    if len(x_shape) != nd + 2 or len(w_shape) != nd + 2 or grad_output.dim() != nd + 2:
        return None
    try:
        s, p, d = (_pair(v, nd) for v in (stride, padding, dilation))
    except (TypeError, ValueError):
        return None
    if min(s) <= 0 or min(d) <= 0 or min(p) < 0 or groups <= 0 or w_shape[0] % groups or \
            x_shape[1] != w_shape[1] * groups:
        return None
    out = tuple((x_shape[2 + i] + 2 * p[i] - d[i] * (w_shape[2 + i] - 1) - 1) // s[i] + 1
                for i in range(nd))
    if min(out) <= 0 or tuple(grad_output.shape) != (x_shape[0], w_shape[0]) + out:
        return None
    return s, p, d, groups


def _input_grad(conv: Callable[..., Tensor], input_size: Sequence[int], weight: Tensor,
                grad_output: Tensor, *geom: Any) -> Tensor:
    direct = _direct_geometry(conv, input_size, weight.shape, grad_output, weight, geom)
    if direct is not None:
        return nodes.conv._fast_grad_input(grad_output, weight, tuple(input_size), direct,
                                           grad_output.dim() - 2)
    x = _creation.zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device,
                        requires_grad=True)
    with enable_grad():
        out = conv(x, weight if _records(grad_output, weight) else weight.detach(), None, *geom)
    if tuple(out.shape) != tuple(grad_output.shape):
        raise RuntimeError(f"grad_output has shape {list(grad_output.shape)}, but the convolution "
                           f"of an input of size {list(input_size)} gives {list(out.shape)}")
    # differentiable w.r.t. grad_output and weight where they require grad (PyTorch's
    # convolution_backward is): the backward is then recorded
    return _grad(out, x, grad_output, create_graph=_records(grad_output, weight))[0]


def _weight_grad(conv: Callable[..., Tensor], input: Tensor, weight_size: Sequence[int],
                 grad_output: Tensor, *geom: Any) -> Tensor:
    direct = _direct_geometry(conv, input.shape, weight_size, grad_output, input, geom)
    if direct is not None:
        return nodes.conv._fast_grad_weight(input, grad_output, tuple(weight_size), direct,
                                            grad_output.dim() - 2)
    w = _creation.zeros(tuple(weight_size), dtype=input.dtype, device=input.device,
                        requires_grad=True)
    with enable_grad():
        out = conv(input if _records(grad_output, input) else input.detach(), w, None, *geom)
    if tuple(out.shape) != tuple(grad_output.shape):
        raise RuntimeError(f"grad_output has shape {list(grad_output.shape)}, but the convolution "
                           f"with a weight of size {list(weight_size)} gives {list(out.shape)}")
    return _grad(out, w, grad_output, create_graph=_records(grad_output, input))[0]


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
