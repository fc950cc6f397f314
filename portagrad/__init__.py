"""portagrad: PyTorch-style tensors, autograd and ``nn`` on pluggable array backends.

``import portagrad as pg`` gives the PyTorch API (``pg.tensor``, ``requires_grad``, ``backward``,
``pg.nn``, ``pg.optim``, ``pg.utils.data``, ``pg.save``/``pg.load``); devices are ``"cpu"`` (numpy)
and ``"opencl:N"`` (pyopencl), or any device type a plugin registers.
"""
from __future__ import annotations

import builtins as _builtins

from ._version import __version__ as __version__  # (re-exported)

from . import _blas_env

_blas_env.choose()  # before numpy loads its BLAS (the modules below import numpy)

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

import sys as _sys

# The one place where Tensor and the op layer are tied: the op modules import Tensor, so
# Tensor's methods (declared in _tensor_api.TensorOps) reach them through names bound here.
_tensor_api._bind(Tensor, _sys.modules[__name__], _raw, _creation, _random, autograd, _ops)

# the functional namespace: pg.add, pg.sum, pg.matmul ... (the same functions as the methods)
from .accelerator._device_module import DeviceModule as _DeviceModule
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
from ._ops.joining import (cat, chunk, concat, concatenate, hstack, repeat, repeat_interleave,
                           roll, split, stack, tensor_split, tile, tril, triu, vstack)
from ._ops.sorting import argsort, kthvalue, median, mode, msort, nanmedian, sort, topk
from ._ops.matmul import addmm, baddbmm, bmm, dot, ger, inner, matmul, mm, mv, outer, vdot
from ._ops.reduction import (all, amax, amin, aminmax, any, argmax, argmin, count_nonzero,
                             logsumexp, max, mean, min, nansum, prod, std, std_mean, sum,
                             var, var_mean)
from ._ops.shape import (as_strided, broadcast_to, flatten, moveaxis, movedim, narrow, permute,
                         reshape, select, squeeze, swapaxes, swapdims, t, transpose, unbind,
                         unflatten, unsqueeze)
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .errors import AcceleratorError, FatalError, OutOfMemoryError
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
    # (isclose's rules: numpy's allclose warned about an infinite atol)
    return _bool(all(isclose(input.detach(), other.detach(), rtol, atol, equal_nan)).item())


def _same_dtype(input: Tensor, other: Tensor) -> None:
    if input.dtype is not other.dtype:  # PyTorch compares tensors of one dtype only
        raise RuntimeError(f"{_ops.elementwise._type_name(input.dtype)} did not match "
                           f"{_ops.elementwise._type_name(other.dtype)}")


def _check_tolerances(rtol: _float, atol: _float) -> None:
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if not tol >= 0:  # (NaN too)
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tol:g}")


def isclose(input: Tensor, other: Tensor, rtol: _float = 1e-05, atol: _float = 1e-08,
            equal_nan: _bool = False) -> Tensor:
    _same_dtype(input, other)
    _check_tolerances(rtol, atol)
    if input.dtype is bool or (rtol == 0 and atol == 0):  # (equal is close)
        return eq(input, other)
    a, b = input, other
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        # integers compared in float64, as PyTorch: their difference must not wrap (uint8 1 - 2)
        a, b = a.to(float64), b.to(float64)
    d = abs(sub(a, b))
    # equal values are close (equal infinities, as PyTorch); an infinite one is close to
    # nothing else, even within an infinite tolerance
    near = logical_and(le(d, add(mul(abs(b), rtol), atol)), isfinite(d))
    ok = logical_or(eq(input, other), near)
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
from . import accelerator, cuda, mps, onnx
from ._memory_format import (channels_last, channels_last_3d, contiguous_format, memory_format,
                             preserve_format)
from ._legacy import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor,
                      FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor,
                      set_default_tensor_type)
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
__all__ += ["accelerator", "cuda", "mps", "onnx", "BFloat16Tensor", "BoolTensor", "ByteTensor",
            "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor", "LongTensor",
            "ShortTensor", "channels_last", "channels_last_3d", "contiguous_format",
            "memory_format", "preserve_format", "set_default_tensor_type"]
from .accelerator._streams import Event, Stream
__all__ += ["Event", "Stream"]

# More math, diagonals, scans, searching, compositions and sparse COO tensors
from . import fft, linalg, sparse, special
from ._layout import layout, sparse_coo, strided
from ._ops.bits import (bitwise_left_shift, bitwise_right_shift, frexp, gcd, lcm, ldexp,
                        nextafter)
from ._ops.contraction import addbmm, addmv, addr, cross, einsum, tensordot
from ._ops.linalg import matrix_exp, matrix_power
from ._ops.norms import cdist, dist, renorm
from ._ops.rearrange import fliplr, flipud, ravel, rot90
from ._ops.scatter import (argwhere, as_strided_scatter, diagonal_scatter, masked_scatter,
                           select_scatter, slice_scatter, take)
from ._ops.stacking import (atleast_1d, atleast_2d, atleast_3d, cartesian_prod, column_stack,
                            dsplit, dstack, hsplit, meshgrid, row_stack, split_with_sizes, vsplit)
from ._ops.stats import corrcoef, cov, nanmean
from ._ops.diagonal import (block_diag, diag, diag_embed, diagflat, diagonal, kron, tril_indices,
                            trace, triu_indices)
from ._ops.linalg import (cholesky, cholesky_inverse, cholesky_solve, det, inverse, logdet,
                          slogdet, triangular_solve)
from ._ops.linalg import lu_legacy as lu
from ._ops.linalg import lu_solve_legacy as lu_solve
from ._ops.linalg import lu_unpack
from ._ops.linalg import qr_some as qr
from ._ops.linalg_ex import householder_product as orgqr
from ._ops.linalg_ext import norm, nuclear_norm, pinverse
from ._ops.lowrank import pca_lowrank, svd_lowrank
from ._ops.spectral import svd_legacy as svd
from ._ops.stft import istft, stft
from ._ops.lobpcg import lobpcg
from ._ops.scatter import slice_inverse
from ._ops.gammafn import digamma, igamma, igammac, lgamma, mvlgamma, polygamma
from ._ops.scan import cummax, cummin, cumprod, cumsum, diff, logcumsumexp
from ._ops.search import bincount, bucketize, histc, searchsorted, unique, unique_consecutive
from ._ops.segment import index_reduce, scatter_reduce
from ._ops.scatter import index_put, put
from ._ops.complexnum import (complex, imag, polar, view_as_complex,
                              view_as_complex_copy, view_as_real, view_as_real_copy)
from ._ops.metadata import (conj, get_device, is_complex, is_conj, is_inference, is_neg,
                            is_same_size, is_signed, narrow_copy, nonzero_static, real,
                            resolve_conj, resolve_neg)
from ._ops.sequences import (chain_matmul, combinations, cumulative_trapezoid, isin, pdist,
                             trapezoid, trapz, unravel_index, vander)
from ._ops.windows import (bartlett_window, blackman_window, hamming_window, hann_window,
                           kaiser_window)
from ._ops.sparse import sparse_coo_tensor
from ._ops.sparse import spmm
from ._ops.special import i0
from ._ops.stats import histogram, nanquantile, quantile
from ._ops.special import (acos, acosh, addcdiv, addcmul, angle, arccos, arccosh, arcsin,
                           arcsinh, arctan, arctan2, arctanh, asin, asinh, atan, atanh, clamp_max,
                           clamp_min, copysign, cosh, deg2rad, erfc, erfinv, fix, float_power,
                           fmax, fmin, heaviside, isneginf, isposinf, isreal, logaddexp2, logit,
                           rad2deg, sinc, sinh, xlogy)
from ._toplevel_nn import (celu, cosine_similarity, dropout, hardshrink, log_softmax,
                           pairwise_distance, prelu, selu, softmax, threshold)

__all__ += [
    "acos", "acosh", "addcdiv", "addcmul", "addmv", "addr", "angle", "arccos", "arccosh",
    "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argwhere", "asin", "asinh", "atan",
    "atanh", "atleast_1d", "atleast_2d", "atleast_3d", "bincount", "block_diag", "bucketize",
    "cartesian_prod", "cdist", "clamp_max", "clamp_min", "column_stack", "copysign", "corrcoef",
    "cosh", "cov", "cross", "cummax", "cummin", "cumprod", "deg2rad", "diag", "diag_embed",
    "diagflat", "diagonal", "diff", "dist", "dsplit", "dstack", "einsum", "erfc", "erfinv",
    "fix", "fliplr", "flipud", "float_power", "fmax", "fmin", "heaviside", "histc", "hsplit",
    "isneginf", "isposinf", "isreal", "kron", "layout", "log_softmax", "logaddexp2",
    "logcumsumexp", "logit", "masked_scatter", "matrix_power", "meshgrid", "nanmean",
    "rad2deg", "ravel", "renorm", "rot90", "row_stack", "searchsorted", "sinc", "sinh",
    "softmax", "sparse", "sparse_coo", "sparse_coo_tensor", "split_with_sizes", "spmm",
    "strided", "take", "tensordot", "trace", "tril_indices", "triu_indices", "unique",
    "unique_consecutive", "vsplit", "xlogy", "digamma", "lgamma", "mvlgamma", "polygamma",
    "index_reduce", "scatter_reduce", "cholesky", "det", "inverse", "linalg", "fft", "logdet",
    "orgqr", "pinverse", "svd", "nuclear_norm", "svd_lowrank", "pca_lowrank",
    "slogdet", "addbmm", "as_strided_scatter", "bitwise_left_shift", "bitwise_right_shift",
    "diagonal_scatter", "frexp", "gcd", "histogram", "i0", "lcm", "ldexp", "matrix_exp",
    "nanmedian", "nanquantile", "nextafter", "nonzero_static", "quantile", "select_scatter",
    "slice_scatter", "special", "cholesky_inverse", "cholesky_solve", "mode",
    "triangular_solve", "bartlett_window", "blackman_window", "celu",
    "chain_matmul", "combinations", "conj", "cosine_similarity", "cumulative_trapezoid",
    "dropout", "get_device", "hamming_window", "hann_window", "hardshrink", "index_put",
    "is_complex", "is_conj", "is_inference", "is_neg", "is_same_size", "is_signed", "isin",
    "kaiser_window", "narrow_copy", "pairwise_distance", "pdist", "prelu", "put", "real",
    "resolve_conj", "resolve_neg", "selu", "threshold", "trapezoid", "trapz", "unravel_index",
    "vander", "stft", "istft", "lobpcg", "slice_inverse", "igamma", "igammac", "qr", "lu",
    "lu_solve", "lu_unpack",
]

# the dtypes of image data and checkpoints (uint8, int8, int16, bfloat16) and the dtype queries
from ._dtype import bfloat16, can_cast, finfo, iinfo, int8, int16, short, uint8
from ._dtype import (cdouble, cfloat, chalf, complex32, complex64, complex128, float8_e4m3fn,
                     float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, uint16, uint32,
                     uint64)

__all__ += ["AcceleratorError", "FatalError"]  # (named for code that catches them)
__all__ += ["bfloat16", "can_cast", "finfo", "iinfo", "int8", "int16", "short", "uint8"]
from .jit import ScriptModule
from .storage import TypedStorage, UntypedStorage
from .storage import (BFloat16Storage, BoolStorage, ByteStorage, CharStorage, DoubleStorage,
                      FloatStorage, HalfStorage, IntStorage, LongStorage, ShortStorage)
from ._file_reader import PyTorchFileReader
__all__ += ["TypedStorage", "UntypedStorage", "PyTorchFileReader", "ScriptModule"]
__all__ += ["BFloat16Storage", "BoolStorage", "ByteStorage", "CharStorage", "DoubleStorage",
            "FloatStorage", "HalfStorage", "IntStorage", "LongStorage", "ShortStorage"]
__all__ += ["complex", "imag", "polar", "view_as_complex", "view_as_complex_copy",
            "view_as_real", "view_as_real_copy"]
# complex64/complex128 (tensors on backends that store them), and the dtypes named (finfo) but
# without tensors yet: creating one raises DTypeError
__all__ += ["cdouble", "cfloat", "complex64", "complex128", "float8_e4m3fn", "float8_e4m3fnuz",
            "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "uint16", "uint32", "uint64",
            "complex32", "chalf"]

# probability distributions, the profiler, torch.testing's assert_close, DLPack
from . import distributions, profiler, testing
from .utils.dlpack import from_dlpack

__all__ += ["distributions", "from_dlpack", "profiler", "testing"]

# the remaining top-level names of training scripts: math constants, the in-place function forms
# (pg.relu_(x) is x.relu_()), nn.functional's top-level aliases with ATen's signatures, the
# view-copy functions, runtime settings, compile (eager) and amp
from . import _toplevel, amp
from ._compile import compile
from ._settings import (are_deterministic_algorithms_enabled, get_deterministic_debug_mode,
                        get_float32_matmul_precision, get_num_interop_threads, get_num_threads,
                        is_deterministic_algorithms_warn_only_enabled, is_warn_always_enabled,
                        set_deterministic_debug_mode, set_float32_matmul_precision,
                        set_num_interop_threads, set_num_threads, set_warn_always,
                        use_deterministic_algorithms)
from ._toplevel import (alias_copy, as_strided_copy, detach_copy, diagonal_copy, e,
                        empty_permuted, expand_copy, fill, frombuffer, inf, is_storage, nan,
                        newaxis, permute_copy, pi, select_copy, slice_copy, split_copy,
                        split_with_sizes_copy, squeeze_copy, t_copy, transpose_copy, typename,
                        unbind_copy, unfold_copy, unsqueeze_copy, view_copy)
from ._toplevel_nn import (adaptive_avg_pool1d, adaptive_max_pool1d, alpha_dropout,
                           alpha_dropout_, avg_pool1d, batch_norm, bilinear,
                           binary_cross_entropy_with_logits, celu_, channel_shuffle,
                           constant_pad_nd, conv1d, conv2d, conv3d, conv_transpose1d,
                           conv_transpose2d, conv_transpose3d, convolution,
                           cosine_embedding_loss, ctc_loss, dropout_, embedding, embedding_bag,
                           feature_alpha_dropout, feature_alpha_dropout_, feature_dropout,
                           feature_dropout_, group_norm, gru_cell, hinge_embedding_loss,
                           instance_norm, kl_div, layer_norm, lstm_cell, margin_ranking_loss,
                           max_pool1d, max_pool1d_with_indices, max_pool2d, max_pool3d,
                           native_channel_shuffle, pixel_shuffle, pixel_unshuffle,
                           poisson_nll_loss, rms_norm, rnn_relu_cell, rnn_tanh_cell, rrelu,
                           rrelu_, selu_, threshold_, triplet_margin_loss)
from ._toplevel import (cond, conj_physical, frobenius_norm, init_num_threads, is_distributed,
                        range, set_flush_denormal, unsafe_chunk, unsafe_split,
                        unsafe_split_with_sizes)
from ._toplevel import get_device_module
from ._toplevel_nn import embedding_renorm_
from ._ops.finite_diff import gradient
from ._ops.linalg_ex import geqrf, ormqr
from ._ops.stats import histogramdd
from ._toplevel_nn import gru, lstm, rnn_relu, rnn_tanh
from ._ops.complexnum import adjoint
from ._toplevel_native import (affine_grid_generator, conv_tbc, grid_sampler, grid_sampler_2d,
                               grid_sampler_3d, native_batch_norm, native_dropout,
                               native_group_norm, native_layer_norm, norm_except_dim)
from ._toplevel_sym import (has_lapack, has_openmp, has_spectral, sym_constrain_range,
                            sym_constrain_range_for_size, sym_float, sym_fresh_size, sym_int,
                            sym_ite, sym_max, sym_min, sym_not, sym_sqrt, sym_sum)
from ._toplevel_random import binomial, poisson, thread_safe_generator
from . import random as random  # torch.random (a module, as in PyTorch)
from ._toplevel import from_file
from ._vmap import vmap
from .amp import GradScaler
from .amp.autocast_mode import (clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype,
                                get_autocast_gpu_dtype, is_autocast_cache_enabled,
                                is_autocast_cpu_enabled, is_autocast_enabled,
                                set_autocast_cache_enabled, set_autocast_dtype,
                                set_autocast_enabled)
from .amp import autocast
from .amp.autocast_mode import autocast_decrement_nesting, autocast_increment_nesting
from .amp.autocast_mode import (set_autocast_cpu_dtype, set_autocast_cpu_enabled,
                                set_autocast_gpu_dtype)
from .autograd.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled

globals().update(_toplevel.inplace_functions())
cpu.amp = amp.cpu  # torch.cpu.amp (deprecated autocast and GradScaler forms)

__all__ += list(_toplevel.INPLACE_METHOD_NAMES)
__all__ += [
    "pi", "e", "inf", "nan", "newaxis", "typename", "is_storage", "fill", "frombuffer",
    "empty_permuted", "alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy",
    "expand_copy", "permute_copy", "select_copy", "slice_copy", "split_copy",
    "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy",
    "unfold_copy", "unsqueeze_copy", "view_copy", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution", "batch_norm",
    "layer_norm", "group_norm", "instance_norm", "rms_norm", "embedding", "embedding_bag",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "pixel_shuffle", "pixel_unshuffle",
    "channel_shuffle", "native_channel_shuffle", "binary_cross_entropy_with_logits", "kl_div",
    "cosine_embedding_loss", "ctc_loss", "hinge_embedding_loss", "margin_ranking_loss",
    "poisson_nll_loss", "triplet_margin_loss", "bilinear", "rrelu", "rrelu_", "celu_", "selu_",
    "threshold_", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout",
    "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "constant_pad_nd",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "amp", "autocast", "compile",
    "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "set_anomaly_enabled",
    "are_deterministic_algorithms_enabled", "get_deterministic_debug_mode",
    "get_float32_matmul_precision", "get_num_interop_threads", "get_num_threads",
    "is_deterministic_algorithms_warn_only_enabled", "is_warn_always_enabled",
    "set_deterministic_debug_mode", "set_float32_matmul_precision", "set_num_interop_threads",
    "set_num_threads", "set_warn_always", "use_deterministic_algorithms", "binomial", "poisson",
    "cond", "conj_physical", "frobenius_norm", "init_num_threads", "is_distributed", "range",
    "set_flush_denormal", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes",
    "GradScaler", "clear_autocast_cache", "get_autocast_cpu_dtype", "get_autocast_dtype",
    "get_autocast_gpu_dtype", "is_autocast_cache_enabled", "is_autocast_cpu_enabled",
    "is_autocast_enabled", "set_autocast_cache_enabled", "set_autocast_dtype",
    "set_autocast_enabled", "autocast_increment_nesting", "autocast_decrement_nesting",
    "vmap", "get_device_module", "embedding_renorm_",
    "gradient", "adjoint", "affine_grid_generator", "conv_tbc", "grid_sampler",
    "grid_sampler_2d", "grid_sampler_3d", "native_batch_norm", "native_dropout",
    "native_group_norm", "native_layer_norm", "norm_except_dim", "has_lapack", "has_openmp",
    "has_spectral", "sym_constrain_range", "sym_constrain_range_for_size", "sym_float",
    "sym_fresh_size", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt",
    "sym_sum", "gru", "lstm", "rnn_relu", "rnn_tanh", "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled", "set_autocast_gpu_dtype", "geqrf", "ormqr",
    "histogramdd", "thread_safe_generator", "from_file",
]

# the namespaces libraries touch at import: TorchScript's decorators (eager pass-throughs),
# torch.compile's public machinery, futures (what jit.fork returns)
from . import compiler, func, futures, fx, hub, jit, library, ops, overrides, types

__all__ += ["compiler", "func", "futures", "fx", "hub", "jit", "library", "ops", "overrides",
            "types"]

# torch.version: the PyTorch API version implemented, with portagrad's as its local label
from . import torch_version, version

__all__ += ["torch_version", "version"]

# torch.signal: window functions (torch.signal.windows)
from . import signal

__all__ += ["signal"]
