"""``pg.func``: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, functional_call,
stack_module_state and their composition with ``pg.vmap`` (per-sample gradients), against
PyTorch 2.13's values (written out below for fixed inputs) and, where torch is installed,
against torch.func directly."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad import func as F

X = [1.0, 2.0, 3.0]
Y = [0.5, -1.0, 2.0]
# torch.func on X, Y (PyTorch 2.13)
GRAD_SIN_X = [0.2702, 0.4161, -1.9800]  # grad((x.sin() * y).sum())
SIN_X = [0.8415, 0.9093, 0.1411]
HESS_PROD3 = [[1296.0, 972.0, 648.0], [972.0, 324.0, 324.0], [648.0, 324.0, 144.0]]


def _close(a: Any, b: Any, tol: float = 1e-4) -> None:
    np.testing.assert_allclose(np.asarray(a.detach().cpu().numpy(), dtype=np.float64),
                               np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


def _xy(device: str) -> tuple:
    return pg.tensor(X, device=device), pg.tensor(Y, device=device)


def _f(x: Any, y: Any) -> Any:
    return (x.sin() * y).sum()


def test_grad_argnums_pytrees_aux(device: str) -> None:
    x, y = _xy(device)
    g = F.grad(_f)(x, y)
    _close(g, GRAD_SIN_X)
    assert not g.requires_grad
    gx, gy = F.grad(_f, argnums=(0, 1))(x, y)
    _close(gy, SIN_X)
    _close(F.grad(_f, argnums=-1)(x, y), SIN_X)
    gd, val = F.grad_and_value(lambda d: (d["a"] * d["b"]).sum())({"a": x, "b": y})
    assert isinstance(gd, dict) and list(gd) == ["a", "b"]
    _close(gd["a"], Y)
    _close(val, 4.5)
    g, aux = F.grad(lambda x: (x.exp().sum(), x.cos()), has_aux=True)(x)
    _close(aux, np.cos(X))
    assert not aux.requires_grad
    _close(F.grad(lambda x, y: (x * 2).sum(), argnums=1)(x, y), [0.0, 0.0, 0.0])
    _close(F.grad(F.grad(lambda x: x ** 3))(pg.tensor(2.0, device=device)), 12.0)


def test_grad_errors(device: str) -> None:
    x, y = _xy(device)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got "
                                           "tensor with 1 dims. Maybe you wanted to use the vjp "
                                           "or jacrev APIs instead?"):
        F.grad(lambda x: x * 2)(x)
    with pytest.raises(RuntimeError, match="output of function f should be a tuple: "
                                           "\\(output, aux\\) if has_aux is True"):
        F.grad(lambda x: x.sum(), has_aux=True)(x)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 2 positional inputs"):
        F.grad(_f, argnums=2)(x, y)
    with pytest.raises(RuntimeError, match="argnums must be int or Tuple"):
        F.grad(_f, argnums=[0])
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor"):
        F.grad(lambda a: a, argnums=0)(1.0)


def test_grad_connects_to_outer_graph(device: str) -> None:
    x, _ = _xy(device)
    w = pg.nn.Parameter(pg.tensor([1.0, 2.0, 3.0], device=device))
    g = F.grad(lambda x: (w * x * x).sum())(x)  # 2 w x, differentiable w.r.t. w
    assert g.requires_grad
    g.sum().backward()
    _close(w.grad, [2.0, 4.0, 6.0])


def test_vjp_jvp(device: str) -> None:
    x, y = _xy(device)
    out, fn = F.vjp(lambda a, b: (a * b, a + b), x, y)
    assert isinstance(out, tuple) and not out[0].requires_grad
    ga, gb = fn((pg.ones(3, device=device), y))
    _close(ga, [1.0, -2.0, 4.0])
    _close(gb, [1.5, 1.0, 5.0])
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents to be the same"):
        fn(pg.ones(3, device=device))
    out, t = F.jvp(lambda a: (a ** 2, a.sum()), (x,), (y,))
    _close(t[0], [1.0, -4.0, 12.0])
    _close(t[1], 1.5)
    out, t, aux = F.jvp(lambda a: (a.sin(), a.cos()), (x,), (y,), has_aux=True)
    _close(t, np.cos(X) * np.array(Y))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        F.jvp(lambda a: a, x, y)


def test_jacrev_jacfwd_hessian(device: str) -> None:
    x, y = _xy(device)
    j = F.jacrev(lambda a, b: {"p": a * b, "q": a @ b}, argnums=(0, 1))(x, y)
    assert isinstance(j, dict) and isinstance(j["p"], tuple) and len(j["p"]) == 2
    _close(j["p"][0], np.diag(Y))
    _close(j["q"][1], X)
    for jac in (F.jacrev, F.jacfwd):
        _close(jac(lambda a: a.sin())(x), np.diag(np.cos(X)))
        jd = jac(lambda d: d["a"] * d["b"])({"a": x, "b": y})
        assert isinstance(jd, dict)
        _close(jd["b"], np.diag(X))
    _close(F.hessian(lambda a: (a ** 3).prod())(x), HESS_PROD3, tol=1e-3)
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        F.jacrev(lambda a: a, chunk_size=0)
    _close(F.jacrev(lambda a: a * 2, chunk_size=1)(x), 2 * np.eye(3))


class _Net(pg.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = pg.nn.Linear(3, 1)
        self.register_buffer("scale", pg.tensor(2.0))

    def forward(self, x: Any) -> Any:
        return self.lin(x).squeeze(-1) * self.scale


def _net(device: str) -> _Net:
    net = _Net()
    with pg.no_grad():
        net.lin.weight.copy_(pg.tensor([[0.1, -0.2, 0.3]]))
        net.lin.bias.fill_(0.5)
    return net.to(device)


def test_functional_call_swaps_and_restores(device: str) -> None:
    net = _net(device)
    w0 = net.lin.weight
    x = pg.tensor([[1.0, 2.0, 3.0]], device=device)
    params = {"lin.weight": pg.ones(1, 3, device=device), "lin.bias": pg.zeros(1, device=device)}
    _close(F.functional_call(net, params, (x,)), [12.0])
    _close(F.functional_call(net, (params, {"scale": pg.tensor(1.0, device=device)}), x), [6.0])
    assert net.lin.weight is w0 and isinstance(net.lin.weight, pg.nn.Parameter)
    _close(net(x), [2 * (0.1 - 0.4 + 0.9 + 0.5)])

    def boom(*a: Any) -> None:
        raise KeyError("boom")

    handle = net.register_forward_pre_hook(boom)
    with pytest.raises(KeyError):
        F.functional_call(net, params, x)
    handle.remove()
    assert net.lin.weight is w0
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'lin.bias', 'scale'"):
        F.functional_call(net, {"lin.weight": params["lin.weight"]}, x, strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        F.functional_call(net, (params, params), x)


def test_functional_call_tied_weights(device: str) -> None:
    m = pg.nn.Sequential(pg.nn.Linear(2, 2, bias=False), pg.nn.Linear(2, 2, bias=False)).to(device)
    m[1].weight = m[0].weight
    x = pg.tensor([[1.0, 2.0]], device=device)
    eye = pg.eye(2, device=device)
    _close(F.functional_call(m, {"0.weight": eye}, x), [[1.0, 2.0]])
    assert m[1].weight is m[0].weight
    out = F.functional_call(m, {"0.weight": eye}, x, tie_weights=False)
    _close(out, (x @ m[0].weight.t().detach()).detach().cpu().numpy())
    with pytest.raises(ValueError, match="which are tied. Consider using tie_weights=False"):
        F.functional_call(m, {"0.weight": eye, "1.weight": eye * 2}, x)


def test_per_sample_grads_with_vmap(device: str) -> None:
    net = _net(device)
    names = [n for n, _ in net.named_parameters()]
    params = tuple(p.detach() for p in net.parameters())
    xs = pg.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 1.0]], device=device)
    ys = pg.tensor([1.0, -1.0], device=device)

    def loss(params: tuple, x: Any, y: Any) -> Any:
        out = F.functional_call(net, dict(zip(names, params)), (x.unsqueeze(0),))
        return ((out - y) ** 2).mean()

    gw, gb = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    assert gw.shape == (2, 1, 3) and gb.shape == (2, 1)
    # loss = (2 (w.x + b) - y)^2: d/dw = 4 r x, d/db = 4 r with r = 2 (w.x + b) - y
    for i, (xi, yi) in enumerate(zip([[1.0, 2.0, 3.0], [0.0, -1.0, 1.0]], [1.0, -1.0])):
        r = 2 * (0.1 * xi[0] - 0.2 * xi[1] + 0.3 * xi[2] + 0.5) - yi
        _close(gw[i, 0], [4 * r * v for v in xi])
        _close(gb[i], [4 * r])
    assert F.vmap is pg.vmap
    # the torch.func tutorial's form: parameters as a dict, per-sample gradients as a dict
    pdict = {n: p.detach() for n, p in net.named_parameters()}

    def loss_d(p: dict, x: Any, y: Any) -> Any:
        return ((F.functional_call(net, p, (x.unsqueeze(0),)) - y) ** 2).mean()

    gd = F.vmap(F.grad(loss_d), in_dims=(None, 0, 0))(pdict, xs, ys)
    assert isinstance(gd, dict) and sorted(gd) == sorted(names)
    _close(gd[names[0]], gw.cpu().numpy())
    _close(gd[names[1]], gb.cpu().numpy())
    # a dict argument mapped along dim 0, leaf by leaf
    doubled = F.vmap(lambda d: d["a"] * 2 + d["b"])({"a": xs, "b": xs})
    _close(doubled, (xs * 3).cpu().numpy())


def test_stack_module_state(device: str) -> None:
    models = [_net(device), _net(device)]
    with pg.no_grad():
        models[1].lin.bias.fill_(-1.0)
    params, buffers = F.stack_module_state(models)
    assert list(params) == ["lin.weight", "lin.bias"] and list(buffers) == ["scale"]
    assert params["lin.weight"].shape == (2, 1, 3) and params["lin.bias"].is_leaf
    assert params["lin.bias"].requires_grad and not buffers["scale"].requires_grad
    _close(params["lin.bias"], [[0.5], [-1.0]])
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0."):
        F.stack_module_state([])
    models[1].eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        F.stack_module_state(models)


def test_against_torch(device: str) -> None:
    torch = pytest.importorskip("torch")
    xs = np.array([0.3, -1.2, 2.0, 0.7], dtype=np.float32)
    ys = np.array([1.0, 0.5, -2.0, 0.25], dtype=np.float32)

    def f(a: Any, b: Any) -> Any:
        return ((a * b).tanh() * a.sum()).exp().sum()

    def g(a: Any, b: Any) -> Any:
        return (a * b).sin() * b.sum()

    tx, ty = torch.tensor(xs), torch.tensor(ys)
    px, py = pg.tensor(xs, device=device), pg.tensor(ys, device=device)
    for k in range(2):
        _close(F.grad(f, argnums=(0, 1))(px, py)[k], torch.func.grad(f, argnums=(0, 1))(tx, ty)[k])
        _close(F.jacrev(g, argnums=(0, 1))(px, py)[k],
               torch.func.jacrev(g, argnums=(0, 1))(tx, ty)[k])
    _close(F.jvp(g, (px, py), (py, px))[1], torch.func.jvp(g, (tx, ty), (ty, tx))[1])
    _close(F.hessian(f)(px, py), torch.func.hessian(f)(tx, ty), tol=1e-3)
    _, fn = F.vjp(g, px, py)
    _, tfn = torch.func.vjp(g, tx, ty)
    _close(fn(py)[1], tfn(ty)[1])


def test_more_transform_errors_and_state(device: str) -> None:
    x, y = _xy(device)
    with pytest.raises(RuntimeError, match="Expected primals to contain at least one Tensor"):
        F.jvp(lambda: x, (), ())
    with pytest.raises(RuntimeError, match="Trying to set a forward gradient that has a "
                                           "different size"):
        F.jvp(lambda a: a * 2, (x,), (pg.ones(2, device=device),))
    with pytest.raises(RuntimeError, match="The output of f is independent of the inputs"):
        F.jvp(lambda a: pg.ones(3, device=device), (x,), (y,), strict=True)
    with pytest.raises(RuntimeError, match="All outputs of f must be floating-point"):
        F.vjp(lambda a: (a * 2).long(), x)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        F.jacfwd(lambda a: a, randomness="x")(x)
    jac, aux = F.jacrev(lambda a: (a * 2, a.sum()), has_aux=True)(x)
    _close(jac, 2 * np.eye(3))
    _close(aux, 6.0)
    _close(F.grad(lambda a, k=1.0: (a * k).sum())(x, k=3.0), [3.0, 3.0, 3.0])

    class Counter(pg.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("b", pg.zeros(2))

        def forward(self, t: Any) -> Any:
            self.b = self.b + 1
            return t + self.b

    m = Counter().to(device)
    state = {"b": pg.ones(2, device=device)}
    F.functional_call(m, state, pg.zeros(2, device=device))
    _close(state["b"], [2.0, 2.0])  # what the call left is reported back
    _close(m.b, [0.0, 0.0])  # the module's own buffer is restored
    a, b = pg.nn.Linear(2, 2), pg.nn.Linear(2, 2)
    b.bias.requires_grad_(False)
    with pytest.raises(RuntimeError, match="Expected bias from each model to have the same"):
        F.stack_module_state([a, b])
