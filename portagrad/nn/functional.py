"""``nn.functional``: the stateless forms of layers, activations and losses (``torch.nn.functional``).

This module checks arguments and composes; the layers' autograd nodes (one node each for linear,
conv, the norms, cross entropy, softmax and max pooling) live in :mod:`portagrad._ops.nn`. Windowed
ops (conv, pooling, ``pad``, ``interpolate``, ``unfold``/``fold``) go through one precomputed index
gather (:mod:`portagrad._ops.nn.im2col`) and, for conv, one matmul. Softmax, log-softmax and the
losses built on them subtract the maximum first.
"""
from __future__ import annotations

import math
import warnings
from typing import Any
from collections.abc import Sequence

import numpy as np

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype, _random
from .._ops import elementwise
from .._ops import nn as nodes
from .._ops.conversion import unaliased
from .._ops.elementwise import _type_name, softplus_raw, unary_inplace
from .._ops.indexing import where
from .._ops.joining import cat
from .._ops.nn import im2col
from .._ops.nn.grouped_mm import grouped_mm
from .._shape import broadcast_shapes as _broadcast_shapes
from .._shape import check_expandable, wrap_dim
from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ._dispatch import (assert_int_or_pair, boolean_dispatch, handle_torch_function,
                        has_torch_function, has_torch_function_unary, has_torch_function_variadic)

__all__ = [
    # activations
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "celu", "gelu",
    "silu", "mish", "sigmoid", "tanh", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish",
    "softplus", "softsign", "logsigmoid", "softmax", "log_softmax", "softmin", "threshold",
    "glu", "prelu", "tanhshrink", "softshrink", "hardshrink",
    "threshold_", "selu_", "celu_", "rrelu", "rrelu_", "gumbel_softmax",
    # linear, dropout, embedding
    "linear", "bilinear", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "embedding", "feature_alpha_dropout", "grouped_mm",
    # conv and pooling
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold", "max_pool1d",
    "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "lp_pool2d",
    "conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d",
    "adaptive_max_pool3d", "lp_pool1d", "lp_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
    # normalisation
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "normalize",
    "local_response_norm",
    # losses
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "gaussian_nll_loss", "multilabel_soft_margin_loss",
    "triplet_margin_with_distance_loss", "multi_margin_loss", "multilabel_margin_loss", "ctc_loss",
    "linear_cross_entropy",
    # misc
    "pad", "one_hot", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
    "scaled_dot_product_attention", "cosine_similarity", "pairwise_distance", "pixel_shuffle",
    "pixel_unshuffle", "channel_shuffle",
    "embedding_bag", "conv_tbc", "native_channel_shuffle", "pdist", "max_unpool1d",
    "max_unpool2d", "max_unpool3d", "affine_grid", "grid_sample", "multi_head_attention_forward",
    "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES",
    # helpers for code written against nn.functional
    "boolean_dispatch", "assert_int_or_pair", "handle_torch_function", "has_torch_function",
    "has_torch_function_unary", "has_torch_function_variadic",
]


# ------------------------------------------------------------------ helpers
def _pair(x: Any, n: int = 2, name: str = "") -> tuple[int, ...]:
    if isinstance(x, (list, tuple)):
        if len(x) == 1:
            return tuple(int(x[0]) for _ in range(n))
        if len(x) != n:
            raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {x}")
        return tuple(int(v) for v in x)
    return (int(x),) * n


def _check_conv_geometry(s: tuple[int, ...], pd: tuple[int, ...], d: tuple[int, ...],
                         op: tuple[int, ...] = ()) -> None:
    """PyTorch's checks of a convolution's stride, padding and dilation (``ConvParams``), before
    any arithmetic divides by a stride or sizes a buffer with them."""
    if any(v < 0 for v in pd):
        raise RuntimeError("negative padding is not supported")
    if any(v < 0 for v in op):
        raise RuntimeError("negative output_padding is not supported")
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v < 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    if any(v == 0 for v in d):  # (PyTorch's oneDNN path says "non-positive dilation ...")
        raise RuntimeError(f"dilation should be greater than zero, but got {list(d)}")


def _check_pool_geometry(name: str, k: tuple[int, ...], s: tuple[int, ...], pd: tuple[int, ...],
                         d: tuple[int, ...]) -> None:
    """PyTorch's checks of a pooling window (``pooling_output_shape`` then ``pool2d_shape_check``,
    or ``max_pool1d``'s own), in its order: a zero stride or kernel would divide by zero below,
    a negative one would size a negative output."""
    if name == "max_pool1d":
        checks = (("kernel_size", k[0] > 0, k[0]), ("stride", s[0] > 0, s[0]))
        for what, ok, v in checks:
            if not ok:
                raise RuntimeError(f"max_pool1d() {what} must be greater than zero, but got {v}")
        if pd[0] < 0:
            raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {pd[0]}")
        if pd[0] > k[0] // 2:
            raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but "
                               f"got padding={pd[0]} and kernel_size={k[0]}")
        if d[0] <= 0:
            raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d[0]}")
        return
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    for i in range(len(k)):
        if pd[i] < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {pd[i]}")
        if pd[i] > int((d[i] * (k[i] - 1) + 1) / 2):  # C's division, truncating toward zero
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad="
                               f"{pd[i]}, kernel_size={k[i]} and dilation={d[i]}")
    if len(k) == 3:  # PyTorch's pool3d_shape_check
        for what, t in (("kernel size", k), ("stride", s), ("dilation", d)):
            if any(v <= 0 for v in t):
                pre = "dilation" if what == "dilation" else "k" if what == "kernel size" else "d"
                raise RuntimeError(f"{what} should be greater than zero, but got {pre}T: {t[0]} "
                                   f"{pre}H: {t[1]} {pre}W: {t[2]}")
        return
    # 1-D pooling is 2-D pooling of height 1 in PyTorch, and its messages say so
    k2, s2, d2 = ((1,) * (2 - len(k)) + t for t in (k, s, d))
    p2 = (0,) * (2 - len(k)) + pd
    if any(kk > 0 and pp > kk // 2 for kk, pp in zip(k2, p2)):
        # PyTorch's CPU max_pool2d kernel bounds the padding by the kernel, not the dilated window
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"padW = {p2[1]}, padH = {p2[0]}, kW = {k2[1]}, kH = {k2[0]}")
    if any(v <= 0 for v in k2):
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {k2[0]} kW: "
                           f"{k2[1]}")
    if any(v <= 0 for v in s2):
        raise RuntimeError(f"stride should be greater than zero, but got dH: {s2[0]} dW: {s2[1]}")
    if any(v <= 0 for v in d2):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {d2[0]} "
                           f"dilationW: {d2[1]}")


def _check_pool_output(name: str, Cc: int, in_sp: tuple[int, ...], out_sp: tuple[int, ...]
                       ) -> None:
    """PyTorch's error when a pooling window does not fit the (padded) input once."""
    if all(o > 0 for o in out_sp):
        return
    if name == "max_pool1d":
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out_sp[0]}")
    lead = (Cc,) + (1,) * max(2 - len(in_sp), 0)
    raise RuntimeError(f"Given input size: ({'x'.join(map(str, lead + in_sp))}). Calculated output "
                       f"size: ({'x'.join(map(str, lead + out_sp))}). Output size is too small")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    legacy = "none" if not reduce else "mean" if size_average else "sum"
    # (the message names the reduction the two arguments amount to, as PyTorch's)
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{legacy}' "
                  "instead.", stacklevel=3)
    return legacy


def _not_differentiable(fn: str, arg: str, t: Tensor | None) -> None:
    """PyTorch's error for an argument its loss has no derivative for (a class weight, a
    target) that requires grad while grad mode is on."""
    if t is not None and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument "
                           f"'{arg}'. This input cannot have requires_grad True.")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _bview(t: Tensor, ndim: int, dim: int = 1) -> Tensor:
    """A 1-D tensor shaped to broadcast along ``dim`` of an ``ndim``-d tensor."""
    shape = [1] * ndim
    shape[dim] = t.shape[0]
    return t.reshape(tuple(shape))


# ------------------------------------------------------------------ activations
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``."""
    if inplace:
        return input.relu_()
    return elementwise.relu(input)


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
             ) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``; its gradient is 0 at the bounds (PyTorch).
    Integer tensors keep their dtype, the bounds truncated toward zero (PyTorch)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype is _dtype.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not input.dtype.is_floating_point:
        lo, hi = math.trunc(min_val), math.trunc(max_val)
        return input.clamp_(lo, hi) if inplace else input.clamp(lo, hi)
    fn = lambda x: nodes.activation.hardtanh(x, min_val, max_val)  # noqa: E731
    return unary_inplace(fn, input) if inplace else fn(input)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


#: the 16-bit floats, which PyTorch's CPU kernels compute in float32 and round once
_HALF16 = _dtype.HALF_FLOATS


def _in_float32(fn: Any) -> Any:
    """``fn`` computed on a float32 copy and rounded back once: PyTorch's activation kernels
    compute 16-bit floats so, where chaining 16-bit ops would round every intermediate."""
    return lambda x: fn(x.to(dtype=_dtype.float32)).to(dtype=x.dtype)


def _floating_only(kernel: str, input: Tensor) -> None:
    """PyTorch's error for an activation kernel it defines for floating types only."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(input.dtype)}'")


# the C type names PyTorch's casting errors use for an integer tensor written a float result
_C_TYPE_NAMES = {_dtype.int64: "long int", _dtype.int32: "int", _dtype.int16: "short int",
                 _dtype.int8: "signed char", _dtype.uint8: "unsigned char", _dtype.bool: "bool"}


def _float_into(what: Tensor, name: str | None = None) -> None:
    """PyTorch's error where its loss writes a floating result into ``what`` in place (a step of
    its formula) and ``what`` is integer: ``result type Float can't be cast to ...``."""
    if not what.dtype.is_floating_point:
        raise RuntimeError(f"result type {name or 'Float'} can't be cast to the desired output "
                           f"type {_type_name(what.dtype)}")


def _maybe_inplace(fn: Any, input: Tensor, inplace: bool) -> Tensor:
    if input.dtype in _HALF16:
        fn = _in_float32(fn)
    if inplace:
        return unary_inplace(fn, input)
    return fn(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` for ``x > 0`` else ``negative_slope * x``."""
    _floating_only("leaky_relu_cpu", input)
    return _maybe_inplace(lambda x: where(x > 0, x, x * negative_slope), input, inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` for ``x > 0`` else ``alpha * (exp(x) - 1)``."""
    _floating_only("elu_cpu", input)
    # (x <= 0 picks the exponential: a NaN takes the identity's gradient, as PyTorch's)
    return _maybe_inplace(lambda x: where(x <= 0, x.clamp(None, 0.0).expm1() * alpha, x), input,
                          inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    _floating_only("elu_cpu", input)
    return _maybe_inplace(lambda x: elu(x, _SELU_ALPHA) * _SELU_SCALE, input, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    _floating_only("elu_cpu", input)
    if alpha == 0:  # (it divides by alpha: PyTorch refuses rather than give NaN)
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _maybe_inplace(
        lambda x: where(x <= 0, (x.clamp(None, 0.0) / alpha).expm1() * alpha, x),
        input, inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (``approximate='tanh'``: the tanh approximation)."""
    _floating_only("GeluKernelImpl", input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return nodes.activation.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    if input.dtype.is_complex:  # PyTorch computes it, and refuses to differentiate it
        if input.requires_grad and is_grad_enabled():
            raise RuntimeError("silu does not support automatic differentiation for outputs "
                               "with complex dtype.")
        return _maybe_inplace(lambda x: x * x.sigmoid(), input, inplace)
    _floating_only("silu_cpu", input)
    if inplace:
        return _maybe_inplace(lambda x: x * x.sigmoid(), input, inplace)
    return nodes.activation.silu(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    _floating_only("mish_cpu", input)
    return _maybe_inplace(nodes.activation.mish, input, inplace)


def sigmoid(input: Tensor) -> Tensor:
    return elementwise.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return elementwise.tanh(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    _floating_only("hardsigmoid_cpu", input)
    return _maybe_inplace(nodes.activation.hardsigmoid, input, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    _floating_only("hardswish_cpu", input)
    return _maybe_inplace(nodes.activation.hardswish, input, inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "softplus", softplus, input, beta=beta, threshold=threshold)) is not _SKIP:
        return _ac_out
    _floating_only("softplus_cpu", input)
    if input.dtype in _HALF16:
        return _in_float32(lambda x: softplus_raw(x, beta, threshold))(input)
    return softplus_raw(input, beta, threshold)


def softsign(input: Tensor) -> Tensor:
    return input / (input.abs() + 1.0)


def _log1p_exp(x: Tensor) -> Tensor:
    """``log(1 + exp(x))`` with no threshold (PyTorch's ``-log_sigmoid(-x)``), a 16-bit input
    computed in float32 and rounded once, as PyTorch's log_sigmoid kernel."""
    if x.dtype in _HALF16:
        return _in_float32(lambda t: softplus_raw(t, 1.0, None))(x)
    return softplus_raw(x, 1.0, None)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))`` computed stably (``-log(1 + exp(-x))``)."""
    _floating_only("log_sigmoid_cpu", input)
    return -_log1p_exp(-input)


def tanhshrink(input: Tensor) -> Tensor:
    return input - input.tanh()


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    _floating_only("softshrink_check", input)
    if not lambd >= 0:  # (NaN refused too)
        top = {"float32": "3.40282e+38", "float64": "1.79769e+308", "float16": "65504",
               "bfloat16": "3.38953e+38"}.get(input.dtype.name, "inf")
        raise RuntimeError(f"lambda must be in range [0, {top}] for input dtype "
                           f"{_dtype.SCALAR_TYPE_NAMES.get(input.dtype.name, input.dtype.name)}, "
                           f"but found {lambd:g}")
    # PyTorch's values (x * 0 inside the band: -0.0 for a negative x; NaN stays NaN) with its
    # gradient, exactly 0 inside the band (a detached x * 0: an infinite g must not become NaN)
    band = (input >= -lambd).logical_and(input <= lambd)
    return where(band, input.detach() * 0.0,
                 where(input > lambd, input - lambd, input + lambd))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    _floating_only("hardshrink_cpu", input)
    # 0 inside the band (NaN stays NaN), its gradient exactly 0 there, as PyTorch's
    band = (input >= -lambd).logical_and(input <= lambd)
    return where(band, 0.0, input)


def _threshold(input: Tensor, limit: float, value: float, inplace: bool) -> Tensor:
    if input.dtype is _dtype.bool:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    if not input.dtype.is_floating_point:
        value = math.trunc(value)
    # ``x <= limit``, not ``x > limit`` with the branches swapped: NaN stays NaN, as PyTorch's
    return _maybe_inplace(lambda x: where(x <= limit, value, x), input, inplace)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``value`` where ``x <= threshold``, else ``x`` (NaN stays NaN; ``value`` truncated to an
    integer input's dtype)."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _threshold(input, threshold, value, True)


def selu_(input: Tensor) -> Tensor:
    return selu(input, True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, True)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: negative inputs times a slope drawn from ``U(lower, upper)`` per
    element while training, times the mean slope ``(lower + upper) / 2`` otherwise."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)

    def fn(x: Tensor) -> Tensor:
        a = _random.rand(tuple(x.shape), dtype=x.dtype, device=x.device) * (upper - lower) + lower
        return where(x >= 0, x, x * a)

    return _maybe_inplace(fn, input, inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
           ) -> Tensor:
    return rrelu(input, lower, upper, training, True)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    _floating_only("glu_cpu", input)
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {wrap_dim(dim, input.dim())}"
                           f" is size {n}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call("prelu", prelu, input, weight=weight)) is not _SKIP:
        return _ac_out
    w = weight
    if input.dim() == 0 and weight.numel() != 1:
        raise RuntimeError("Not allow zero-dim input tensor.")
    if weight.numel() != 1:
        channels = input.shape[1] if input.dim() > 1 else 1
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = "
                               f"{channels}.")
        w = _bview(weight.reshape(-1), input.dim(), 1 if input.dim() > 1 else 0)
    return where(input > 0, input, w * input)


def _softmax_dim(ndim: int) -> int:
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to "
                  "include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_impl(input: Tensor, dim: Any, dtype: Any, log: bool) -> Tensor:
    if dim is None:
        dim = _softmax_dim(input.dim())
    x = input
    d = wrap_dim(dim, x.dim())  # as PyTorch: the dim is checked before the dtype
    if dtype is not None:
        x = x.to(dtype=dtype)
    elif not x.dtype.is_floating_point and x.numel():  # an empty tensor is returned, any dtype
        raise NotImplementedError(f"\"{'log_softmax' if log else 'softmax'}_lastdim_kernel_impl\" not "
                           f"implemented for '{_type_name(x.dtype)}'")
    if x.numel() == 0:
        return x.clone()
    # (a 16-bit x: the node computes in float32 and rounds once, as PyTorch's kernel)
    if x.dim() == 0:
        x1 = x.reshape((1,))
        return nodes.softmax.softmax(x1, 0, log).reshape(())
    return nodes.softmax.softmax(x, d, log)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (max-subtracted, so no overflow)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "softmax", softmax, input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)) is not _SKIP:
        return _ac_out
    return _softmax_impl(input, dim, dtype, False)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
                ) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` (max-subtracted)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "log_softmax", log_softmax, input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)) is not _SKIP:
        return _ac_out
    return _softmax_impl(input, dim, dtype, True)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    return _softmax_impl(-input, dim, dtype, False)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """Softmax of ``(logits + g) / tau`` with Gumbel(0, 1) noise ``g``; ``hard=True`` returns the
    one-hot of its argmax with the soft sample's gradient (straight-through)."""
    u = _random.rand(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    # -log(Exponential(1)), the Exponential(1) sample being -log(1 - u) (u in [0, 1))
    exponential = -(-u).log1p()
    gumbels = -exponential.log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    d = wrap_dim(dim, max(logits.dim(), 1))
    index = y_soft.argmax(d, keepdim=True)
    y_hard = _creation.zeros_like(logits).scatter(d, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ------------------------------------------------------------------ linear
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "linear", linear, input, weight=weight, bias=bias)) is not _SKIP:
        return _ac_out
    if input.dim() >= 1 and weight.dim() == 2 and input.shape[-1] != weight.shape[1]:
        lead = "x".join(str(s) for s in input.shape[:-1]) or "1"
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({lead}x{input.shape[-1]} "
                           f"and {weight.shape[1]}x{weight.shape[0]})")
    if weight.dim() == 2 and input.dim() >= 1 and (bias is None or bias.dim() == 1):
        return nodes.linear.linear(input, weight, bias)  # one recorded node instead of ~7
    out = input @ weight.t()  # (t() refuses a weight of more than 2 dimensions, as PyTorch's)
    if bias is not None:
        check_expandable(bias.shape, out.shape)  # the bias never broadcasts the output
        out = out + bias
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1^T W_k x2 + b_k``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "bilinear", bilinear, input1, input2=input2, weight=weight, bias=bias)) is not _SKIP:
        return _ac_out
    O, I1, I2 = weight.shape
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape((-1, I1))
    x2 = input2.reshape((-1, I2))
    w = weight.permute((1, 0, 2)).reshape((I1, O * I2))
    t = (x1 @ w).reshape((-1, O, I2))
    out = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(lead + (O,))


# ------------------------------------------------------------------ dropout
def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_mask(input: Tensor, p: float, shape: tuple[int, ...]) -> Tensor:
    u = _random.rand(shape, dtype=input.dtype, device=input.device)
    keep = u >= p
    return keep.to(dtype=input.dtype) * (1.0 / (1.0 - p))


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (training only)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        out = input * _dropout_mask(input, p, tuple(input.shape))
    if inplace:
        return input.copy_(out)
    return out


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, alpha: bool = False
                     ) -> Tensor:
    """PyTorch's ``feature_dropout``/``feature_alpha_dropout``: one draw per ``(N, C)`` pair,
    broadcast over the remaining dimensions (so a 2-D input drops single elements)."""
    # PyTorch's order: nothing to do, everything dropped, then the rank check (for the noise)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        out = input * 0.0
    elif input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    else:
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
        out = _alpha_dropout(input, p, shape) if alpha else \
            input * _dropout_mask(input, p, shape)
    return input.copy_(out) if inplace else out


def _deprecated_rank(name: str, ndim: int, nd: int) -> None:
    warnings.warn(f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will "
                  f"result in an error in a future release. To retain the behavior and silence this "
                  f"warning, please use dropout instead. Note that {name} exists to provide "
                  f"channel-wise dropout on inputs with {nd} spatial dimensions, a channel "
                  f"dimension, and an optional batch dimension (i.e. {nd + 1}D or {nd + 2}D "
                  f"inputs).", stacklevel=3)


def _unbatched_feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                               batched: bool) -> Tensor:
    """Feature dropout of an input without its batch dimension: as a batch of one."""
    if batched:
        return _feature_dropout(input, p, training, inplace)
    out = _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)
    return input.copy_(out) if inplace and out is not input else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability ``p``."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D "
                           f"input. Note that dropout1d exists to provide channel-wise dropout on "
                           f"inputs with 1 spatial dimension, a channel dimension, and an optional "
                           f"batch dimension (i.e. 2D or 3D inputs).")
    return _unbatched_feature_dropout(input, p, training, inplace, input.dim() == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) inputs with probability ``p``. As PyTorch, any other
    rank warns and is taken as ``(N, C, *)``: a 3-D input drops (N, C) channels of length L."""
    _check_p(p)
    if input.dim() not in (3, 4):
        _deprecated_rank("dropout2d", input.dim(), 2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
                      "to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability ``p`` (other
    ranks warn, as in PyTorch, and are taken as unbatched)."""
    _check_p(p)
    if input.dim() not in (4, 5):
        _deprecated_rank("dropout3d", input.dim(), 3)
    return _unbatched_feature_dropout(input, p, training, inplace, input.dim() == 5)


def _alpha_dropout(input: Tensor, p: float, shape: tuple[int, ...]) -> Tensor:
    """Alpha dropout with one draw per element of ``shape`` (broadcast against ``input``): dropped
    values become SELU's negative saturation, then an affine map keeps mean and variance."""
    if p == 1.0:  # PyTorch: everything dropped gives zeros (the affine map would divide by 0)
        return input * 0.0
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    keep = (_random.rand(shape, dtype=input.dtype, device=input.device) >= p).to(dtype=input.dtype)
    a = 1.0 / math.sqrt((alpha_p ** 2 * p + 1) * (1 - p))
    b = -a * alpha_p * p
    return (input * keep + (1.0 - keep) * alpha_p) * a + b


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
                  ) -> Tensor:
    """Dropout for SELU networks: keeps zero mean and unit variance (training only)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    out = _alpha_dropout(input, p, tuple(input.shape))
    return input.copy_(out) if inplace else out


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (one draw per ``(N, C)`` pair)."""
    _check_p(p)
    return _feature_dropout(input, p, training, inplace, alpha=True)


# ------------------------------------------------------------------ embedding
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input`` (``padding_idx``'s row gets no gradient)."""
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got {input.type()} instead (while "
                           f"checking arguments for embedding)")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            padding_idx += n
    try:
        return _embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                          sparse)
    except IndexError:  # an index outside the table, in PyTorch's words
        raise IndexError("index out of range in self") from None


def _embedding(input: Tensor, weight: Tensor, padding_idx: int | None, max_norm: float | None,
               norm_type: float, scale_grad_by_freq: bool, sparse: bool) -> Tensor:
    """:func:`embedding` of checked arguments (``padding_idx`` non-negative)."""
    n = weight.shape[0]
    if max_norm is not None:
        with no_grad():
            rows = weight.index_select(0, input.reshape((-1,)))
            norms = rows.norm(norm_type, 1, keepdim=True)
            # a call, not ``max_norm / ...``: a NumPy scalar max_norm would turn the tensor into an ndarray
            scale = where(norms > max_norm, elementwise.div(max_norm, norms + 1e-7), 1.0)
            new = rows * scale
            weight.data.index_copy_(0, input.reshape((-1,)), new)
    flat = input.reshape((-1,))
    if sparse and weight.requires_grad and weight.grad_fn is None and is_grad_enabled():
        # a leaf table gets a sparse gradient; one computed from other tensors keeps a dense one
        # (its gradient flows on through dense ops)
        out = nodes.embedding.sparse_rows(weight, flat, padding_idx, scale_grad_by_freq)
        return out.reshape(tuple(input.shape) + (weight.shape[1],))
    out = weight.index_select(0, flat)
    if scale_grad_by_freq and out.requires_grad:  # each row's gradient / its index's count
        out = nodes.embedding.scale_grad(out, flat, n)
    if padding_idx is not None and out.requires_grad:
        keep = flat.ne(padding_idx).unsqueeze(1)
        out = where(keep, out, out.detach())
    return out.reshape(tuple(input.shape) + (weight.shape[1],))


def _bag_table(offsets: np.ndarray, n: int, include_last_offset: bool) -> np.ndarray:
    """(B, Lmax) positions into the flat input of each bag's entries (``n``, one past the last
    entry, where a bag is shorter)."""
    ends = offsets[1:] if include_last_offset else np.append(offsets[1:], n)
    starts = offsets[:-1] if include_last_offset else offsets
    lengths = np.maximum(ends - starts, 0)
    lmax = int(lengths.max()) if len(lengths) else 0
    pos = starts[:, None] + np.arange(lmax)[None, :]
    return np.where(np.arange(lmax)[None, :] < lengths[:, None], pos, n)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embeddings: the bags are the rows of a 2-D ``input``, or
    the runs of a 1-D ``input`` starting at ``offsets``. Entries equal to ``padding_idx`` are left
    out (an empty bag gives zeros)."""
    if input.dtype.is_floating_point or input.dtype is _dtype.bool:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got {input.type()} instead (while "
                           f"checking arguments for embedding_bag)")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not "
                         f"None, then it must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    n = input.numel()
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is "
                             f"a mini-batch of fixed length sequences. However, found offsets of "
                             f"type {type(offsets)}")
        off = np.arange(0, n, max(input.shape[1], 1), dtype=np.int64)[:input.shape[0]]
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        if offsets.dtype not in (_dtype.int64, _dtype.int32):
            raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                               f"following scalar types: Long, Int; but got {offsets.type()} "
                               f"instead (while checking arguments for embedding_bag)")
        off = np.asarray(offsets.detach().cpu().numpy(), np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if per_sample_weights is not None and per_sample_weights.dtype is not weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as "
                           f"tensor for argument #1 'per_sample_weights'; but type {weight.type()} "
                           f"does not equal {per_sample_weights.type()} (while checking arguments "
                           f"for embedding_bag)")
    if len(off) and off[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
                           f"to start from position 0. However, got {off[0]}")
    if len(off) and off[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {off[-1]}")
    flat = input.reshape((-1,))
    idx = np.asarray(flat.detach().cpu().numpy(), np.int64)
    bad = np.nonzero((idx < 0) | (idx >= weight.shape[0]))[0]
    if len(bad):
        raise RuntimeError(f"Index {bad[0]} of input takes value {idx[bad[0]]} which is not in the "
                           f"valid range [0, {weight.shape[0]})")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    rows = embedding(flat, weight, padding_idx, max_norm, norm_type,
                     scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)  # (n, D)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape((-1,)).unsqueeze(1)
    table = _bag_table(off, n, include_last_offset)  # (B, Lmax), n = no entry
    used = table < n
    if padding_idx is not None:
        used &= np.append(idx, -1)[table] != padding_idx
    table = np.where(used, table, n)
    fill = -math.inf if mode == "max" else 0.0
    pad_row = _creation.full((1, weight.shape[1]), fill, dtype=rows.dtype, device=rows.device)
    rows = cat([rows, pad_row], 0)
    B, lmax = table.shape
    t = _creation.tensor(table.reshape(-1), device=weight.device)
    bags = rows.index_select(0, t).reshape((B, lmax, weight.shape[1]))
    count = used.sum(1, keepdims=True)
    if mode == "max":
        if lmax == 0:
            return _creation.zeros((B, weight.shape[1]), dtype=weight.dtype, device=weight.device)
        # the gradient goes to the first maximum of each bag and column only (PyTorch's
        # max_indices), exactly 0 elsewhere: max(dim) routes it by index, where amax would split
        # it among ties and multiply it by a 0/1 mask (an infinite g becoming NaN)
        out = bags.max(1).values
        empty = _creation.tensor(count == 0, device=weight.device)
        return where(empty, 0.0, out)
    out = bags.sum(1)
    if mode == "mean":
        out = out / _creation.tensor(np.maximum(count, 1).astype(np.float64),
                                     dtype=out.dtype, device=out.device)
    return out


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution of a (time, batch, channels) input with a (kernel, in, out) weight."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    # as conv1d over (batch, channels, time) with the weight as (out, in, kernel)
    out = conv1d(input.permute((1, 2, 0)), weight.permute((2, 1, 0)), bias, padding=pad)
    return out.permute((2, 0, 1))


# ------------------------------------------------------------------ convolution
def _conv_arg(value: Any, nd: int, name: str) -> tuple[int, ...]:
    """A convolution's int-list argument as ``nd`` ints: an int or a list of one or ``nd`` ints
    (PyTorch's message otherwise)."""
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(items) == 1:
        items = items * nd
    if len(items) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} values "
                           f"to match the convolution dimensions, but got {name}="
                           f"{[int(v) for v in items]}")
    return tuple(int(v) for v in items)


def _conv_padding(padding: Any, nd: int, k: tuple[int, ...], d: tuple[int, ...],
                  s: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(padding before, padding after)`` per spatial dim: ``'same'`` puts the odd pixel after."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * nd, (0,) * nd
        if padding == "same":
            if any(v != 1 for v in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            tot = tuple(d[i] * (k[i] - 1) for i in range(nd))
            lo = tuple(t // 2 for t in tot)
            return lo, tuple(t - l for t, l in zip(tot, lo))
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    p = _conv_arg(padding, nd, "padding")
    return p, p


def _check_conv_weight_rank(input: Tensor, weight: Tensor, nd: int, args: dict) -> None:
    """PyTorch's errors for a weight of another rank than ``conv{nd}d``'s: it takes the
    convolution's dimensions from the weight, so a stride (padding, dilation) expanded to ``nd``
    values no longer matches, or (``conv1d``, whose one-value lists expand to any rank) the
    input's rank does not."""
    if weight.dim() < 3:
        raise RuntimeError("weight should have at least three dimensions")
    kd = weight.dim() - 2
    for name, value in args.items():
        if isinstance(value, str):
            continue
        items = list(value) if isinstance(value, (list, tuple)) else [value] * nd
        if len(items) != 1 and len(items) != kd:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {kd} "
                               f"values to match the convolution dimensions, but got {name}="
                               f"{[int(v) for v in items]}")
    if input.dim() != kd + 2:
        raise RuntimeError(f"Expected {kd + 2}-dimensional input for {kd + 2}-dimensional weight "
                           f"{list(weight.shape)}, but got {input.dim()}-dimensional input of size "
                           f"{list(input.shape)} instead")
    raise RuntimeError(f"Expected {nd + 2}-dimensional weight for conv{nd}d, but got weight of "
                       f"size {list(weight.shape)}")


def _check_conv_bias(bias: Tensor | None, x: Tensor, weight: Tensor, out_channels: int,
                     transposed: bool) -> None:
    """A 1-D bias of ``out_channels`` elements of the input's dtype (PyTorch's messages)."""
    if bias is None:
        return
    if bias.dim() != 1 or bias.shape[0] != out_channels:
        t = "transposed=1, " if transposed else ""
        raise RuntimeError(f"Given {t}weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {out_channels} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    _check_conv_bias_dtype(bias, x)


def _check_conv_bias_dtype(bias: Tensor, x: Tensor) -> None:
    if bias.dtype is not x.dtype:
        names = _dtype.CPP_TYPE_NAMES
        raise RuntimeError(f"Input type ({names.get(x.dtype.name, x.dtype.name)}) and bias type "
                           f"({names.get(bias.dtype.name, bias.dtype.name)}) should be the same")


def _check_conv_groups(groups: int, weight: Tensor) -> None:
    """A positive ``groups`` dividing the weight's dim 0, which is not empty (PyTorch's messages,
    its doubled brackets included)."""
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size [{list(weight.shape)}] instead")
    if weight.shape[0] == 0:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")


def _nchw(out: Tensor, shape: tuple) -> Tensor:
    """An (N, *spatial, C) result laid out as PyTorch's contiguous (N, C, *spatial) output:
    scripts ``.view()`` what a convolution, pooling or interpolation returns."""
    return out.reshape(shape).movedim(-1, 1).contiguous()


def _convnd(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
            dilation: Any, groups: int, nd: int) -> Tensor:
    name = f"conv{nd}d"
    if weight.dim() != nd + 2:
        _check_conv_weight_rank(input, weight, nd, {"stride": stride, "padding": padding,
                                                    "dilation": dilation})
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)}")
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    N, Cin = x.shape[0], x.shape[1]
    O = weight.shape[0]
    k = tuple(weight.shape[2:])
    s = _conv_arg(stride, nd, "stride")
    d = _conv_arg(dilation, nd, "dilation")
    if any(v < 0 for v in d):  # before 'same' sizes a padding with it
        raise RuntimeError("dilation should be greater than zero")
    lo, hi = _conv_padding(padding, nd, k, d, s)
    _check_conv_geometry(s, lo, d)
    if bias is not None and bias.dtype is not x.dtype:
        _check_conv_bias_dtype(bias, x)
    _check_conv_groups(groups, weight)
    if Cin != weight.shape[1] * groups:
        # PyTorch pads the odd pixel of an asymmetric 'same' before this check: its shape shows it
        shown = list(x.shape[:2]) + [x.shape[2 + i] + hi[i] - lo[i] for i in range(nd)]
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{shown} to have {weight.shape[1] * groups} channels, but "
                           f"got {Cin} channels instead")
    _check_conv_bias(bias, x, weight, O, False)
    if x.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({x.type()}) and weight type ({weight.type()}) should be the "
                           f"same")
    in_sp = tuple(x.shape[2:])
    padded = tuple(in_sp[i] + lo[i] + hi[i] for i in range(nd))
    eff = tuple(d[i] * (k[i] - 1) + 1 for i in range(nd))
    if any(padded[i] < eff[i] for i in range(nd)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))})."
                           f" Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be "
                           f"greater than actual input size")
    p = im2col.window_plan(Cin, in_sp, k, s, lo, hi, d)
    # (the backends' fast paths are 2-D: 3-D convolutions take the composed path)
    if nd <= 2 and (groups == 1 or nodes.conv.conv_fast_path(x)):
        # one recorded node instead of ~10 (the backend's conv fast paths when it has them)
        out = nodes.conv.conv(x, weight, bias, p, (s, lo, d, groups))
        return out.squeeze(0) if unbatched else out
    cols = im2col.unfold_cols(x, p)  # (N, L, Cin*K)
    K = math.prod(k)
    NL = N * p.L
    if groups == 1:
        out = cols.reshape((NL, Cin * K)) @ weight.reshape((O, Cin * K)).t()
    else:
        g, Cg, Og = groups, Cin // groups, O // groups
        a = cols.reshape((NL, g, Cg * K)).transpose(0, 1)
        w = weight.reshape((g, Og, Cg * K)).transpose(1, 2)
        out = (a @ w).transpose(0, 1).reshape((NL, O))
    if bias is not None:
        out = out + bias
    out = _nchw(out, (N,) + p.out_spatial + (O,))
    return out.squeeze(0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) over (N, C, L) inputs."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "conv1d", conv1d, input, weight=weight, bias=bias, stride=stride, padding=padding,
            dilation=dilation, groups=groups)) is not _SKIP:
        return _ac_out
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution over (N, C, H, W) inputs: im2col (one index gather) and one matmul."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "conv2d", conv2d, input, weight=weight, bias=bias, stride=stride, padding=padding,
            dilation=dilation, groups=groups)) is not _SKIP:
        return _ac_out
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D convolution over (N, C, D, H, W) inputs (im2col gather and matmul)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "conv3d", conv3d, input, weight=weight, bias=bias, stride=stride, padding=padding,
            dilation=dilation, groups=groups)) is not _SKIP:
        return _ac_out
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3)


def _output_padding_message(op: tuple[int, ...], s: tuple[int, ...], d: tuple[int, ...]) -> str:
    """PyTorch's refusal of an output padding reaching the stride and dilation: 1-D as 2-D of
    height 1, 3-D with a depth."""
    if len(op) == 1:
        op, s, d = (0,) + op, (1,) + s, (1,) + d
    dims = ("depth", "height", "width")[3 - len(op):]
    parts = [f"{what}_{dim}: {v[i]}" for what, v in (("output_padding", op), ("stride", s),
                                                      ("dilation", d))
             for i, dim in enumerate(dims)]
    return ("output padding must be smaller than either stride or dilation, but got "
            + " ".join(parts))


def _conv_transposend(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
                      padding: Any, output_padding: Any, groups: int, dilation: Any, nd: int
                      ) -> Tensor:
    name = f"conv_transpose{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)}")
    if weight.dim() != nd + 2:
        _check_conv_weight_rank(input, weight, nd, {"stride": stride, "padding": padding,
                                                    "output_padding": output_padding,
                                                    "dilation": dilation})
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' (position 5) must be tuple of ints, not str")
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    N, Cin = x.shape[0], x.shape[1]
    s = _conv_arg(stride, nd, "stride")
    d = _conv_arg(dilation, nd, "dilation")
    pd = _conv_arg(padding, nd, "padding")
    op = _conv_arg(output_padding, nd, "output_padding")
    if any(v < 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    _check_conv_geometry(s, pd, d, op)
    _check_conv_groups(groups, weight)
    if weight.shape[0] != Cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[0]} channels, but got {Cin} "
                           f"channels instead")
    Cout = weight.shape[1] * groups
    _check_conv_bias(bias, x, weight, Cout, True)
    if x.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({x.type()}) and weight type ({weight.type()}) should be the "
                           f"same")
    if nd < 3 and not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise NotImplementedError(f"\"slow_conv_transpose2d_out_cpu\" not implemented for "
                                  f"'{_type_name(x.dtype)}'")
    k = tuple(weight.shape[2:])
    for i in range(nd):
        if op[i] >= s[i] and op[i] >= d[i]:
            raise RuntimeError(_output_padding_message(op, s, d))
    in_sp = tuple(x.shape[2:])
    out_sp = tuple((in_sp[i] - 1) * s[i] - 2 * pd[i] + d[i] * (k[i] - 1) + op[i] + 1
                   for i in range(nd))
    if any(o < 0 for o in out_sp):  # (an empty output is PyTorch's answer to sizes of 0)
        lead = (1,) * (2 - nd)  # PyTorch computes 1-D as 2-D of height 1
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, lead + in_sp))})."
                           f" Calculated output size per channel: "
                           f"({' x '.join(map(str, lead + out_sp))}). Output size is too small")
    # one window per input position: the padding after the output is reduced by the output
    # padding (which may reach past the stride when under the dilation: PyTorch allows it, and
    # the sweep over out_sp with the full padding counted extra windows, beyond the input)
    hi = tuple(pd[i] - op[i] for i in range(nd))
    p = im2col.window_plan(Cout, out_sp, k, s, pd, hi, d)
    K = math.prod(k)
    Lx = math.prod(in_sp)
    xs = x.movedim(1, -1).reshape((N * Lx, Cin))
    if groups == 1:
        cols = xs @ weight.reshape((Cin, Cout * K))
    else:
        g, Cg, Og = groups, Cin // groups, Cout // groups
        a = xs.reshape((N * Lx, g, Cg)).transpose(0, 1)
        cols = (a @ weight.reshape((g, Cg, Og * K))).transpose(0, 1)
    cols = cols.reshape((N, Lx, Cout * K))
    out = im2col.fold_cols(cols, p)
    if bias is not None:
        out = out + _bview(bias, nd + 2)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1
                     ) -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "conv_transpose1d", conv_transpose1d, input, weight=weight, bias=bias, stride=stride,
            padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)) is not _SKIP:
        return _ac_out
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1
                     ) -> Tensor:
    """Transposed 2-D convolution (the gradient of conv2d w.r.t. its input): matmul, then fold."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "conv_transpose2d", conv_transpose2d, input, weight=weight, bias=bias, stride=stride,
            padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)) is not _SKIP:
        return _ac_out
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 2)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1
                     ) -> Tensor:
    """Transposed 3-D convolution (the gradient of conv3d w.r.t. its input)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "conv_transpose3d", conv_transpose3d, input, weight=weight, bias=bias, stride=stride,
            padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)) is not _SKIP:
        return _ac_out
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 3)


def _im2col_arg(fn: str, value: Any, name: str, pos: int) -> tuple[int, int]:
    """One of ``unfold``/``fold``'s size arguments as a pair: an int, or a sequence of exactly
    two (PyTorch's im2col takes no single-element lists either)."""
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for i, v in enumerate(items):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be tuple of ints, but "
                            f"found element of type {type(v).__name__} at pos {i}")
    if not isinstance(value, (list, tuple)):
        return (int(value), int(value))
    if len(items) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(items)}")
    return (int(items[0]), int(items[1]))


def _check_im2col_values(k: tuple[int, int], s: tuple[int, int], d: tuple[int, int],
                         pd: tuple[int, int], order: str) -> None:
    """PyTorch's checks of im2col/col2im's kernel (k), stride (s), dilation (d) and padding (p),
    in the order given."""
    checks = {"k": (min(k) <= 0, f"kernel size should be greater than zero, but got kernel_height: "
                                 f"{k[0]} kernel_width: {k[1]}"),
              "s": (min(s) <= 0, f"stride should be greater than zero, but got stride_height: "
                                 f"{s[0]} stride_width: {s[1]}"),
              "d": (min(d) <= 0, f"dilation should be greater than zero, but got dilation_height: "
                                 f"{d[0]} dilation_width: {d[1]}"),
              "p": (min(pd) < 0, f"padding should be non-negative, but got pad_height: {pd[0]} "
                                 f"pad_width: {pd[1]}")}
    for c in order:
        bad, msg = checks[c]
        if bad:
            raise RuntimeError(msg)


def _blocks(n: int, k: int, d: int, pd: int, s: int) -> int:
    """The number of sliding blocks along one axis (C++'s division, truncating toward zero)."""
    span = n + 2 * pd - (d * (k - 1) + 1)
    return int(span / s) + 1


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
           ) -> Tensor:
    """Sliding local blocks: (N, C, H, W) -> (N, C*kh*kw, L) (or the same without N)."""
    k = _im2col_arg("im2col", kernel_size, "kernel_size", 2)
    d = _im2col_arg("im2col", dilation, "dilation", 3)
    pd = _im2col_arg("im2col", padding, "padding", 4)
    s = _im2col_arg("im2col", stride, "stride", 5)
    _check_im2col_values(k, s, d, pd, "kdps")
    if input.dim() < 3:  # PyTorch reads the size of dimension 2 first
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, "
                         f"{input.dim() - 1}], but got 2)")
    if input.dim() not in (3, 4) or 0 in input.shape[input.dim() - 3:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {list(input.shape)}")
    in_sp = tuple(input.shape[-2:])
    blocks = [_blocks(in_sp[i], k[i], d[i], pd[i], s[i]) for i in range(2)]
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {in_sp}, kernel_size={k}, dilation={d}, "
                           f"padding={pd}, calculated shape of the array of sliding blocks as "
                           f"{tuple(blocks)}, but its components must be at least one.")
    _check_im2col_dtype("im2col_out_cpu", input)
    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    p = im2col.window_plan(x.shape[1], in_sp, k, s, pd, pd, d)
    out = im2col.unfold_cols(x, p).transpose(1, 2)
    return out.squeeze(0) if unbatched else out


def _check_im2col_dtype(kernel: str, input: Tensor) -> None:
    """PyTorch's refusal of integer inputs to unfold/fold (floats, complex and bool only)."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex
            or input.dtype is _dtype.bool):
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Combine sliding blocks (N, C*kh*kw, L) into (N, C, H, W), summing overlaps."""
    osz = _im2col_arg("col2im", output_size, "output_size", 2)
    k = _im2col_arg("col2im", kernel_size, "kernel_size", 3)
    d = _im2col_arg("col2im", dilation, "dilation", 4)
    pd = _im2col_arg("col2im", padding, "padding", 5)
    s = _im2col_arg("col2im", stride, "stride", 6)
    _check_im2col_values(k, s, d, pd, "ksdp")
    if input.dim() not in (2, 3) or 0 in input.shape[input.dim() - 2:]:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch "
                           f"size and non-zero dimensions for input, but got: {list(input.shape)}")
    unbatched = input.dim() == 2
    x = input.unsqueeze(0) if unbatched else input
    K = k[0] * k[1]
    if x.shape[1] % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size="
                           f"{tuple(k)}.")
    blocks = [_blocks(osz[i], k[i], d[i], pd[i], s[i]) for i in range(2)]
    if blocks[0] * blocks[1] != x.shape[2]:
        raise RuntimeError(f"Given output_size={tuple(osz)}, kernel_size={tuple(k)}, dilation="
                           f"{tuple(d)}, padding={tuple(pd)}, stride={tuple(s)}, expected size of "
                           f"input's dimension 2 to match the calculated number of sliding blocks "
                           f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    _check_im2col_dtype("col2im_out_cpu", input)
    p = im2col.window_plan(x.shape[1] // K, osz, k, s, pd, pd, d)
    if input.dtype is _dtype.bool:  # overlaps add up as counts (an Array API backend has no
        # bool sum); any count is True
        out = im2col.fold_cols(x.transpose(1, 2).to(_dtype.int64), p).ne(0)
    else:
        out = im2col.fold_cols(x.transpose(1, 2), p)
    return out.squeeze(0) if unbatched else out


def _pool_args(kernel_size: Any, stride: Any, padding: Any, dilation: Any, nd: int
               ) -> tuple[tuple[int, ...], ...]:
    k = _pair(kernel_size, nd, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _pair(stride, nd, "stride")
    return k, s, _pair(padding, nd, "padding"), _pair(dilation, nd, "dilation")


def _pool_out(in_sp: tuple[int, ...], k: tuple[int, ...], s: tuple[int, ...],
              pd: tuple[int, ...], d: tuple[int, ...], ceil_mode: bool) -> tuple[int, ...]:
    return tuple(im2col.out_size(in_sp[i], k[i], s[i], pd[i], pd[i], d[i], ceil_mode)
                 for i in range(len(in_sp)))


def _check_pool_input(kind: str, input: Tensor, nd: int) -> None:
    """PyTorch's errors for a ``{kind}_pool{nd}d`` input: ``nd + 1`` or ``nd + 2`` dimensions, none
    of them empty but a batch dimension."""
    dims, shape = input.dim(), list(input.shape)
    ok_rank = dims in (nd + 1, nd + 2)
    nonbatch = shape[1:] if dims == nd + 2 else shape
    if ok_rank and 0 not in nonbatch:
        return
    optional_batch = "tensor with optional 0 dim batch size for input, but got:"
    if nd == 1:
        if kind == "max":
            raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) {optional_batch}{shape}")
        if not ok_rank:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {dims}-dimensional tensor for "
                               "argument #1 'self' (while checking arguments for avg_pool1d)")
        # (PyTorch runs it as a 2-D pooling of height 1, and names that shape)
        raise RuntimeError(f"Expected 3D or 4D (batch mode) {optional_batch}"
                           f"{shape[:-1] + [1] + shape[-1:]}")
    if nd == 2:
        if not ok_rank and kind == "max":
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
        if not ok_rank and dims < 3:
            n = max(dims, 1)
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             "but got -3)")
        raise RuntimeError(f"Expected 3D or 4D (batch mode) {optional_batch}{shape}")
    if not ok_rank:
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    name = "max_pool3d_with_indices_out_cpu_template()" if kind == "max" else "avg_pool3d()"
    raise RuntimeError(f"{name}: Expected input's non-batch dimensions to have positive length, "
                       f"but input has a shape of {shape} and non-batch dimension "
                       f"{nonbatch.index(0)} has length zero!")


def _max_poolnd(input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                ceil_mode: bool, return_indices: bool, nd: int) -> Any:
    k, s, pd, d = _pool_args(kernel_size, stride, padding, dilation, nd)
    _check_pool_geometry(f"max_pool{nd}d", k, s, pd, d)
    _check_pool_input("max", input, nd)
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    N, Cc = x.shape[0], x.shape[1]
    in_sp = tuple(x.shape[2:])
    _check_pool_output(f"max_pool{nd}d", Cc, in_sp, _pool_out(in_sp, k, s, pd, d, ceil_mode))
    p = im2col.window_plan(Cc, in_sp, k, s, pd, pd, d, ceil_mode)
    if nd <= 2 and nodes.pool.max_pool_fast_path(x):
        out, ind = nodes.pool.max_pool_fused(x, p, k, s, pd, d, nd)
        if unbatched:
            out, ind = out.squeeze(0), ind.squeeze(0)
        return (out, ind) if return_indices else out
    cols = im2col.unfold_cols(x, p, -math.inf)
    first = p.table_first_inside(x).reshape((1, p.L, 1, 1))
    vals, idx = nodes.pool.max_last(cols.reshape((N, p.L, Cc, p.K)), first)
    out = _nchw(vals, (N,) + p.out_spatial + (Cc,))
    if unbatched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    pix = p.table_pix(x)  # (L, K) flat input positions
    pe = pix.reshape((1, p.L, 1, p.K)).expand((N, p.L, Cc, p.K))
    ind = pe.gather(3, idx.unsqueeze(-1)).squeeze(-1)
    ind = _nchw(ind, (N,) + p.out_spatial + (Cc,))
    return out, (ind.squeeze(0) if unbatched else ind)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """2-D max pooling (padding reads ``-inf``; gradient to the first maximum of each window)."""
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "max_pool3d", max_pool3d, input, kernel_size=kernel_size, stride=stride, padding=padding,
            dilation=dilation, ceil_mode=ceil_mode, return_indices=return_indices)) is not _SKIP:
        return _ac_out
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool1d` and the flat positions of the maxima (whatever ``return_indices``)."""
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool2d` and the flat positions of the maxima (whatever ``return_indices``)."""
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool3d` and the flat positions of the maxima (whatever ``return_indices``)."""
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, True, 3)


def _avg_poolnd(input: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
                count_include_pad: bool, divisor_override: Any, nd: int) -> Tensor:
    k, s, pd, d = _pool_args(kernel_size, stride, padding, 1, nd)
    _check_pool_geometry(f"avg_pool{nd}d", k, s, pd, d)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool_input("avg", input, nd)
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    N, Cc = x.shape[0], x.shape[1]
    in_sp = tuple(x.shape[2:])
    out_sp = _pool_out(in_sp, k, s, pd, d, ceil_mode)
    if nd == 3 and any(o <= 0 for o in out_sp):
        raise RuntimeError(f"input image (T: {in_sp[0]} H: {in_sp[1]} W: {in_sp[2]}) smaller than "
                           f"kernel size (kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    _check_pool_output(f"avg_pool{nd}d", Cc, in_sp, out_sp)
    p = im2col.window_plan(Cc, in_sp, k, s, pd, pd, d, ceil_mode)
    cols = im2col.unfold_cols(x, p, 0.0)
    tot = cols.reshape((N, p.L, Cc, p.K)).sum(-1)  # (N, L, C)
    if divisor_override:
        out = tot / float(divisor_override)
    else:
        key = "cnt_pad" if count_include_pad else "cnt"

        def build() -> np.ndarray:
            cnt = np.ones(p.out_spatial, np.float64)
            for i in range(nd):
                st = np.arange(p.out_spatial[i]) * s[i] - pd[i]
                en = np.minimum(st + k[i], in_sp[i] + pd[i])
                if not count_include_pad:
                    st, en = np.maximum(st, 0), np.minimum(en, in_sp[i])
                shape = [1] * nd
                shape[i] = -1
                cnt = cnt * (en - st).reshape(shape)
            return cnt.reshape(p.L, 1)

        out = tot / p.float_table(key, build, x)
    if not x.dtype.is_floating_point:  # PyTorch: an integer average truncates, in input's dtype
        out = out.trunc().to(x.dtype)
    out = _nchw(out, (N,) + p.out_spatial + (Cc,))
    return out.squeeze(0) if unbatched else out


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """2-D average pooling."""
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override, 2)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "avg_pool3d", avg_pool3d, input, kernel_size=kernel_size, stride=stride, padding=padding,
            ceil_mode=ceil_mode, count_include_pad=count_include_pad,
            divisor_override=divisor_override)) is not _SKIP:
        return _ac_out
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override, 3)


def _fractional_starts(sample: np.ndarray, n: int, o: int, k: int, dtype: Any) -> np.ndarray:
    """PyTorch's ``generate_intervals``: the window starts of one plane along one dimension, in the
    input's floating type (so that the truncations match)."""
    ft = np.float32 if dtype is _dtype.float32 else np.float64
    seq = np.zeros((len(sample), o), np.int64)
    if o > 1:
        alpha = ft(n - k) / ft(o - 1)
        i = np.arange(o - 1, dtype=ft)[None, :]
        sm = sample.astype(ft)[:, None]
        seq[:, :-1] = ((i + sm) * alpha).astype(np.int64) - (sm * alpha).astype(np.int64)
    if o > 0:
        seq[:, -1] = n - k
    return seq


def _fractional_max_pool(input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                         return_indices: bool, _random_samples: Tensor | None, nd: int) -> Any:
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    k = _pair(kernel_size, nd, "kernel_size")
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    N, Cc = x.shape[0], x.shape[1]
    in_sp = tuple(x.shape[2:])
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * nd
        out_sp = tuple(int(n * float(r)) for n, r in zip(in_sp, ratio))
    else:
        out_sp = _pair(output_size, nd, "output_size")
    names = ("height", "width") if nd == 2 else ("time", "height", "width")
    for i in range(nd):
        if out_sp[i] + k[i] - 1 > in_sp[i]:
            raise RuntimeError(f"{name}(): pool {names[i]} {k[i]} too large relative to input "
                               f"{names[i]} {in_sp[i]}")
    if _random_samples is None:
        _random_samples = _random.rand((N, Cc, nd), dtype=x.dtype, device=x.device)
    if _random_samples.shape[1] != Cc:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    smp = np.asarray(_random_samples.detach().cpu().numpy()).reshape(N * Cc, nd)
    # PyTorch's sample order: (width, height) in 2-D, but (time, height, width) in 3-D
    order = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [_fractional_starts(smp[:, order[i]], in_sp[i], out_sp[i], k[i], x.dtype)
              for i in range(nd)]
    # (N*C, *out, *k) flat input positions of every window of every plane
    pix: np.ndarray = np.zeros((N * Cc,) + (1,) * (2 * nd), np.int64)
    for i in range(nd):
        shape = [N * Cc] + [1] * (2 * nd)
        shape[1 + i] = out_sp[i]
        st = starts[i].reshape(shape)
        shape_k = [1] * (1 + 2 * nd)
        shape_k[1 + nd + i] = k[i]
        pix = pix * in_sp[i] + st + np.arange(k[i]).reshape(shape_k)
    Lo, K = math.prod(out_sp), math.prod(k)
    pix = pix.reshape(N, Cc, Lo * K)
    flat = x.reshape((N, Cc, math.prod(in_sp)))
    cols = flat.gather(2, _creation.tensor(pix, device=x.device))
    vals, arg = nodes.pool.max_last(cols.reshape((N, Cc, Lo, K)))
    out = vals.reshape((N, Cc) + out_sp)
    if unbatched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    pe = _creation.tensor(pix.reshape(N, Cc, Lo, K), device=x.device)
    ind = pe.gather(3, arg.unsqueeze(-1)).squeeze(-1).reshape((N, Cc) + out_sp)
    return out, (ind.squeeze(0) if unbatched else ind)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """Max pooling over pseudo-random windows that shrink (N, C, H, W) to ``output_size`` (or
    ``output_ratio`` of the input), one random offset per plane (Graham, 2014)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "fractional_max_pool2d", fractional_max_pool2d, input, kernel_size=kernel_size,
            output_size=output_size, output_ratio=output_ratio, return_indices=return_indices,
            _random_samples=_random_samples)) is not _SKIP:
        return _ac_out
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 2)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """3-D :func:`fractional_max_pool2d`."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "fractional_max_pool3d", fractional_max_pool3d, input, kernel_size=kernel_size,
            output_size=output_size, output_ratio=output_ratio, return_indices=return_indices,
            _random_samples=_random_samples)) is not _SKIP:
        return _ac_out
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 3)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> Any:
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, True,
                                _random_samples, 2)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> Any:
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, True,
                                _random_samples, 3)


def _lp_pool(input: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool,
             nd: int) -> Tensor:
    """``(sum over the window of x^p)^(1/p)``: an average pool of ``x^p`` times the window size
    (PyTorch's formula, negative window sums clamped to 0 through ``sign * relu(abs)``).
    ``norm_type=inf`` is the limit, the largest ``|x|`` of each window (the formula would give 1:
    ``x^inf`` is inf or 0, and ``inf^0`` is 1)."""
    k = _pair(kernel_size, nd, "kernel_size")
    if norm_type == math.inf:
        return _max_poolnd(input.abs(), k, stride, 0, 1, ceil_mode, False, nd)
    out = _avg_poolnd(input ** norm_type, k, stride, 0, ceil_mode, True, None, nd)
    return (out.sign() * relu(out.abs()) * math.prod(k)) ** (1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """1-D power-average pooling."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """2-D power-average pooling."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """3-D power-average pooling."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def _adaptive_plan(Cc: int, in_sp: tuple[int, ...], out_sp: tuple[int, ...]) -> im2col.Plan:
    def build() -> im2col.Plan:
        per = []
        for n, o in zip(in_sp, out_sp):
            st = (np.arange(o) * n) // o
            en = -((-(np.arange(o) + 1) * n) // o)
            kmax = int((en - st).max())
            r = st[:, None] + np.arange(kmax)[None, :]
            per.append(np.where(r < en[:, None], r, -1))
        return im2col.Plan(Cc, in_sp, out_sp, im2col.combine(per, in_sp)[0])

    return im2col.plan(("adaptive", Cc, in_sp, out_sp), build)


def _adaptive_out(output_size: Any, in_sp: tuple[int, ...], nd: int) -> tuple[int, ...]:
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != nd:
            raise ValueError(f"output_size must have {nd} elements")
        return tuple(in_sp[i] if o is None else int(o) for i, o in enumerate(output_size))
    return (int(output_size),) * nd


def _check_adaptive_input(kind: str, input: Tensor, nd: int, ones: bool) -> None:
    """PyTorch's errors for an ``adaptive_{kind}_pool{nd}d`` input: ``nd + 1`` or ``nd + 2``
    dimensions; no empty spatial dimension, nor (max pooling) an empty channel dimension.
    ``ones``: the output size is all ones."""
    dims, shape = input.dim(), list(input.shape)
    if dims not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {dims}-dimensional tensor for "
                               f"argument #1 'self' (while checking arguments for "
                               f"adaptive_{kind}_pool1d)")
        colon = ":" if kind == "max" else ""
        raise RuntimeError(f"adaptive_{kind}_pool{nd}d(): Expected {nd + 1}D or {nd + 2}D tensor, "
                           f"but got{colon} {shape}")
    # max pooling: no empty dimension but the first (even unbatched, as PyTorch); average
    # pooling: no empty spatial dimension, except that an output of one element is a mean
    first = 1 if kind == "max" else dims - nd
    empty = [i for i in range(first, dims) if shape[i] == 0]
    if not empty or (kind == "avg" and ones):
        return
    name = f"adaptive_{kind}_pool{nd}d()"
    if kind == "avg" and nd == 1:  # PyTorch runs it as a 2-D pooling of height 1
        name, shape, empty = "adaptive_avg_pool2d()", shape[:-1] + [1] + shape[-1:], [dims]
    raise RuntimeError(f"{name}: Expected input to have non-zero size for non-batch dimensions, "
                       f"but input has sizes {shape} with dimension {empty[0]} being empty")


def _adaptive_pool(input: Tensor, output_size: Any, nd: int, kind: str, return_indices: bool = False
                   ) -> Any:
    _check_adaptive_input(kind, input, nd, output_size == 1 or (
        isinstance(output_size, (list, tuple)) and all(o == 1 for o in output_size)))
    # (PyTorch's 1-D forms run its 2-D kernels)
    _floating_only(f"adaptive_{kind}_pool{max(nd, 2)}d" + ("_cpu" if nd == 3 else ""), input)
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    N, Cc = x.shape[0], x.shape[1]
    in_sp = tuple(x.shape[2:])
    out_sp = _adaptive_out(output_size, in_sp, nd)
    if any(o < 0 for o in out_sp):
        if kind == "max":
            raise RuntimeError(f"Trying to create tensor with negative dimension "
                               f"{min(out_sp)}: {list(x.shape[:2]) + list(out_sp)}")
        raise RuntimeError(f"adaptive_avg_pool{max(nd, 2)}d: elements of output_size must be "
                           f"greater than or equal to 0 but received "
                           f"{{{', '.join(str(o) for o in out_sp)}}}")
    if 0 in out_sp or N == 0 or Cc == 0:  # an empty output: nothing to pool (PyTorch's shapes)
        shape = ((N,) if not unbatched else ()) + (Cc,) + tuple(out_sp)
        out = _creation.zeros(shape, dtype=input.dtype, device=input.device) + input.sum() * 0
        if not return_indices:
            return out
        return out, _creation.zeros(shape, dtype=_dtype.int64, device=input.device)
    p = _adaptive_plan(Cc, in_sp, out_sp)
    if kind == "avg":
        cols = im2col.unfold_cols(x, p, 0.0)
        tot = cols.reshape((N, p.L, Cc, p.K)).sum(-1)
        cnt = p.float_table("cnt", lambda: (p.pix >= 0).sum(1, keepdims=True).astype(np.float64), x)
        out = tot / cnt
        idx: Tensor | None = None
    else:
        cols = im2col.unfold_cols(x, p, -math.inf)
        out, idx = nodes.pool.max_last(cols.reshape((N, p.L, Cc, p.K)))
    out = _nchw(out, (N,) + out_sp + (Cc,))
    if unbatched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    assert idx is not None  # only max pooling returns indices
    pix = p.table_pix(x)
    pe = pix.reshape((1, p.L, 1, p.K)).expand((N, p.L, Cc, p.K))
    ind = pe.gather(3, idx.unsqueeze(-1)).squeeze(-1)
    ind = _nchw(ind, (N,) + out_sp + (Cc,))
    return out, (ind.squeeze(0) if unbatched else ind)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    return _adaptive_pool(input, output_size, 1, "avg")


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed output size (PyTorch's window bounds)."""
    return _adaptive_pool(input, output_size, 2, "avg")


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive_pool(input, output_size, 1, "max", return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive_pool(input, output_size, 2, "max", return_indices)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """3-D average pooling to a fixed output size."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "adaptive_avg_pool3d", adaptive_avg_pool3d, input, output_size=output_size)) is not _SKIP:
        return _ac_out
    return _adaptive_pool(input, output_size, 3, "avg")


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """3-D max pooling to a fixed output size."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "adaptive_max_pool3d", adaptive_max_pool3d, input, output_size=output_size,
            return_indices=return_indices)) is not _SKIP:
        return _ac_out
    return _adaptive_pool(input, output_size, 3, "max", return_indices)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return _adaptive_pool(input, output_size, 1, "max", True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return _adaptive_pool(input, output_size, 2, "max", True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return _adaptive_pool(input, output_size, 3, "max", True)


# ------------------------------------------------------------------ normalisation
def _check_norm_numel(n: int, **params: Tensor | None) -> None:
    """Each given parameter holds ``n`` elements (PyTorch's batch-norm message)."""
    for name, t in params.items():
        if t is not None and t.numel() != n:
            raise RuntimeError(f"{name} should contain {n} elements not {t.numel()}")


def _check_normalized_shape(ns: tuple[int, ...], weight: Tensor | None,
                            bias: Tensor | None) -> None:
    """A non-empty ``normalized_shape`` and parameters of exactly that shape."""
    if not ns:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t.shape)} and normalized_shape = {list(ns)}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise over every dimension but the channels (dim 1); in training, use batch statistics
    and update the running ones in place (unbiased variance), else use the running ones."""
    if input.dim() < 2:
        raise IndexError("tuple index out of range" if input.dim() == 0 else
                         "Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if training:
        if input.numel() // max(input.shape[1], 1) == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.shape}")
        if (running_mean is None) != (running_var is None):
            raise ValueError("running_mean and running_var must either both be None or neither "
                             "be None")
    elif running_mean is None or running_var is None:
        raise RuntimeError(f"{'running_mean' if running_mean is None else 'running_var'} must be "
                           f"defined in evaluation mode")
    _check_norm_numel(input.shape[1], running_mean=running_mean, running_var=running_var,
                      weight=weight, bias=bias)
    # floating inputs only, as PyTorch's kernels (parameters of another floating dtype are left to
    # promote: PyTorch's CPU kernels refuse them, portagrad's composed paths rely on them)
    _floating_only("batch_norm", input)
    # (PyTorch takes any parameter of C elements, a (1, C) one too)
    weight, bias = (None if t is None else t.reshape((-1,)) for t in (weight, bias))
    if input.dtype in _HALF16:
        # PyTorch's kernels compute 16-bit batch norms in float32 (statistics, the running ones
        # kept in their own type) and round the output once to the input's type, also with
        # float32 weight and bias (what autocast hands it after a bfloat16 convolution)
        w, b = (None if t is None else t.to(dtype=_dtype.float32) for t in (weight, bias))
        if training and input.numel() // max(input.shape[1], 1) > 1 and \
                nodes.norm.half_batch_norm_fast_path(input, w, b, running_mean, running_var,
                                                     shape=(input.shape[1],)):
            # one node that keeps the 16-bit input for backward, not a float32 copy of it
            return nodes.norm.batch_norm(input, w, b, running_mean, running_var, momentum, eps)
        return batch_norm(input.to(dtype=_dtype.float32), running_mean, running_var, w, b,
                          training, momentum, eps).to(dtype=input.dtype)
    axes = (0,) + tuple(range(2, input.dim()))
    Cc = input.shape[1]
    if training:
        n = input.numel() // max(Cc, 1)
        if n == 0:  # an empty batch: an empty output, the running statistics untouched
            running_mean = running_var = None
        elif nodes.norm.norm_fast_path(input, "batch_norm", weight, bias, running_mean, running_var,
                                 shape=(Cc,)):
            return nodes.norm.batch_norm(input, weight, bias, running_mean, running_var, momentum, eps)
        mu = input.mean(axes, keepdim=True)
        xc = input - mu
        var = (xc * xc).mean(axes, keepdim=True)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mu.detach().reshape((Cc,)) * momentum)
                if running_var is not None:
                    unb = var.detach().reshape((Cc,)) * (n / (n - 1))
                    running_var.mul_(1 - momentum).add_(unb * momentum)
        y = xc * (var + eps).rsqrt()
    else:
        assert running_mean is not None and running_var is not None
        rm = _bview(running_mean, input.dim())
        rv = _bview(running_var, input.dim())
        y = (input - rm) * (rv + eps).rsqrt()
    if weight is not None:
        y = y * _bview(weight, input.dim())
    if bias is not None:
        y = y + _bview(bias, input.dim())
    return y


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims (PyTorch's checks: it runs batch
    norm over (1, N*C, *), so its sizes count N*C elements)."""
    if use_input_stats and math.prod(input.shape[2:]) <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{input.shape}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be "
                         "None")
    if not use_input_stats and running_mean is None:
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    N, Cc = input.shape[0], input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != Cc:
            raise RuntimeError(f"{name} should contain {N * Cc} elements not {t.numel() * N}")
    axes = tuple(range(2, input.dim()))
    if use_input_stats:
        mu = input.mean(axes, keepdim=True)
        xc = input - mu
        var = (xc * xc).mean(axes, keepdim=True)
        if running_mean is not None and running_var is not None:
            n = math.prod(input.shape[2:])
            with no_grad():
                m = mu.detach().reshape(tuple(input.shape[:2])).mean(0)
                v = var.detach().reshape(tuple(input.shape[:2])).mean(0)
                running_mean.mul_(1 - momentum).add_(m * momentum)
                running_var.mul_(1 - momentum).add_(v * (n / max(n - 1, 1)) * momentum)
        y = xc * (var + eps).rsqrt()
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        rm = _bview(running_mean, input.dim())
        rv = _bview(running_var, input.dim())
        y = (input - rm) * (rv + eps).rsqrt()
    if weight is not None:
        y = y * _bview(weight, input.dim())
    if bias is not None:
        y = y + _bview(bias, input.dim())
    return y


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dimensions."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "layer_norm", layer_norm, input, normalized_shape=normalized_shape, weight=weight, bias=bias,
            eps=eps)) is not _SKIP:
        return _ac_out
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    _check_normalized_shape(ns, weight, bias)
    if tuple(input.shape[input.dim() - k:]) != ns or input.dim() < k:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    _floating_only("LayerNormKernelImpl", input)
    if input.dtype in _HALF16:  # PyTorch's kernel computes in float32 and rounds once
        y = nodes.norm.half_layer_norm_unrecorded(input, ns, weight, bias, eps)
        if y is not None:
            return y
        w, b = (None if t is None else t.to(dtype=_dtype.float32) for t in (weight, bias))
        return layer_norm(input.to(dtype=_dtype.float32), ns, w, b, eps).to(dtype=input.dtype)
    if nodes.norm.norm_fast_path(input, "layer_norm", weight, bias, shape=ns):
        return nodes.norm.layer_norm(input, ns, weight, bias, eps)  # one backend call each way
    axes = tuple(range(input.dim() - k, input.dim()))
    mu = input.mean(axes, keepdim=True)
    xc = input - mu
    var = (xc * xc).mean(axes, keepdim=True)
    y = xc * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``input / sqrt(mean(input**2) + eps) * weight`` over the trailing ``normalized_shape``
    (``eps`` None: the dtype's machine epsilon); the result has the input's dtype."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _check_normalized_shape(ns, weight, None)
    k = len(ns)
    if input.dim() < k:
        raise ValueError(f"Input tensor must have at least {k} dimensions, but got {input.dim()}")
    if tuple(input.shape[input.dim() - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    _floating_only("rms_norm", input)
    axes = tuple(range(input.dim() - k, input.dim()))
    if eps is None:
        eps = float(np.finfo(input.dtype.numpy).eps)
    y = input * ((input * input).mean(axes, keepdim=True) + eps).rsqrt()
    if weight is None:
        return y
    y = y * weight
    return y if y.dtype is input.dtype else y.to(dtype=input.dtype)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over groups of channels (and all spatial positions)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "group_norm", group_norm, input, num_groups=num_groups, weight=weight, bias=bias,
            eps=eps)) is not _SKIP:
        return _ac_out
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    N, Cc = input.shape[0], input.shape[1]
    if num_groups == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    if Cc % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups={num_groups}")
    if num_groups < 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != Cc):
            # (PyTorch's bias message shows the weight's shape, [0] without one)
            shown = [0] if weight is None else list(weight.shape)
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {shown} and input of "
                               f"shape {list(input.shape)}")
    _floating_only("GroupNormKernelImpl", input)
    if input.dtype in _HALF16:  # as batch_norm: float32 inside, the input's type out
        w, b = (None if t is None else t.to(dtype=_dtype.float32) for t in (weight, bias))
        return group_norm(input.to(dtype=_dtype.float32), num_groups, w, b,
                          eps).to(dtype=input.dtype)
    x = input.reshape((N, num_groups, input.numel() // max(N * num_groups, 1)))
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdim=True)
    y = (xc * (var + eps).rsqrt()).reshape(tuple(input.shape))
    if weight is not None:
        y = y * _bview(weight, input.dim())
    if bias is not None:
        y = y + _bview(bias, input.dim())
    return y


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """``input / (k + alpha * mean of the squares of the size nearest channels)**beta``."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {input.dim()} dimensions)")
    sq = input * input
    if input.numel() == 0:  # nothing to pool: the same (empty) result
        return input / (sq * alpha + k) ** beta
    N, Cc = input.shape[0], input.shape[1]
    if input.dim() == 3:
        flat = sq.reshape((N, 1, Cc, -1))
        padded = pad(flat, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(padded, (size, 1), stride=1)
    else:  # (a 3-D pooling, as PyTorch's: under CPU autocast its result is float32, and so this)
        flat = sq.reshape((N, 1, Cc, input.shape[2], -1))
        padded = pad(flat, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(padded, (size, 1, 1), stride=1)
    div = div.reshape(tuple(input.shape))
    return input / (div * alpha + k) ** beta


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp(eps, None)
    if out is not None:  # a division into ``out``: resized (with a warning) when its shape differs
        return elementwise.div(input, denom, out=out)
    return input / denom


# ------------------------------------------------------------------ losses
def _check_same_size(input: Tensor, target: Tensor, stacklevel: int = 3) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", stacklevel=stacklevel)


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "mse_loss", mse_loss, input, target=target, size_average=size_average, reduce=reduce,
            reduction=reduction, weight=weight)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_same_size(input, target)
    dt = _dtype.result_type(input, target)
    if not dt.is_floating_point:  # as PyTorch: no integer or bool kernel (bool - bool is refused)
        raise NotImplementedError(f"\"mse_cpu\" not implemented for '{_type_name(dt)}'")
    d = input.to(dtype=dt) - target.to(dtype=dt)
    loss = d * d
    if weight is not None:
        return _weighted_reduce(input, loss, weight, reduction, True)
    return _reduce(loss, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "l1_loss", l1_loss, input, target=target, size_average=size_average, reduce=reduce,
            reduction=reduction, weight=weight)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_same_size(input, target)
    loss = (input - target).abs()
    if weight is not None:
        return _weighted_reduce(input, loss, weight, reduction, True)
    return _reduce(loss, reduction)


def _weighted_reduce(input: Tensor, loss: Tensor, weight: Tensor, reduction: str,
                     by_weight: bool) -> Tensor:
    """``loss * weight`` reduced as PyTorch's regression losses do: ``weight`` of exactly the
    input's shape; its "mean" is ``sum(w * l) / sum(w)`` (``by_weight``: mse and l1) or the plain
    mean of ``w * l`` (huber)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _floating_result(kernel: str, input: Tensor, target: Tensor) -> None:
    """PyTorch's error for a loss kernel defined for floating types only, named by the result
    type of ``input`` and ``target``."""
    dt = _dtype.result_type(input, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(dt)}'")


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "smooth_l1_loss", smooth_l1_loss, input, target=target, size_average=size_average, reduce=reduce,
            reduction=reduction, beta=beta)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size(input, target)
    _floating_result("smooth_l1_cpu", input, target)
    dt = _dtype.result_type(input, target)
    d = (input.to(dtype=dt) - target.to(dtype=dt)).abs()
    if beta == 0:
        return _reduce(d, reduction)
    # NaN counts as "small", as in PyTorch's kernel, so that its gradient is NaN too (abs's
    # gradient at NaN is 0)
    small = d.ge(beta).logical_not()
    ds = where(small, d, 0.0)  # the square's gradient stays finite where it is not taken (d = inf)
    loss = where(small, ds * ds * 0.5 / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "huber_loss", huber_loss, input, target=target, reduction=reduction, delta=delta,
            weight=weight)) is not _SKIP:
        return _ac_out
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_same_size(input, target)
    _floating_result("huber_cpu", input, target)
    _float_into(input)  # PyTorch writes the result into a tensor of the input's dtype
    dt = _dtype.result_type(input, target)
    d = (input.to(dtype=dt) - target.to(dtype=dt)).abs()
    small = d.ge(delta).logical_not()  # (NaN is "small": its gradient is NaN, as PyTorch's)
    ds = where(small, d, 0.0)  # the square's gradient stays finite where it is not taken (d = inf)
    loss = where(small, ds * ds * 0.5, (d - 0.5 * delta) * delta)
    if loss.dtype is not input.dtype:  # (the input's dtype, as PyTorch's out tensor)
        loss = loss.to(input.dtype)
    if weight is not None:
        return _weighted_reduce(input, loss, weight, reduction, False)
    return _reduce(loss, reduction)


def _class_mask(target: Tensor, Cc: int, ndim: int) -> Tensor:
    """``target[:, None] == arange(C)`` broadcast along the class dim 1 (bool, shape of input)."""
    ar = _creation.arange(Cc, device=target.device)
    shape = [1] * ndim
    shape[1] = Cc
    return target.unsqueeze(1).eq(ar.reshape(tuple(shape)))


def _check_targets(target: Tensor, Cc: int, ignore_index: int) -> None:
    # on every device (one host read): PyTorch raises "Target N is out of bounds."
    nodes.loss.check_class_targets(target, Cc, ignore_index)


def _unbatched_target(target: Tensor) -> Tensor:
    """The class index for an unbatched (C,) input: a 0-d target, or (as PyTorch) one of shape
    (1,), read as 0-d."""
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dim() == 1:
        if target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        target = target.reshape(())
    return target


def _check_nll_target_shape(input: Tensor, target: Tensor) -> None:
    """PyTorch's shape checks of a batched (N, C, ...) ``input``'s class-index ``target``, with
    its messages, which differ by the input's rank."""
    n = input.shape[0]
    if target.dim() == 0 or n != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({n}) to match target batch_size "
                         f"({target.shape[0] if target.dim() else 0}).")
    want = [n] + list(input.shape[2:])
    if input.dim() == 2:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif input.dim() == 4:
        if target.dim() != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got "
                               f"targets of dimension: {target.dim()}")
        if list(target.shape) != want:
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: "
                               f"{list(target.shape)}")
    elif list(target.shape) != want:
        raise RuntimeError(f"Expected target size {want}, got {list(target.shape)}")


def _check_nll_dtypes(input: Tensor, target: Tensor, weight: Tensor | None) -> None:
    """PyTorch's kernel checks, in its order: the weight needs no gradient, the target is int64
    or uint8, the weight has one entry per class, the input is floating and the weight of its
    dtype."""
    two_d = input.dim() == 2
    _not_differentiable("nll_loss_forward" if two_d else "nll_loss2d_forward", "weight", weight)
    if target.dtype not in (_dtype.int64, _dtype.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_type_name(target.dtype)}")
    if target.dtype is _dtype.uint8 and not two_d:  # (PyTorch's K-d kernel takes int64 only)
        raise RuntimeError("expected scalar type Long but found Byte")
    Cc = input.shape[1]
    if weight is not None and tuple(weight.shape) != (Cc,):
        if not two_d:
            raise RuntimeError("weight tensor should be defined either for all or no classes")
        raise RuntimeError(f"weight tensor should be defined either for all {Cc} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    _floating_only("nll_loss_out_frame" if two_d else "nll_loss2d_forward_out_frame", input)
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input.dtype)} but found "
                           f"{_type_name(weight.dtype)}")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of the class indices ``target`` under log-probabilities ``input``
    (N, C, ...)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "nll_loss", nll_loss, input, target=target, weight=weight, size_average=size_average,
            ignore_index=ignore_index, reduce=reduce, reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() == 1:
        target = _unbatched_target(target)
        input, target = input.unsqueeze(0), target.unsqueeze(0)
        res = nll_loss(input, target, weight, None, ignore_index, None, reduction)
        return res.squeeze(0) if reduction == "none" else res
    _check_nll_target_shape(input, target)
    _check_nll_dtypes(input, target, weight)
    Cc = input.shape[1]
    _check_targets(target, Cc, ignore_index)
    mask = _class_mask(target, Cc, input.dim())
    picked = where(mask, input, 0.0).sum(1)  # (N, ...)
    valid = target.ne(ignore_index)
    if weight is not None:
        wb = _bview(weight, input.dim())
        w = where(mask, wb, 0.0).sum(1)
        w = where(valid, w, 0.0)
    else:
        w = valid.to(dtype=input.dtype)
    loss = where(valid, -(picked * w), 0.0)  # (an ignored entry's loss is +0.0, as PyTorch's)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return _nll_mean(loss, w)


def _nll_mean(loss: Tensor, w: Tensor) -> Tensor:
    """``sum(loss) / sum(w)``, NaN where the weights sum to 0 (every entry ignored), yet with a
    gradient of 0 there as PyTorch's (not ``0 / 0``): the division is by a stand-in 1 and the
    NaN is added as a term without gradient."""
    total = w.sum()
    zero = total.eq(0)
    nan = where(zero, math.nan, 0.0).to(loss.dtype)
    return loss.sum() / where(zero, 1.0, total) + nan


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits ``input`` (N, C, ...) against class indices or class
    probabilities ``target``; ``log_softmax`` then ``nll_loss`` (max-subtracted)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "cross_entropy_loss", cross_entropy, input, target=target, weight=weight,
            size_average=size_average, ignore_index=ignore_index, reduce=reduce, reduction=reduction,
            label_smoothing=label_smoothing)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    # (PyTorch refuses a smoothing above 1 only: one below 0 smooths nothing)
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if (input.dim() == 2 and target.dim() == 1 and target.dtype in (_dtype.int64, _dtype.uint8)
            and (weight is None or nodes.loss.ce_weight_fast(input, weight))
            and label_smoothing <= 0 and input.dtype.is_floating_point
            and input.shape[0] == target.shape[0] and input.shape[0] > 0):
        if target.dtype is not _dtype.int64:
            target = target.to(_dtype.int64)
        return nodes.loss.cross_entropy_indices(input, target, ignore_index, reduction,
                                                weight)  # one recorded node instead of ~15
    probs = tuple(target.shape) == tuple(input.shape)  # class probabilities (PyTorch: by shape)
    if probs and not target.dtype.is_floating_point:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, "
                           f"got {_type_name(target.dtype)}")
    class_dim = 0 if input.dim() == 1 else 1
    logp = log_softmax(input, class_dim)
    Cc = input.shape[class_dim]
    if probs:
        if ignore_index >= 0:  # (PyTorch's check: no class index to ignore among probabilities)
            raise RuntimeError("ignore_index is not supported for floating point target")
        if weight is not None and tuple(weight.shape) != (Cc,):
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                               f"{Cc} classes or no classes but got weight tensor of shape: "
                               f"{list(weight.shape)}")
        x = logp
        if weight is not None:
            x = x * _bview(weight, input.dim(), class_dim)
        t = target
        if label_smoothing > 0:
            t = t * (1 - label_smoothing) + label_smoothing / Cc
        loss = -(x * t).sum(class_dim)
        if reduction == "mean":
            # the sum over the number of rows: 0 / 0 = NaN without any (as PyTorch)
            return loss.sum() / (input.numel() // Cc if Cc else 0)
        return _reduce(loss, reduction)
    if input.dim() == 1:
        target = _unbatched_target(target)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing <= 0:
        return nll
    if input.dim() == 1:
        logp_b, target_b = logp.unsqueeze(0), target.unsqueeze(0)
    else:
        logp_b, target_b = logp, target
    ignore = target_b.eq(ignore_index)
    if weight is not None:
        smooth = -(logp_b * _bview(weight, logp_b.dim())).sum(1)
    else:
        smooth = -logp_b.sum(1)
    smooth = where(ignore, 0.0, smooth)
    if reduction == "mean":
        if weight is not None:
            mask = _class_mask(target_b, Cc, logp_b.dim())
            wt = where(mask, _bview(weight, logp_b.dim()), 0.0).sum(1)
            denom = where(ignore, 0.0, wt).sum()
        else:
            denom = ignore.logical_not().to(dtype=input.dtype).sum()
        ret = smooth.sum() / denom
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth if input.dim() > 1 else smooth.squeeze(0)
    return nll * (1 - label_smoothing) + ret * (label_smoothing / Cc)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                         ) -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` with the logs clamped at -100 (as PyTorch)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "binary_cross_entropy", binary_cross_entropy, input, target=target, weight=weight,
            size_average=size_average, reduce=reduce, reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if target.dtype is not input.dtype:  # as PyTorch: no promotion between input and target
        raise RuntimeError(f"Found dtype {_type_name(target.dtype)} but expected "
                           f"{_type_name(input.dtype)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for "
                           f"'{_type_name(input.dtype)}'")
    _not_differentiable("binary_cross_entropy", "weight", weight)
    if weight is not None:
        _check_bce_weight(input, weight)
    nodes.loss.check_unit_interval(input, "input")  # on every device: else a wrong loss or NaN, silently
    nodes.loss.check_unit_interval(target, "target")
    loss = nodes.loss.binary_cross_entropy(input, target)
    if weight is not None:
        loss = loss * weight
        if loss.dtype is not input.dtype:  # (PyTorch weighs in a tensor of the input's dtype)
            loss = loss.to(input.dtype)
    return _reduce(loss, reduction)


def _check_bce_weight(input: Tensor, weight: Tensor) -> None:
    """PyTorch's errors for a ``binary_cross_entropy`` weight that does not expand to the input's
    shape: a mismatching dimension (counted from the right), or one that broadcasts the loss
    beyond the input's shape."""
    ish, wsh = tuple(input.shape), tuple(weight.shape)
    for k in range(1, min(len(ish), len(wsh)) + 1):
        if wsh[-k] not in (1, ish[-k]) and ish[-k] != 1:
            raise RuntimeError(f"Attempting to broadcast a dimension of length {wsh[-k]} at {-k}! "
                               f"Mismatching argument at index 1 had {weight.shape}; but expected "
                               f"shape should be broadcastable to {list(ish)}")
    _check_out_shape(input, weight)


def _check_out_shape(input: Tensor, *others: Tensor | None) -> None:
    """PyTorch's error where a loss written into a tensor of the input's shape would broadcast
    beyond it (a weight with more or larger dimensions)."""
    shapes = [tuple(t.shape) for t in others if t is not None]
    if not shapes:
        return
    try:
        full = tuple(_broadcast_shapes(tuple(input.shape), *shapes))
    except RuntimeError:  # not broadcastable: the loss's own arithmetic names the sizes
        return
    if full != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(full)}")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: Any = None, reduce: Any = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None
                                     ) -> Tensor:
    """Sigmoid + binary cross entropy in one stable formula."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "binary_cross_entropy_with_logits", binary_cross_entropy_with_logits, input, target=target,
            weight=weight, size_average=size_average, reduce=reduce, reduction=reduction,
            pos_weight=pos_weight)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    _floating_only("log_sigmoid_cpu", input)
    if target.dtype is _dtype.bool:  # PyTorch's ``1 - target``
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    _float_into(target, _type_name(input.dtype))
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    _check_out_shape(input, weight, pos_weight)
    # log(1 + exp(-x)) as PyTorch's -log_sigmoid(x), which a 16-bit input computes in float32
    # and rounds once (each step rounded to 16 bits was a few units off)
    sp = _log1p_exp(-input)
    if pos_weight is not None:
        lw = (pos_weight - 1.0) * target + 1.0
        loss = (1.0 - target) * input + lw * sp
    else:
        loss = (1.0 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    if loss.dtype is not target.dtype:
        # PyTorch builds the loss in place in ``1 - target``: the target's dtype
        loss = loss.to(target.dtype)
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``target * (log target - input)`` (``input`` holds log-probabilities)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "kl_div", kl_div, input, target=target, size_average=size_average, reduce=reduce,
            reduction=reduction, log_target=log_target)) is not _SKIP:
        return _ac_out
    legacy = size_average is not None or reduce is not None
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean" and not legacy:  # (PyTorch warns for an explicit "mean" only)
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with the "
                      "KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    if not (input.dtype.is_floating_point and target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _xlogx(target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def _xlogx(target: Tensor) -> Tensor:
    """``xlogy(target, target)``: 0 where the target is 0, NaN where it is negative. A target
    that needs a gradient gets xlogy's own (NaN at 0, as PyTorch's); otherwise the log of a
    stand-in 1 at 0 (no 0 * -inf computed, nothing for the device to warn about)."""
    if target.requires_grad and is_grad_enabled():
        return target.xlogy(target)
    zero = target.eq(0)
    return where(zero, 0.0, target * where(zero, 1.0, target).log())


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: Any = None, eps: float = 1e-8, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "poisson_nll_loss", poisson_nll_loss, input, target=target, log_input=log_input, full=full,
            size_average=size_average, eps=eps, reduce=reduce, reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        st = target * where(target > 0, target, 1.0).log() - target \
            + (target * (2 * math.pi)).log() * 0.5
        loss = loss + where(target > 1, st, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Any, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``0.5 * (log(var) + (input - target)**2 / var)`` (+ ``0.5 * log(2 pi)`` with ``full``), as
    PyTorch: ``var`` of the input's shape, or one dimension short of it, or of size 1 along one
    dimension; clamped at ``eps`` in place under no_grad (the gradient reaches it unclamped)."""
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _creation.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    elif var.numel() and bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):  # homoscedastic: one value per row
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim() and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if not var.dtype.is_floating_point:  # PyTorch clamps a copy of var in place
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_C_TYPE_NAMES.get(var.dtype, _type_name(var.dtype))}")
    v = var.clone()
    with no_grad():
        v.clamp_(min=eps)
    d = input - target
    loss = (v.log() + d * d / v) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                        ) -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "margin_ranking_loss", margin_ranking_loss, input1, input2=input2, target=target, margin=margin,
            size_average=size_average, reduce=reduce, reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not input1.dim() == input2.dim() == target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but "
                           f"got sizes: input1: {input1.shape}, input2: {input2.shape}, target: "
                           f"{target.shape} ")
    # clamp_min, not relu: at the hinge's corner the gradient passes, as PyTorch's
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                         ) -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "hinge_embedding_loss", hinge_embedding_loss, input, target=target, margin=margin,
            size_average=size_average, reduce=reduce, reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    # PyTorch's definition: the input where the target is not -1, plus the hinge where it is not
    # 1 (a target other than +-1 gets both terms, as in PyTorch)
    pos = where(target.ne(-1), input, 0.0)
    # a call, not ``margin - input``: a NumPy scalar margin would turn the tensor into an ndarray
    # (clamp_min, not relu: at the corner margin == input the gradient passes, as PyTorch's)
    neg = where(target.ne(1), elementwise.sub(margin, input).clamp_min(0), 0.0)
    loss = pos + neg
    if not input.dtype.is_floating_point:
        # PyTorch's result keeps an integer input's dtype (and its mean refuses it)
        loss = loss.to(input.dtype)
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "soft_margin_loss", soft_margin_loss, input, target=target, size_average=size_average,
            reduce=reduce, reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _not_differentiable("soft_margin_loss", "target", target)
    _check_out_shape(input, target)
    z = -input * target  # (PyTorch's order: a bool target is fine, a bool input is not)
    _float_into(input)
    loss = softplus(z)
    if loss.dtype is not input.dtype:  # PyTorch writes the loss into a tensor like the input
        loss = loss.to(input.dtype)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: Any = None, reduce: Any = None,
                                reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    _floating_only("log_sigmoid_cpu", input)
    loss = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    # as PyTorch: summed along the input's last dimension (not the broadcast loss's) and
    # divided by its size (a 0-d input has none: IndexError)
    if input.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


_COSINE_EPS = float(np.float32(1e-12))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                          ) -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "cosine_embedding_loss", cosine_embedding_loss, input1, input2=input2, target=target,
            margin=margin, size_average=size_average, reduce=reduce, reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    td = target.dim()
    if td > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.dim() != td + 1 or input2.dim() != td + 1:
        raise RuntimeError(f"{td}D target tensor expects {td + 1}D input tensors, but found inputs "
                           f"with sizes {list(input1.shape)} and {list(input2.shape)}.")
    # PyTorch's own formula (not cosine_similarity's): the squared norms, each + 1e-12 (a float
    # constant in PyTorch's kernel: 1e-12 rounded to float32)
    prod = (input1 * input2).sum(td)
    mag1 = (input1 * input1).sum(td) + _COSINE_EPS
    mag2 = (input2 * input2).sum(td) + _COSINE_EPS
    cos = prod / (mag1 * mag2).sqrt()
    zeros = cos.new_zeros(())
    # a target other than 1 and -1 contributes 0
    loss = where(target.eq(1), 1.0 - cos, zeros) + where(target.eq(-1), (cos - margin).clamp_min(0),
                                                         zeros)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                        size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                        ) -> Tensor:
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "triplet_margin_loss", triplet_margin_loss, anchor, positive=positive, negative=negative,
            margin=margin, p=p, eps=eps, swap=swap, size_average=size_average, reduce=reduce,
            reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_triplet_args(anchor, positive, negative, margin, reduction)
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dn = dn.minimum(pairwise_distance(positive, negative, p, eps))
    # (clamp_min, not relu: at the corner the gradient passes, as PyTorch's)
    return _reduce((dp - dn + margin).clamp_min(0), reduction)


def _check_triplet_args(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float,
                        reduction: str) -> None:
    """The triplet losses' argument checks, in PyTorch's order: reduction, margin, ranks."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {dims[0]}D, positive "
                           f"{dims[1]}D, and negative {dims[2]}D inputs")


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Any = None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` for any distance ``d`` (default
    :func:`pairwise_distance`); ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative one."""
    _check_triplet_args(anchor, positive, negative, margin, reduction)
    dist = pairwise_distance if distance_function is None else distance_function
    dp = dist(anchor, positive)
    dn = dist(anchor, negative)
    if swap:
        dn = dn.minimum(dist(positive, negative))
    return _reduce((dp - dn + margin).clamp(0.0, None), reduction)


def _margin_target(name: str, input: Tensor, target: Tensor, same_shape: bool) -> None:
    if input.dim() > 2 or input.numel() == 0 and input.dim() != 2:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    if target.dtype is not _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found {_type_name(target.dtype)}")
    if same_shape:
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                               f"{list(input.shape)}")
        return
    n = input.shape[0] if input.dim() == 2 else 1
    if target.numel() != n or target.dim() > 1:
        raise RuntimeError(f"{name}: target tensor should be 1-D with size equal to the number of "
                           f"input samples (batch size). Expected target size [{n}], but got "
                           f"{list(target.shape)}. Input has shape {list(input.shape)}.")


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss of (N, C) scores against class indices (N,):
    ``sum_{i != y} w[y] max(0, margin - x[y] + x[i])^p / C``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "multi_margin_loss", multi_margin_loss, input, target=target, p=p, margin=margin, weight=weight,
            size_average=size_average, reduce=reduce, reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _margin_target("multi_margin_loss", input, target, False)
    _not_differentiable("multi_margin_loss", "weight", weight)
    _floating_only("multi_margin_loss_cpu_kernel", input)
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input.dtype)} but found "
                           f"{_type_name(weight.dtype)}")
    x = input if input.dim() == 2 else input.reshape((1, -1))
    Cc = x.shape[1]
    if weight is not None and weight.numel() != Cc:
        raise RuntimeError(f"inconsistent weight size, expected {Cc} but got "
                           f"{list(weight.shape)}")
    t = target.reshape((-1,))
    if t.numel() and (int(t.min().item()) < 0 or int(t.max().item()) >= Cc):
        raise RuntimeError("target out of range")
    t1 = t.unsqueeze(1)
    # a call, not ``margin - ...``: a NumPy scalar margin would turn the tensor into an ndarray
    z = elementwise.sub(margin, x.gather(1, t1)) + x
    # PyTorch's kernel adds a term only where z > 0: a NaN term is left out (not relu's NaN)
    m = where(z > 0, z, 0.0)
    if p == 2:
        m = m * m
    if weight is not None:
        m = m * weight.gather(0, t).unsqueeze(1)
    m = where(_class_mask(t, Cc, 2), 0.0, m)
    loss = m.sum(1) / Cc
    if input.dim() < 2:
        loss = loss.reshape(tuple(target.shape))  # (PyTorch's: () or (1,), as the target)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,
                           reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: ``target`` lists each sample's classes, ended by the first -1;
    ``sum_{j target, i not} max(0, 1 - (x[j] - x[i])) / C``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "multilabel_margin_loss", multilabel_margin_loss, input, target=target, size_average=size_average,
            reduce=reduce, reduction=reduction)) is not _SKIP:
        return _ac_out
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _margin_target("multilabel_margin_loss", input, target, True)
    _floating_only("multilabel_margin_loss_forward_out_frame", input)
    x = input if input.dim() == 2 else input.reshape((1, -1))
    Cc = x.shape[1]
    # which target slots count (before the first -1) and which classes are targets: a host
    # computation on the (small, integer, never differentiated) target
    t = np.asarray(target.detach().cpu().numpy(), np.int64).reshape(x.shape[0], Cc)
    valid = np.cumprod(t != -1, axis=1).astype(bool)
    if ((t < 0) & valid).any() or (t >= Cc).any() or (t < -1).any():
        raise RuntimeError("argument #2 'target' is out of range")
    is_target = np.zeros(t.shape, bool)
    rows = np.nonzero(valid)
    is_target[rows[0], t[rows]] = True
    pair_ok = valid[:, :, None] & ~is_target[:, None, :]  # (N, slot, class)
    ok = _creation.tensor(pair_ok, device=x.device)
    tt = _creation.tensor(np.where(valid, t, 0), device=x.device)
    xy = x.gather(1, tt)  # (N, slot)
    pair = 1.0 - xy.unsqueeze(2) + x.unsqueeze(1)
    pair = where(pair > 0, pair, 0.0)  # (as PyTorch's kernel: a NaN term is left out)
    loss = where(ok, pair, 0.0).sum((1, 2)) / Cc
    if input.dim() < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` with logits
    shaped (N, num_classes, *out_features) from a (num_classes, *out_features, in_features)
    weight. ``options`` (PyTorch's chunking of the logits to save memory) is accepted and
    changes nothing here: the logits are computed whole."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    nb = tuple(input.shape[:-1])
    fin = input.shape[-1]
    if fin != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions (in_features), "
                           f"got {fin} and {linear_weight.shape[-1]}, respectively")
    nc = linear_weight.shape[0]
    outf = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (nc, *outf):
        raise RuntimeError(f"expected linear_bias shape {(nc, *outf)}, got "
                           f"{tuple(linear_bias.shape)}")
    if outf and not nb:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, {fin}), got "
                           f"unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*nb, nc, *outf)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    w2 = linear_weight.reshape((-1, fin))
    b2 = None if linear_bias is None else linear_bias.reshape((-1,))
    logits = linear(input, w2, b2).reshape(logits_shape)
    return cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None
                         else ignore_index, reduction=reduction, label_smoothing=label_smoothing)


def _host_ints(v: Any, what: str) -> np.ndarray:
    """Lengths or targets as a host int64 array (from a tensor, a sequence or a number)."""
    if isinstance(v, Tensor):
        return np.asarray(v.detach().cpu().numpy()).astype(np.int64).reshape(-1) \
            if what != "targets" else np.asarray(v.detach().cpu().numpy()).astype(np.int64)
    return np.asarray(v, dtype=np.int64).reshape(-1)


def _logaddexp(*xs: Tensor) -> Tensor:
    """``log(sum(exp(x)))`` of tensors that may be ``-inf``, without NaN in value or gradient
    where all are ``-inf`` (the result is then ``-inf`` and passes no gradient)."""
    m = xs[0]
    for x in xs[1:]:
        m = m.maximum(x)
    m = where(m.eq(-math.inf), 0.0, m).detach()
    tot = (xs[0] - m).exp()
    for x in xs[1:]:
        tot = tot + (x - m).exp()
    none = tot.eq(0.0)
    return where(none, -math.inf, m + where(none, 1.0, tot).log())


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss: ``-log`` of the total probability of the
    alignments of each target sequence to its (T, C) log-probabilities.

    ``log_probs`` (T, N, C) (or unbatched (T, C)); ``targets`` padded (N, S) or concatenated
    (sum(target_lengths),). The forward (alpha) recursion runs in log space over time, composed
    from differentiable ops, so the gradient is the exact derivative w.r.t. ``log_probs`` (PyTorch
    returns one that differs by ``exp(log_probs)``; through a ``log_softmax`` both give the same
    gradient of the logits). An impossible alignment (an infinite loss) has NaN gradients, as in
    PyTorch, unless ``zero_infinity`` zeroes both."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "ctc_loss", ctc_loss, log_probs, targets=targets, input_lengths=input_lengths,
            target_lengths=target_lengths, blank=blank, reduction=reduction,
            zero_infinity=zero_infinity)) is not _SKIP:
        return _ac_out
    _check_reduction(reduction)
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D (unbatched) or 3-D, got "
                           f"{log_probs.dim()}-D")
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    Tn, N, Cc = lp.shape
    for v, what in ((input_lengths, "input_lengths"), (target_lengths, "target_lengths")):
        if isinstance(v, Tensor) and (v.dtype.is_floating_point or v.dtype.is_complex):
            raise RuntimeError(f"{what} must be integral")
    il, tl = _host_ints(input_lengths, "lengths"), _host_ints(target_lengths, "lengths")
    tg = _host_ints(targets, "targets")
    if unbatched and tg.ndim == 1 and len(tl) == 1 and tg.shape[0] >= tl[0]:
        tg = tg[None]
    if len(il) != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tl) != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    if not 0 <= blank < Cc:
        raise RuntimeError("blank must be in label range")
    if (il > Tn).any():
        raise RuntimeError(f"Expected input_lengths to have value at most {Tn}, but got value "
                           f"{il.max()} (while checking arguments for ctc_loss_allocate_outputs)")
    for lens, what in ((il, "input_lengths"), (tl, "target_lengths")):
        if (lens < 0).any():
            raise RuntimeError(f"Expected {what} to have value at least 0, but got value "
                               f"{lens.min()} (while checking arguments for "
                               f"ctc_loss_allocate_outputs)")
    Lmax = int(tl.max()) if N else 0
    if tg.ndim == 2:
        if tg.shape[1] < Lmax:
            raise RuntimeError(f"Expected tensor to have size at least {Lmax} at dimension 1, but "
                               f"got size {tg.shape[1]} for argument #2 'targets' (while checking "
                               f"arguments for ctc_loss_allocate_outputs)")
        labels = [tg[n, :tl[n]] for n in range(N)]
    else:
        if tg.shape[0] < tl.sum():
            raise RuntimeError(f"Expected tensor to have size at least {tl.sum()} at dimension 0, "
                               f"but got size {tg.shape[0]} for argument #2 'targets' (while "
                               f"checking arguments for ctc_loss_allocate_outputs)")
        starts = np.concatenate([[0], np.cumsum(tl)[:-1]]).astype(np.int64)
        labels = [tg[a:a + b] for a, b in zip(starts, tl)]
    Sx = 2 * Lmax + 1  # labels interleaved with blanks
    ext = np.full((N, Sx), blank, np.int64)
    for n, lab in enumerate(labels):
        if ((lab < 0) | (lab >= Cc)).any():
            raise RuntimeError("ctc_loss: target labels must be in [0, num_classes)")
        ext[n, 1:2 * len(lab):2] = lab
    pos = np.arange(Sx)
    prev2 = np.concatenate([np.full((N, 2), -1), ext[:, :-2]], 1)
    # a label may skip the blank before it unless it repeats the label before that (a label
    # position by its parity: a target may hold the blank's value as a label, as in PyTorch)
    skip = (pos % 2 == 1) & (pos >= 2) & (ext != prev2)
    valid = pos[None, :] < (2 * tl + 1)[:, None]
    dev = lp.device

    def t_(a: np.ndarray) -> Tensor:
        return _creation.tensor(a, device=dev)

    idx = t_(ext)
    lpe = lp.gather(2, idx.unsqueeze(0).expand((Tn, N, Sx)))  # (T, N, S')
    start = (pos[None, :] == 0) | ((pos[None, :] == 1) & (tl[:, None] > 0))
    alpha = where(t_(start), lpe[0], -math.inf)
    if (il == 0).any():  # no input: only the empty target has an alignment (probability 1)
        empty = where(t_(pos[None, :] == 0), 0.0, -math.inf).to(alpha.dtype)
        alpha = where(t_((il == 0)[:, None]), empty, alpha)
    neg = _creation.full((N, 2), -math.inf, dtype=lp.dtype, device=dev)
    skip_t, valid_t = t_(skip), t_(valid)
    for t in range(1, Tn):
        a1 = cat([neg[:, :1], alpha[:, :-1]], 1)
        a2 = where(skip_t, cat([neg, alpha[:, :-2]], 1), -math.inf)
        new = where(valid_t, _logaddexp(alpha, a1, a2) + lpe[t], -math.inf)
        alpha = where(t_((t < il)[:, None]), new, alpha)  # sequences that ended keep alpha
    last = t_((2 * tl)[:, None])
    before = t_(np.maximum(2 * tl - 1, 0)[:, None])
    a_last = alpha.gather(1, last).squeeze(1)
    a_before = alpha.gather(1, before).squeeze(1)
    a_before = where(t_(tl > 0), a_before, -math.inf)
    loss = -_logaddexp(a_last, a_before)
    if zero_infinity:
        loss = where(loss.eq(math.inf), 0.0, loss)
    elif loss.requires_grad:  # PyTorch's: an impossible alignment's gradients are NaN
        loss = nodes.loss.ctc_infinite_nan(lp, loss, t_((np.arange(Tn)[:, None] < il[None, :])[..., None]))
    if reduction == "mean":
        return (loss / t_(np.maximum(tl, 1)).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


# ------------------------------------------------------------------ misc
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim`` of the broadcast
    inputs, as PyTorch: each input divided by its own norm first (the squared norms of 16-bit or
    large inputs overflow), each norm clamped at ``eps`` separately, the gradient flowing through
    the norms as if unclamped."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "cosine_similarity", cosine_similarity, x1, x2=x2, dim=dim, eps=eps)) is not _SKIP:
        return _ac_out
    dt = _dtype.result_type(x1, x2)
    if not dt.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{_type_name(dt)}")
    x1, x2 = x1.to(dtype=dt), x2.to(dtype=dt)  # all of it in the common dtype, as PyTorch
    if tuple(x1.shape) != tuple(x2.shape):  # a dimension one input lacks (or has 1) broadcasts
        shape = _broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
        x1, x2 = x1.expand(shape), x2.expand(shape)

    def unit(x: Tensor) -> Tensor:
        n = x.norm(2, dim, True).clone()
        with no_grad():  # clamped in place: the gradient reaches the norm unclamped (PyTorch's)
            n.clamp_min_(eps)
        return x / n

    return (unit(x1) * unit(x2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    return (x1 - x2 + eps).norm(p, -1, keepdim)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dimension."""
    if not isinstance(num_classes, (int, np.integer)) or isinstance(num_classes, bool):
        raise TypeError(f"one_hot(): argument 'num_classes' (position 2) must be int, not "
                        f"{type(num_classes).__name__}")
    if tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel():
        lo, hi = nodes.loss.value_range(tensor)
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes <= 0:  # (an empty input needs a positive count, not just an explicit one)
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    ar = _creation.arange(num_classes, device=tensor.device)
    return tensor.unsqueeze(-1).eq(ar).to(dtype=_dtype.int64)


def _pad_plan(in_sp: tuple[int, ...], pads: tuple[tuple[int, int], ...], mode: str
              ) -> im2col.Plan:
    def build() -> im2col.Plan:
        out_sp = tuple(n + lo + hi for n, (lo, hi) in zip(in_sp, pads))
        # grows one axis per spatial dimension (n-d index arithmetic by broadcasting)
        pix: np.ndarray = np.zeros((), np.int64)
        valid: np.ndarray = np.ones((), bool)
        for n, (lo, hi), o in zip(in_sp, pads, out_sp):
            src = np.arange(o) - lo
            if mode == "constant":
                ok = (src >= 0) & (src < n)
                src = np.where(ok, src, 0)
            else:
                ok = np.ones(o, bool)
                if mode == "reflect":
                    period = 2 * (n - 1) if n > 1 else 1
                    m = np.mod(src, period)
                    src = np.where(m >= n, period - m, m)
                elif mode == "replicate":
                    src = np.clip(src, 0, n - 1)
                elif mode == "circular":
                    # PyTorch crops first, then wraps around what is left: a negative pad on
                    # one side changes what the other side's positive pad repeats
                    start, kept = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
                    src = np.mod(np.arange(o) - max(lo, 0), max(kept, 1)) + start
            pix = pix[..., None] * n + src
            valid = valid[..., None] & ok
        pix = np.where(valid, pix, -1).reshape(-1, 1)
        return im2col.Plan(1, (math.prod(in_sp),), out_sp, pix)

    return im2col.plan(("pad", in_sp, pads, mode), build)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between the rows of an (N, M) input, for each pair i < j in row-major
    order (the upper triangle of the distance matrix, flattened)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("pdist", pdist, input, p=p)) is not _SKIP:
        return _ac_out
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.dtype not in (_dtype.float32, _dtype.float64) and input.device.type == "cpu":
        # PyTorch's CPU kernel has no 16-bit version (its CUDA one has, as OpenCL here)
        raise NotImplementedError(f"\"pdist\" not implemented for '{_type_name(input.dtype)}'")
    i, j = np.triu_indices(input.shape[0], 1)
    a = input.index_select(0, _creation.tensor(i, dtype=_dtype.int64, device=input.device))
    b = input.index_select(0, _creation.tensor(j, dtype=_dtype.int64, device=input.device))
    diff = a - b
    out = diff.norm(p, 1)
    if p == 0 and diff.requires_grad and is_grad_enabled():
        # the count of nonzeros is flat: a zero gradient (not none), as PyTorch
        take = _creation.ones(tuple(out.shape), dtype=_dtype.bool, device=out.device)
        out = where(take, out, diff.sum(1))
    return out


def _unpool_output_size(in_sp: tuple[int, ...], k: tuple[int, ...], s: tuple[int, ...],
                        pd: tuple[int, ...], output_size: Any) -> tuple[int, ...]:
    default = tuple((in_sp[d] - 1) * s[d] + k[d] - 2 * pd[d] for d in range(len(k)))
    if output_size is None:
        return default
    out = list(output_size)
    if len(out) == len(k) + 2:
        out = out[2:]
    if len(out) != len(k):
        raise ValueError(f"output_size should be a sequence containing {len(k)} or {len(k) + 2} "
                         f"elements, but it has a length of '{len(out)}'")
    for d in range(len(k)):
        lo, hi = default[d] - s[d], default[d] + s[d]
        if not lo < out[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(out)}" (dim {d} must be between {lo} '
                             f'and {hi})')
    return tuple(int(v) for v in out)


def _max_unpoolnd(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any,
                  output_size: Any, nd: int) -> Tensor:
    k = _pair(kernel_size, nd, "kernel_size")
    s = k if stride is None else _pair(stride, nd, "stride")
    pd = _pair(padding, nd, "padding")
    if input.dim() not in (nd + 1, nd + 2) and nd > 1:
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, "
                           f"but got a tensor with {input.dim()} dimensions.")
    if input.dim() not in (nd + 1, nd + 2):  # PyTorch unpools 1-D as 2-D, and says so
        raise RuntimeError(f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a "
                           f"tensor with {input.dim() + 1} dimensions.")
    if indices.dtype is not _dtype.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{_type_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    idx = indices.unsqueeze(0) if unbatched else indices
    out_sp = _unpool_output_size(tuple(x.shape[2:]), k, s, pd, output_size)
    P = math.prod(out_sp)
    if idx.numel():
        lo, hi = int(idx.min().item()), int(idx.max().item())
        if lo < 0 or hi >= P:
            flat = idx.reshape(-1)  # PyTorch names the first one, in memory order
            first = int(flat[((flat < 0) | (flat >= P)).nonzero()[0, 0]].item())
            raise RuntimeError(f"Found an invalid max index: {first} (output "
                               f"volumes are of size {'x'.join(map(str, out_sp))})")
    N, Cc = x.shape[0], x.shape[1]
    # written, not summed: overlapping pooling windows can report the same maximum twice
    zeros = _creation.zeros((N, Cc, P), dtype=x.dtype, device=x.device)
    out = zeros.scatter(2, idx.reshape((N, Cc, -1)), x.reshape((N, Cc, -1)))
    out = out.reshape((N, Cc) + out_sp)
    return out.squeeze(0) if unbatched else out


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """The partial inverse of :func:`max_pool1d`: each value at its index, zeros elsewhere."""
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """The partial inverse of :func:`max_pool2d`: each value at its index, zeros elsewhere."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "max_unpool2d", max_unpool2d, input, indices=indices, kernel_size=kernel_size, stride=stride,
            padding=padding, output_size=output_size)) is not _SKIP:
        return _ac_out
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """The partial inverse of :func:`max_pool3d`: each value at its index, zeros elsewhere."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "max_unpool3d", max_unpool3d, input, indices=indices, kernel_size=kernel_size, stride=stride,
            padding=padding, output_size=output_size)) is not _SKIP:
        return _ac_out
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 3)


def _pad_ints(pad: Sequence[int]) -> tuple[int, ...]:
    """``pad`` as a tuple of ints, refusing floats and bools as PyTorch's argument parser does."""
    out = []
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not isinstance(p, (int, np.integer, Tensor)):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found "
                            f"element of type {type(p).__name__} at pos {i}")
        out.append(int(p))
    return tuple(out)


_SPATIAL = ("D", "H", "W")  # the names of the last three dimensions in messages
_PAD_SUPPORTED = ("Supported combinations for non-constant padding:\n"
                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _check_pad_nonconstant(input: Tensor, pads: tuple[tuple[int, int], ...], mode: str) -> None:
    """PyTorch's checks of reflect/replicate/circular padding: the ranks its kernels take (the
    pads and one or two leading dimensions), non-empty inputs, and pads the mode can honour."""
    k, dim = len(pads), input.dim()
    if not 1 <= k <= 3 or dim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {2 * k} is not supported for {dim}D input "
                                  f"tensor.\n{_PAD_SUPPORTED}")
    in_sp = tuple(input.shape[dim - k:])
    if mode != "circular":
        # only a batch dimension (there when the input has both leading dimensions) may be empty
        if any(s == 0 for s in input.shape[dim - k - 1:]):
            raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                               f"batch size and other non-zero dimensions for input, but got: "
                               f"{list(input.shape)}")
        if input.dtype is _dtype.bool:
            kernel = "reflection" if mode == "reflect" else "replication"
            raise NotImplementedError(f"\"{kernel}_pad{k}d\" not implemented for 'Bool'")
    for j, ((lo, hi), n) in enumerate(zip(pads, in_sp)):
        d = dim - k + j
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #{2 * (k - j) + 2}: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) at "
                               f"dimension {d} of input {list(input.shape)}")
        if mode == "circular":
            if lo > n or hi > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if n + lo + hi < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
    out_sp = [n + lo + hi for n, (lo, hi) in zip(in_sp, pads)]
    if mode != "circular" and max(out_sp) < 1:  # (the kernels refuse only all-empty outputs)
        ins = [f"{a}: {n}" for a, n in zip(_SPATIAL[3 - k:], in_sp)]
        outs = " ".join(f"{a}: {o}" for a, o in zip(_SPATIAL[3 - k:], out_sp))
        # PyTorch's spacing: "(W: 3)", "(H: 2, W: 2)" ("(H: 2, W: 2 )" replicating),
        # "(D: 5 H: 3, W: 2)"
        if k == 1:
            sizes = ins[0]
        elif k == 2:
            sizes = ", ".join(ins) + (" " if mode == "replicate" else "")
        else:
            sizes = f"{ins[0]} {ins[1]}, {ins[2]}"
        raise RuntimeError(f"input ({sizes}) is too small. Calculated output {outs}")
    if mode != "circular" and min(out_sp) < 0:
        shape = list(input.shape[:dim - k]) + out_sp
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out_sp)}: "
                           f"{shape}")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
        ) -> Tensor:
    """Pad the last ``len(pad) // 2`` dimensions (``pad`` lists the last dimension first):
    ``constant`` (any number of dimensions), or ``reflect``, ``replicate`` or ``circular`` (one to
    three dimensions of a batched or unbatched input); negative padding crops."""
    if _AUTOCAST.on and mode in ("reflect", "replicate") and 2 <= len(pad) <= 6:
        # the ATen op F.pad dispatches to, as named in the autocast lists
        op = f"{'reflection' if mode == 'reflect' else 'replication'}_pad{len(pad) // 2}d"
        if (_ac_out := _autocast_call(op, pad_fn, input, pad, mode=mode, value=value)) is not _SKIP:
            return _ac_out
    pad = _pad_ints(pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           "dimension but got padding length " f"{len(pad)} and input of dimension "
                           f"{input.dim()}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    pads = tuple((pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k)))
    in_sp = tuple(input.shape[input.dim() - k:])
    if mode == "constant":
        if any(n + lo + hi < 0 for (lo, hi), n in zip(pads, in_sp)):
            raise RuntimeError("narrow(): length must be non-negative.")
    else:
        _check_pad_nonconstant(input, pads, mode)
    lead = tuple(input.shape[:input.dim() - k])
    p = _pad_plan(in_sp, pads, mode)
    x = input.reshape((math.prod(lead), 1, math.prod(in_sp)))
    fill = 0.0 if value is None else value
    out = im2col.unfold_cols(x, p, fill)
    return out.reshape(lead + p.out_spatial)


pad_fn = pad  # the function itself: inside ``pad`` the name is its ``pad`` argument

_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient


def _cubic_taps(dst: np.ndarray, n: int, o: int, scale: float, align_corners: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """Four source positions (clamped to the input) and cubic-convolution weights per output
    position (PyTorch's ``upsample_bicubic2d``: the source index is not clamped at 0 first)."""
    if align_corners:
        src = dst * ((n - 1) / (o - 1)) if o > 1 else dst * 0
    else:
        src = (dst + 0.5) * scale - 0.5
    i0 = np.floor(src)
    t = src - i0
    a = _CUBIC_A

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    w = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1)
    idx = np.clip(i0.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :], 0, n - 1)
    return idx, w


def _interp_plan(Cc: int, in_sp: tuple[int, ...], out_sp: tuple[int, ...], scales: tuple,
                 mode: str, align_corners: bool) -> im2col.Plan:
    def build() -> im2col.Plan:
        taps = []  # per dim: (idx (o, t), weights (o, t))
        for n, o, sc in zip(in_sp, out_sp, scales):
            dst = np.arange(o, dtype=np.float64)
            scale = (1.0 / sc) if sc else n / o
            if mode == "nearest":
                src = np.minimum(np.floor(dst * scale).astype(np.int64), n - 1)
                taps.append((src[:, None], np.ones((o, 1))))
            elif mode == "nearest-exact":
                src = np.minimum(np.floor((dst + 0.5) * scale).astype(np.int64), n - 1)
                taps.append((src[:, None], np.ones((o, 1))))
            elif mode == "bicubic":
                taps.append(_cubic_taps(dst, n, o, scale, align_corners))
            else:
                if align_corners:
                    src = dst * ((n - 1) / (o - 1)) if o > 1 else dst * 0
                else:
                    src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
                i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
                i1 = np.minimum(i0 + 1, n - 1)
                l1 = src - i0
                taps.append((np.stack([i0, i1], 1), np.stack([1 - l1, l1], 1)))
        pix, w = im2col.combine([t[0] for t in taps], in_sp, [t[1] for t in taps])
        assert w is not None
        p = im2col.Plan(Cc, in_sp, out_sp, pix)
        p._host_float["w"] = w.reshape(p.L, 1, p.K)
        return p

    return im2col.plan(("interp", Cc, in_sp, out_sp, scales, mode, align_corners), build)


def _upsample_op(mode: str, nd: int, antialias: bool) -> str | None:
    """The ATen op ``interpolate`` stands for in the autocast lists."""
    if mode == "area":
        return f"adaptive_avg_pool{nd}d"
    base = {"nearest": "upsample_nearest", "nearest-exact": "_upsample_nearest_exact",
            "linear": "upsample_linear", "bilinear": "upsample_bilinear",
            "trilinear": "upsample_trilinear", "bicubic": "upsample_bicubic"}.get(mode)
    if base is None:
        return None
    if antialias and mode in ("bilinear", "bicubic"):
        return f"_{base}{nd}d_aa"
    return f"{base}{nd}d"


_INTERP_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _interp_size(size: Any, in_sp: tuple[int, ...]) -> tuple[int, ...]:
    """``interpolate``'s ``size``: an int for every spatial dimension or one per dimension."""
    nd = len(in_sp)
    if not isinstance(size, (list, tuple)):
        if isinstance(size, float):
            raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                            f"Tuple[int, int, int], but got size with types {[float]}")
        return (int(size),) * nd
    if len(size) != nd:
        raise ValueError(f"Input and output must have the same number of spatial dimensions, but "
                         f"got input with spatial dimensions of {list(in_sp)} and output size of "
                         f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                         f"and output size in (o1, o2, ...,oK) format.")
    if any(isinstance(v, float) for v in size):
        raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                        f"Tuple[int, int, int], but got size with types {[type(v) for v in size]}")
    return tuple(int(v) for v in size)


def _interp_scales(scale_factor: Any, in_sp: tuple[int, ...]) -> tuple[float, ...]:
    nd = len(in_sp)
    if not isinstance(scale_factor, (list, tuple)):
        return (float(scale_factor),) * nd
    if len(scale_factor) != nd:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, "
                         f"but got input with spatial dimensions of {list(in_sp)} and scale_factor "
                         f"of shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, "
                         f"...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
    return tuple(float(v) for v in scale_factor)


def _check_interp_mode(input: Tensor, mode: str) -> None:
    """The (rank, mode) pairs ``interpolate`` has kernels for, with PyTorch's messages."""
    nd = input.dim() - 2
    ranks = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "area": (1, 2, 3), "linear": (1,),
             "bilinear": (2,), "trilinear": (3,), "bicubic": (2,), "lanczos": (2,)}
    if nd in ranks.get(mode, ()):
        return
    if nd in (1, 2, 3) and mode in ("linear", "bilinear", "trilinear"):
        needs = {"linear": 3, "bilinear": 4, "trilinear": 5}[mode]
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {needs}D input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.dim()}D) for the modes: {_INTERP_MODES} (got {mode})")


def _check_interp_sizes(input: Tensor, out_sp: tuple[int, ...]) -> None:
    """The resampling kernels' checks: positive sizes, and data in every non-batch dimension."""
    in_sp = tuple(input.shape[2:])
    if min(in_sp) <= 0 or min(out_sp) <= 0:
        names = _SPATIAL[3 - len(in_sp):]
        ins = ", ".join(f"{k}: {v}" for k, v in zip(names, in_sp))
        outs = ", ".join(f"{k}: {v}" for k, v in zip(names, out_sp))
        sep = " and " if len(in_sp) == 1 else " "  # (PyTorch's 1-D message has an "and")
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({ins}){sep}output ({outs})")
    if input.shape[1] == 0:
        raise RuntimeError(f"Non-empty {input.dim()}D data tensor expected but got a tensor with "
                           f"sizes {list(input.shape)}")


def _check_interp_dtype(input: Tensor, mode: str) -> None:
    """Floating inputs everywhere; uint8 (images) for nearest, bilinear and bicubic only."""
    dt = input.dtype
    if dt.is_floating_point or (dt is _dtype.uint8 and mode in ("nearest", "nearest-exact",
                                                                "bilinear", "bicubic")):
        return
    nd = input.dim() - 2
    if mode == "area":
        kernel = f"adaptive_avg_pool{nd}d"
    elif mode in ("nearest", "nearest-exact", "bilinear") and nd == 2:
        kernel = f"upsample_{'bilinear' if mode == 'bilinear' else 'nearest'}2d_channels_last"
    else:
        kernel = "compute_indices_weights_" + {"bicubic": "cubic", "linear": "linear",
                                               "trilinear": "linear"}.get(mode, "nearest")
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(dt)}'")


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize (N, C, L), (N, C, H, W) or (N, C, D, H, W) inputs: ``nearest``, ``nearest-exact``,
    ``linear``, ``bilinear``, ``trilinear``, ``bicubic``, ``area`` (gathers of precomputed taps,
    weighted), and antialiased ``bilinear``, ``bicubic`` and ``lanczos`` of 4-D inputs."""
    if _AUTOCAST.on and isinstance(input, Tensor) and (op := _upsample_op(mode, input.dim() - 2,
                                                                          antialias)):
        if (_ac_out := _autocast_call(
                op, interpolate, input, size=size, scale_factor=scale_factor, mode=mode,
                align_corners=align_corners, recompute_scale_factor=recompute_scale_factor,
                antialias=antialias)) is not _SKIP:
            return _ac_out
    # the checks in PyTorch's order
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    nd = input.dim() - 2
    in_sp = tuple(input.shape[2:])
    if size is not None:
        out_sp = _interp_size(size, in_sp)
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        scales: tuple = (None,) * nd
    else:
        sf = _interp_scales(scale_factor, in_sp)
        out_sp = tuple(int(math.floor(n * f)) for n, f in zip(in_sp, sf))
        scales = (None,) * nd if recompute_scale_factor else sf
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes "
                         "and requires a 4-D tensor as input")
    if mode == "lanczos" and input.dim() == 4:
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
    _check_interp_mode(input, mode)
    if mode == "area":
        _check_interp_dtype(input, mode)
        if min(out_sp, default=1) == 0 and min(in_sp) > 0:  # an empty result, as PyTorch's
            return _creation.zeros(tuple(input.shape[:2]) + out_sp, dtype=input.dtype,
                                   device=input.device) + input.sum() * 0
        return _adaptive_pool(input, out_sp, nd, "avg")
    _check_interp_sizes(input, out_sp)
    if antialias:
        return _interpolate_aa(input, out_sp, scales, mode, bool(align_corners))
    _check_interp_dtype(input, mode)
    linear_nd = {"linear": 1, "bilinear": 2, "trilinear": 3}
    kind = "linear" if mode in linear_nd else mode
    if input.dtype is _dtype.uint8 and kind in ("linear", "bicubic"):
        return _interpolate_byte(input, out_sp, scales, kind, bool(align_corners))
    return _interpolate_float(input, out_sp, scales, kind, bool(align_corners))


def _interpolate_float(input: Tensor, out_sp: tuple[int, ...], scales: tuple, kind: str,
                       align_corners: bool) -> Tensor:
    """Each output pixel as a weighted sum of its taps (one tap for the nearest modes)."""
    N, Cc = input.shape[0], input.shape[1]
    p = _interp_plan(Cc, tuple(input.shape[2:]), out_sp, scales, kind, align_corners)
    cols = im2col.unfold_cols(input, p, 0.0)  # (N, L, C*K)
    if p.K == 1:
        out = cols
    else:
        w = p.float_table("w", None, input)
        out = (cols.reshape((N, p.L, Cc, p.K)) * w).sum(-1)
    return _nchw(out, (N,) + out_sp + (Cc,))


def _interpolate_byte(input: Tensor, out_sp: tuple[int, ...], scales: tuple, kind: str,
                      align_corners: bool) -> Tensor:
    """Bilinear or bicubic resizing of a uint8 image as PyTorch's uint8 kernel does it: the width
    first, that pass stored as uint8 (rounded to nearest, saturated), then the height (PyTorch
    uses fixed-point weights, which can differ from these by one in the last place)."""
    x = input.to(_dtype.float32)
    (h, _), (oh, ow) = input.shape[2:], out_sp
    mid = _interpolate_float(x, (h, ow), (None, scales[1]), kind, align_corners)
    mid = (mid + 0.5).floor().clamp(0, 255)
    out = _interpolate_float(mid, (oh, ow), (scales[0], None), kind, align_corners)
    return (out + 0.5).floor().clamp(0, 255).to(_dtype.uint8)


def _aa_filter(mode: str, x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1.0, 1.0 - x, 0.0)
    if mode == "lanczos":  # sinc(x) sinc(x / 3) on |x| < 3, as PIL's
        return np.where(x < 3.0, np.sinc(x) * np.sinc(x / 3.0), 0.0)
    a = -0.5  # PyTorch's (and PIL's) antialiased bicubic uses a = -0.5, not -0.75
    return np.where(x < 1.0, ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0,
                    np.where(x < 2.0, (((x - 5.0) * x + 8.0) * x - 4.0) * a, 0.0))


def _aa_weights(n_in: int, n_out: int, scale_factor: float | None, mode: str,
                align_corners: bool) -> np.ndarray:
    """The (n_out, n_in) matrix of one dimension of an antialiased resize, as PyTorch's
    ``_upsample_*_aa`` kernels compute it: the filter is stretched by the downscale factor so
    every input pixel under an output pixel contributes, and each row sums to one."""
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1.0 / scale_factor if scale_factor else n_in / n_out
    interp = {"bilinear": 2, "bicubic": 4, "lanczos": 6}[mode]  # the filter's width
    support = interp * 0.5 * scale if scale >= 1.0 else interp * 0.5
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        taps = _aa_filter(mode, (np.arange(lo, hi) - center + 0.5) * invscale)
        total = taps.sum()
        w[i, lo:hi] = taps / total if total != 0 else taps
    return w


def _interpolate_aa(input: Tensor, out_sp: tuple[int, ...], scales: tuple, mode: str,
                    align_corners: bool) -> Tensor:
    """``interpolate(..., antialias=True)`` of a 4-D input: one weight matrix per spatial
    dimension, applied as two matrix products (differentiable through them)."""
    if input.dim() != 4:
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    byte = input.dtype is _dtype.uint8  # images: PyTorch's CPU kernel takes uint8 too
    if not byte and input.dtype not in (_dtype.float32, _dtype.float64):
        # PyTorch's CPU kernel has no 16-bit float (nor integer but uint8) variant either
        raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    x = input.to(_dtype.float32) if byte else input
    (h, w), (oh, ow) = input.shape[2:], out_sp
    wh = _creation.tensor(_aa_weights(h, oh, scales[0], mode, align_corners),
                          dtype=x.dtype, device=x.device)
    ww = _creation.tensor(_aa_weights(w, ow, scales[1], mode, align_corners).T,
                          dtype=x.dtype, device=x.device)
    if not byte:
        return (wh @ x) @ ww
    # PyTorch's uint8 kernel resizes the width, stores that pass as uint8 (rounded to nearest,
    # saturated), then resizes the height and stores again
    mid = ((x @ ww) + 0.5).floor().clamp(0, 255)
    return ((wh @ mid) + 0.5).floor().clamp(0, 255).to(_dtype.uint8)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _check_shuffle(name: str, input: Tensor, factor: Any, what: str) -> int:
    if not isinstance(factor, int) or isinstance(factor, bool):
        raise TypeError(f"{name}(): argument '{what}' (position 2) must be int, not "
                        f"{type(factor).__name__}")
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")
    return factor


# the mode numbers PyTorch's grid sampler kernels take (public in torch.nn.functional)
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False "
                  "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
                  "See the documentation of grid_sample for details.")


def _linspace_grid(n: int, align_corners: bool) -> np.ndarray:
    v = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return v if align_corners else v * (n - 1) / n


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of an affine map: (N, H, W, 2) from (N, 2, 3) ``theta`` for a 2-D
    ``size`` (N, C, H, W), or (N, D, H, W, 3) from (N, 3, 4) for a 3-D one; coordinates in
    [-1, 1], x first (for :func:`grid_sample`)."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    given = size  # the messages print it as it came (a tuple, mostly)
    size = list(size)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    nd = len(size) - 2
    if nd not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {given}.")
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for "
                         f"size {given}. Got {theta.shape}.")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {nd + 1}] but got: [{theta.shape[0]}, {nd + 1}].")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    sp = size[2:]
    axes = [_linspace_grid(n, align_corners) for n in sp]  # D, H, W order
    mesh = np.meshgrid(*axes, indexing="ij")
    # homogeneous coordinates, x (the last spatial axis) first
    base = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(math.prod(sp))], 1)
    b = _creation.tensor(base, dtype=theta.dtype, device=theta.device)  # (P, nd + 1)
    grid = b @ theta.transpose(1, 2)  # (N, P, nd)
    return grid.reshape((size[0],) + tuple(sp) + (nd,))


def _reflect(x: Tensor, lo2: float, hi2: float) -> Tensor:
    """PyTorch's ``reflect_coordinates``: fold ``x`` into [lo2 / 2, hi2 / 2] by reflections."""
    if lo2 == hi2:
        return x * 0.0
    mn, span = lo2 / 2, (hi2 - lo2) / 2
    a = (x - mn).abs()
    extra = a.fmod(span)
    flips = (a / span).floor().detach()
    even = flips.remainder(2).eq(0)
    return where(even, extra + mn, span - extra + mn)


def _grid_unnormalize(g: Tensor, n: int, align_corners: bool) -> Tensor:
    """A normalised coordinate in [-1, 1] as a (fractional) index along a size-``n`` axis."""
    return (g + 1.0) * ((n - 1) / 2) if align_corners else ((g + 1.0) * n - 1.0) / 2


def _grid_pad(x: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    """An index along a size-``n`` axis moved inside it as ``padding_mode`` says (``zeros``
    leaves it: points outside read zeros)."""
    if padding_mode == "border":
        x = x.clamp(0.0, n - 1.0)
    elif padding_mode == "reflection":
        x = _reflect(x, 0.0, 2.0 * (n - 1)) if align_corners else _reflect(x, -1.0, 2.0 * n - 1)
        x = x.clamp(0.0, n - 1.0)
    if padding_mode != "zeros":
        # PyTorch's clipping takes a NaN coordinate (a NaN in the grid, or an infinite one
        # reflected) to 0
        x = where(x.isnan(), 0.0, x)
    return x


def _grid_coord(g: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    """A normalised coordinate as an index along a size-``n`` axis, padded."""
    return _grid_pad(_grid_unnormalize(g, n, align_corners), n, padding_mode, align_corners)


def _cubic_tap_weights(t: Tensor) -> list[Tensor]:
    """The four cubic-convolution weights (``a = -0.75``) of the taps at ``floor(x) - 1`` ..
    ``floor(x) + 2`` for the fraction ``t = x - floor(x)``."""
    a = _CUBIC_A

    def near(v: Tensor) -> Tensor:  # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: Tensor) -> Tensor:  # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _check_grid_sample(input: Tensor, grid: Tensor, mode: str) -> None:
    """PyTorch's checks of ``grid_sampler``'s tensors, in its order."""
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if input.dim() != grid.dim() or input.dim() not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected {4 if input.dim() == 4 else 5}D input and "
                           f"grid with same number of dimensions, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    if not input.dtype.is_floating_point:
        kernel = "grid_sampler_2d_cpu_kernel_impl" if input.dim() == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(input.dtype)}'")
    if grid.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input.dtype)} but found "
                           f"{_type_name(grid.dtype)}")
    for d in range(2, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {d} being empty")
    if mode == "bicubic" and input.dim() != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample (N, C, H, W) (or (N, C, D, H, W)) ``input`` at the [-1, 1] coordinates of ``grid``
    (N, H_out, W_out, 2) (x first): ``bilinear`` (trilinear in 3-D), ``nearest`` or ``bicubic``
    (4-D only); outside points read zeros, the border or a reflection. Differentiable in
    ``input`` and ``grid``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "grid_sampler", grid_sample, input, grid=grid, mode=mode, padding_mode=padding_mode,
            align_corners=align_corners)) is not _SKIP:
        return _ac_out
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' "
                         f"or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    _check_grid_sample(input, grid, mode)
    nd = input.dim() - 2
    N, Cc = input.shape[0], input.shape[1]
    sp = tuple(input.shape[2:])  # (D,) H, W
    out_sp = tuple(grid.shape[1:-1])
    Pout = math.prod(out_sp)
    g = grid.reshape((N, Pout, nd))
    # per axis in (D,) H, W order: grid component nd - 1 - i (x is the last spatial axis)
    comps = [g.select(2, nd - 1 - i) for i in range(nd)]
    corners: list[list[tuple[Tensor, Tensor | None]]]
    if mode == "bicubic":
        # the 4 x 4 taps around the unpadded point, each tap's index padded on its own
        raw = [_grid_unnormalize(c, sp[i], align_corners) for i, c in enumerate(comps)]
        lo = [r.floor().detach() for r in raw]
        taps = [[(_grid_pad(lo[i] + (k - 1), sp[i], padding_mode, align_corners), w)
                 for k, w in enumerate(_cubic_tap_weights(raw[i] - lo[i]))] for i in range(nd)]
        corners = [[taps[i][k] for i, k in enumerate(ks)] for ks in np.ndindex(*(4,) * nd)]
    else:
        coords = [_grid_coord(c, sp[i], padding_mode, align_corners) for i, c in enumerate(comps)]
        if mode == "nearest":
            corners = [[(c.round(), None) for c in coords]]
        else:
            lo = [c.floor().detach() for c in coords]
            corners = [[(lo[i] + b, c - lo[i] if b else 1.0 - (c - lo[i]))
                        for i, (c, b) in enumerate(zip(coords, bits))]
                       for bits in np.ndindex(*(2,) * nd)]
    out = _grid_gather(input.reshape((N, Cc, math.prod(sp))), corners, sp, N, Cc, Pout)
    if mode == "nearest" and grid.requires_grad and is_grad_enabled():
        # PyTorch's nearest sampling gives the grid a gradient of zeros, not none
        out = out + where(_creation.zeros((N, 1, Pout), dtype=_dtype.bool, device=out.device),
                          g.select(2, 0).unsqueeze(1), 0.0)
    return out.reshape((N, Cc) + out_sp)


def _grid_gather(flat: Tensor, corners: list[list[tuple[Tensor, Tensor | None]]],
                 sp: tuple[int, ...], N: int, Cc: int, Pout: int) -> Tensor:
    """The sum over ``corners`` (per axis: an index and a weight, or none) of the input values
    there, weighted; indices outside the input read zeros."""
    out: Tensor | None = None
    for corner in corners:
        idx: Tensor | None = None
        ok: Tensor | None = None
        w: Tensor | None = None
        for i, (pos, wt) in enumerate(corner):
            inside = (pos >= 0).logical_and(pos <= sp[i] - 1)
            ok = inside if ok is None else ok.logical_and(inside)
            # (a NaN coordinate, never inside, reads index 0: the read is masked out above,
            # and the output is NaN through the bilinear weight, 0 when nearest, as PyTorch's)
            p = pos.detach()
            p = where(p.isnan(), 0.0, p).clamp(0, sp[i] - 1)
            idx = p if idx is None else idx * sp[i] + p
            if wt is not None:
                w = wt if w is None else w * wt
        assert ok is not None and idx is not None
        ii = idx.to(dtype=_dtype.int64)
        v = flat.gather(2, ii.unsqueeze(1).expand((N, Cc, Pout)))
        v = where(ok.unsqueeze(1), v, 0.0)
        if w is not None:
            v = v * w.unsqueeze(1)
        out = v if out is None else out + v
    assert out is not None
    return out


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C r^2, H, W) -> (*, C, H r, W r)``: a reshape and a permutation, always a copy (as
    PyTorch; the reshapes alone give a view of the input when ``r`` is 1 or ``H = W = 1``)."""
    r = _check_shuffle("pixel_shuffle", input, upscale_factor, "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    n = len(lead)
    x = x.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return unaliased(x.reshape(tuple(lead) + (c // (r * r), h * r, w * r)), input)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H r, W r) -> (*, C r^2, H, W)``, the inverse of :func:`pixel_shuffle` (a copy)."""
    r = _check_shuffle("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    *lead, c, h, w = input.shape
    for what, size, d in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by "
                               f"downscale_factor, but input.size({d})={size} is not divisible by "
                               f"{r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return unaliased(x.reshape(tuple(lead) + (c * r * r, h // r, w // r)), input)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """:func:`channel_shuffle` (PyTorch's name for its kernel without a decomposition)."""
    return channel_shuffle(input, groups)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups: ``(N, g * k, *) -> (N, k * g, *)``; a copy
    (a view of the input when ``groups`` is 1 or the number of channels, hence the check)."""
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool):
        raise TypeError(f"channel_shuffle(): argument 'groups' (position 2) must be int, not "
                        f"{type(groups).__name__}")
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    N, Cc = input.shape[:2]
    if Cc % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {Cc} channels and "
                           f"{groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape((N, groups, Cc // groups) + rest)
    return unaliased(x.transpose(1, 2).reshape((N, Cc) + rest), input)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v`` (bool masks: True = take part; causal: lower triangle)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "scaled_dot_product_attention", scaled_dot_product_attention, query, key=key, value=value,
            attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
            enable_gqa=enable_gqa)) is not _SKIP:
        return _ac_out
    Lq, Sk = query.shape[-2], key.shape[-2]
    if attn_mask is not None and attn_mask.dim() < 2:
        # PyTorch's kernel reads the mask's size(-2): a 0-d or 1-d mask is an IndexError there
        # (broadcasting it would silently mask keys where the caller may have meant queries)
        raise IndexError("Dimension specified as -2 but tensor has no dimensions"
                         if attn_mask.dim() == 0 else
                         "Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    if not (query.dtype is key.dtype is value.dtype):
        names = _dtype.CPP_TYPE_NAMES
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {names.get(query.dtype.name)} key.dtype: "
                           f"{names.get(key.dtype.name)} and value.dtype: "
                           f"{names.get(value.dtype.name)} instead.")
    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if nodes.attention.fused_ok(query, key, value, attn_mask, dropout_p):
        # one node: the L x S weights are neither kept for backward nor materialised whole
        return nodes.attention.attention(query, key, value, attn_mask, is_causal, sc)
    attn = (query @ key.transpose(-2, -1)) * sc
    if is_causal:
        causal = _creation.ones((Lq, Sk), dtype=_dtype.bool, device=query.device).tril()
        attn = where(causal, attn, -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype is _dtype.bool:
            attn = where(attn_mask, attn, -math.inf)
        else:
            attn = attn + attn_mask
    if attn_mask is None and not is_causal:
        w = softmax(attn, -1)
    else:
        # as PyTorch: a query that may attend to nothing gets zero weights, not NaN
        none = attn.amax(-1, keepdim=True).eq(-math.inf)
        w = where(none, 0.0, softmax(where(none, 0.0, attn), -1))
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True)
    return w @ value


def _additive_mask(mask: Tensor, dtype: Any) -> Tensor:
    """A bool mask (True = not allowed) as an additive float one (``-inf``/0)."""
    if mask.dtype is _dtype.bool:
        return where(mask, -math.inf, 0.0).to(dtype=dtype)
    return mask


def _mha_check_inputs(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                      attn_mask: Tensor | None) -> bool:
    """PyTorch's checks of multi-head attention's inputs (its AssertionErrors); whether the
    query is unbatched."""
    for name, m in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
        if m is not None and not (m.dtype is _dtype.bool or m.dtype.is_floating_point):
            raise AssertionError(f"only bool and floating types of {name} are supported")
    for q_dim, kind in ((3, "batched (3-D)"), (2, "unbatched (2-D)")):
        if query.dim() != q_dim:
            continue
        if key.dim() != q_dim or value.dim() != q_dim:
            raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be "
                                 f"{q_dim}-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != q_dim - 1:
            raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` "
                                 f"or {q_dim - 1}-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        return q_dim == 2
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention of sequence-first inputs: query (L, N, E), key and value (S, N, E)
    (or unbatched (L, E), (S, E)); what ``MultiheadAttention`` computes. Returns the output
    (L, N, E) and, with ``need_weights``, the attention weights (N, L, S) (per head (N, H, L, S)
    unless ``average_attn_weights``). Bool masks: True = not allowed."""
    if is_causal and attn_mask is None:  # (a hint about the mask, not a mask: PyTorch's error)
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to create "
                           "this mask.")
    unbatched = _mha_check_inputs(query, key, value, key_padding_mask, attn_mask)
    if unbatched:
        query, key, value = (t.unsqueeze(1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, E_ = query.shape
    if use_separate_proj_weight:  # (kdim and vdim may differ: only the lengths and batch must not)
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if key_padding_mask is not None and static_k is None and \
            tuple(key_padding_mask.shape) != (bsz, key.shape[0]):
        i = 0 if key_padding_mask.shape[0] != bsz else 1
        raise AssertionError(f"Expected key_padded_mask.shape[{i}] to be "
                             f"{(bsz, key.shape[0])[i]}, but got {key_padding_mask.shape[i]}")
    if E_ != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got "
                             f"{E_}")
    H = num_heads
    D = E_ // H
    if D * H != E_:
        raise AssertionError(f"embed_dim {E_} not divisible by num_heads {H}")
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                                 "k_proj_weight or v_proj_weight is None")
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        wq, wk, wv = in_proj_weight.chunk(3, 0)
    bq: Tensor | None = None
    bk: Tensor | None = None
    bv: Tensor | None = None
    if in_proj_bias is not None:
        bq, bk, bv = in_proj_bias.chunk(3, 0)
    q = linear(query, wq, bq)
    k = linear(key, wk, bk)
    v = linear(value, wv, bv)
    if attn_mask is not None:  # PyTorch's shape checks, before the mask is padded below
        src_len = key.shape[0]
        if attn_mask.dim() == 2 and tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should "
                               f"be {(tgt_len, src_len)}.")
        if attn_mask.dim() == 3 and tuple(attn_mask.shape) != (bsz * H, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should "
                               f"be {(bsz * H, tgt_len, src_len)}.")
        if attn_mask.dim() not in (2, 3):
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.expand(1, bsz, E_)], 0)
        v = cat([v, bias_v.expand(1, bsz, E_)], 0)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    # (L, N, E) -> (N, H, L, D); static keys/values come as (N * H, S, D)
    q = q.reshape((tgt_len, bsz, H, D)).permute((1, 2, 0, 3))
    k = k.reshape((k.shape[0], bsz, H, D)).permute((1, 2, 0, 3)) if static_k is None \
        else static_k.reshape((bsz, H, static_k.shape[1], D))
    v = v.reshape((v.shape[0], bsz, H, D)).permute((1, 2, 0, 3)) if static_v is None \
        else static_v.reshape((bsz, H, static_v.shape[1], D))
    if add_zero_attn:
        z = _creation.zeros((bsz, H, 1, D), dtype=k.dtype, device=k.device)
        k = cat([k, z], 2)
        v = cat([v, z], 2)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    s_len = k.shape[2]
    # one additive float mask broadcast to (N, H, L, S)
    mask = None
    if attn_mask is not None:
        mask = _additive_mask(attn_mask, q.dtype)
        if mask.dim() == 3:
            mask = mask.reshape((bsz, H, tgt_len, s_len))
    if key_padding_mask is not None:
        kp = _additive_mask(key_padding_mask, q.dtype).reshape((bsz, 1, 1, s_len))
        mask = kp if mask is None else mask + kp
    w: Tensor | None = None
    if not need_weights:
        # as PyTorch: the fused attention, where a query row with every key masked gives 0
        # (the softmax below gives NaN there, which then reaches every parameter's gradient)
        out = scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           dropout_p=dropout_p if training else 0.0)
    else:
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        if mask is not None:
            scores = scores + mask
        w = softmax(scores, -1)
        if dropout_p > 0.0 and training:
            w = dropout(w, dropout_p, True)
        out = w @ v  # (N, H, L, D)
    out = out.permute((2, 0, 1, 3)).reshape((tgt_len, bsz, E_))
    out = linear(out, out_proj_weight, out_proj_bias)
    if unbatched:
        out = out.squeeze(1)
    if w is None:
        return out, None
    if average_attn_weights:
        w = w.mean(1)
    if unbatched:
        w = w.squeeze(0)
    return out, w
