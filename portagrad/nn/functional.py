"""``nn.functional``: the stateless forms of layers, activations and losses (``torch.nn.functional``).

Everything is composed from portagrad ops. Windowed ops (conv, pooling, ``pad``, ``interpolate``,
``unfold``/``fold``) go through one precomputed index gather (:mod:`portagrad.nn._im2col`) and, for
conv, one matmul. Softmax, log-softmax and the losses built on them subtract the maximum first.
"""
from __future__ import annotations

import math
import warnings
from typing import Any
from collections.abc import Sequence

import numpy as np

from .. import _creation, _dtype, _random, _raw
from .._ops import conversion as C
from .._ops import elementwise as E
from .._ops import indexing as I
from .._ops import joining as J
from .._ops import linalg as L
from .._ops import reduction as R
from .._ops import shape as S
from .._ops._common import call
from .._shape import check_expandable, wrap_dim
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from . import _fused, _im2col

__all__ = [
    # activations
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "celu", "gelu",
    "silu", "mish", "sigmoid", "tanh", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish",
    "softplus", "softsign", "logsigmoid", "softmax", "log_softmax", "softmin", "threshold",
    "glu", "prelu", "tanhshrink", "softshrink", "hardshrink",
    # linear, dropout, embedding
    "linear", "bilinear", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "embedding",
    # conv and pooling
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold", "max_pool1d",
    "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "lp_pool2d",
    # normalisation
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "normalize",
    "local_response_norm",
    # losses
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "gaussian_nll_loss", "multilabel_soft_margin_loss",
    # misc
    "pad", "one_hot", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
    "scaled_dot_product_attention", "cosine_similarity", "pairwise_distance", "pixel_shuffle",
    "pixel_unshuffle", "channel_shuffle",
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
    if any(v <= 0 for v in d):
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
    lead = (Cc,) + (1,) * (2 - len(in_sp))
    raise RuntimeError(f"Given input size: ({'x'.join(map(str, lead + in_sp))}). Calculated output "
                       f"size: ({'x'.join(map(str, lead + out_sp))}). Output size is too small")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return R.mean(loss)
    if reduction == "sum":
        return R.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                  f"{'sum' if size_average is False else 'mean'}' instead.", stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _bview(t: Tensor, ndim: int, dim: int = 1) -> Tensor:
    """A 1-D tensor shaped to broadcast along ``dim`` of an ``ndim``-d tensor."""
    shape = [1] * ndim
    shape[dim] = t.shape[0]
    return S.reshape(t, tuple(shape))


# ------------------------------------------------------------------ activations
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``."""
    if inplace:
        return input.relu_()
    return E.relu(input)


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
             ) -> Tensor:
    if inplace:
        return input.clamp_(min_val, max_val)
    return E.clamp(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


def _in_float32(fn: Any) -> Any:
    """``fn`` computed on a float32 copy and rounded back once: PyTorch's activation kernels
    compute bfloat16 so, where chaining bfloat16 ops would round every intermediate."""
    return lambda x: C.to(fn(C.to(x, dtype=_dtype.float32)), dtype=x.dtype)


def _maybe_inplace(fn: Any, input: Tensor, inplace: bool) -> Tensor:
    if input.dtype is _dtype.bfloat16:
        fn = _in_float32(fn)
    if inplace:
        return E.unary_inplace(fn, input)
    return fn(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` for ``x > 0`` else ``negative_slope * x``."""
    return _maybe_inplace(lambda x: I.where(E.gt(x, 0), x, E.mul(x, negative_slope)), input, inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` for ``x > 0`` else ``alpha * (exp(x) - 1)``."""
    return _maybe_inplace(
        lambda x: I.where(E.gt(x, 0), x, E.mul(E.expm1(E.clamp(x, None, 0.0)), alpha)), input,
        inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    return _maybe_inplace(lambda x: E.mul(elu(x, _SELU_ALPHA), _SELU_SCALE), input, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _maybe_inplace(
        lambda x: I.where(E.gt(x, 0), x, E.mul(E.expm1(E.div(E.clamp(x, None, 0.0), alpha)), alpha)),
        input, inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (``approximate='tanh'``: the tanh approximation)."""
    if input.dtype is _dtype.bfloat16:
        return _in_float32(lambda x: gelu(x, approximate))(input)
    if approximate == "none":
        return E.gelu_erf(input)
    if approximate == "tanh":
        inner = E.mul(E.add(input, E.mul(E.mul(E.mul(input, input), input), 0.044715)),
                      math.sqrt(2.0 / math.pi))
        return E.mul(E.mul(input, 0.5), E.add(E.tanh(inner), 1.0))
    raise RuntimeError("approximate argument must be either none or tanh.")


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    return _maybe_inplace(lambda x: E.mul(x, E.sigmoid(x)), input, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _maybe_inplace(lambda x: E.mul(x, E.tanh(softplus(x))), input, inplace)


def sigmoid(input: Tensor) -> Tensor:
    return E.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return E.tanh(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    return _maybe_inplace(lambda x: E.div(E.clamp(E.add(x, 3.0), 0.0, 6.0), 6.0), input, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    return _maybe_inplace(lambda x: E.mul(x, E.div(E.clamp(E.add(x, 3.0), 0.0, 6.0), 6.0)), input,
                          inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``."""
    if input.dtype is _dtype.bfloat16:
        return _in_float32(lambda x: E.softplus_raw(x, beta, threshold))(input)
    return E.softplus_raw(input, beta, threshold)


def softsign(input: Tensor) -> Tensor:
    return E.div(input, E.add(E.abs(input), 1.0))


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))`` computed stably (``-softplus(-x)``)."""
    return E.neg(softplus(E.neg(input)))


def tanhshrink(input: Tensor) -> Tensor:
    return E.sub(input, E.tanh(input))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return I.where(E.gt(input, lambd), E.sub(input, lambd),
                   I.where(E.lt(input, -lambd), E.add(input, lambd), E.mul(input, 0.0)))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return I.where(E.gt(E.abs(input), lambd), input, E.mul(input, 0.0))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    return _maybe_inplace(lambda x: I.where(E.gt(x, threshold), x, value), input, inplace)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {wrap_dim(dim, input.dim())}"
                           f" is size {n}")
    a, b = J.chunk(input, 2, dim)
    return E.mul(a, E.sigmoid(b))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    w = weight
    if weight.numel() != 1:
        w = _bview(weight, input.dim(), 1 if input.dim() > 1 else 0)
    return I.where(E.gt(input, 0), input, E.mul(w, input))


def _softmax_dim(ndim: int) -> int:
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to "
                  "include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class _Softmax(Function):
    """Max-subtracted softmax / log-softmax along one axis (or a backend's fused kernel)."""

    _backward_name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, d: int, log: bool) -> Tensor:
        ctx.d, ctx.log = d, log
        if _raw.has_prims(x, "softmax"):
            y = _raw.softmax(_raw.contiguous(x), d, _raw.new_like(x), log)
        else:
            shape = x._v.shape
            m = _raw.reduce("max", x, (d,), True)
            z = _raw.binary("sub", x, _raw.expand_view(m, shape), x._v.dtype)
            e = _raw.unary("exp", z)
            s = _raw.reduce("sum", e, (d,), True)
            if log:
                y = _raw.binary("sub", z, _raw.expand_view(_raw.unary("log", s), shape), x._v.dtype)
            else:
                y = _raw.binary("div", e, _raw.expand_view(s, shape), x._v.dtype)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        (y,) = ctx.saved_tensors
        d = ctx.d
        if ctx.log:
            return E.sub(g, E.mul(E.exp(y), R.sum(g, d, keepdim=True))), None, None
        return E.mul(y, E.sub(g, R.sum(E.mul(g, y), d, keepdim=True))), None, None


def _softmax_impl(input: Tensor, dim: Any, dtype: Any, log: bool) -> Tensor:
    if dim is None:
        dim = _softmax_dim(input.dim())
    x = input
    d = wrap_dim(dim, x.dim())  # as PyTorch: the dim is checked before the dtype
    if dtype is not None:
        x = C.to(x, dtype=dtype)
    elif not x.dtype.is_floating_point and x.numel():  # an empty tensor is returned, any dtype
        raise RuntimeError(f"\"{'log_softmax' if log else 'softmax'}_lastdim_kernel_impl\" not "
                           f"implemented for '{E._type_name(x.dtype)}'")
    if x.numel() == 0:
        return x.clone()
    if x.dtype is _dtype.bfloat16:  # PyTorch's kernel computes in float32 and rounds once
        return C.to(_softmax_impl(C.to(x, dtype=_dtype.float32), d, None, log), dtype=x.dtype)
    if x.dim() == 0:
        x1 = S.reshape(x, (1,))
        return S.reshape(call(_Softmax, x1, 0, log), ())
    return call(_Softmax, x, d, log)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (max-subtracted, so no overflow)."""
    return _softmax_impl(input, dim, dtype, False)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
                ) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` (max-subtracted)."""
    return _softmax_impl(input, dim, dtype, True)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    return _softmax_impl(E.neg(input), dim, dtype, False)


# ------------------------------------------------------------------ linear
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``."""
    if input.dim() >= 1 and weight.dim() == 2 and input.shape[-1] != weight.shape[1]:
        lead = "x".join(str(s) for s in input.shape[:-1]) or "1"
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({lead}x{input.shape[-1]} "
                           f"and {weight.shape[1]}x{weight.shape[0]})")
    if weight.dim() == 2 and input.dim() >= 1 and (bias is None or bias.dim() == 1):
        return _fused.linear(input, weight, bias)  # one recorded node instead of ~7
    out = L.matmul(input, S.t(weight) if weight.dim() == 2 else weight)
    if bias is not None:
        check_expandable(bias.shape, out.shape)  # the bias never broadcasts the output
        out = E.add(out, bias)
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1^T W_k x2 + b_k``."""
    O, I1, I2 = weight.shape
    lead = tuple(input1.shape[:-1])
    x1 = S.reshape(input1, (-1, I1))
    x2 = S.reshape(input2, (-1, I2))
    w = S.reshape(S.permute(weight, (1, 0, 2)), (I1, O * I2))
    t = S.reshape(L.matmul(x1, w), (-1, O, I2))
    out = R.sum(E.mul(t, S.unsqueeze(x2, 1)), -1)
    if bias is not None:
        out = E.add(out, bias)
    return S.reshape(out, lead + (O,))


# ------------------------------------------------------------------ dropout
def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_mask(input: Tensor, p: float, shape: tuple[int, ...]) -> Tensor:
    u = _random.rand(shape, dtype=input.dtype, device=input.device)
    keep = E.ge(u, p)
    return E.mul(C.to(keep, dtype=input.dtype), 1.0 / (1.0 - p))


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (training only)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = E.mul(input, 0.0)
    else:
        out = E.mul(input, _dropout_mask(input, p, tuple(input.shape)))
    if inplace:
        return C.copy_(input, out)
    return out


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, nd: int) -> Tensor:
    _check_p(p)
    if not training or p == 0.0:
        return input
    batched = input.dim() == nd + 2
    shape = tuple(input.shape[:2] if batched else input.shape[:1]) + (1,) * nd
    out = E.mul(input, 0.0) if p == 1.0 else E.mul(input, _dropout_mask(input, p, shape))
    return C.copy_(input, out) if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return _feature_dropout(input, p, training, inplace, 1)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return _feature_dropout(input, p, training, inplace, 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return _feature_dropout(input, p, training, inplace, 3)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
                  ) -> Tensor:
    _check_p(p)
    if not training or p == 0.0:
        return input
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    keep = C.to(E.ge(_random.rand(tuple(input.shape), dtype=input.dtype, device=input.device), p),
                dtype=input.dtype)
    a = (1.0 / math.sqrt((alpha_p ** 2 * p + 1) * (1 - p)))
    b = -a * alpha_p * p
    out = E.add(E.mul(E.add(E.mul(input, keep), E.mul(E.sub(1.0, keep), alpha_p)), a), b)
    return C.copy_(input, out) if inplace else out


# ------------------------------------------------------------------ embedding
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input`` (``padding_idx``'s row gets no gradient)."""
    if input.dtype.is_floating_point or input.dtype is _dtype.bool:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got {input.type()} instead (while "
                           f"checking arguments for embedding)")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += n
    if max_norm is not None:
        with no_grad():
            rows = I.index_select(weight, 0, S.reshape(input, (-1,)))
            norms = R.norm(rows, norm_type, 1, keepdim=True)
            scale = I.where(E.gt(norms, max_norm), E.div(max_norm, E.add(norms, 1e-7)), 1.0)
            new = E.mul(rows, scale)
            weight.data.index_copy_(0, S.reshape(input, (-1,)), new)
    flat = S.reshape(input, (-1,))
    out = I.index_select(weight, 0, flat)
    if padding_idx is not None and out.requires_grad:
        keep = S.unsqueeze(E.ne(flat, padding_idx), 1)
        out = I.where(keep, out, out.detach())
    return S.reshape(out, tuple(input.shape) + (weight.shape[1],))


# ------------------------------------------------------------------ convolution
def _conv_padding(padding: Any, nd: int, k: tuple[int, ...], d: tuple[int, ...],
                  s: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * nd, (0,) * nd
        if padding == "same":
            if any(v != 1 for v in s):
                raise ValueError("padding='same' is not supported for strided convolutions")
            tot = tuple(d[i] * (k[i] - 1) for i in range(nd))
            lo = tuple(t // 2 for t in tot)
            return lo, tuple(t - l for t, l in zip(tot, lo))
        raise ValueError(f"Invalid padding string '{padding}', should be one of ('valid', 'same')")
    p = _pair(padding, nd, "padding")
    return p, p


def _convnd(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
            dilation: Any, groups: int, nd: int) -> Tensor:
    name = f"conv{nd}d"
    if weight.dim() != nd + 2:
        raise RuntimeError("weight should have at least three dimensions" if weight.dim() < 3 else
                           f"Expected {nd + 2}-dimensional weight for {name}, but got weight of "
                           f"size {list(weight.shape)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)}")
    unbatched = input.dim() == nd + 1
    x = S.unsqueeze(input, 0) if unbatched else input
    N, Cin = x.shape[0], x.shape[1]
    O = weight.shape[0]
    k = tuple(weight.shape[2:])
    s = _pair(stride, nd, "stride")
    d = _pair(dilation, nd, "dilation")
    lo, hi = _conv_padding(padding, nd, k, d, s)
    _check_conv_geometry(s, lo, d)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if Cin != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[1] * groups} channels, but "
                           f"got {Cin} channels instead")
    if O % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
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
    p = _im2col.window_plan(Cin, in_sp, k, s, lo, hi, d)
    if (groups == 1 or _fused.conv_fast_path(x)) and (bias is None or bias.dtype is x.dtype):
        # one recorded node instead of ~10 (the backend's conv fast paths when it has them)
        out = _fused.conv(x, weight, bias, p, (s, lo, d, groups))
        return S.squeeze(out, 0) if unbatched else out
    cols = _im2col.unfold_cols(x, p)  # (N, L, Cin*K)
    K = math.prod(k)
    NL = N * p.L
    if groups == 1:
        out = L.matmul(S.reshape(cols, (NL, Cin * K)), S.t(S.reshape(weight, (O, Cin * K))))
    else:
        g, Cg, Og = groups, Cin // groups, O // groups
        a = S.transpose(S.reshape(cols, (NL, g, Cg * K)), 0, 1)
        w = S.transpose(S.reshape(weight, (g, Og, Cg * K)), 1, 2)
        out = S.reshape(S.transpose(L.matmul(a, w), 0, 1), (NL, O))
    if bias is not None:
        out = E.add(out, bias)
    out = S.movedim(S.reshape(out, (N,) + p.out_spatial + (O,)), -1, 1)
    return S.squeeze(out, 0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) over (N, C, L) inputs."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution over (N, C, H, W) inputs: im2col (one index gather) and one matmul."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2)


def _conv_transposend(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
                      padding: Any, output_padding: Any, groups: int, dilation: Any, nd: int
                      ) -> Tensor:
    unbatched = input.dim() == nd + 1
    x = S.unsqueeze(input, 0) if unbatched else input
    N, Cin = x.shape[0], x.shape[1]
    if weight.shape[0] != Cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[0]} channels, but got {Cin} "
                           f"channels instead")
    Cout = weight.shape[1] * groups
    k = tuple(weight.shape[2:])
    s = _pair(stride, nd, "stride")
    d = _pair(dilation, nd, "dilation")
    pd = _pair(padding, nd, "padding")
    op = _pair(output_padding, nd, "output_padding")
    _check_conv_geometry(s, pd, d, op)
    for i in range(nd):
        if op[i] >= s[i] and op[i] >= d[i]:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                               f"got output_padding_height: {op[0]} output_padding_width: {op[-1]} "
                               f"stride_height: {s[0]} stride_width: {s[-1]} dilation_height: "
                               f"{d[0]} dilation_width: {d[-1]}")
    in_sp = tuple(x.shape[2:])
    out_sp = tuple((in_sp[i] - 1) * s[i] - 2 * pd[i] + d[i] * (k[i] - 1) + op[i] + 1
                   for i in range(nd))
    if any(o <= 0 for o in out_sp):
        lead = (1,) * (2 - nd)  # PyTorch computes 1-D as 2-D of height 1
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, lead + in_sp))})."
                           f" Calculated output size per channel: "
                           f"({' x '.join(map(str, lead + out_sp))}). Output size is too small")
    p = _im2col.window_plan(Cout, out_sp, k, s, pd, pd, d)
    K = math.prod(k)
    Lx = math.prod(in_sp)
    xs = S.reshape(S.movedim(x, 1, -1), (N * Lx, Cin))
    if groups == 1:
        cols = L.matmul(xs, S.reshape(weight, (Cin, Cout * K)))
    else:
        g, Cg, Og = groups, Cin // groups, Cout // groups
        a = S.transpose(S.reshape(xs, (N * Lx, g, Cg)), 0, 1)
        cols = S.transpose(L.matmul(a, S.reshape(weight, (g, Cg, Og * K))), 0, 1)
    cols = S.reshape(cols, (N, Lx, Cout * K))
    out = _im2col.fold_cols(cols, p)
    if bias is not None:
        out = E.add(out, _bview(bias, nd + 2))
    return S.squeeze(out, 0) if unbatched else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1
                     ) -> Tensor:
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1
                     ) -> Tensor:
    """Transposed 2-D convolution (the gradient of conv2d w.r.t. its input): matmul, then fold."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 2)


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
           ) -> Tensor:
    """Sliding local blocks: (N, C, H, W) -> (N, C*kh*kw, L)."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.dim()}D)")
    unbatched = input.dim() == 3
    x = S.unsqueeze(input, 0) if unbatched else input
    k, d, pd, s = (_pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))
    p = _im2col.window_plan(x.shape[1], tuple(x.shape[2:]), k, s, pd, pd, d)
    out = S.transpose(_im2col.unfold_cols(x, p), 1, 2)
    return S.squeeze(out, 0) if unbatched else out


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Combine sliding blocks (N, C*kh*kw, L) into (N, C, H, W), summing overlaps."""
    unbatched = input.dim() == 2
    x = S.unsqueeze(input, 0) if unbatched else input
    k, d, pd, s = (_pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))
    osz = _pair(output_size)
    K = k[0] * k[1]
    if x.shape[1] % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size="
                           f"{tuple(k)}")
    Cc = x.shape[1] // K
    p = _im2col.window_plan(Cc, osz, k, s, pd, pd, d)
    if p.L != x.shape[2]:
        raise RuntimeError(f"Given output_size={tuple(osz)}, kernel_size={tuple(k)}, dilation="
                           f"{tuple(d)}, padding={tuple(pd)}, stride={tuple(s)}, expected size of "
                           f"input's dimension 2 to match the calculated number of sliding blocks "
                           f"{p.out_spatial[0]} * {p.out_spatial[1]} = {p.L}, but got "
                           f"input.size(2)={x.shape[2]}.")
    out = _im2col.fold_cols(S.transpose(x, 1, 2), p)
    return S.squeeze(out, 0) if unbatched else out


# ------------------------------------------------------------------ pooling
class _MaxLast(Function):
    """Max over the last axis with its first argmax; the gradient goes to that element only."""

    _backward_name = "MaxPoolBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Any:
        ax = x.dim() - 1
        idx = _raw.arg_reduce("argmax", x, ax, True)
        vals = _raw.gather(x, ax, idx)
        ctx.K = x._v.shape[-1]
        ctx.save_for_backward(idx)
        vals = _raw._drop_axes(vals, (ax,))
        idx = _raw._drop_axes(idx, (ax,))
        ctx.mark_non_differentiable(idx)
        ctx.set_materialize_grads(False)  # (as _MaxPool2d)
        return vals, idx

    @staticmethod
    def backward(ctx: Any, g: Tensor, gi: Any) -> Any:
        (idx,) = ctx.saved_tensors
        ar = _creation.arange(ctx.K, device=g.device)
        return I.where(E.eq(idx, ar), S.unsqueeze(g, -1), 0.0)


def _max_pool_fast_path(x: Tensor) -> bool:
    """Whether ``x``'s backend has the optional max-pool fast paths (forward and backward)."""
    be = x._storage.backend
    return (x._v.dtype.is_floating_point and getattr(be, "max_pool2d", None) is not None and
            getattr(be, "max_pool2d_grad_input", None) is not None)


class _MaxPool2d(Function):
    """Max pooling of (N, C, H, W) as one node through the backend's ``max_pool2d`` fast path.

    Returns the values and the int64 flat positions ``h * W + w`` of each window's first maximum
    (PyTorch's ``return_indices``). The backward puts ``g`` at those positions (summing where
    windows overlap): one ``max_pool2d_grad_input`` call, or under ``create_graph`` a public
    scatter-add (whose derivative, a gather at the same positions, gives second derivatives)."""

    _backward_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx: Any, x: Tensor, out_sp: tuple, k: tuple, s: tuple, pd: tuple, d: tuple
                ) -> Any:
        x = _raw.contiguous(x)
        N, Cc = x._v.shape[:2]
        shape = (N, Cc) + tuple(out_sp)
        vals = _raw.new_like(x, shape)
        idx = _raw.new_like(x, shape, _dtype.int64)
        _raw.max_pool2d(x, vals, idx, k, s, pd, d)
        ctx.geom = (k, s, pd, d)
        ctx.in_shape = tuple(x._v.shape)
        ctx.save_for_backward(idx)
        ctx.mark_non_differentiable(idx)
        # the indices never get a gradient: no zeros made for them (g is never None here, the
        # engine skips the node when no gradient reaches it)
        ctx.set_materialize_grads(False)
        return vals, idx

    @staticmethod
    def backward(ctx: Any, g: Tensor, gi: Any) -> Any:
        (idx,) = ctx.saved_tensors
        N, Cc, H, W = ctx.in_shape
        if is_grad_enabled():
            L = idx.shape[2] * idx.shape[3]
            gx = I.scatter_into_zeros(S.reshape(g, (N, Cc, L)), 2, S.reshape(idx, (N, Cc, L)),
                                      (N, Cc, H * W))
            return S.reshape(gx, ctx.in_shape), None, None, None, None, None
        g = _raw.contiguous(g)
        gx = _raw.new_like(g, ctx.in_shape)
        _raw.max_pool2d_grad_input(g, idx, gx, *ctx.geom)
        return gx, None, None, None, None, None


def _max_pool_fused(x: Tensor, p: Any, k: tuple, s: tuple, pd: tuple, d: tuple, nd: int
                    ) -> tuple[Tensor, Tensor]:
    """Values and indices through :class:`_MaxPool2d` (1-D pooling as height-1 2-D pooling)."""
    if nd == 2:
        return call(_MaxPool2d, x, tuple(p.out_spatial), k, s, pd, d)
    x4 = S.unsqueeze(x, 2)
    vals, idx = call(_MaxPool2d, x4, (1,) + tuple(p.out_spatial), (1,) + k, (1,) + s,
                     (0,) + pd, (1,) + d)
    return S.squeeze(vals, 2), S.squeeze(idx, 2)


def _pool_args(kernel_size: Any, stride: Any, padding: Any, dilation: Any, nd: int
               ) -> tuple[tuple[int, ...], ...]:
    k = _pair(kernel_size, nd, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _pair(stride, nd, "stride")
    return k, s, _pair(padding, nd, "padding"), _pair(dilation, nd, "dilation")


def _pool_out(in_sp: tuple[int, ...], k: tuple[int, ...], s: tuple[int, ...],
              pd: tuple[int, ...], d: tuple[int, ...], ceil_mode: bool) -> tuple[int, ...]:
    return tuple(_im2col.out_size(in_sp[i], k[i], s[i], pd[i], pd[i], d[i], ceil_mode)
                 for i in range(len(in_sp)))


def _max_poolnd(input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                ceil_mode: bool, return_indices: bool, nd: int) -> Any:
    k, s, pd, d = _pool_args(kernel_size, stride, padding, dilation, nd)
    _check_pool_geometry(f"max_pool{nd}d", k, s, pd, d)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"max_pool{nd}d: Expected {nd + 1}D or {nd + 2}D input tensor, but got "
                           f"{list(input.shape)}")
    unbatched = input.dim() == nd + 1
    x = S.unsqueeze(input, 0) if unbatched else input
    N, Cc = x.shape[0], x.shape[1]
    in_sp = tuple(x.shape[2:])
    _check_pool_output(f"max_pool{nd}d", Cc, in_sp, _pool_out(in_sp, k, s, pd, d, ceil_mode))
    p = _im2col.window_plan(Cc, in_sp, k, s, pd, pd, d, ceil_mode)
    if _max_pool_fast_path(x):
        out, ind = _max_pool_fused(x, p, k, s, pd, d, nd)
        if unbatched:
            out, ind = S.squeeze(out, 0), S.squeeze(ind, 0)
        return (out, ind) if return_indices else out
    cols = _im2col.unfold_cols(x, p, -math.inf)
    vals, idx = call(_MaxLast, S.reshape(cols, (N, p.L, Cc, p.K)))
    out = S.movedim(S.reshape(vals, (N,) + p.out_spatial + (Cc,)), -1, 1)
    if unbatched:
        out = S.squeeze(out, 0)
    if not return_indices:
        return out
    pix = p.table_pix(x)  # (L, K) flat input positions
    pe = _raw.expand_view(S.reshape(pix, (1, p.L, 1, p.K)), (N, p.L, Cc, p.K))
    ind = S.squeeze(I.gather(pe, 3, S.unsqueeze(idx, -1)), -1)
    ind = S.movedim(S.reshape(ind, (N,) + p.out_spatial + (Cc,)), -1, 1)
    return out, (S.squeeze(ind, 0) if unbatched else ind)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """2-D max pooling (padding reads ``-inf``; gradient to the first maximum of each window)."""
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def _avg_poolnd(input: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
                count_include_pad: bool, divisor_override: Any, nd: int) -> Tensor:
    k, s, pd, d = _pool_args(kernel_size, stride, padding, 1, nd)
    _check_pool_geometry(f"avg_pool{nd}d", k, s, pd, d)
    unbatched = input.dim() == nd + 1
    x = S.unsqueeze(input, 0) if unbatched else input
    N, Cc = x.shape[0], x.shape[1]
    in_sp = tuple(x.shape[2:])
    _check_pool_output(f"avg_pool{nd}d", Cc, in_sp, _pool_out(in_sp, k, s, pd, d, ceil_mode))
    p = _im2col.window_plan(Cc, in_sp, k, s, pd, pd, d, ceil_mode)
    cols = _im2col.unfold_cols(x, p, 0.0)
    tot = R.sum(S.reshape(cols, (N, p.L, Cc, p.K)), -1)  # (N, L, C)
    if divisor_override:
        out = E.div(tot, float(divisor_override))
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

        out = E.div(tot, p.float_table(key, build, x))
    if not x.dtype.is_floating_point:  # PyTorch: an integer average truncates, in input's dtype
        out = C.to(E.trunc(out), x.dtype)
    out = S.movedim(S.reshape(out, (N,) + p.out_spatial + (Cc,)), -1, 1)
    return S.squeeze(out, 0) if unbatched else out


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """2-D average pooling."""
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override, 2)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    k = _pair(kernel_size)
    out = avg_pool2d(E.pow(input, norm_type), k, stride, 0, ceil_mode)
    return E.pow(E.mul(E.mul(E.sign(out), relu(E.abs(out))), k[0] * k[1]), 1.0 / norm_type)


def _adaptive_plan(Cc: int, in_sp: tuple[int, ...], out_sp: tuple[int, ...]) -> _im2col.Plan:
    def build() -> _im2col.Plan:
        per = []
        for n, o in zip(in_sp, out_sp):
            st = (np.arange(o) * n) // o
            en = -((-(np.arange(o) + 1) * n) // o)
            kmax = int((en - st).max())
            r = st[:, None] + np.arange(kmax)[None, :]
            per.append(np.where(r < en[:, None], r, -1))
        if len(per) == 1:
            pix = per[0]
        else:
            R_, C_ = per[0][:, None, :, None], per[1][None, :, None, :]
            valid = (R_ >= 0) & (C_ >= 0)
            pix = np.where(valid, R_ * in_sp[1] + C_, -1)
            pix = pix.reshape(out_sp[0] * out_sp[1], per[0].shape[1] * per[1].shape[1])
        return _im2col.Plan(Cc, in_sp, out_sp, pix)

    return _im2col.plan(("adaptive", Cc, in_sp, out_sp), build)


def _adaptive_out(output_size: Any, in_sp: tuple[int, ...], nd: int) -> tuple[int, ...]:
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != nd:
            raise ValueError(f"output_size must have {nd} elements")
        return tuple(in_sp[i] if o is None else int(o) for i, o in enumerate(output_size))
    return (int(output_size),) * nd


def _adaptive_pool(input: Tensor, output_size: Any, nd: int, kind: str, return_indices: bool = False
                   ) -> Any:
    unbatched = input.dim() == nd + 1
    x = S.unsqueeze(input, 0) if unbatched else input
    N, Cc = x.shape[0], x.shape[1]
    in_sp = tuple(x.shape[2:])
    out_sp = _adaptive_out(output_size, in_sp, nd)
    p = _adaptive_plan(Cc, in_sp, out_sp)
    if kind == "avg":
        cols = _im2col.unfold_cols(x, p, 0.0)
        tot = R.sum(S.reshape(cols, (N, p.L, Cc, p.K)), -1)
        cnt = p.float_table("cnt", lambda: (p.pix >= 0).sum(1, keepdims=True).astype(np.float64), x)
        out = E.div(tot, cnt)
        idx: Tensor | None = None
    else:
        cols = _im2col.unfold_cols(x, p, -math.inf)
        out, idx = call(_MaxLast, S.reshape(cols, (N, p.L, Cc, p.K)))
    out = S.movedim(S.reshape(out, (N,) + out_sp + (Cc,)), -1, 1)
    if unbatched:
        out = S.squeeze(out, 0)
    if not return_indices:
        return out
    assert idx is not None  # only max pooling returns indices
    pix = p.table_pix(x)
    pe = _raw.expand_view(S.reshape(pix, (1, p.L, 1, p.K)), (N, p.L, Cc, p.K))
    ind = S.squeeze(I.gather(pe, 3, S.unsqueeze(idx, -1)), -1)
    ind = S.movedim(S.reshape(ind, (N,) + out_sp + (Cc,)), -1, 1)
    return out, (S.squeeze(ind, 0) if unbatched else ind)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    return _adaptive_pool(input, output_size, 1, "avg")


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed output size (PyTorch's window bounds)."""
    return _adaptive_pool(input, output_size, 2, "avg")


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive_pool(input, output_size, 1, "max", return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive_pool(input, output_size, 2, "max", return_indices)


# ------------------------------------------------------------------ normalisation
def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise over every dimension but the channels (dim 1); in training, use batch statistics
    and update the running ones in place (unbiased variance), else use the running ones."""
    if input.dim() < 2:
        raise ValueError(f"expected 2D or higher input (got {input.dim()}D input)")
    axes = (0,) + tuple(range(2, input.dim()))
    Cc = input.shape[1]
    if training:
        n = input.numel() // max(Cc, 1)
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{input.shape}")
        mu = R.mean(input, axes, keepdim=True)
        xc = E.sub(input, mu)
        var = R.mean(E.mul(xc, xc), axes, keepdim=True)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(E.mul(S.reshape(mu.detach(), (Cc,)),
                                                               momentum))
                if running_var is not None:
                    unb = E.mul(S.reshape(var.detach(), (Cc,)), n / (n - 1))
                    running_var.mul_(1 - momentum).add_(E.mul(unb, momentum))
        y = E.mul(xc, E.rsqrt(E.add(var, eps)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        rm = _bview(running_mean, input.dim())
        rv = _bview(running_var, input.dim())
        y = E.mul(E.sub(input, rm), E.rsqrt(E.add(rv, eps)))
    if weight is not None:
        y = E.mul(y, _bview(weight, input.dim()))
    if bias is not None:
        y = E.add(y, _bview(bias, input.dim()))
    return y


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-5) -> Tensor:
    axes = tuple(range(2, input.dim()))
    if use_input_stats:
        mu = R.mean(input, axes, keepdim=True)
        xc = E.sub(input, mu)
        var = R.mean(E.mul(xc, xc), axes, keepdim=True)
        if running_mean is not None and running_var is not None:
            n = math.prod(input.shape[2:])
            with no_grad():
                m = R.mean(S.reshape(mu.detach(), tuple(input.shape[:2])), 0)
                v = R.mean(S.reshape(var.detach(), tuple(input.shape[:2])), 0)
                running_mean.mul_(1 - momentum).add_(E.mul(m, momentum))
                running_var.mul_(1 - momentum).add_(E.mul(E.mul(v, n / max(n - 1, 1)), momentum))
        y = E.mul(xc, E.rsqrt(E.add(var, eps)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        y = E.mul(E.sub(input, _bview(running_mean, input.dim())),
                  E.rsqrt(E.add(_bview(running_var, input.dim()), eps)))
    if weight is not None:
        y = E.mul(y, _bview(weight, input.dim()))
    if bias is not None:
        y = E.add(y, _bview(bias, input.dim()))
    return y


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dimensions."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if tuple(input.shape[input.dim() - k:]) != ns or input.dim() < k:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    if input.dtype is _dtype.bfloat16:  # PyTorch's kernel computes in float32 and rounds once
        w, b = (None if t is None else C.to(t, dtype=_dtype.float32) for t in (weight, bias))
        return C.to(layer_norm(C.to(input, dtype=_dtype.float32), ns, w, b, eps), dtype=input.dtype)
    axes = tuple(range(input.dim() - k, input.dim()))
    mu = R.mean(input, axes, keepdim=True)
    xc = E.sub(input, mu)
    var = R.mean(E.mul(xc, xc), axes, keepdim=True)
    y = E.mul(xc, E.rsqrt(E.add(var, eps)))
    if weight is not None:
        y = E.mul(y, weight)
    if bias is not None:
        y = E.add(y, bias)
    return y


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    axes = tuple(range(input.dim() - len(ns), input.dim()))
    if eps is None:
        eps = float(np.finfo(input.dtype.numpy).eps)
    y = E.mul(input, E.rsqrt(E.add(R.mean(E.mul(input, input), axes, keepdim=True), eps)))
    return E.mul(y, weight) if weight is not None else y


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over groups of channels (and all spatial positions)."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    N, Cc = input.shape[0], input.shape[1]
    if Cc % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups={num_groups}")
    x = S.reshape(input, (N, num_groups, -1))
    mu = R.mean(x, -1, keepdim=True)
    xc = E.sub(x, mu)
    var = R.mean(E.mul(xc, xc), -1, keepdim=True)
    y = S.reshape(E.mul(xc, E.rsqrt(E.add(var, eps))), tuple(input.shape))
    if weight is not None:
        y = E.mul(y, _bview(weight, input.dim()))
    if bias is not None:
        y = E.add(y, _bview(bias, input.dim()))
    return y


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    sq = E.mul(input, input)
    N, Cc = input.shape[0], input.shape[1]
    flat = S.reshape(sq, (N, 1, Cc, -1))
    padded = pad(flat, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(padded, (size, 1), stride=1)
    div = S.reshape(div, tuple(input.shape))
    return E.div(input, E.pow(E.add(E.mul(div, alpha), k), beta))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = E.clamp(R.norm(input, p, dim, keepdim=True), eps, None)
    res = E.div(input, denom)
    if out is not None:
        C.copy_(out, res)
        return out
    return res


# ------------------------------------------------------------------ losses
def _check_same_size(input: Tensor, target: Tensor, stacklevel: int = 3) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", stacklevel=stacklevel)


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_same_size(input, target)
    dt = _dtype.result_type(input, target)
    if not dt.is_floating_point:  # as PyTorch: no integer or bool kernel (bool - bool is refused)
        raise RuntimeError(f"\"mse_cpu\" not implemented for '{E._type_name(dt)}'")
    d = E.sub(C.to(input, dtype=dt), C.to(target, dtype=dt))
    loss = E.mul(d, d)
    if weight is not None:
        loss = E.mul(loss, weight)
    return _reduce(loss, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_same_size(input, target)
    loss = E.abs(E.sub(input, target))
    if weight is not None:
        loss = E.mul(loss, weight)
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size(input, target)
    d = E.abs(E.sub(input, target))
    if beta == 0:
        return _reduce(d, reduction)
    loss = I.where(E.lt(d, beta), E.div(E.mul(E.mul(d, d), 0.5), beta), E.sub(d, 0.5 * beta))
    return _reduce(loss, reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    _check_reduction(reduction)
    _check_same_size(input, target)
    d = E.abs(E.sub(input, target))
    loss = I.where(E.lt(d, delta), E.mul(E.mul(d, d), 0.5), E.mul(E.sub(d, 0.5 * delta), delta))
    if weight is not None:
        loss = E.mul(loss, weight)
    return _reduce(loss, reduction)


def _class_mask(target: Tensor, Cc: int, ndim: int) -> Tensor:
    """``target[:, None] == arange(C)`` broadcast along the class dim 1 (bool, shape of input)."""
    ar = _creation.arange(Cc, device=target.device)
    shape = [1] * ndim
    shape[1] = Cc
    return E.eq(S.unsqueeze(target, 1), S.reshape(ar, tuple(shape)))


def _check_targets(target: Tensor, Cc: int, ignore_index: int) -> None:
    # on every device (one host read): PyTorch raises "Target N is out of bounds."
    _fused.check_class_targets(target, Cc, ignore_index)


def _unbatched_target(target: Tensor) -> Tensor:
    """The class index for an unbatched (C,) input: a 0-d target, or (as PyTorch) one of shape
    (1,), read as 0-d."""
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dim() == 1:
        if target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        target = S.reshape(target, ())
    return target


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of the class indices ``target`` under log-probabilities ``input``
    (N, C, ...)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if target.dtype.is_floating_point:
        raise RuntimeError(f"expected scalar type Long but found {E._type_name(target.dtype)}")
    if input.dim() == 1:
        target = _unbatched_target(target)
        input, target = S.unsqueeze(input, 0), S.unsqueeze(target, 0)
        res = nll_loss(input, target, weight, None, ignore_index, None, reduction)
        return S.squeeze(res, 0) if reduction == "none" else res
    if input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if tuple(input.shape[2:]) != tuple(target.shape[1:]):
        raise RuntimeError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, got "
                           f"{list(target.shape)}")
    Cc = input.shape[1]
    if weight is not None and weight.numel() != Cc:
        raise RuntimeError(f"weight tensor should be defined either for all {Cc} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    _check_targets(target, Cc, ignore_index)
    mask = _class_mask(target, Cc, input.dim())
    picked = R.sum(I.where(mask, input, 0.0), 1)  # (N, ...)
    valid = E.ne(target, ignore_index)
    if weight is not None:
        wb = _bview(weight.to(input.dtype), input.dim())
        w = R.sum(I.where(mask, wb, 0.0), 1)
        w = I.where(valid, w, 0.0)
    else:
        w = C.to(valid, dtype=input.dtype)
    loss = E.neg(E.mul(picked, w))
    if reduction == "none":
        return loss
    if reduction == "sum":
        return R.sum(loss)
    return E.div(R.sum(loss), R.sum(w))


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits ``input`` (N, C, ...) against class indices or class
    probabilities ``target``; ``log_softmax`` then ``nll_loss`` (max-subtracted)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if (input.dim() == 2 and target.dim() == 1 and not target.dtype.is_floating_point
            and weight is None and label_smoothing == 0 and input.dtype.is_floating_point
            and input.shape[0] == target.shape[0] and input.shape[0] > 0):
        return _fused.cross_entropy_indices(input, target.to(_dtype.int64), ignore_index,
                                            reduction)  # one recorded node instead of ~15
    class_dim = 0 if input.dim() == 1 else 1
    logp = log_softmax(input, class_dim)
    Cc = input.shape[class_dim]
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"Expected target size {list(input.shape)}, got "
                               f"{list(target.shape)}")
        x = logp
        if weight is not None:
            x = E.mul(x, _bview(weight, input.dim(), class_dim))
        t = target
        if label_smoothing > 0:
            t = E.add(E.mul(t, 1 - label_smoothing), label_smoothing / Cc)
        loss = E.neg(R.sum(E.mul(x, t), class_dim))
        if reduction == "mean":
            n = input.numel() // Cc if input.numel() else 0
            return E.div(R.sum(loss), n) if n else R.sum(loss)
        return _reduce(loss, reduction)
    if input.dim() == 1:
        target = _unbatched_target(target)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing <= 0:
        return nll
    if input.dim() == 1:
        logp_b, target_b = S.unsqueeze(logp, 0), S.unsqueeze(target, 0)
    else:
        logp_b, target_b = logp, target
    ignore = E.eq(target_b, ignore_index)
    if weight is not None:
        smooth = E.neg(R.sum(E.mul(logp_b, _bview(weight, logp_b.dim())), 1))
    else:
        smooth = E.neg(R.sum(logp_b, 1))
    smooth = I.where(ignore, 0.0, smooth)
    if reduction == "mean":
        if weight is not None:
            mask = _class_mask(target_b, Cc, logp_b.dim())
            wt = R.sum(I.where(mask, _bview(weight, logp_b.dim()), 0.0), 1)
            denom = R.sum(I.where(ignore, 0.0, wt))
        else:
            denom = R.sum(C.to(E.logical_not(ignore), dtype=input.dtype))
        ret = E.div(R.sum(smooth), denom)
    elif reduction == "sum":
        ret = R.sum(smooth)
    else:
        ret = smooth if input.dim() > 1 else S.squeeze(smooth, 0)
    return E.add(E.mul(nll, 1 - label_smoothing), E.mul(ret, label_smoothing / Cc))


def _check_unit_interval(x: Tensor, what: str) -> None:
    # one reduction pair and one host read; NaN fails both comparisons, as in PyTorch
    if x.numel():
        lo, hi = _raw.min_max(x)
        if not (lo >= 0 and hi <= 1):
            raise RuntimeError(f"all elements of {what} should be between 0 and 1")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                         ) -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` with the logs clamped at -100 (as PyTorch)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if target.dtype is not input.dtype:  # as PyTorch: no promotion between input and target
        raise RuntimeError(f"Found dtype {E._type_name(target.dtype)} but expected "
                           f"{E._type_name(input.dtype)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"binary_cross_entropy\" not implemented for "
                           f"'{E._type_name(input.dtype)}'")
    _check_unit_interval(input, "input")  # on every device: else a wrong loss or NaN, silently
    _check_unit_interval(target, "target")
    lx = E.clamp(E.log(input), -100.0, None)
    l1x = E.clamp(E.log(E.sub(1.0, input)), -100.0, None)
    loss = E.neg(E.add(E.mul(target, lx), E.mul(E.sub(1.0, target), l1x)))
    if weight is not None:
        loss = E.mul(loss, weight)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: Any = None, reduce: Any = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None
                                     ) -> Tensor:
    """Sigmoid + binary cross entropy in one stable formula."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    # log(1 + exp(-x)) computed as log1p(exp(-|x|)) + max(-x, 0)
    sp = E.add(E.log1p(E.exp(E.neg(E.abs(input)))), E.relu(E.neg(input)))
    if pos_weight is not None:
        lw = E.add(E.mul(E.sub(pos_weight, 1.0), target), 1.0)
        loss = E.add(E.mul(E.sub(1.0, target), input), E.mul(lw, sp))
    else:
        loss = E.add(E.mul(E.sub(1.0, target), input), sp)
    if weight is not None:
        loss = E.mul(loss, weight)
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``target * (log target - input)`` (``input`` holds log-probabilities)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with the "
                      "KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    if log_target:
        loss = E.mul(E.exp(target), E.sub(target, input))
    else:
        # xlogy: 0 where target == 0
        tlog = I.where(E.eq(target, 0), 0.0, E.mul(target, E.log(I.where(E.gt(target, 0), target,
                                                                         1.0))))
        loss = E.sub(tlog, E.mul(target, input))
    if reduction == "batchmean":
        return E.div(R.sum(loss), input.shape[0]) if input.dim() else R.sum(loss)
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: Any = None, eps: float = 1e-8, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = E.sub(E.exp(input), E.mul(target, input))
    else:
        loss = E.sub(input, E.mul(target, E.log(E.add(input, eps))))
    if full:
        st = E.add(E.sub(E.mul(target, E.log(I.where(E.gt(target, 0), target, 1.0))), target),
                   E.mul(E.log(E.mul(target, 2 * math.pi)), 0.5))
        loss = E.add(loss, I.where(E.gt(target, 1), st, 0.0))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Any, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    if not isinstance(var, Tensor):
        var = _creation.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    v = E.clamp(var, eps, None)
    d = E.sub(input, target)
    loss = E.mul(E.add(E.log(v), E.div(E.mul(d, d), v)), 0.5)
    if full:
        loss = E.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                        ) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(E.relu(E.add(E.mul(E.neg(target), E.sub(input1, input2)), margin)), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                         ) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    pos = I.where(E.eq(target, 1), input, 0.0)
    neg = I.where(E.eq(target, -1), E.relu(E.sub(margin, input)), 0.0)
    return _reduce(E.add(pos, neg), reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(softplus(E.mul(E.neg(target), input)), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: Any = None, reduce: Any = None,
                                reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = E.neg(E.add(E.mul(target, logsigmoid(input)),
                       E.mul(E.sub(1.0, target), logsigmoid(E.neg(input)))))
    if weight is not None:
        loss = E.mul(loss, weight)
    loss = R.mean(loss, -1)
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                          ) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    cos = cosine_similarity(input1, input2, dim=-1)
    loss = I.where(E.eq(target, 1), E.sub(1.0, cos), E.relu(E.sub(cos, margin)))
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                        size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                        ) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dn = E.minimum(dn, pairwise_distance(positive, negative, p, eps))
    return _reduce(E.relu(E.add(E.sub(dp, dn), margin)), reduction)


# ------------------------------------------------------------------ misc
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / max(||x1|| ||x2||, eps)`` along ``dim``."""
    num = R.sum(E.mul(x1, x2), dim)
    n1 = R.sum(E.mul(x1, x1), dim)
    n2 = R.sum(E.mul(x2, x2), dim)
    return E.div(num, E.sqrt(E.clamp(E.mul(n1, n2), eps * eps, None)))


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    return R.norm(E.add(E.sub(x1, x2), eps), p, -1, keepdim)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dimension."""
    if tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel():
        lo, hi = _raw.min_max(tensor)
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    ar = _creation.arange(num_classes, device=tensor.device)
    return C.to(E.eq(S.unsqueeze(tensor, -1), ar), dtype=_dtype.int64)


def _pad_plan(in_sp: tuple[int, ...], pads: tuple[tuple[int, int], ...], mode: str
              ) -> _im2col.Plan:
    def build() -> _im2col.Plan:
        out_sp = tuple(n + lo + hi for n, (lo, hi) in zip(in_sp, pads))
        # grows one axis per spatial dimension (n-d index arithmetic by broadcasting)
        pix: np.ndarray = np.zeros((), np.int64)
        valid: np.ndarray = np.ones((), bool)
        for n, (lo, _), o in zip(in_sp, pads, out_sp):
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
                    src = np.mod(src, n)
            pix = pix[..., None] * n + src
            valid = valid[..., None] & ok
        pix = np.where(valid, pix, -1).reshape(-1, 1)
        return _im2col.Plan(1, (math.prod(in_sp),), out_sp, pix)

    return _im2col.plan(("pad", in_sp, pads, mode), build)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
        ) -> Tensor:
    """Pad the last ``len(pad) // 2`` dimensions (``pad`` lists the last dimension first):
    ``constant``, ``reflect``, ``replicate`` or ``circular`` (negative padding crops)."""
    pad = tuple(int(p) for p in pad)
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
    for j, ((lo, hi), n) in enumerate(zip(pads, in_sp)):
        dim = input.dim() - k + j
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension {dim} "
                               f"of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + lo + hi < 0:
            raise RuntimeError(f"The input size {n}, plus negative padding {lo} and {hi} resulted in "
                               f"a negative output size, which is invalid. Check dimension {dim} of "
                               f"your input.")
    lead = tuple(input.shape[:input.dim() - k])
    p = _pad_plan(in_sp, pads, mode)
    x = S.reshape(input, (max(math.prod(lead), 1) if lead else 1, 1, math.prod(in_sp)))
    fill = 0.0 if value is None else value
    out = _im2col.unfold_cols(x, p, fill)
    return S.reshape(out, lead + p.out_spatial)


def _interp_plan(Cc: int, in_sp: tuple[int, ...], out_sp: tuple[int, ...], scales: tuple,
                 mode: str, align_corners: bool) -> _im2col.Plan:
    def build() -> _im2col.Plan:
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
            else:
                if align_corners:
                    src = dst * ((n - 1) / (o - 1)) if o > 1 else dst * 0
                else:
                    src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
                i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
                i1 = np.minimum(i0 + 1, n - 1)
                l1 = src - i0
                taps.append((np.stack([i0, i1], 1), np.stack([1 - l1, l1], 1)))
        if len(taps) == 1:
            pix, w = taps[0]
        else:
            (ia, wa), (ib, wb) = taps
            pix = (ia[:, None, :, None] * in_sp[1] + ib[None, :, None, :])
            w = wa[:, None, :, None] * wb[None, :, None, :]
            L_ = out_sp[0] * out_sp[1]
            pix = pix.reshape(L_, -1)
            w = w.reshape(L_, -1)
        p = _im2col.Plan(Cc, in_sp, out_sp, pix)
        p._host_float["w"] = w.reshape(p.L, 1, p.K)
        return p

    return _im2col.plan(("interp", Cc, in_sp, out_sp, scales, mode, align_corners), build)


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize (N, C, L) or (N, C, H, W) inputs: ``nearest``, ``nearest-exact``, ``linear``,
    ``bilinear`` (gathers of precomputed taps, weighted)."""
    nd = input.dim() - 2
    if nd not in (1, 2):
        raise NotImplementedError(f"Input Error: Only 3D and 4D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: nearest | linear | bilinear")
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if mode == "linear" and nd != 1 or mode == "bilinear" and nd != 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{3 if mode == 'linear' else 4}D input")
    if mode not in ("nearest", "nearest-exact", "linear", "bilinear", "area"):
        raise NotImplementedError(f"interpolate mode {mode!r} is not implemented")
    in_sp = tuple(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out_sp = _pair(size, nd, "size")
        scales: tuple = (None,) * nd
    else:
        sf = tuple(float(v) for v in (scale_factor if isinstance(scale_factor, (list, tuple))
                                      else (scale_factor,) * nd))
        out_sp = tuple(int(math.floor(n * f)) for n, f in zip(in_sp, sf))
        scales = (None,) * nd if recompute_scale_factor else sf
    if mode == "area":
        return _adaptive_pool(input, out_sp, nd, "avg")
    N, Cc = input.shape[0], input.shape[1]
    p = _interp_plan(Cc, in_sp, out_sp, scales, "linear" if mode in ("linear", "bilinear") else mode,
                     bool(align_corners))
    cols = _im2col.unfold_cols(input, p, 0.0)  # (N, L, C*K)
    if p.K == 1:
        out = cols
    else:
        w = p.float_table("w", None, input)
        out = R.sum(E.mul(S.reshape(cols, (N, p.L, Cc, p.K)), w), -1)
    return S.movedim(S.reshape(out, (N,) + out_sp + (Cc,)), -1, 1)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    r = upscale_factor
    *lead, c, h, w = input.shape
    x = S.reshape(input, tuple(lead) + (c // (r * r), r, r, h, w))
    n = len(lead)
    x = S.permute(x, tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return S.reshape(x, tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    r = downscale_factor
    *lead, c, h, w = input.shape
    n = len(lead)
    x = S.reshape(input, tuple(lead) + (c, h // r, r, w // r, r))
    x = S.permute(x, tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return S.reshape(x, tuple(lead) + (c * r * r, h // r, w // r))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    N, Cc = input.shape[:2]
    rest = tuple(input.shape[2:])
    x = S.reshape(input, (N, groups, Cc // groups) + rest)
    return S.reshape(S.transpose(x, 1, 2), (N, Cc) + rest)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v`` (bool masks: True = take part; causal: lower triangle)."""
    Lq, Sk = query.shape[-2], key.shape[-2]
    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = J.repeat_interleave(key, rep, -3)
        value = J.repeat_interleave(value, rep, -3)
    attn = E.mul(L.matmul(query, S.transpose(key, -2, -1)), sc)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                               "when is_causal=True")
        causal = J.tril(_creation.ones((Lq, Sk), dtype=_dtype.bool, device=query.device))
        attn = I.where(causal, attn, -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype is _dtype.bool:
            attn = I.where(attn_mask, attn, -math.inf)
        else:
            attn = E.add(attn, attn_mask)
    w = softmax(attn, -1)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True)
    return L.matmul(w, value)
