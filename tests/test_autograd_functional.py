"""``pg.autograd.functional``: vjp, jvp, jacobian, hessian, vhp and hvp against PyTorch 2.13's
values (written out below for fixed inputs), their return structures, the ``strict`` errors and
the detaching of results; and, where torch is installed, against torch directly."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import functional as F

X = [1.0, 2.0, 3.0]
Y = [0.5, -1.0]
V = [1.0, -1.0, 0.5]


def _close(a: Any, b: Any, tol: float = 1e-4) -> None:
    np.testing.assert_allclose(np.asarray(a.detach().cpu().numpy(), dtype=np.float64),
                               np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


def _f2(x: Any, y: Any) -> tuple:
    return x.sin() * x.sum(), pg.outer(x, y).tanh()


def _scalar(x: Any) -> Any:
    return (x.exp() * x).sum() * x.prod()


# torch.autograd.functional on the inputs above (PyTorch 2.13, float64)
JAC_F2 = (
    ([[4.083284820016735, 0.8414709848078965, 0.8414709848078965],
      [0.9092974268256817, -1.5875835924571728, 0.9092974268256817],
      [0.1411200080598672, 0.1411200080598672, -5.798834971542806]],
     [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]),
    ([[[0.3932238664829637, 0.0, 0.0], [-0.41997434161402614, 0.0, 0.0]],
      [[0.0, 0.20998717080701307, 0.0], [0.0, -0.07065082485316443, 0.0]],
      [[0.0, 0.0, 0.0903533194618243], [0.0, 0.0, -0.009866037165440166]]],
     [[[0.7864477329659274, 0.0], [0.0, 0.41997434161402614]],
      [[0.8399486832280523, 0.0], [0.0, 0.14130164970632886]],
      [[0.5421199167709458, 0.0], [0.0, 0.0295981114963205]]]),
)
E1, E2, E3 = 2.718281828459045, 7.38905609893065, 20.085536923187668
HESS_EXP = (([[-E1 / 2, 0, 0], [0, -E2 / 2, 0], [0, 0, -E3 / 2]],
             [[-E1, E1 / 2], [-E2, E2 / 2], [-E3, E3 / 2]]),
            ([[-E1, -E2, -E3], [E1 / 2, E2 / 2, E3 / 2]],
             [[0.0, E1 + E2 + E3], [E1 + E2 + E3, 0.0]]))
OUT_SIN = [5.0488, 5.4558, 0.8467]  # x.sin() * x.sum()
VJP_SIN = [3.2445, 2.4996, -2.9672]
JVP_SIN = [3.6625, 2.9515, -2.8994]
HVP_SCALAR = [55.8121, 253.7883, 747.2856]
OUT_SCALAR = 466.5180


def test_jacobian_tuple_structure_and_values(device: str) -> None:
    x, y = pg.tensor(X, device=device), pg.tensor(Y, device=device)
    for vectorize in (False, True):
        j = F.jacobian(_f2, (x, y), vectorize=vectorize)
        assert isinstance(j, tuple) and len(j) == 2
        for row, want_row in zip(j, JAC_F2):
            assert isinstance(row, tuple) and len(row) == 2
            for t, want in zip(row, want_row):
                assert t.device == x.device and not t.requires_grad
                _close(t, want)
    assert j[1][0].shape == (3, 2, 3) and j[1][1].shape == (3, 2, 2)


def test_jacobian_single_tensor_forms(device: str) -> None:
    x = pg.tensor(X, device=device)
    j = F.jacobian(lambda x: x.sin() * x.sum(), x)
    assert isinstance(j, pg.Tensor) and j.shape == (3, 3)
    _close(j, JAC_F2[0][0])
    j = F.jacobian(lambda x: (x.sin() * x.sum(),), x)  # tuple output, single input
    assert isinstance(j, tuple) and len(j) == 1 and isinstance(j[0], pg.Tensor)
    j = F.jacobian(lambda x: x.sin() * x.sum(), (x,))  # single output, tuple input
    assert isinstance(j, tuple) and len(j) == 1 and isinstance(j[0], pg.Tensor)
    jf = F.jacobian(lambda x: x.sin() * x.sum(), x, vectorize=True, strategy="forward-mode")
    _close(jf, JAC_F2[0][0])


def test_hessian_values_and_structure(device: str) -> None:
    x, y = pg.tensor(X, device=device), pg.tensor(Y, device=device)

    def f(x: Any, y: Any) -> Any:
        return x.exp().sum() * y.prod()

    for kw in ({}, {"vectorize": True}, {"vectorize": True,
                                         "outer_jacobian_strategy": "forward-mode"}):
        h = F.hessian(f, (x, y), **kw)
        for row, want_row in zip(h, HESS_EXP):
            for t, want in zip(row, want_row):
                _close(t, want)
    h = F.hessian(lambda x: (x ** 3).sum(), x)
    assert isinstance(h, pg.Tensor)
    _close(h, np.diag([6.0, 12.0, 18.0]))


def test_vjp_jvp_hvp_vhp(device: str) -> None:
    x, v = pg.tensor(X, device=device), pg.tensor(V, device=device)
    out, r = F.vjp(lambda x: x.sin() * x.sum(), x, v)
    _close(out, OUT_SIN)
    _close(r, VJP_SIN)
    out, r = F.jvp(lambda x: x.sin() * x.sum(), x, v)
    _close(out, OUT_SIN)
    _close(r, JVP_SIN)
    for fn in (F.hvp, F.vhp):  # the Hessian is symmetric
        out, r = fn(_scalar, x, v)
        _close(out, OUT_SCALAR)
        _close(r, HVP_SCALAR, tol=1e-3)
    outs, rs = F.vjp(lambda a, b: (a * b, a + b), (x, x), (v, v))
    assert isinstance(outs, tuple) and isinstance(rs, tuple) and len(rs) == 2
    _close(rs[0], [x_ * v_ + v_ for x_, v_ in zip(X, V)])
    # v may be left out only for a single-element output / input
    out, r = F.vjp(lambda x: (x * x).sum(), x)
    _close(r, [2.0, 4.0, 6.0])
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided"):
        F.vjp(lambda x: x * x, x)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input"):
        F.jvp(lambda x: x * x, x)
    with pytest.raises(RuntimeError, match="v has invalid size: should be"):
        F.vjp(lambda x: x * x, x, pg.ones(2, device=device))
    with pytest.raises(RuntimeError, match="The function given to hvp should return a single "):
        F.hvp(lambda x: (x.sum(), x.sum()), x, v)
    with pytest.raises(TypeError, match="The inputs given to vjp must be either a Tensor or a "
                                        "tuple of Tensors but the value at index 1 has type"):
        F.vjp(lambda a, b: a, (x, 2.0), v)


def test_independent_inputs_zeros_and_strict_errors(device: str) -> None:
    x, y = pg.tensor(X, device=device), pg.tensor(Y, device=device)
    _, (gx, gy) = F.vjp(lambda a, b: a * 2, (x, y), pg.ones(3, device=device))
    _close(gy, [0.0, 0.0])
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode."):
        F.vjp(lambda a, b: a * 2, (x, y), pg.ones(3, device=device), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients"):
        F.jacobian(lambda a: pg.ones(2, device=device), x, strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 1"):
        F.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="While computing the hessian, found that the jacobian"):
        F.hessian(lambda a: a.sum() * 2, x, strict=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported"):
        F.jacobian(lambda a: a * 2, x, strict=True, vectorize=True)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.jacobian(lambda a: a * 2, x, strategy="forward-mode")
    j = F.jacobian(lambda a, b: a * 2, (x, y))
    _close(j[1], np.zeros((3, 2)))


def test_detached_unless_create_graph(device: str) -> None:
    x = pg.tensor(X, device=device, requires_grad=True)
    out, r = F.vjp(lambda a: (a ** 3).sum(), x)
    assert not out.requires_grad and not r.requires_grad
    out, r = F.vjp(lambda a: (a ** 3).sum(), x, create_graph=True)
    assert r.requires_grad
    (g,) = pg.autograd.grad(r.sum(), x)  # d/dx sum(3 x^2) = 6 x
    _close(g, [6.0, 12.0, 18.0])
    h = F.hessian(lambda a: (a ** 3).sum(), x, create_graph=True)
    assert h.requires_grad
    j = F.jacobian(lambda a: a ** 2, x)
    assert not j.requires_grad and x.grad is None


def test_against_torch(device: str) -> None:
    torch = pytest.importorskip("torch")
    TF = torch.autograd.functional
    xs = np.array([0.3, -1.2, 2.0, 0.7], dtype=np.float32).reshape(2, 2)
    vs = np.array([1.0, 0.5, -2.0, 0.25], dtype=np.float32).reshape(2, 2)

    def fn(lib: Any) -> Any:
        return lambda a: (a @ a).tanh() * a.sum()

    tx, tv = torch.tensor(xs), torch.tensor(vs)
    px, pv = pg.tensor(xs, device=device), pg.tensor(vs, device=device)
    _close(F.jacobian(fn(pg), px), TF.jacobian(fn(torch), tx).numpy())
    for name in ("vjp", "jvp"):
        _close(getattr(F, name)(fn(pg), px, pv)[1], getattr(TF, name)(fn(torch), tx, tv)[1].numpy())
    for name in ("hvp", "vhp"):
        _close(getattr(F, name)(lambda a: fn(pg)(a).sum(), px, pv)[1],
               getattr(TF, name)(lambda a: fn(torch)(a).sum(), tx, tv)[1].numpy(), tol=1e-3)
    _close(F.hessian(lambda a: fn(pg)(a).sum(), px),
           TF.hessian(lambda a: fn(torch)(a).sum(), tx).numpy(), tol=1e-3)


def test_more_strict_and_argument_errors(device: str) -> None:
    x, y = pg.tensor(X, device=device), pg.tensor(Y, device=device)
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1"):
        F.vjp(lambda a: (a, a), x, (x,))
    with pytest.raises(RuntimeError, match="Entry 1 in v has invalid size"):
        F.jvp(lambda a, b: a, (x, x), (x, y))
    with pytest.raises(RuntimeError, match="The jacobian of the user-provided function is "
                                           "independent of input 0. This is not allowed in "
                                           "strict mode when create_graph=True."):
        F.vjp(lambda a: a * 2, x, x, strict=True, create_graph=True)
    with pytest.raises(RuntimeError, match="While computing the hessian, found that the jacobian"):
        F.vhp(lambda a: (a * 2).sum(), x, x, strict=True)
    with pytest.raises(RuntimeError, match="The hessian of the user-provided function is "
                                           "independent of input 0. This is not allowed in "
                                           "strict mode when create_graph=True."):
        F.hvp(lambda a: (a * a).sum(), x, x, strict=True, create_graph=True)
    with pytest.raises(RuntimeError, match="The function given to hessian should return a single"):
        F.hessian(lambda a: ((a ** 2).sum(),), x)
    _, r = F.hvp(lambda a: (a ** 3).sum(), pg.tensor([2.0], device=device))  # v left out
    _close(r, [12.0])
