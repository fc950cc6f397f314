"""portagrad: PyTorch-style tensors, autograd and ``nn`` on pluggable array backends.

``import portagrad as pg`` gives the PyTorch API (``pg.tensor``, ``requires_grad``, ``backward``,
``pg.nn``, ``pg.optim``, ``pg.utils.data``, ``pg.save``/``pg.load``); devices are ``"cpu"`` (numpy)
and ``"opencl:N"`` (pyopencl), or any device type a plugin registers.
"""
from __future__ import annotations

__version__ = "0.1.0"

import builtins as _builtins

from . import _creation, _ops, _random, _raw, _tensor_api, autograd
from ._creation import (arange, as_tensor, asarray, empty, empty_like, empty_strided, eye,
                        from_numpy, full, full_like, linspace, logspace, ones, ones_like,
                        scalar_tensor, tensor, zeros, zeros_like)
from ._device import device, get_default_device, set_default_device
from ._dtype import (bool, double, dtype, float, float16, float32, float64, get_default_dtype,
                     half, int, int32, int64, long, promote_types, result_type, set_default_dtype)
from ._random import (Generator, bernoulli, default_generator, get_rng_state, initial_seed,
                      manual_seed, multinomial, normal, rand, rand_like, randint, randint_like,
                      randn, randn_like, randperm, seed, set_rng_state)
from ._shape import broadcast_shapes as _broadcast_shapes
from ._storage import Size
from ._tensor import Tensor

# The one place where Tensor and the op layer are tied: the op modules import Tensor, so
# Tensor's methods (declared in _tensor_api.TensorOps) reach them through names bound here.
_tensor_api._bind(Tensor, _raw, _creation, _random, autograd, _ops._common, _ops.conversion,
                  _ops.elementwise, _ops.indexing, _ops.joining, _ops.linalg, _ops.reduction,
                  _ops.shape)

# the functional namespace: pg.add, pg.sum, pg.matmul ... (the same functions as the methods)
from ._accel import DeviceModule as _DeviceModule
from ._format import set_printoptions
from ._ops.conversion import clone
from ._ops.elementwise import (abs, absolute, add, atan2, bitwise_and, bitwise_not, bitwise_or,
                               bitwise_xor, ceil, clamp, clip, cos, div, divide, eq, erf, exp,
                               exp2, expm1, floor, floor_divide, fmod, frac, ge, greater,
                               greater_equal, gt, hypot, isfinite, isinf, isnan, le, lerp, less,
                               less_equal, log, log1p, log2, log10, logaddexp, logical_and,
                               logical_not, logical_or, logical_xor, lt, maximum, minimum, mul,
                               multiply, nan_to_num, ne, neg, negative, not_equal, positive, pow,
                               reciprocal, relu, remainder, round, rsqrt, rsub, sgn, sigmoid, sign,
                               signbit, sin, sqrt, square, sub, subtract, tan, tanh, true_divide,
                               trunc, where)
from ._ops.indexing import (flip, gather, index_add, index_copy, index_fill, index_select,
                            masked_fill, masked_select, nonzero, scatter, scatter_add,
                            take_along_dim)
from ._ops.joining import (argsort, cat, chunk, concat, concatenate, hstack, kthvalue, median,
                           msort, repeat, repeat_interleave, roll, sort, split, stack,
                           tensor_split, tile, topk, tril, triu, vstack)
from ._ops.linalg import addmm, baddbmm, bmm, dot, ger, inner, matmul, mm, mv, outer, vdot
from ._ops.reduction import (all, amax, amin, aminmax, any, argmax, argmin, count_nonzero, cumsum,
                             logsumexp, max, mean, min, nansum, norm, prod, std, std_mean, sum,
                             var, var_mean)
from ._ops.shape import (as_strided, broadcast_to, flatten, moveaxis, movedim, narrow, permute,
                         reshape, select, squeeze, swapaxes, swapdims, t, transpose, unbind,
                         unflatten, unsqueeze)
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .errors import OutOfMemoryError
from .plugins.manager import device_types as _device_types


# the names bool, int and float are portagrad's dtypes here (one assignment each: type checkers
# read a plain `X = cls` as a type alias, usable in annotations)
_bool = _builtins.bool
_int = _builtins.int
_float = _builtins.float


def broadcast_shapes(*shapes: tuple[_int, ...]) -> Size:
    """The shape that ``shapes`` broadcast to."""
    return Size(_broadcast_shapes(*(tuple(s) for s in shapes)))


def broadcast_tensors(*tensors: Tensor) -> tuple:
    """Views of ``tensors`` broadcast to one shape."""
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def is_tensor(obj: object) -> _bool:
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> _int:
    return input.numel()


def is_floating_point(input: Tensor) -> _bool:
    return input.is_floating_point()


def allclose(input: Tensor, other: Tensor, rtol: _float = 1e-05, atol: _float = 1e-08,
             equal_nan: _bool = False) -> _bool:
    """Whether all elements are close (``|a - b| <= atol + rtol * |b|``)."""
    import numpy as _np

    return _bool(_np.allclose(input.detach().numpy(force=True), other.detach().numpy(force=True),
                              rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input: Tensor, other: Tensor, rtol: _float = 1e-05, atol: _float = 1e-08,
            equal_nan: _bool = False) -> Tensor:
    d = abs(sub(input, other))
    ok = le(d, add(mul(abs(other), rtol), atol))
    if equal_nan:
        ok = logical_or(ok, logical_and(isnan(input), isnan(other)))
    return ok


def equal(input: Tensor, other: Tensor) -> _bool:
    """Same shape and same values."""
    return input.shape == other.shape and _bool(all(eq(input, other)).item())


def is_nonzero(input: Tensor) -> _bool:
    return _bool(input.item())


def detach(input: Tensor) -> Tensor:
    return input.detach()


opencl = _DeviceModule("opencl")
cpu = _DeviceModule("cpu")

from . import backends, nn, optim, plugins, utils
from .serialization import load, save


def __getattr__(name: str) -> object:
    # `pg.<device type>` for plugin device types (pg.mydev.device_count() ...)
    if not name.startswith("_") and name in _device_types():
        mod = _DeviceModule(name)
        globals()[name] = mod
        return mod
    raise AttributeError(f"module 'portagrad' has no attribute '{name}'")


__all__ = [
    "Generator", "OutOfMemoryError", "Size", "Tensor", "abs", "absolute", "add", "addmm",
    "all", "allclose", "amax", "amin", "aminmax", "any", "arange", "argmax", "argmin",
    "argsort", "as_strided", "as_tensor", "asarray", "atan2", "autograd", "backends",
    "baddbmm", "bernoulli", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "bmm",
    "bool", "broadcast_shapes", "broadcast_tensors", "broadcast_to", "cat", "ceil", "chunk",
    "clamp", "clip", "clone", "concat", "concatenate", "cos", "count_nonzero", "cpu", "cumsum",
    "default_generator", "detach", "device", "div", "divide", "dot", "double", "dtype",
    "empty", "empty_like", "empty_strided", "enable_grad", "eq", "equal", "erf", "errors",
    "exp", "exp2", "expm1", "eye", "flatten", "flip", "float", "float16", "float32", "float64",
    "floor", "floor_divide", "fmod", "frac", "from_numpy", "full", "full_like", "gather", "ge",
    "ger", "get_default_device", "get_default_dtype", "get_rng_state", "greater",
    "greater_equal", "gt", "half", "hstack", "hypot", "index_add", "index_copy", "index_fill",
    "index_select", "inference_mode", "initial_seed", "inner", "int", "int32", "int64",
    "is_floating_point", "is_grad_enabled", "is_inference_mode_enabled", "is_nonzero",
    "is_tensor", "isclose", "isfinite", "isinf", "isnan", "kthvalue", "le", "lerp", "less",
    "less_equal", "linspace", "load", "log", "log10", "log1p", "log2", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "logspace", "logsumexp", "long",
    "lt", "manual_seed", "masked_fill", "masked_select", "matmul", "max", "maximum", "mean",
    "median", "min", "minimum", "mm", "moveaxis", "movedim", "msort", "mul", "multinomial",
    "multiply", "mv", "nan_to_num", "nansum", "narrow", "ne", "neg", "negative", "nn",
    "no_grad", "nonzero", "norm", "normal", "not_equal", "numel", "ones", "ones_like",
    "opencl", "optim", "outer", "permute", "plugins", "positive", "pow", "prod",
    "promote_types", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like",
    "randperm", "reciprocal", "relu", "remainder", "repeat", "repeat_interleave", "reshape",
    "result_type", "roll", "round", "rsqrt", "rsub", "save", "scalar_tensor", "scatter",
    "scatter_add", "seed", "select", "serialization", "set_default_device",
    "set_default_dtype", "set_grad_enabled", "set_printoptions", "set_rng_state", "sgn",
    "sigmoid", "sign", "signbit", "sin", "sort", "split", "sqrt", "square", "squeeze", "stack",
    "std", "std_mean", "sub", "subtract", "sum", "swapaxes", "swapdims", "t", "take_along_dim",
    "tan", "tanh", "tensor", "tensor_split", "tile", "topk", "transpose", "tril", "triu",
    "true_divide", "trunc", "unbind", "unflatten", "unsqueeze", "utils", "var", "var_mean",
    "vdot", "vstack", "where", "zeros", "zeros_like",
]

# probability distributions, the profiler, torch.testing's assert_close, DLPack
from . import distributions, profiler, testing
from .utils.dlpack import from_dlpack

__all__ += ["distributions", "from_dlpack", "profiler", "testing"]
