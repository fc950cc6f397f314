"""Pooling against PyTorch 2.13: the values it gives (written out here), its errors for inputs of
the wrong rank or with empty dimensions, and its dtype refusals."""
from __future__ import annotations

import math

import pytest

import portagrad as pg

F = pg.nn.functional


def test_lp_pool_inf_is_the_largest_magnitude(device: str) -> None:
    # the formula (sum x^p)^(1/p) at p = inf gives 1 everywhere; PyTorch's limit is max |x|
    x = pg.tensor([[[-3.0, -1.0, 2.0, -5.0, 0.5, 0.25, 0.0, -0.0]]], device=device,
                  requires_grad=True)
    y = F.lp_pool1d(x, math.inf, 2)
    y.backward(pg.tensor([[[1.0, 2.0, 3.0, 4.0]]], device=device))
    assert y.tolist() == [[[3.0, 5.0, 0.5, 0.0]]]
    assert x.grad.tolist() == [[[-1.0, -0.0, 0.0, -2.0, 3.0, 0.0, 0.0, 0.0]]]

    x2 = pg.tensor([[[[-3.0, -1.0, 2.0], [-5.0, 0.5, 0.25], [1.0, 2.0, 3.0]]]], device=device,
                   requires_grad=True)
    y2 = F.lp_pool2d(x2, float("inf"), 2, ceil_mode=True)
    y2.sum().backward()
    assert y2.tolist() == [[[[5.0, 2.0], [2.0, 3.0]]]]
    assert x2.grad.tolist() == [[[[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]]]
    assert pg.nn.LPPool2d(float("inf"), 2)(x2).tolist() == [[[[5.0]]]]


def test_avg_pool_divisor_override(device: str) -> None:
    x = pg.arange(16.0, device=device).reshape(1, 1, 4, 4)
    y = F.avg_pool2d(x, 2, divisor_override=3)
    expected = [[[[10 / 3, 6.0], [14.0, 50 / 3]]]]
    assert all(math.isclose(a, b, rel_tol=1e-6)
               for a, b in zip(y.flatten().tolist(), pg.tensor(expected).flatten().tolist()))
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)


_BATCH0 = "with optional 0 dim batch size for input, but got:"


@pytest.mark.parametrize("call, shape, exc, message", [
    (lambda x: F.max_pool1d(x, 1), (2,), RuntimeError,
     f"max_pool1d: Expected 2D or 3D (batch mode) tensor {_BATCH0}[2]"),
    (lambda x: F.max_pool1d(x, 1), (2, 0, 2), RuntimeError,
     f"max_pool1d: Expected 2D or 3D (batch mode) tensor {_BATCH0}[2, 0, 2]"),
    (lambda x: F.avg_pool1d(x, 1), (2,), RuntimeError,
     "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' "
     "(while checking arguments for avg_pool1d)"),
    (lambda x: F.avg_pool1d(x, 1), (2, 0, 2), RuntimeError,
     f"Expected 3D or 4D (batch mode) tensor {_BATCH0}[2, 0, 1, 2]"),
    (lambda x: F.lp_pool1d(x, 2, 1), (2, 2, 2, 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor"),
    (lambda x: F.max_pool2d(x, 1), (2, 2), RuntimeError,
     "non-empty 3D or 4D (batch mode) tensor expected for input"),
    (lambda x: F.max_pool2d(x, 1), (2, 0, 2, 2), RuntimeError,
     f"Expected 3D or 4D (batch mode) tensor {_BATCH0}[2, 0, 2, 2]"),
    (lambda x: F.max_pool2d(x, 1), (0, 2, 2), RuntimeError,
     f"Expected 3D or 4D (batch mode) tensor {_BATCH0}[0, 2, 2]"),
    (lambda x: F.avg_pool2d(x, 1), (2, 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda x: F.avg_pool2d(x, 1), (2, 2, 0, 2), RuntimeError,
     f"Expected 3D or 4D (batch mode) tensor {_BATCH0}[2, 2, 0, 2]"),
    (lambda x: F.avg_pool2d(x, 1), (2, 2, 2, 2, 2), RuntimeError,
     f"Expected 3D or 4D (batch mode) tensor {_BATCH0}[2, 2, 2, 2, 2]"),
    (lambda x: F.lp_pool2d(x, 2, 1), (2,), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got -3)"),
    (lambda x: F.max_pool3d(x, 1), (2, 2, 2), RuntimeError,
     "non-empty 4D or 5D (batch mode) tensor expected for input"),
    (lambda x: F.max_pool3d(x, 1), (2, 0, 2, 2, 2), RuntimeError,
     "max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch dimensions to "
     "have positive length, but input has a shape of [2, 0, 2, 2, 2]"),
    (lambda x: F.avg_pool3d(x, 1), (0, 2, 2, 2), RuntimeError,
     "avg_pool3d(): Expected input's non-batch dimensions to have positive length, but input "
     "has a shape of [0, 2, 2, 2] and non-batch dimension 0 has length zero!"),
    (lambda x: F.adaptive_max_pool2d(x, 1), (2, 0, 2, 2), RuntimeError,
     "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but "
     "input has sizes [2, 0, 2, 2] with dimension 1 being empty"),
    (lambda x: F.adaptive_max_pool3d(x, 1), (2, 2, 0, 2), RuntimeError,
     "adaptive_max_pool3d(): Expected input to have non-zero size for non-batch dimensions, but "
     "input has sizes [2, 2, 0, 2] with dimension 2 being empty"),
    (lambda x: F.adaptive_max_pool1d(x, 1), (2, 0, 2), RuntimeError,
     "adaptive_max_pool1d(): Expected input to have non-zero size for non-batch dimensions, but "
     "input has sizes [2, 0, 2] with dimension 1 being empty"),
    (lambda x: F.adaptive_avg_pool2d(x, 2), (2, 3, 0, 4), RuntimeError,
     "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but "
     "input has sizes [2, 3, 0, 4] with dimension 2 being empty"),
    (lambda x: F.adaptive_avg_pool1d(x, 2), (2, 3, 0), RuntimeError,
     "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but "
     "input has sizes [2, 3, 1, 0] with dimension 3 being empty"),
    (lambda x: F.adaptive_avg_pool1d(x, 1), (2, 2, 2, 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' "
     "(while checking arguments for adaptive_avg_pool1d)"),
    (lambda x: F.adaptive_max_pool1d(x, 1), (2,), RuntimeError,
     "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' "
     "(while checking arguments for adaptive_max_pool1d)"),
])
def test_pool_input_errors(device: str, call, shape: tuple, exc: type, message: str) -> None:
    x = pg.zeros(*shape, device=device)
    with pytest.raises(exc) as info:
        call(x)
    assert message in str(info.value)


@pytest.mark.parametrize("call, shape, out_shape", [
    (lambda x: F.max_pool3d(x, 1), (0, 2, 2, 2, 2), (0, 2, 2, 2, 2)),  # an empty batch is fine
    (lambda x: F.avg_pool3d(x, 1), (0, 2, 2, 2, 2), (0, 2, 2, 2, 2)),
    (lambda x: F.adaptive_avg_pool2d(x, 2), (2, 0, 4, 4), (2, 0, 2, 2)),  # so are no channels
    (lambda x: F.adaptive_max_pool1d(x, 1), (0, 2, 2), (0, 2, 1)),
    (lambda x: F.adaptive_avg_pool2d(x, 1), (2, 2, 0, 2), (2, 2, 1, 1)),  # a mean
])
def test_pool_empty_inputs_it_accepts(device: str, call, shape: tuple, out_shape: tuple) -> None:
    assert tuple(call(pg.zeros(*shape, device=device)).shape) == out_shape


@pytest.mark.parametrize("dtype, name", [(pg.int32, "Int"), (pg.uint8, "Byte"), (pg.bool, "Bool"),
                                         (pg.int64, "Long")])
def test_adaptive_pools_refuse_integers(device: str, dtype: pg.dtype, name: str) -> None:
    x = pg.ones(1, 1, 4, 4, dtype=dtype, device=device)
    for call, kernel in [(lambda: F.adaptive_avg_pool2d(x, 2), "adaptive_avg_pool2d"),
                         (lambda: F.adaptive_max_pool2d(x, 2), "adaptive_max_pool2d"),
                         (lambda: F.adaptive_avg_pool1d(x[0], 2), "adaptive_avg_pool2d"),
                         (lambda: F.adaptive_max_pool3d(x[None], 2), "adaptive_max_pool3d_cpu")]:
        with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for "
                                                      f"'{name}'"):
            call()


def test_max_unpool_names_the_first_invalid_index(device: str) -> None:
    v = pg.ones(1, 1, 2, 2, device=device)
    for idx, bad in [([[0, 5], [9, 7]], 5), ([[0, -2], [9, 1]], -2)]:
        i = pg.tensor([[idx]], device=device)
        with pytest.raises(RuntimeError, match=rf"Found an invalid max index: {bad} \(output "
                                               r"volumes are of size 2x2\)"):
            F.max_unpool2d(v, i, 1)
