"""Arguments PyTorch refuses with its own error, and edge shapes it accepts, where portagrad once
let a raw Python or numpy error through (``ZeroDivisionError``, ``IndexError: tuple index out of
range``, numpy's ``ValueError``) or failed on the numpy backend only.

Every case is one function of the library (``portagrad`` or ``torch``), its ``nn.functional`` and
a device. ``test_case`` runs it on every test device against the answer written literally (an
error class with a fragment of PyTorch's message, or the values and dtype), so it means something
without torch, which is optional; ``test_expected_is_torch`` checks that literal against torch.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

import portagrad as pg
import portagrad.nn.functional as pgF
from portagrad.errors import DTypeError

from torch_cases import Raises, check, raises_text, torch, torchF

NAN = math.nan


def _x(m: Any, d: str, *shape: int) -> Any:
    """``arange`` reshaped: deterministic float32 values on device ``d``."""
    return m.arange(float(math.prod(shape)), device=d).reshape(shape)


def _t(m: Any, d: str, v: Any, **kw: Any) -> Any:
    return m.tensor(v, device=d, **kw)


def _shapes(ts: Any) -> list:
    return [list(t.shape) for t in ts]


def _conv2d(**kw: Any) -> Callable:
    return lambda m, F, d: F.conv2d(_x(m, d, 1, 1, 4, 4), _x(m, d, 1, 1, 2, 2), **kw)


def _pool(fn: str, nd: int, *args: Any, size: int = 4, **kw: Any) -> Callable:
    return lambda m, F, d: getattr(F, fn)(_x(m, d, 1, 1, *(size,) * nd), *args, **kw)


RT = RuntimeError
TOO_SMALL = "Output size is too small"

# name -> (case(lib, F, dev), expected): expected is (values, dtype name), a list, or Raises
CASES: dict[str, tuple[Callable, Any]] = {
    # convolution geometry (was ZeroDivisionError, numpy's ValueError, or silently accepted)
    "conv2d_stride0": (_conv2d(stride=0), raises_text(RT, "non-positive stride is not supported")),
    "conv1d_stride0": (lambda m, F, d: F.conv1d(_x(m, d, 1, 1, 4), _x(m, d, 1, 1, 2), stride=0),
                       raises_text(RT, "non-positive stride is not supported")),
    "conv2d_padding_negative": (_conv2d(padding=-1),
                                raises_text(RT, "negative padding is not supported")),
    "conv2d_dilation0": (_conv2d(dilation=0), raises_text(RT, "dilation should be greater than zero")),
    "conv_transpose2d_stride0": (
        lambda m, F, d: F.conv_transpose2d(_x(m, d, 1, 1, 4, 4), _x(m, d, 1, 1, 2, 2), stride=0),
        raises_text(RT, "non-positive stride is not supported")),
    "conv_transpose1d_output_too_small": (
        lambda m, F, d: F.conv_transpose1d(_x(m, d, 1, 1, 4), _x(m, d, 1, 1, 2), padding=5),
        raises_text(RT, TOO_SMALL)),
    # pooling geometry
    "avg_pool2d_kernel0": (_pool("avg_pool2d", 2, 0), raises_text(RT, "stride should not be zero")),
    "avg_pool2d_stride0": (_pool("avg_pool2d", 2, 2, 0), raises_text(RT, "stride should not be zero")),
    "avg_pool2d_kernel0_stride1": (_pool("avg_pool2d", 2, 0, 1),
                                   raises_text(RT, "kernel size should be greater than zero")),
    "avg_pool2d_stride_negative": (_pool("avg_pool2d", 2, 2, -1),
                                   raises_text(RT, "stride should be greater than zero")),
    "avg_pool2d_padding_negative": (_pool("avg_pool2d", 2, 2, padding=-1),
                                    raises_text(RT, "pad must be non-negative")),
    "avg_pool2d_padding_over_half": (_pool("avg_pool2d", 2, 2, padding=2),
                                     raises_text(RT, "pad should be at most half of effective kernel")),
    "avg_pool2d_input_too_small": (_pool("avg_pool2d", 2, 3, size=2), raises_text(RT, TOO_SMALL)),
    "avg_pool1d_kernel0": (_pool("avg_pool1d", 1, 0), raises_text(RT, "stride should not be zero")),
    "avg_pool1d_input_too_small": (_pool("avg_pool1d", 1, 3, size=2), raises_text(RT, TOO_SMALL)),
    "max_pool2d_kernel0": (_pool("max_pool2d", 2, 0), raises_text(RT, "stride should not be zero")),
    "max_pool2d_stride0": (_pool("max_pool2d", 2, 2, 0), raises_text(RT, "stride should not be zero")),
    "max_pool2d_kernel_negative": (_pool("max_pool2d", 2, -1),
                                   raises_text(RT, "kernel size should be greater than zero")),
    "max_pool2d_dilation0": (_pool("max_pool2d", 2, 2, dilation=0),
                             raises_text(RT, "dilation should be greater than zero")),
    "max_pool2d_input_too_small": (_pool("max_pool2d", 2, 3, size=2), raises_text(RT, TOO_SMALL)),
    "max_pool1d_kernel0": (_pool("max_pool1d", 1, 0),
                           raises_text(RT, "kernel_size must be greater than zero")),
    "max_pool1d_stride0": (_pool("max_pool1d", 1, 2, 0),
                           raises_text(RT, "stride must be greater than zero")),
    "max_pool1d_padding_negative": (_pool("max_pool1d", 1, 2, padding=-1),
                                    raises_text(RT, "padding must be non-negative")),
    "max_pool2d_dilated_padding": (  # a dilated window still bounds padding by half the kernel
        _pool("max_pool2d", 2, 2, 1, padding=2, dilation=3),
        raises_text(RT, "pad should be smaller than or equal to half of kernel size")),
    "max_pool2d_dilated": (_pool("max_pool2d", 2, 2, 1, padding=1, dilation=2, size=3),
                           ([[[[4., 5., 4.], [7., 8., 7.], [4., 5., 4.]]]], "float32")),
    # counts and sizes
    "tensor_split_sections0": (lambda m, F, d: m.tensor_split(_x(m, d, 4), 0),
                               raises_text(RT, "number of sections must be larger than 0")),
    "repeat_interleave_negative": (lambda m, F, d: m.repeat_interleave(_x(m, d, 3), -1),
                                   raises_text(RT, "must be non-negative")),
    "repeat_interleave_negative_tensor": (
        lambda m, F, d: m.repeat_interleave(_x(m, d, 3), _t(m, d, [1, -1, 2])),
        raises_text(RT, "repeats can not be negative")),
    "repeat_interleave_wrong_length": (
        lambda m, F, d: m.repeat_interleave(_x(m, d, 3), _t(m, d, [1, 2])),
        raises_text(RT, "repeats must have the same size as input along dim")),
    "empty_overflow": (lambda m, F, d: m.empty(2 ** 62, device=d),
                       raises_text(RT, "Storage size calculation overflowed")),
    "empty_too_large": (lambda m, F, d: m.empty(2 ** 59, device=d), raises_text(RT, "allocate")),
    # 0-d tensors: PyTorch refuses some ops, and takes a scalar as a 1-element vector in others
    "chunk_0d": (lambda m, F, d: m.chunk(_t(m, d, 1.5), 2),
                 raises_text(RT, "chunk expects at least a 1-dimensional tensor")),
    "split_0d": (lambda m, F, d: m.split(_t(m, d, 1.5), 1),
                 raises_text(RT, "split expects at least a 1-dimensional tensor")),
    "tensor_split_0d": (lambda m, F, d: m.tensor_split(_t(m, d, 1.5), 2),
                        raises_text(RT, "tensor_split expected at least a 1-dimensional tensor")),
    "narrow_0d": (lambda m, F, d: m.narrow(_t(m, d, 1.5), 0, 0, 1),
                  raises_text(RT, "narrow() cannot be applied to a 0-dim tensor")),
    "roll_0d_dim": (lambda m, F, d: m.roll(_t(m, d, 1.5), 1, 0),
                    raises_text(IndexError, "Dimension specified as 0 but tensor has no dimensions")),
    "roll_0d": (lambda m, F, d: m.roll(_t(m, d, 1.5), 1), (1.5, "float32")),
    "take_along_dim_0d": (lambda m, F, d: m.take_along_dim(_t(m, d, 1.5), _t(m, d, 0), 0),
                          raises_text(IndexError, "Dimension specified as 0")),
    "unflatten_0d": (lambda m, F, d: m.unflatten(_t(m, d, 1.5), 0, (1,)),
                     raises_text(Exception, "Dimension specified as 0")),
    "glu_0d": (lambda m, F, d: F.glu(_t(m, d, 1.5), 0), raises_text(RT, "glu does not support scalars")),
    "embedding_weight_0d": (lambda m, F, d: F.embedding(_t(m, d, 0), _t(m, d, 1.5)),
                            raises_text(RT, "'weight' must be 2-D")),
    "embedding_weight_1d": (lambda m, F, d: F.embedding(_t(m, d, 0), _t(m, d, [1., 2.])),
                            raises_text(RT, "'weight' must be 2-D")),
    "flip_0d": (lambda m, F, d: m.flip(_t(m, d, 1.5), (0,)), (1.5, "float32")),
    "movedim_0d": (lambda m, F, d: m.movedim(_t(m, d, 1.5), 0, -1), (1.5, "float32")),
    "index_copy_0d": (lambda m, F, d: _t(m, d, 1.5).index_copy(0, _t(m, d, [0]), _t(m, d, [2.])),
                      (2.0, "float32")),
    "index_copy_0d_scalar_index": (
        lambda m, F, d: _t(m, d, 1.5).index_copy(0, _t(m, d, 0), _t(m, d, 2.)), (2.0, "float32")),
    "index_fill_0d": (lambda m, F, d: _t(m, d, 1.5).index_fill(0, _t(m, d, [0]), 3.),
                      (3.0, "float32")),
    "index_add_0d": (lambda m, F, d: _t(m, d, 1.5).index_add(0, _t(m, d, [0]), _t(m, d, 2.)),
                     (3.5, "float32")),
    "index_add_0d_source_1d": (
        lambda m, F, d: _t(m, d, 1.5).index_add(0, _t(m, d, [0]), _t(m, d, [2.])),
        raises_text(RT, "source tensor shape must match self tensor shape")),
    "gather_0d": (lambda m, F, d: m.gather(_t(m, d, 1.5), 0, _t(m, d, 0)), (1.5, "float32")),
    "scatter_0d": (lambda m, F, d: _t(m, d, 1.5).scatter(0, _t(m, d, 0), _t(m, d, 2.)),
                   (2.0, "float32")),
    "scatter_add_0d": (lambda m, F, d: _t(m, d, 1.5).scatter_add(0, _t(m, d, 0), _t(m, d, 2.)),
                       (3.5, "float32")),
    # zero-size dimensions (the numpy backend checked empty views against their buffer)
    "cat_zero_rows": (lambda m, F, d: m.cat([m.zeros(0, 2, device=d), m.zeros(0, 3, device=d)],
                                            1), ([], "float32")),
    "cat_zero_rows_shape": (lambda m, F, d: _shapes([m.cat([m.zeros(0, 2, device=d),
                                                            m.zeros(0, 3, device=d)], 1)]),
                            [[0, 5]]),
    "select_zero_size": (lambda m, F, d: _shapes([m.zeros(3, 0, device=d).select(0, 1)]), [[0]]),
    "roll_zero_size": (lambda m, F, d: _shapes([m.roll(m.zeros(0, 3, device=d), 1, 0),
                                                m.roll(m.zeros(0, 3, device=d), 1)]),
                       [[0, 3], [0, 3]]),
    "median_zero_size_dim": (lambda m, F, d: _shapes(m.median(m.zeros(0, 3, device=d), 1)),
                             [[0], [0]]),
    "median_zero_size_reduced_dim": (lambda m, F, d: m.median(m.zeros(0, 3, device=d), 0),
                                     raises_text(IndexError, "Expected reduction dim 0 to have non-zero")),
    "median_empty": (lambda m, F, d: m.median(m.zeros(0, device=d)), (NAN, "float32")),
    # gather: the index may be smaller than the input in the other dims
    "gather_index_smaller": (
        lambda m, F, d: m.gather(_x(m, d, 3, 4), 1, _t(m, d, [[0, 1], [2, 3]])),
        ([[0., 1.], [6., 7.]], "float32")),
    "gather_index_smaller_dim0": (
        lambda m, F, d: m.gather(_x(m, d, 3, 4), 0, _t(m, d, [[2], [1]])),
        ([[8.], [4.]], "float32")),
    # empty views whose offset is past the end of their empty buffer are read back
    "getitem_slice_empty_offset": (lambda m, F, d: m.zeros(4, 4, 0, dtype=m.int64, device=d)[2::1],
                                   ([[[], [], [], []], [[], [], [], []]], "int64")),
    "chunk_empty_offset": (lambda m, F, d: m.zeros(3, 0, device=d).chunk(2)[1], ([[]], "float32")),
    "cat_empty_transposed": (lambda m, F, d: _shapes([m.cat([m.zeros(3, 0, device=d),
                                                             m.zeros(0, 3, device=d).t()])]),
                             [[6, 0]]),
    "stack_empty_views": (lambda m, F, d: m.stack([m.zeros(3, 0, device=d).chunk(2)[1]] * 2),
                          ([[[]], [[]]], "float32")),
    # cat of legacy 1-D empty tensors only: the dim is never checked; stack checks it first
    "cat_legacy_empty_dim_out_of_range": (
        lambda m, F, d: m.cat([m.zeros(0, dtype=m.int64, device=d)] * 2, 2), ([], "int64")),
    "stack_bad_dim_before_sizes": (lambda m, F, d: m.stack([m.zeros(2, device=d),
                                                            m.zeros(3, device=d)], 2),
                                   raises_text(IndexError, "Dimension out of range")),
    # in place on an expanded empty tensor: no element is written twice
    "add__expanded_empty": (lambda m, F, d: _shapes([m.zeros(1, 4, 0, device=d).expand(2, 4, 0)
                                                     .add_(1)]), [[2, 4, 0]]),
    # a 0-d float64 tensor does not promote a float32 tensor (as a Python float would not)
    "add__0d_float64": (lambda m, F, d: _x(m, d, 2, 2, 1).add_(_t(m, d, 0.5, dtype=m.float64)),
                        ([[[0.5], [1.5]], [[2.5], [3.5]]], "float32")),
    "mul__0d_float64": (lambda m, F, d: _x(m, d, 2).mul_(_t(m, d, 3., dtype=m.float64)),
                        ([0., 3.], "float32")),
    "sub__0d_float64": (lambda m, F, d: _x(m, d, 2).sub_(_t(m, d, 1., dtype=m.float64)),
                        ([-1., 0.], "float32")),
    "div__0d_float64": (lambda m, F, d: _x(m, d, 2).div_(_t(m, d, 2., dtype=m.float64)),
                        ([0., 0.5], "float32")),
    "add_0d_float64": (lambda m, F, d: _x(m, d, 2) + _t(m, d, 0.5, dtype=m.float64),
                       ([0.5, 1.5], "float32")),
    # masked_fill: a mask of a larger shape broadcasts the result; in place, that is refused
    "masked_fill_larger_mask": (lambda m, F, d: _x(m, d, 2).masked_fill(
        _t(m, d, [[True], [False]]), 5.), ([[5., 5.], [0., 1.]], "float32")),
    "masked_fill__larger_mask": (lambda m, F, d: _x(m, d, 2).masked_fill_(
        _t(m, d, [[True], [False]]), 5.), raises_text(RT, "doesn't match the broadcast shape")),
    # logaddexp, logaddexp2 and hypot compute in a floating dtype only (a bool beside a float is
    # promoted); ldexp in the operands' common dtype; isclose/allclose of one dtype only
    "logaddexp_int": (lambda m, F, d: m.logaddexp(_t(m, d, [1]), _t(m, d, [2])),
                      raises_text(NotImplementedError, '"logaddexp_cpu" not implemented for \'Long\'')),
    "logaddexp_bool_float": (lambda m, F, d: m.logaddexp(_t(m, d, [True]), _t(m, d, [1.0])),
                             ([1.6931471824645996], "float32")),
    "logaddexp2_int": (lambda m, F, d: m.logaddexp2(_t(m, d, [1]), _t(m, d, [2])),
                       raises_text(NotImplementedError, '"logaddexp2_cpu" not implemented for \'Long\'')),
    "hypot_int": (lambda m, F, d: m.hypot(_t(m, d, [3]), _t(m, d, [4])),
                  raises_text(NotImplementedError, '"hypot_cpu" not implemented for \'Long\'')),
    "hypot_bool_float": (lambda m, F, d: m.hypot(_t(m, d, [True]), _t(m, d, [1.0])),
                         ([1.4142135381698608], "float32")),
    "ldexp_ints": (lambda m, F, d: m.ldexp(_t(m, d, [1, 2]), _t(m, d, [1, 2])), ([2.0, 8.0], "float32")),
    "ldexp_float32_float64": (lambda m, F, d: m.ldexp(_t(m, d, [1.0]), _t(m, d, [1.0], dtype=m.float64)),
                              ([2.0], "float64")),
    "isclose_dtypes": (lambda m, F, d: m.isclose(_t(m, d, [1.0]), _t(m, d, [1.0], dtype=m.float64)),
                       raises_text(RT, "Float did not match Double")),
    "isclose_bool": (lambda m, F, d: m.isclose(_t(m, d, [True, False]), _t(m, d, [True, True])),
                     ([True, False], "bool")),
    "allclose_dtypes": (lambda m, F, d: [m.allclose(_t(m, d, [1.0]), _t(m, d, [1.0], dtype=m.float64))],
                        raises_text(RT, "Float did not match Double")),
    # linspace/logspace of an integer dtype: the endpoints truncated first, halves from each end
    "linspace_int_fractional_ends": (lambda m, F, d: m.linspace(0.5, 9.7, 5, dtype=m.int64, device=d),
                                     ([0, 2, 4, 6, 9], "int64")),
    "linspace_int_negative_ends": (lambda m, F, d: m.linspace(-1.5, -3.3, 7, dtype=m.int64, device=d),
                                   ([-1, -1, -1, -2, -2, -2, -3], "int64")),
    "logspace_int_fractional_ends": (lambda m, F, d: m.logspace(2, -3.3, 7, dtype=m.int64, device=d),
                                     ([100, 14, 2, 0, 0, 0, 0], "int64")),
    "logspace_int_one_step": (lambda m, F, d: m.logspace(0.5, 9.7, 1, dtype=m.int64, device=d),
                              ([3], "int64")),
    # lerp of one dtype only, with PyTorch's C++ type names
    "lerp_end_dtype": (lambda m, F, d: m.lerp(_t(m, d, [1.0]), _t(m, d, [2.0], dtype=m.float64), 0.5),
                       raises_text(RT, "expected dtype float for `end` but got dtype double")),
    "lerp_weight_dtype": (lambda m, F, d: _t(m, d, [1.0], dtype=m.float64).lerp(
        _t(m, d, [2.0], dtype=m.float64), _t(m, d, [0.5])),
        raises_text(RT, "expected dtype double for `weight` but got dtype float")),
    "frac_int": (lambda m, F, d: m.frac(_t(m, d, [1, 2])),
                 raises_text(NotImplementedError, '"frac_cpu" not implemented for \'Long\'')),
    "frac_bool": (lambda m, F, d: m.frac(_t(m, d, [True])),
                  raises_text(NotImplementedError, '"frac_cpu" not implemented for \'Bool\'')),
    "positive_bool": (lambda m, F, d: m.positive(_t(m, d, [True])),
                      raises_text(RT, "The `+` operator, on a bool tensor is not supported.")),
    # the selections PyTorch has no bool kernel for
    "median_bool": (lambda m, F, d: _t(m, d, [True, False]).median(),
                    raises_text(NotImplementedError, '"median_cpu" not implemented for \'Bool\'')),
    "median_dim_bool": (lambda m, F, d: _t(m, d, [[True, False]]).median(1),
                        raises_text(NotImplementedError, '"median_out" not implemented for \'Bool\'')),
    "nanmedian_bool": (lambda m, F, d: _t(m, d, [True, False]).nanmedian(),
                       raises_text(NotImplementedError, '"median_cpu" not implemented for \'Bool\'')),
    "kthvalue_bool": (lambda m, F, d: _t(m, d, [[True, False]]).kthvalue(1, 1),
                      raises_text(NotImplementedError, '"kthvalue_cpu" not implemented for \'Bool\'')),
    # index_select's out-of-range index: PyTorch's CPU kernel raises RuntimeError along dim 1 and
    # for an empty input, IndexError elsewhere
    "index_select_out_of_range_dim0": (
        lambda m, F, d: m.index_select(_x(m, d, 3, 2), 0, _t(m, d, [3])), Raises(IndexError, "index")),
    "index_select_out_of_range_dim1": (
        lambda m, F, d: m.index_select(_x(m, d, 3, 2), 1, _t(m, d, [2])),
        raises_text(RT, "INDICES element is out of DATA bounds, id=2 axis_dim=2")),
    "index_select_out_of_range_1d": (
        lambda m, F, d: m.index_select(_x(m, d, 3), 0, _t(m, d, [-1])), Raises(IndexError, "index")),
    "index_select_empty_input": (
        lambda m, F, d: m.index_select(m.zeros(0, 2, 2, device=d), 0, _t(m, d, 2)),
        raises_text(RT, "self indexing axis dim should be positive")),
    "index_select_empty_input_other_dim": (
        lambda m, F, d: m.index_select(m.zeros(0, 2, 2, device=d), 2, _t(m, d, [5])),
        raises_text(RT, "INDICES element is out of DATA bounds, id=5 axis_dim=2")),
    # float32 std and var: PyTorch sums the squares in float64, so squares beyond float32's range
    # (deviations of 2**70, 2**65) or below it (2**-80) do not decide the result
    "std_float32_huge": (lambda m, F, d: _t(m, d, [2.**70, -2.**70, 0.]).std(), (2.**70, "float32")),
    "std_float32_tiny": (lambda m, F, d: _t(m, d, [2.**-80, -2.**-80, 0.]).std(),
                         (2.**-80, "float32")),
    "std_dim_float32_huge": (lambda m, F, d: _t(m, d, [[2.**70, -2.**70], [1., 3.]]).std(1,
                                                                                     correction=0),
                             ([2.**70, 1.], "float32")),
    "var_float32_squares_overflow": (
        lambda m, F, d: _t(m, d, [2.**65, -2.**65] + [0.] * 15).var(), (2.**127, "float32")),
    "var_float32_overflows": (lambda m, F, d: _t(m, d, [2.**70, -2.**70, 0.]).var(),
                              (math.inf, "float32")),
    "std_mean_float32_huge": (lambda m, F, d: [v.item() for v in m.std_mean(
        _t(m, d, [2.**70, -2.**70, 0.]))], [2.**70, 0.]),
    # a norm over dimensions of size 1 is |x| (PyTorch skips its kernel), never x * x's overflow
    "vector_norm_size1_dims": (lambda m, F, d: m.linalg.vector_norm(
        _t(m, d, [[2.**70], [-2.**-80]]), dim=1), ([2.**70, 2.**-80], "float32")),
    "vector_norm_p3_size1_dims": (lambda m, F, d: m.linalg.vector_norm(
        _t(m, d, [[-2.**70]]), 3), (2.**70, "float32")),
    "matrix_norm_1x1": (lambda m, F, d: m.linalg.matrix_norm(_t(m, d, [[2.**100]])),
                        (2.**100, "float32")),
    "normalize_size1_dim": (lambda m, F, d: F.normalize(_t(m, d, [[2.**100], [-1.]]), dim=1),
                            ([[1.], [-1.]], "float32")),
    "vector_norm_over_many_overflows": (lambda m, F, d: m.linalg.vector_norm(
        _t(m, d, [2.**100, 1.])), (math.inf, "float32")),
    # norms with no identity over an empty dimension; matrix_norm's checks in PyTorch's order
    "vector_norm_inf_empty": (lambda m, F, d: m.linalg.vector_norm(m.zeros(0, 3, device=d), math.inf),
                              raises_text(RT, "cannot compute the inf norm on an empty tensor")),
    "vector_norm_negative_empty_dim": (
        lambda m, F, d: m.linalg.vector_norm(m.zeros(2, 0, device=d), -1, 1),
        raises_text(RT, "cannot compute the -1 norm on the dimension 1")),
    "vector_norm_inf_nonempty_dim": (
        lambda m, F, d: m.linalg.vector_norm(m.zeros(0, 3, device=d), math.inf, 1), ([], "float32")),
    "vector_norm_int_with_dtype": (
        lambda m, F, d: m.linalg.vector_norm(m.ones(2, dtype=m.int64, device=d), dtype=m.float32),
        raises_text(RT, "Expected a floating point or complex tensor as input. Got Long")),
    "matrix_norm_int_empty": (
        lambda m, F, d: m.linalg.matrix_norm(m.zeros(0, 0, dtype=m.int64, device=d), -1),
        raises_text(RT, "Expected a floating point or complex tensor as input. Got Long")),
    "matrix_norm_1d": (lambda m, F, d: m.linalg.matrix_norm(_x(m, d, 3), 1),
                       raises_text(RT, "The input tensor A must have at least 2 dimensions")),
    "matrix_norm_1_empty": (lambda m, F, d: m.linalg.matrix_norm(m.zeros(2, 0, device=d), 1),
                            (0., "float32")),
    "matrix_norm_inf_empty": (lambda m, F, d: m.linalg.matrix_norm(m.zeros(0, 2, device=d),
                                                                   math.inf), (0., "float32")),
    "matrix_norm_minus2_empty": (
        lambda m, F, d: m.linalg.matrix_norm(m.zeros(2, 0, device=d), -2),
        raises_text(IndexError, "Expected reduction dim -1 to have non-zero size")),
    "matrix_norm_nuc_half": (
        lambda m, F, d: m.linalg.matrix_norm(m.ones(2, 2, dtype=m.bfloat16, device=d), "nuc"),
        raises_text(RT, "Low precision dtypes not supported. Got BFloat16")),
}


#: cases that create a bfloat16 tensor (a backend may decline the dtype)
_BFLOAT16_CASES = {"matrix_norm_nuc_half"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(device, name):
    case, want = CASES[name]
    if name in _BFLOAT16_CASES:
        try:
            pg.zeros(1, dtype=pg.bfloat16, device=device).cpu()
        except DTypeError:
            pytest.skip(f"{device} declines bfloat16 (DTypeError)")
    check(case, want, pg, pgF, device)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", sorted(CASES))
def test_expected_is_torch(name):
    case, want = CASES[name]
    check(case, want, torch, torchF, "cpu")
