"""Programs PyTorch accepts that portagrad once refused, and the neighbours torch still refuses.

1. in-place ops whose result casts down within its category (``f32.add_(f64)``, ``i32 += i64``);
2. integer ``mm``/``matmul``/``mv``/``dot``/``addmm``/``bmm``/``@`` (exact, wrapping on overflow);
3. a zero-dim CPU tensor meeting a tensor on another device (treated like a number);
4. saved-tensor version checks no stricter than PyTorch's: an op saves only what its derivative
   needs, so changing anything else in place before ``backward`` is allowed.

``test_case`` runs each case on every test device against the answer written literally (CI has no
torch); ``test_expected_is_torch`` checks that literal against torch itself where it is installed.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Callable

import pytest

import portagrad as pg

from torch_cases import Raises, check, torch

MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace"
MISMATCH = "Expected all tensors to be on the same device"


def _t(m: Any, d: str, v: Any, dt: str | None = None) -> Any:
    return m.tensor(v, dtype=getattr(m, dt) if dt else None, device=d)


def _iadd(m: Any, d: str, a: Any, b: Any, dt_a: str, dt_b: str) -> Any:
    x = _t(m, d, a, dt_a)
    x += _t(m, d, b, dt_b)
    return x


def _grad(m: Any, d: str, f: Callable[[Any], Any]) -> Any:
    """``f(x)`` returns the tensor to sum and backpropagate; the gradient of ``x = [1, 2, 3]``."""
    x = m.tensor([1., 2., 3.], device=d, requires_grad=True)
    f(x).sum().backward()
    return x.grad


def _mul_scalar_then_neg(x: Any) -> Any:
    y = x * 1
    z = y * 2  # multiplication by a number saves nothing
    y.neg_()
    return z


def _pow_scalar_then_add(x: Any) -> Any:
    y = x ** 3  # saves x, not the result
    y.add_(1)
    return y


def _exp_then_add(x: Any) -> Any:
    y = x.exp()  # saves its result
    y.add_(1)
    return y


def _div_by_number_then_neg(x: Any) -> Any:
    y = x * 1
    z = y / 2  # the numerator is needed only for the divisor's gradient
    y.neg_()
    return z


def _number_over_tensor_then_neg(x: Any) -> Any:
    y = x * 1
    z = 2 / y  # torch: reciprocal(y) * 2, which saves the reciprocal, not y
    y.neg_()
    return z


def _square_by_mul_then_neg(x: Any) -> Any:
    y = x * 1
    z = y * y  # each factor is saved for the other's gradient
    y.neg_()
    return z


def _pow_tensor_exponent_then_add(x: Any) -> Any:
    y = (x * 1) ** x  # the exponent's gradient needs the result
    y.add_(1)
    return y


def _mm_constant_changed(m: Any, d: str) -> Any:
    w = m.tensor([[1., 2., 3.]], device=d, requires_grad=True)
    c = m.tensor([[1.], [2.], [3.]], device=d)
    z = w @ c  # c is saved for w's gradient
    c.add_(1)
    z.sum().backward()
    return w.grad


def _linear_weight_changed_under_no_grad(m: Any, d: str) -> Any:
    # the weight is saved only for the input's gradient, which is not needed here
    w = m.tensor([[1., 2., 3.]], device=d, requires_grad=True)
    x = m.tensor([[1., 1., 1.]], device=d)
    y = m.nn.functional.linear(x, w)
    with m.no_grad():
        w.mul_(2)
    y.sum().backward()
    return w.grad


_M = [[1, 2], [3, 4]]
_N = [[5, 6], [7, 8]]

# name -> (case(lib, dev), expected): expected is (values, dtype name) or Raises
CASES: dict[str, tuple[Callable, Any]] = {
    # 1. in place, the result cast to self's dtype within its category
    "add_f32_f64": (lambda m, d: _t(m, d, [1., 2.]).add_(_t(m, d, [0.5, 1.], "float64")),
                    ([1.5, 3.], "float32")),
    "mul_f32_f64": (lambda m, d: _t(m, d, [1., 2.]).mul_(_t(m, d, [3., 4.], "float64")),
                    ([3., 8.], "float32")),
    "sub_f32_f64_alpha": (lambda m, d: _t(m, d, [1., 2.]).sub_(_t(m, d, [1., 1.], "float64"),
                                                               alpha=2), ([-1., 0.], "float32")),
    "iadd_i32_i64": (lambda m, d: _iadd(m, d, [1, 2], [3, 4], "int32", "int64"),
                     ([4, 6], "int32")),
    "iadd_f32_i64": (lambda m, d: _iadd(m, d, [1., 2.], [3, 4], "float32", "int64"),
                     ([4., 6.], "float32")),
    "mul_f32_f64_grad": (lambda m, d: _grad(m, d, lambda x: (x * 1).mul_(
        _t(m, d, [2., 2., 2.], "float64"))), ([2., 2., 2.], "float32")),
    "add_i64_f32_refused": (lambda m, d: _t(m, d, [1, 2]).add_(_t(m, d, [1., 2.])),
                            Raises(RuntimeError, "result type Float can't be cast to the desired "
                                                 "output type Long")),
    "add_i64_float_refused": (lambda m, d: _t(m, d, [1, 2]).add_(1.5),
                              Raises(RuntimeError, "result type Float can't be cast to the "
                                                   "desired output type Long")),
    "add_bool_i64_refused": (lambda m, d: _t(m, d, [True]).add_(_t(m, d, [1])),
                             Raises(RuntimeError, "result type Long can't be cast to the desired "
                                                  "output type Bool")),
    "div_i64_i64_refused": (lambda m, d: _t(m, d, [1, 2]).div_(_t(m, d, [1, 2])),
                            Raises(RuntimeError, "result type Float can't be cast to the desired "
                                                 "output type Long")),
    # 2. integer matrix products, exact
    "mm_int64": (lambda m, d: m.mm(_t(m, d, _M), _t(m, d, _N)),
                 ([[19, 22], [43, 50]], "int64")),
    "matmul_op_int32": (lambda m, d: _t(m, d, _M, "int32") @ _t(m, d, _N, "int32"),
                        ([[19, 22], [43, 50]], "int32")),
    "matmul_batched_int64": (lambda m, d: m.matmul(m.arange(8, device=d).reshape(2, 2, 2),
                                                   _t(m, d, _M)),
                             ([[[3, 4], [11, 16]], [[19, 28], [27, 40]]], "int64")),
    "matmul_transposed_int64": (lambda m, d: m.matmul(_t(m, d, _M).t(), _t(m, d, _N)),
                                ([[26, 30], [38, 44]], "int64")),
    "mv_int64": (lambda m, d: m.mv(_t(m, d, _M), _t(m, d, [5, 6])), ([17, 39], "int64")),
    "dot_int32": (lambda m, d: m.dot(_t(m, d, [1, 2], "int32"), _t(m, d, [3, 4], "int32")),
                  (11, "int32")),
    "bmm_int64": (lambda m, d: m.bmm(_t(m, d, [_M]), _t(m, d, [_N])),
                  ([[[19, 22], [43, 50]]], "int64")),
    "addmm_int64": (lambda m, d: m.addmm(_t(m, d, _M), _t(m, d, _M), _t(m, d, _M), beta=2,
                                         alpha=3), ([[23, 34], [51, 74]], "int64")),
    "mm_int64_large_exact": (lambda m, d: m.mm(_t(m, d, [[2 ** 40]]), _t(m, d, [[2 ** 20]])),
                             ([[2 ** 60]], "int64")),
    "mm_int32_wraps": (lambda m, d: m.mm(_t(m, d, [[2 ** 30]], "int32"),
                                         _t(m, d, [[4]], "int32")), ([[0]], "int32")),
    "mm_int_float_refused": (lambda m, d: m.mm(_t(m, d, _M), _t(m, d, [[1., 2.], [3., 4.]])),
                             Raises(RuntimeError, "expected m1 and m2 to have the same dtype")),
    # 3. a zero-dim CPU tensor with a tensor on the test device
    "cpu0d_mul": (lambda m, d: m.tensor(2.0) * _t(m, d, [1., 2.]), ([2., 4.], "float32")),
    "cpu0d_add_alpha": (lambda m, d: m.add(_t(m, d, [1., 2.]), m.tensor(2.0), alpha=3),
                        ([7., 8.], "float32")),
    "cpu0d_lt": (lambda m, d: _t(m, d, [1., 2.]) < m.tensor(1.5), ([True, False], "bool")),
    "cpu0d_int_eq": (lambda m, d: m.eq(m.tensor(1), _t(m, d, [1, 2])), ([True, False], "bool")),
    "cpu0d_where_value": (lambda m, d: m.where(_t(m, d, [True, False]), m.tensor(2.0),
                                               _t(m, d, [1., 2.])), ([2., 2.], "float32")),
    "cpu0d_where_both_values": (lambda m, d: m.where(_t(m, d, [True, False]), m.tensor(1.),
                                                     m.tensor(0.)), ([1., 0.], "float32")),
    "cpu0d_where_condition": (lambda m, d: m.where(m.tensor(True), _t(m, d, [1., 2.]),
                                                   _t(m, d, [3., 4.])), ([1., 2.], "float32")),
    "cpu0d_add_": (lambda m, d: _t(m, d, [1., 2.]).add_(m.tensor(2.0)), ([3., 4.], "float32")),
    "cpu0d_grad": (lambda m, d: _grad(m, d, lambda x: m.tensor(2.0) * x),
                   ([2., 2., 2.], "float32")),
    # 4. version checks: only what the derivative needs is saved (and checked)
    "saved_mul_by_number": (lambda m, d: _grad(m, d, _mul_scalar_then_neg),
                            ([2., 2., 2.], "float32")),
    "saved_pow_scalar_exponent": (lambda m, d: _grad(m, d, _pow_scalar_then_add),
                                  ([3., 12., 27.], "float32")),
    "saved_div_by_number": (lambda m, d: _grad(m, d, _div_by_number_then_neg),
                            ([0.5, 0.5, 0.5], "float32")),
    "saved_number_over_tensor": (lambda m, d: [round(v, 4) for v in _grad(
        m, d, _number_over_tensor_then_neg).tolist()], [-2.0, -0.5, -0.2222]),
    "saved_mm_constant_changed": (_mm_constant_changed, Raises(RuntimeError, MODIFIED)),
    "saved_linear_weight_no_grad": (_linear_weight_changed_under_no_grad,
                                    ([[1., 1., 1.]], "float32")),
    "saved_exp_result_refused": (lambda m, d: _grad(m, d, _exp_then_add),
                                 Raises(RuntimeError, MODIFIED)),
    "saved_mul_factor_refused": (lambda m, d: _grad(m, d, _square_by_mul_then_neg),
                                 Raises(RuntimeError, MODIFIED)),
    "saved_pow_result_refused": (lambda m, d: _grad(m, d, _pow_tensor_exponent_then_add),
                                 Raises(RuntimeError, MODIFIED)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(device, name):
    case, want = CASES[name]
    check(case, want, pg, device)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", sorted(CASES))
def test_expected_is_torch(name):
    case, want = CASES[name]
    check(case, want, torch, "cpu")


@pytest.mark.parametrize("case", [
    lambda d: pg.tensor([2.0]) * pg.tensor([1., 2.], device=d),
    lambda d: pg.where(pg.tensor([True, False], device=d), pg.tensor([1., 2.]),
                       pg.tensor([3., 4.], device=d)),
    lambda d: pg.tensor([1., 2.], device=d).add_(pg.tensor([1., 2.])),
    lambda d: pg.clamp(pg.tensor([1., 2.], device=d), min=pg.tensor(1.5)),  # as torch's clamp
], ids=["mul_1d", "where_1d", "add__1d", "clamp_0d_bound"])
def test_cross_device_still_raises(device, case):
    if device == "cpu":
        pytest.skip("needs a device other than cpu")
    with pytest.raises(RuntimeError, match=MISMATCH):
        case(device)
