"""The public API on the device: gradients of composite ops (``gradcheck`` in float64 where the
device has it) and a few optimizer steps of small models, compared with the cpu device."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.autograd import gradcheck


def _fp64(device: str) -> bool:
    dev = pg.device(device)
    return bool(pg.empty(1, device=device)._storage.backend
                .get_device_properties(dev.index or 0).fp64)


def _x(shape: tuple, seed: int, device: str, dtype: Any) -> Any:
    arr = np.random.default_rng(seed).standard_normal(shape)
    return pg.tensor(arr, dtype=dtype, device=device, requires_grad=True)


_IDX = np.array([[0, 2, 2, 1], [3, 0, 1, 1], [2, 2, 0, 3]])

# name -> (input shapes, function of the inputs): composites through the public API
COMPOSITES: dict[str, tuple[list[tuple], Callable[..., Any]]] = {
    "matmul_tanh": ([(3, 4), (4, 5)], lambda a, b: (a @ b).tanh()),
    "softmax": ([(3, 5)], lambda a: F.softmax(a * 3.0, dim=1)),
    "log_softmax": ([(4, 3)], lambda a: F.log_softmax(a, dim=0)),
    "conv2d": ([(2, 2, 5, 5), (3, 2, 3, 3)], lambda x, w: F.conv2d(x, w, None, 1, 1)),
    "layer_norm": ([(3, 6), (6,), (6,)], lambda x, w, b: F.layer_norm(x, (6,), w, b)),
    "gather": ([(3, 4)], lambda a: pg.gather(a, 1, pg.tensor(_IDX, device=a.device)[:, :4] % 4)),
    "cumsum": ([(3, 5)], lambda a: pg.cumsum(a, dim=1) * pg.cumsum(a, dim=0)),
    "sort_values": ([(3, 6)], lambda a: pg.sort(a, dim=1, descending=True)[0] * 2.0),
    "max_reduce": ([(4, 5)], lambda a: a.amax(dim=1) + a.max()),
    "mean_pow_sigmoid": ([(2, 3, 4)], lambda a: (a.sigmoid() ** 2).mean(dim=(0, 2))),
    "where_relu_abs": ([(3, 4)], lambda a: pg.where(a > 0, a.relu() * 2.0, a.abs() + 1.0)),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_gradcheck_on_device(conformance_device: str, name: str) -> None:
    """Analytic gradients on the device equal finite differences (float64) and the cpu's."""
    shapes, fn = COMPOSITES[name]
    dev = conformance_device
    dtype = pg.float64 if _fp64(dev) else pg.float32
    inputs = [_x(s, i, dev, dtype) for i, s in enumerate(shapes)]
    if dtype is pg.float64:
        assert gradcheck(fn, tuple(inputs)), name
    # the same gradients as on the cpu
    cpu_inputs = [_x(s, i, "cpu", dtype) for i, s in enumerate(shapes)]
    outs = [fn(*inputs), fn(*cpu_inputs)]
    r = np.random.default_rng(9).standard_normal(tuple(outs[1].shape))
    for out in outs:
        (out * pg.tensor(r, dtype=dtype, device=out.device)).sum().backward()
    tol = 1e-10 if dtype is pg.float64 else 1e-5
    np.testing.assert_allclose(outs[0].detach().cpu().numpy(), outs[1].detach().numpy(),
                               rtol=10 * tol, atol=tol, err_msg=f"{name}: forward")
    for i, (a, b) in enumerate(zip(inputs, cpu_inputs)):
        assert a.grad is not None and b.grad is not None
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=10 * tol, atol=tol,
                                   err_msg=f"{name}: gradient of input {i}")


def _mlp() -> Any:
    return pg.nn.Sequential(pg.nn.Linear(6, 16), pg.nn.Tanh(), pg.nn.Linear(16, 3))


def _cnn() -> Any:
    return pg.nn.Sequential(pg.nn.Conv2d(2, 4, 3, padding=1), pg.nn.ReLU(), pg.nn.MaxPool2d(2),
                            pg.nn.Flatten(), pg.nn.Linear(4 * 3 * 3, 3))


@pytest.mark.parametrize("model", ["mlp", "cnn"])
@pytest.mark.parametrize("optim", ["sgd_momentum", "adam"])
def test_optimizer_steps_match_cpu(conformance_device: str, model: str, optim: str) -> None:
    """Five steps of SGD with momentum or Adam on a small model give the cpu's parameters."""
    def run(device: str) -> list:
        pg.manual_seed(0)
        net = (_mlp() if model == "mlp" else _cnn()).to(device)
        params = list(net.parameters())
        opt = (pg.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-3)
               if optim == "sgd_momentum" else pg.optim.Adam(params, lr=0.01))
        rng = np.random.default_rng(1)
        shape = (8, 6) if model == "mlp" else (8, 2, 6, 6)
        losses = []
        for _ in range(5):
            x = pg.tensor(rng.standard_normal(shape), dtype=pg.float32, device=device)
            y = pg.tensor(rng.integers(0, 3, 8), device=device)
            opt.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses + [p.detach().cpu().numpy() for p in params]

    got, want = run(conformance_device), run("cpu")
    np.testing.assert_allclose(got[:5], want[:5], rtol=1e-4, atol=1e-5, err_msg="losses")
    for i, (g, w) in enumerate(zip(got[5:], want[5:])):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"parameter {i}")


def test_training_step_matches_cpu(conformance_device: str) -> None:
    """The public API on the device gives the same loss and gradients as on the cpu."""
    def step(device: str) -> tuple:
        pg.manual_seed(0)
        x = pg.randn(16, 8, device=device)
        w = pg.randn(8, 4, device=device, requires_grad=True)
        loss = (x @ w).tanh().pow(2).mean()
        loss.backward()
        assert w.grad is not None
        return loss.item(), w.grad.cpu().numpy()

    l_dev, g_dev = step(conformance_device)
    l_cpu, g_cpu = step("cpu")
    assert abs(l_dev - l_cpu) < 1e-5
    np.testing.assert_allclose(g_dev, g_cpu, rtol=1e-4, atol=1e-6)
