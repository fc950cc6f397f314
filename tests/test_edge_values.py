"""Results PyTorch defines at the edges, where the chain rule or the plain formula gives something
else: ``beta == 0`` in the ``add*`` matrix products (the input is ignored, NaN included, and still
gets a zero gradient), ``logit``'s infinite derivative at 0 and 1 and its zero derivative outside
``[eps, 1 - eps]``, the 0-"norm" (recorded, with no gradient), and the orders ``norm`` refuses.

Each expected value is PyTorch 2.13's, written out, so the tests hold where torch is not
installed; where it is, :func:`test_the_literals_are_torchs` recomputes them with torch.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck, gradgradcheck

from torch_cases import torch

INF, NAN = math.inf, math.nan


def _beta0_cases(L: Any, device: Any = "cpu") -> dict[str, tuple[Callable[[Any], Any], Any, Any]]:
    """name -> (f(input) -> result, the result's values, input.grad of result.sum())."""
    one = lambda *s: L.ones(*s, dtype=L.float64, device=device)  # noqa: E731
    return {
        "addmm": (lambda i: L.addmm(i, one(2, 3), one(3, 2), beta=0, alpha=2),
                  [[6., 6.], [6., 6.]], [[0., 0.], [0., 0.]]),
        "addmm_broadcast_input": (lambda i: L.addmm(i[0], one(2, 3), one(3, 2), beta=0),
                                  [[3., 3.], [3., 3.]], [[0., 0.], [0., 0.]]),
        "baddbmm": (lambda i: L.baddbmm(i.unsqueeze(0), one(1, 2, 3), one(1, 3, 2), beta=0),
                    [[[3., 3.], [3., 3.]]], [[0., 0.], [0., 0.]]),
        "addbmm": (lambda i: L.addbmm(i, one(2, 2, 3), one(2, 3, 2), beta=0),
                   [[6., 6.], [6., 6.]], [[0., 0.], [0., 0.]]),
        "addmv": (lambda i: L.addmv(i[0], one(2, 3), one(3), beta=0), [3., 3.],
                  [[0., 0.], [0., 0.]]),
        "addr": (lambda i: L.addr(i, one(2), one(2), beta=0, alpha=-1), [[-1., -1.], [-1., -1.]],
                 [[0., 0.], [0., 0.]]),
    }


def _input(L: Any, device: Any = None) -> Any:
    kw = {"device": device} if device is not None else {}
    return L.tensor([[NAN, INF], [-INF, 1.]], dtype=L.float64, requires_grad=True, **kw)


@pytest.mark.parametrize("name", sorted(_beta0_cases(pg)))
def test_beta_zero_ignores_the_input(device: Any, name: str) -> None:
    f, values, grad = _beta0_cases(pg, device)[name]
    x = _input(pg, device)
    out = f(x)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), np.array(values))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.array(grad))


def test_beta_zero_in_place(device: Any) -> None:
    x = pg.tensor([[NAN, 1.]], device=device)
    x.addmm_(pg.ones(1, 2, device=device), pg.ones(2, 2, device=device), beta=0)
    np.testing.assert_array_equal(x.cpu().numpy(), [[2., 2.]])


def test_beta_other_than_zero_still_propagates_nan(device: Any) -> None:
    x = pg.tensor([[NAN, 1.]], device=device)
    out = pg.addmm(x, pg.ones(1, 2, device=device), pg.ones(2, 2, device=device), beta=0.5)
    np.testing.assert_array_equal(np.isnan(out.cpu().numpy()), [[True, False]])
    np.testing.assert_allclose(out.cpu().numpy()[0, 1], 2.5)


# logit: values and gradients at 0, 1, inside and outside [eps, 1 - eps], NaN
_LOGIT_X = [0., 1., 0.5, 0.05, 0.95, NAN]
_LOGIT = {  # eps -> (values, gradient of the sum)
    None: ([-INF, INF, 0., -2.9444389791664403, 2.9444389791664394, NAN],
           [INF, INF, 4., 21.05263157894737, 21.052631578947377, NAN]),
    0.1: ([-2.197224577336219, 2.1972245773362196, 0., -2.197224577336219, 2.1972245773362196,
           NAN], [0., 0., 4., 0., 0., NAN]),
    0.0: ([-INF, INF, 0., -2.9444389791664403, 2.9444389791664394, NAN],
          [INF, INF, 4., 21.05263157894737, 21.052631578947377, NAN]),
}


@pytest.mark.parametrize("eps", [None, 0.1, 0.0])
def test_logit_edges(device: Any, eps: float | None) -> None:
    x = pg.tensor(_LOGIT_X, dtype=pg.float64, requires_grad=True, device=device)
    y = pg.special.logit(x, eps)
    y.sum().backward()
    values, grad = _LOGIT[eps]
    np.testing.assert_allclose(y.detach().cpu().numpy(), values, rtol=1e-12)
    np.testing.assert_allclose(x.grad.cpu().numpy(), grad, rtol=1e-12)
    assert y.grad_fn.name() == "LogitBackward0"


@pytest.mark.parametrize("eps", [None, 0.1])
def test_logit_gradcheck(device: Any, eps: float | None) -> None:
    x = pg.tensor([0.2, 0.7, 0.03], dtype=pg.float64, requires_grad=True, device=device)
    assert gradcheck(lambda t: pg.special.logit(t, eps), (x,))
    assert gradgradcheck(lambda t: pg.special.logit(t, eps), (x,))


def test_zero_norm_is_recorded_without_gradient(device: Any) -> None:
    x = pg.tensor([[0., 1.], [2., 0.]], requires_grad=True, device=device)
    y = pg.linalg.vector_norm(x, 0)
    assert y.item() == 2. and y.grad_fn is not None
    y.backward()
    assert x.grad is None  # PyTorch: the count has no gradient, the input's grad stays None
    rows = pg.linalg.vector_norm(x, 0, dim=1, keepdim=True)
    np.testing.assert_array_equal(rows.detach().cpu().numpy(), [[1.], [1.]])
    assert pg.norm(x.detach(), 0).item() == 2.


def test_norm_orders_unknown_are_refused_nuclear_is_computed(device: Any) -> None:
    x = pg.ones(2, 2, device=device)
    # the ones matrix has singular values 2 and 0: a nuclear norm of 2
    assert abs(pg.norm(x, p="nuc").item() - 2.0) < 1e-6
    with pytest.raises(RuntimeError, match="Order abc not supported"):
        pg.norm(x, p="abc")
    assert pg.norm(x, p="fro").item() == 2.


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
def test_the_literals_are_torchs() -> None:
    for name, (f, values, grad) in _beta0_cases(torch).items():
        x = _input(torch)
        out = f(x)
        np.testing.assert_array_equal(out.detach().numpy(), np.array(values), err_msg=name)
        out.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.array(grad), err_msg=name)
    for eps, (values, grad) in _LOGIT.items():
        x = torch.tensor(_LOGIT_X, dtype=torch.float64, requires_grad=True)
        y = torch.special.logit(x, eps)
        y.sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), values, rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-12)


# 0x0 matrices (and batches of them): empty results of PyTorch's shapes, never an internal error
def _empty_cases(L: Any, device: Any = "cpu") -> dict[str, tuple[Callable[[], Any], Any]]:
    """name -> (computation, the shapes of its results)."""
    e = lambda *s: L.zeros(*s, device=device)  # noqa: E731
    return {
        "inv": (lambda: L.linalg.inv(e(0, 0)), [(0, 0)]),
        "inv_batch": (lambda: L.linalg.inv(e(3, 0, 0)), [(3, 0, 0)]),
        "solve": (lambda: L.linalg.solve(e(0, 0), e(0, 2)), [(0, 2)]),
        "cholesky": (lambda: L.linalg.cholesky(e(0, 0)), [(0, 0)]),
        "cholesky_solve": (lambda: L.cholesky_solve(e(0, 2), e(0, 0)), [(0, 2)]),
        "cholesky_inverse": (lambda: L.cholesky_inverse(e(0, 0)), [(0, 0)]),
        "lu_solve": (lambda: L.linalg.lu_solve(*L.linalg.lu_factor(e(0, 0)), e(0, 3)), [(0, 3)]),
        "matrix_exp": (lambda: L.linalg.matrix_exp(e(0, 0)), [(0, 0)]),
        "det": (lambda: L.linalg.det(e(0, 0)), [()]),
    }


@pytest.mark.parametrize("name", sorted(_empty_cases(pg)))
def test_empty_matrices(device: Any, name: str) -> None:
    f, shapes = _empty_cases(pg, device)[name]
    out = f()
    outs = out if isinstance(out, tuple) else (out,)
    assert [tuple(o.shape) for o in outs] == shapes
    if name == "det":  # the determinant of a 0x0 matrix is 1
        assert out.item() == 1.


def test_empty_matrix_gradient(device: Any) -> None:
    x = pg.zeros(2, 0, 0, requires_grad=True, device=device)
    pg.linalg.inv(x).sum().backward()
    assert tuple(x.grad.shape) == (2, 0, 0)


_SINGULAR = [[1., 2.], [2., 4.]]


@pytest.mark.parametrize("call,match", [
    (lambda A: pg.linalg.inv(A), "linalg.inv: The diagonal element 2 is zero"),
    (lambda A: pg.inverse(A), "linalg.inv: The diagonal element 2 is zero"),
    (lambda A: pg.linalg.solve(A, pg.ones(2, device=A.device)),
     "linalg.solve: The solver failed because the input matrix is singular"),
    (lambda A: pg.linalg.cholesky(A), "leading minor of order 2 is not positive-definite"),
])
def test_singular_matrices_raise_linalg_error(device: Any, call: Any, match: str) -> None:
    A = pg.tensor(_SINGULAR, device=device)
    with pytest.raises(pg.linalg.LinAlgError, match=match):
        call(A)
    assert issubclass(pg.linalg.LinAlgError, RuntimeError)  # as torch.linalg.LinAlgError


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
def test_empty_matrix_shapes_are_torchs() -> None:
    for name, (f, shapes) in _empty_cases(torch).items():
        out = f()
        outs = out if isinstance(out, tuple) else (out,)
        assert [tuple(o.shape) for o in outs] == shapes, name
    with pytest.raises(torch.linalg.LinAlgError, match="The diagonal element 2 is zero"):
        torch.linalg.inv(torch.tensor(_SINGULAR))
    with pytest.raises(torch.linalg.LinAlgError, match="the input matrix is singular"):
        torch.linalg.solve(torch.tensor(_SINGULAR), torch.ones(2))


# cholesky reads one triangle, but its input stands for a symmetric matrix: PyTorch's gradient is
# symmetric (so are those of everything built on it: MultivariateNormal, Wishart ...)
_SPD = [[4., 2., 0.4], [2., 3., 0.5], [0.4, 0.5, 2.]]
_CHOLESKY_GRAD = [  # A.grad of (cholesky(A) * arange(9).reshape(3, 3)).sum(), PyTorch 2.13
    [-0.01496042758834406, -0.008139183937421711, 0.1903001955705497],
    [-0.008139183937421662, 1.1080191458678508, 2.0412961100349616],
    [0.1903001955705495, 2.041296110034962, 2.8905174941196967]]
_MVN_COV_GRAD = [[-0.21879882678654639, 0.036320276308215244],
                 [0.036320276308215244, -0.4821002713741401]]


def _cholesky_grad(L: Any, device: Any, upper: bool) -> Any:
    A = L.tensor(_SPD, dtype=L.float64, requires_grad=True, device=device)
    f = L.linalg.cholesky(A, upper=upper)
    w = L.arange(9., dtype=L.float64, device=device).reshape(3, 3)
    (f * (w.t() if upper else w)).sum().backward()
    return A.grad


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradient_is_symmetric(device: Any, upper: bool) -> None:
    g = _cholesky_grad(pg, device, upper).cpu().numpy()
    np.testing.assert_allclose(g, _CHOLESKY_GRAD, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(g, g.T, rtol=1e-12)


def test_cholesky_gradcheck(device: Any) -> None:
    A = pg.tensor(_SPD, dtype=pg.float64, requires_grad=True, device=device)
    sym = lambda a: pg.linalg.cholesky((a + a.mT) / 2)  # noqa: E731
    assert gradcheck(sym, (A,)) and gradgradcheck(sym, (A,))


def test_multivariate_normal_covariance_gradient_is_symmetric(device: Any) -> None:
    C = pg.tensor([[2., 0.3], [0.3, 1.]], dtype=pg.float64, requires_grad=True, device=device)
    d = pg.distributions.MultivariateNormal(pg.zeros(2, dtype=pg.float64, device=device),
                                            covariance_matrix=C)
    d.log_prob(pg.tensor([0.5, -0.2], dtype=pg.float64, device=device)).backward()
    np.testing.assert_allclose(C.grad.cpu().numpy(), _MVN_COV_GRAD, rtol=1e-10)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
def test_symmetric_gradient_literals_are_torchs() -> None:
    for upper in (False, True):
        np.testing.assert_allclose(_cholesky_grad(torch, "cpu", upper).numpy(), _CHOLESKY_GRAD,
                                   rtol=1e-10, atol=1e-14)
    C = torch.tensor([[2., 0.3], [0.3, 1.]], dtype=torch.float64, requires_grad=True)
    d = torch.distributions.MultivariateNormal(torch.zeros(2, dtype=torch.float64),
                                               covariance_matrix=C)
    d.log_prob(torch.tensor([0.5, -0.2], dtype=torch.float64)).backward()
    np.testing.assert_allclose(C.grad.numpy(), _MVN_COV_GRAD, rtol=1e-10)


# out=: PyTorch's rules, on every op that takes it
_OUT_OPS = {
    "add": lambda L, a, b, **kw: L.add(a, b, **kw),
    "sub": lambda L, a, b, **kw: L.sub(a, b, **kw),
    "mul": lambda L, a, b, **kw: L.mul(a, b, **kw),
    "div": lambda L, a, b, **kw: L.div(a, b, **kw),
    "div_floor": lambda L, a, b, **kw: L.div(a, b, rounding_mode="floor", **kw),
    "cat": lambda L, a, b, **kw: L.cat([a, b], **kw),
}


@pytest.mark.parametrize("op", sorted(_OUT_OPS))
def test_out_writes_through_the_given_tensor(device: Any, op: str) -> None:
    a = pg.tensor([[1., 2.], [3., 4.]], device=device)
    b = pg.tensor([[4., 3.], [2., 1.]], device=device)
    want = _OUT_OPS[op](pg, a, b)
    out = pg.empty(tuple(want.shape), dtype=pg.float64, device=device)  # a wider dtype: allowed
    assert _OUT_OPS[op](pg, a, b, out=out) is out
    np.testing.assert_allclose(out.cpu().numpy(), want.cpu().numpy())
    # a strided out (every other column of a wider tensor) is written through its strides
    wide = pg.zeros(want.shape[0], 2 * want.shape[1], device=device)
    _OUT_OPS[op](pg, a, b, out=wide[:, ::2])
    np.testing.assert_allclose(wide.cpu().numpy()[:, ::2], want.cpu().numpy())
    assert not wide.cpu().numpy()[:, 1::2].any()


@pytest.mark.parametrize("op", sorted(_OUT_OPS))
def test_out_refuses_a_narrower_category(device: Any, op: str) -> None:
    a = pg.ones(2, 2, device=device)
    exc, text = ((TypeError, "input types can't be cast to the desired output type Long")
                 if op == "cat" else
                 (RuntimeError, "result type Float can't be cast to the desired output type Long"))
    with pytest.raises(exc, match=text):
        _OUT_OPS[op](pg, a, a, out=pg.empty(2, 2, dtype=pg.int64, device=device))
    i = pg.ones(2, 2, dtype=pg.int64, device=device)
    if op in ("add", "mul", "sub"):
        with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                               "output type Bool"):
            _OUT_OPS[op](pg, i, i, out=pg.empty(2, 2, dtype=pg.bool, device=device))


def test_out_refuses_autograd_and_overlap(device: Any) -> None:
    x = pg.ones(3, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match=r"add\(\): functions with out=\.\.\. arguments don't "
                                           "support automatic differentiation"):
        pg.add(x, x, out=pg.empty(3, device=device))
    with pg.no_grad():
        out = pg.empty(3, device=device)
        pg.add(x, x, out=out)
    np.testing.assert_array_equal(out.cpu().numpy(), [2., 2., 2.])
    a = pg.ones(3, device=device)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        pg.add(a, a, out=pg.ones(1, 3, device=device).expand(2, 3))


def test_out_of_another_shape_is_resized(device: Any) -> None:
    a = pg.ones(3, device=device)
    empty = pg.empty(0, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently
        pg.add(a, a, out=empty)
    assert tuple(empty.shape) == (3,)
    small = pg.empty(2, device=device)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since "
                                         r"it had shape \[2\]"):
        pg.mul(a, 3, out=small)
    np.testing.assert_array_equal(small.cpu().numpy(), [3., 3., 3.])


# special functions at their exact points and in their tails
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lgamma_is_exactly_zero_at_one_and_two(device: Any, dtype: str) -> None:
    x = pg.tensor([1., 2., 3.], dtype=getattr(pg, dtype), device=device)
    got = pg.lgamma(x).cpu().numpy()
    assert got[0] == 0. and got[1] == 0.
    np.testing.assert_allclose(got[2], math.log(2.), rtol=1e-6)


def test_digamma_at_signed_zeros(device: Any) -> None:
    got = pg.digamma(pg.tensor([0., -0., -1.], device=device)).cpu().numpy()
    assert got[0] == -INF and got[1] == INF and np.isnan(got[2])  # PyTorch's limits and pole


_ERFC_X = [10., -10., 30., 0.3, 1.9, 2.0, 2.1, 5., 26.5, INF, -INF]
_ERFC_64 = [2.088487583762545e-45, 2.0, 0.0, 0.6713732405408726, 0.0072095707647425325,
            0.004677734981047266, 0.002979466656332984, 1.537459794428035e-12,
            2.2109076642637343e-307, 0.0, 2.0]  # PyTorch 2.13 (math.erfc agrees)


def test_erfc_keeps_its_tail(device: Any) -> None:
    x = pg.tensor(_ERFC_X, dtype=pg.float64, device=device)
    np.testing.assert_allclose(pg.special.erfc(x).cpu().numpy(), _ERFC_64, rtol=1e-13, atol=0)
    np.testing.assert_allclose([math.erfc(v) for v in _ERFC_X], _ERFC_64, rtol=1e-14)
    x32 = pg.special.erfc(pg.tensor([5., 9.], device=device)).cpu().numpy()
    np.testing.assert_allclose(x32, [1.5374597944280351e-12, 4.1370317465138102e-37], rtol=1e-5)
    g = pg.tensor([0.3, 1.9, 2.5, 4.], dtype=pg.float64, requires_grad=True, device=device)
    assert gradcheck(pg.special.erfc, (g,)) and gradgradcheck(pg.special.erfc, (g,))


# piecewise activations: PyTorch's derivatives are strict at the kinks (clamp's is not); a NaN
# input is on no side of a bound, and hardtanh's and the ELUs' gradients pass through it
_KINKS = {  # name -> (inputs, PyTorch 2.13's gradient of the sum, float64)
    "hardtanh": ([-1., 1., 0., 2., -3., NAN], [0., 0., 1., 0., 0., 1.]),
    "relu6": ([0., 6., 3., -1., 7., NAN], [0., 0., 1., 0., 0., 1.]),
    "hardsigmoid": ([-3., 3., 0., -4., 4., NAN], [0., 0., 0.1666666716337204, 0., 0., 0.]),
    "hardswish": ([-3., 3., 0., -4., 4., 1., NAN],
                  [0., 1., 0.5, 0., 1., 0.8333333333333333, 1.]),
    "elu": ([0., -1., 2., NAN], [1., 0.36787944117144233, 1., 1.]),
    "celu": ([0., -1., 2., NAN], [1., 0.36787944117144233, 1., 1.]),
    "selu": ([0., -1., 2., NAN], [1.7580993408473766, 0.646768603034814, 1.0507009873554805,
                                  1.0507009873554805]),
}


@pytest.mark.parametrize("name", sorted(_KINKS))
@pytest.mark.parametrize("inplace", [False, True])
def test_activation_gradients_at_their_kinks(device: Any, name: str, inplace: bool) -> None:
    vals, grad = _KINKS[name]
    x = pg.tensor(vals, dtype=pg.float64, requires_grad=True, device=device)
    fn = getattr(pg.nn.functional, name)
    y = fn(x * 1, inplace=True) if inplace else fn(x)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), grad)
    assert gradcheck(fn, (pg.tensor([0.3, -0.7, 2.5, -3.5], dtype=pg.float64, requires_grad=True,
                                     device=device),))


def test_hardtanh_bounds_in_order() -> None:
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        pg.nn.functional.hardtanh(pg.ones(2), 2., 1.)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
def test_kink_literals_are_torchs() -> None:
    for name, (vals, grad) in _KINKS.items():
        x = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
        getattr(torch.nn.functional, name)(x).sum().backward()
        assert x.grad.tolist() == grad, name


def test_embedding_scale_grad_by_freq(device: Any) -> None:
    """Each row's gradient is divided by how often its index occurs (it was ignored)."""
    w = pg.randn(5, 2, dtype=pg.float64, requires_grad=True, device=device)
    i = pg.tensor([[0, 1, 1], [4, 1, 2]], device=device)
    pg.nn.functional.embedding(i, w, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [[1, 1], [1, 1], [1, 1], [0, 0], [1, 1]])
    w.grad = None
    pg.nn.functional.embedding(i, w, padding_idx=1, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [[1, 1], [0, 0], [1, 1], [0, 0], [1, 1]])
    e = pg.nn.Embedding(5, 2, scale_grad_by_freq=True).to(device)
    (e(i) * 3).sum().backward()
    np.testing.assert_array_equal(e.weight.grad.cpu().numpy(),
                                  [[3, 3], [3, 3], [3, 3], [0, 0], [3, 3]])
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient"):
        pg.nn.functional.embedding_bag(i, w, mode="max", scale_grad_by_freq=True)


# activations on integer and bool tensors: PyTorch's kernels refuse them (float-only ones) or keep
# the integer dtype (hardtanh, relu6, threshold)
_FLOAT_ONLY = {"elu": "elu_cpu", "selu": "elu_cpu", "celu": "elu_cpu", "gelu": "GeluKernelImpl",
               "silu": "silu_cpu", "mish": "mish_cpu", "hardsigmoid": "hardsigmoid_cpu",
               "hardswish": "hardswish_cpu", "softplus": "softplus_cpu",
               "logsigmoid": "log_sigmoid_cpu", "softshrink": "softshrink_check",
               "hardshrink": "hardshrink_cpu", "glu": "glu_cpu", "leaky_relu": "leaky_relu_cpu"}


@pytest.mark.parametrize("name", sorted(_FLOAT_ONLY))
def test_float_only_activations_refuse_integers(device: Any, name: str) -> None:
    with pytest.raises(NotImplementedError, match=f'"{_FLOAT_ONLY[name]}" not implemented for '
                                                  "'Long'"):
        getattr(pg.nn.functional, name)(pg.tensor([2, 4], device=device))


def test_clamping_activations_keep_integer_dtypes(device: Any) -> None:
    F = pg.nn.functional
    i = pg.tensor([-3, 0, 1, 5], device=device)
    assert F.hardtanh(i, -1.5, 1.5).tolist() == [-1, 0, 1, 1]  # bounds truncated toward zero
    assert F.relu6(i).dtype == pg.int64 and F.relu6(i).tolist() == [0, 0, 1, 5]
    assert F.threshold(i, 0.5, -2.5).tolist() == [-2, -2, 1, 5]
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        F.relu6(pg.tensor([True], device=device))
    with pytest.raises(NotImplementedError, match="threshold_cpu"):
        F.threshold(pg.tensor([True], device=device), 0.5, 0.)


def test_matrix_exp_of_non_finite_matrices(device: Any) -> None:
    f = lambda v: pg.linalg.matrix_exp(pg.tensor(v, dtype=pg.float64, device=device))  # noqa: E731
    assert f([[-INF]]).tolist() == [[0.0]] and f([[INF]]).tolist() == [[INF]]
    both = f([[[1., INF], [0., 1.]], [[1., 2.], [0., 1.]]]).cpu().numpy()
    assert np.isnan(both[0]).all()  # PyTorch: NaN for a matrix with inf off the diagonal
    np.testing.assert_allclose(both[1], [[math.e, 2 * math.e], [0., math.e]], rtol=1e-13)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_special_functions_round_16_bit_results_once(device: Any, dtype: str) -> None:
    """Computed in float32 and rounded once (PyTorch), not composed in 16 bits: the result is the
    16-bit rounding of the float64 value, within one unit in the last place."""
    dt = getattr(pg, dtype)
    x64 = pg.tensor([2.5, 0.3, -1.7, 7.25], dtype=pg.float64)
    ulp = 2.0 ** (-10 if dtype == "float16" else -7)
    fns = {"lgamma": pg.lgamma, "digamma": pg.digamma, "sinc": pg.special.sinc,
           "erfc": pg.special.erfc, "logit": lambda t: pg.special.logit(t.abs() / 8)}
    for name, f in fns.items():
        try:
            got = f(x64.to(dt).to(device))
        except pg.errors.DTypeError:
            pytest.skip(f"{device} declines {dtype}")
        assert got.dtype == dt, name
        want = f(x64.to(dt).double()).numpy()
        np.testing.assert_allclose(got.double().cpu().numpy(), want, rtol=ulp, atol=ulp,
                                   err_msg=name)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["addcmul", "addcdiv", "lerp", "lerp_tensor"])
def test_16_bit_fused_arithmetic_rounds_once(device: Any, dtype: str, op: str) -> None:
    """addcmul/addcdiv/lerp of 16-bit floats compute in float32 and round once (PyTorch): within
    one unit in the last place of the exactly computed value (composed in 16 bits, every
    intermediate rounded: up to 49 units off)."""
    rng = np.random.default_rng(0)
    a, b, c = (rng.normal(size=512) for _ in range(3))
    c = np.where(np.abs(c) < 0.1, 0.5, c)  # no huge quotients
    f = {"addcmul": lambda L, x, y, z: L.addcmul(x, y, z, value=0.7),
         "addcdiv": lambda L, x, y, z: L.addcdiv(x, y, z, value=0.7),
         "lerp": lambda L, x, y, z: L.lerp(x, y, 0.3),
         "lerp_tensor": lambda L, x, y, z: L.lerp(x, y, z)}[op]
    dt = getattr(pg, dtype)
    if op == "lerp_tensor":
        c = np.abs(c) / 3  # weights in [0, 1], most of them
    try:
        xs = [pg.tensor(v, device=device).to(dt) for v in (a, b, c)]
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines {dtype}")
    got = f(pg, *xs).double().cpu().numpy()
    exact = f(pg, *(x.double() for x in xs)).cpu().numpy()  # the same 16-bit inputs, float64
    ulp = np.abs(exact) * 2.0 ** (-10 if dtype == "float16" else -7)
    assert (np.abs(got - exact) <= np.maximum(ulp, 1e-6)).all()


def test_exactly_singular_matrices_raise(device: Any) -> None:
    """A matrix with a row equal to another (or a multiple of it by a power of two) is singular
    to the last bit: elimination clears that row to exact zeros and ``inv``/``solve`` raise
    LinAlgError, where normalising the pivot row first left residue of 1e-16 and gave an
    "inverse" with entries near 1e16."""
    a = [[1.288601804052881, 1.6849502468883302], [1.288601804052881, 1.6849502468883302]]
    b = [[0.3, -1.7, 2.2], [1.1, 0.9, -0.4], [0.6, -3.4, 4.4]]  # row 2 = 2 * row 0
    for m in (a, b):
        x = pg.tensor(m, dtype=pg.float64, device=device)
        with pytest.raises(pg.linalg.LinAlgError, match="singular"):
            pg.linalg.inv(x)
        with pytest.raises(pg.linalg.LinAlgError, match="singular"):
            pg.linalg.solve(x, pg.ones(len(m), 1, dtype=pg.float64, device=device))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_threshold_keeps_nan(device: Any, dtype: str) -> None:
    """``threshold`` replaces ``x <= threshold`` by ``value``: NaN is not, so it stays NaN (and
    gets the gradient), as PyTorch."""
    try:
        x = pg.tensor([NAN, 1.0, 0.2], device=device).to(getattr(pg, dtype))
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines {dtype}")
    out = pg.nn.functional.threshold(x, 0.5, 7.0).float().cpu().numpy()
    assert np.isnan(out[0]) and out[1:].tolist() == [1.0, 7.0]
    x = pg.tensor([NAN, 1.0, 0.2], device=device, requires_grad=True)
    pg.nn.functional.threshold(x, 0.5, 7.0).sum().backward()
    assert x.grad.cpu().tolist() == [1.0, 1.0, 0.0]


def test_cosine_similarity_in_the_common_dtype(device: Any) -> None:
    x1 = pg.tensor([[1.2532104608305352, 0.1]], dtype=pg.float64, device=device)
    x2 = pg.tensor([[1.5992423295974731, 0.3]], dtype=pg.float32, device=device)
    got = pg.nn.functional.cosine_similarity(x1, x2).item()
    a, b = np.array([1.2532104608305352, 0.1]), np.array([1.5992423295974731, 0.3], np.float32)
    b = b.astype(np.float64)
    assert got == pytest.approx(a @ b / np.sqrt((a @ a) * (b @ b)), rel=1e-15)



# cosine_similarity as PyTorch computes it: the inputs broadcast first, each divided by its own
# norm clamped at eps (a gradient through the norm as if unclamped); cosine_embedding_loss by its
# own formula (squared norms + 1e-12), targets other than 1 and -1 contributing 0
def _cosine_cases(L: Any, d: Any) -> dict[str, Callable[[], Any]]:
    F = L.nn.functional
    def t(v: Any, dt: Any = None, **kw: Any) -> Any:
        return L.tensor(v, dtype=dt or L.float64, device=d, **kw)

    def grads_through_clamped_norm() -> list:
        a, b = t([1e-9, 0.0], requires_grad=True), t([1.0, 1.0], requires_grad=True)
        F.cosine_similarity(a, b, dim=0).backward()
        return a.grad.tolist() + b.grad.tolist()

    return {
        "each_norm_clamped_alone": lambda: F.cosine_similarity(t([1e-5, 0.0]), t([1e-5, 0.0]), dim=0),
        "one_norm_clamped": lambda: F.cosine_similarity(t([1e-9, 0.0]), t([1.0, 1.0]), dim=0),
        "broadcast_along_dim": lambda: F.cosine_similarity(t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0], [2.0]])),
        "broadcast_a_missing_dim": lambda: F.cosine_similarity(t([[1.0, 2.0]]), t([3.0, 1.0])),
        "float16_squares_overflow": lambda: F.cosine_similarity(t([3.0, 4.0], L.float16),
                                                                t([300.0, 400.0], L.float16), dim=0),
        "gradient_through_clamped_norm": grads_through_clamped_norm,
        "embedding_loss_eps": lambda: F.cosine_embedding_loss(
            t([[1e-5, 0.0], [300.0, 400.0]]), t([[1e-5, 0.0], [3.0, 4.0]]), t([1.0, -1.0]),
            reduction="none"),
        "embedding_loss_float16": lambda: F.cosine_embedding_loss(
            t([[300.0, 400.0]], L.float16), t([[3.0, 4.0]], L.float16), t([1.0], L.float16),
            reduction="none"),
        "embedding_loss_other_targets": lambda: F.cosine_embedding_loss(
            t([[1.0, 2.0], [3.0, 4.0]]), t([[-1.0, -2.0], [-3.0, -4.0]]), t([0.5, -1.0]), margin=-2.0,
            reduction="none"),
    }


_COSINE_WANT = {
    "each_norm_clamped_alone": 1.0,
    "one_norm_clamped": 0.07071067811865475,
    "broadcast_along_dim": [0.9486832980505137, 0.9899494936611665],
    "broadcast_a_missing_dim": [0.7071067811865475],
    "float16_squares_overflow": 1.0,
    "gradient_through_clamped_norm": [63639610.306789264, 70710678.11865474, 0.03535533905932738,
                                      -0.03535533905932737],
    "embedding_loss_eps": [0.009900990059839243, 0.99999999999998],
    "embedding_loss_float16": [1.0],
    "embedding_loss_other_targets": [0.0, 1.00000000000004],
}


def _listed(r: Any) -> Any:
    return r if isinstance(r, list) else r.tolist()


@pytest.mark.parametrize("name", sorted(_COSINE_WANT))
def test_cosine_similarity_as_pytorch(device: Any, name: str) -> None:
    try:
        got = _listed(_cosine_cases(pg, device)[name]())
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines float16")
    np.testing.assert_allclose(got, _COSINE_WANT[name], rtol=1e-12, atol=1e-13)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
def test_cosine_literals_are_torchs() -> None:
    for name, case in _cosine_cases(torch, "cpu").items():
        assert _listed(case()) == _COSINE_WANT[name], name

@pytest.mark.parametrize("name", ["erfc", "erfinv", "asin", "acos", "atan", "sinh", "cosh",
                                  "asinh", "atanh", "i0"])
def test_editing_an_output_in_place_is_fine_where_only_the_input_is_saved(device: Any,
                                                                          name: str) -> None:
    """These derivatives read the input only (as PyTorch's), so ``relu_`` on the output before
    backward is allowed; ``special.i1``'s reads its result, and the edit is an error there too."""
    x = pg.tensor([0.3, -0.2], dtype=pg.float64, device=device, requires_grad=True)
    y = getattr(pg, name)(x * 1)
    y.relu_()
    y.sum().backward()
    assert x.grad is not None
    x = pg.tensor([0.3, -0.2], dtype=pg.float64, device=device, requires_grad=True)
    y = pg.special.i1(x * 1)
    y.relu_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_asinh_is_odd_at_signed_zero(device: Any) -> None:
    """``asinh(-0.0)`` is ``-0.0`` (PyTorch's and IEEE's: an odd function keeps the sign bit)."""
    for dt in (pg.float32, pg.float64):
        got = pg.asinh(pg.tensor([-0.0, 0.0, -2.0], dtype=dt, device=device)).cpu().numpy()
        assert np.signbit(got).tolist() == [True, False, True]


def _gnll(L: Any, d: Any, v: Any, **kw: Any) -> list:
    x = L.tensor([[0.5, 1.0], [2.0, -1.0]], dtype=L.float64, device=d)
    var = L.tensor(v, dtype=L.float64, device=d, requires_grad=True)
    loss = L.nn.functional.gaussian_nll_loss(x, L.zeros_like(x), var, **kw)
    loss.backward()
    return [loss.item(), var.grad.tolist()]


# PyTorch 2.13's: a var one dimension short of the input is one variance per row; var is
# clamped at eps in place under no_grad, so its gradient is the unclamped one
_GNLL_WANT = {
    "row_var": ([0.5, 2.0], dict(reduction="sum"), [2.5, [-0.5, -0.125]]),
    "clamped": ([[1e-8], [0.5]], dict(full=True), [156248.54177409856, [[-156249750000.0], [-2.0]]]),
}


@pytest.mark.parametrize("name", sorted(_GNLL_WANT))
def test_gaussian_nll_loss_as_pytorch(device: Any, name: str) -> None:
    v, kw, want = _GNLL_WANT[name]
    got = _gnll(pg, device, v, **kw)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9)
    if torch is not None:
        ref = _gnll(torch, "cpu", v, **kw)
        assert ref[0] == pytest.approx(want[0], rel=1e-12)
        np.testing.assert_allclose(ref[1], want[1], rtol=1e-9)


def test_gaussian_nll_loss_refuses_as_pytorch(device: Any) -> None:
    x = pg.ones(2, 2, device=device)
    gnll = pg.nn.functional.gaussian_nll_loss
    with pytest.raises(ValueError, match="^var is of incorrect size$"):
        gnll(x, x, pg.ones(3, device=device))
    with pytest.raises(ValueError, match="^var has negative entry/entries$"):
        gnll(x, x, pg.tensor([-1.0, 2.0], device=device))
    with pytest.raises(ValueError, match="^var has negative entry/entries$"):
        gnll(x, x, -1.0)
    with pytest.raises(ValueError, match="^bad is not valid$"):
        gnll(x, x, pg.ones(2, 2, device=device), reduction="bad")


def test_hypot_neither_overflows_nor_underflows(device: Any) -> None:
    """C's ``hypot`` (PyTorch's): the squares of 1e200 overflowed to inf and those of 1e-30 in
    float32 underflowed to 0; an infinity beside a NaN gives inf."""
    cases = (("float64", [1e200, -1e-300, INF, NAN, 3.0], [1e200, 1e-300, NAN, INF, -4.0],
              [1.414213562373095e200, 1.4142135623730952e-300, INF, INF, 5.0]),
             ("float32", [1e20, 1e-30], [1e20, 1e-30], [1.414213581995256e20, 1.4142135555081815e-30]))
    for dt, a, b, want in cases:
        rtol = 1e-15 if dt == "float64" else 1e-7
        got = pg.hypot(pg.tensor(a, dtype=getattr(pg, dt), device=device),
                       pg.tensor(b, dtype=getattr(pg, dt), device=device))
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=rtol)
        if torch is not None:
            ref = torch.hypot(torch.tensor(a, dtype=getattr(torch, dt)),
                              torch.tensor(b, dtype=getattr(torch, dt)))
            np.testing.assert_allclose(ref.numpy(), want, rtol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tanh_reaches_one(device: Any, dtype: str) -> None:
    # torch 2.13: tanh is exactly +-1 where the exact value rounds to it (PoCL's float builtin
    # stayed an ulp short even at inf, so erfinv(tanh(inf)) was 3.83, not inf)
    x = pg.tensor([INF, -INF, 20., 100., -30., NAN, 0.5], dtype=getattr(pg, dtype), device=device)
    got = x.tanh().cpu().numpy()
    np.testing.assert_array_equal(got[:5], [1., -1., 1., 1., -1.])
    assert np.isnan(got[5]) and 0.46 < got[6] < 0.47
    assert pg.special.erfinv(x[:2].tanh()).cpu().tolist() == [INF, -INF]
