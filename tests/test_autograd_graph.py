"""Autograd: the graph (requires_grad, leaves, grad_fn), backward/grad, grad modes, hooks."""
from __future__ import annotations

import gc
import sys

import pytest

import portagrad as pg
from portagrad.autograd import Function


def _flat(v):
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    return [v]


def close(t, expected, tol=1e-5):
    got = t.tolist() if isinstance(t, pg.Tensor) else t
    assert _flat(got) == pytest.approx(_flat(expected), rel=tol, abs=tol), (got, expected)


# ------------------------------------------------------------------- the graph
def test_requires_grad_propagation_and_leaves(device):
    a = pg.tensor([1.0, 2.0], device=device)
    assert not a.requires_grad and a.is_leaf and a.grad_fn is None
    w = pg.tensor([3.0, 4.0], device=device, requires_grad=True)
    y = a * w
    assert y.requires_grad and not y.is_leaf
    assert (a * 2).requires_grad is False
    assert w.is_leaf and w.grad_fn is None
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        pg.tensor([1, 2], device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        y.requires_grad_(False)


def test_grad_fn_names_and_next_functions(device):
    a = pg.tensor(2.0, device=device, requires_grad=True)
    b = pg.tensor(3.0, device=device, requires_grad=True)
    c = a * b
    e = (c + a).sum()
    assert c.grad_fn.name() == "MulBackward0"
    assert type(c.grad_fn).__name__ == "MulBackward0"
    assert (c + a).grad_fn.name() == "AddBackward0"
    assert e.grad_fn.name() == "SumBackward0"
    m = pg.ones(2, 3, device=device, requires_grad=True)
    assert m.sum(0).grad_fn.name() == "SumBackward1"
    nxt = c.grad_fn.next_functions
    assert [n.name() for n, _ in nxt] == ["AccumulateGrad", "AccumulateGrad"]
    assert nxt[0][0].variable is a and nxt[1][0].variable is b
    # a constant input has no edge
    assert (a * pg.tensor(1.0, device=device)).grad_fn.next_functions[1] == (None, 0)
    # the same leaf keeps one AccumulateGrad node
    assert (a * 2).grad_fn.next_functions[0][0] is nxt[0][0]


def test_graph_rebuilt_every_iteration(device):
    w = pg.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    for n in range(1, 4):  # shapes and control flow change per iteration
        w.grad = None
        x = pg.ones(n, 3, device=device)
        y = x * w
        loss = y.sum() if n % 2 else (y * y).sum()
        loss.backward()
        close(w.grad, [n * 1.0, n * 1.0, n * 1.0] if n % 2 else [2.0 * n * v for v in (1, 2, 3)])


def test_grad_accumulates_across_backward_calls(device):
    x = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    close(x.grad, [3 + 2, 3 + 4])
    g = x.grad
    (x * 1).sum().backward()
    assert x.grad is g  # accumulated in place, as torch
    close(g, [6, 8])


def test_each_node_runs_once_after_all_grads_summed(device):
    calls = []

    class Count(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            calls.append(g.tolist())
            return g

    x = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = Count.apply(x)
    z = y * 2 + y * 3 + y  # three uses
    z.sum().backward()
    assert calls == [[6.0, 6.0]]
    close(x.grad, [6, 6])


# ---------------------------------------------------------------- backward API
def test_backward_errors(device):
    x = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        pg.ones(2, device=device).sum().backward()
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        y.backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(pg.ones(3, device=device))


def test_backward_with_gradient_and_retain_graph(device):
    x = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x * x
    y.backward(pg.tensor([1.0, 10.0], device=device), retain_graph=True)
    close(x.grad, [2, 40])
    y.backward(pg.tensor([1.0, 1.0], device=device))
    close(x.grad, [4, 44])
    # a graph without saved tensors can be walked twice (as in torch)
    s = (x + x).sum()
    s.backward()
    s.backward()
    close(x.grad, [8, 48])


def test_backward_inputs(device):
    a = pg.tensor(2.0, device=device, requires_grad=True)
    b = pg.tensor(3.0, device=device, requires_grad=True)
    c = a * b
    c.retain_grad()
    (c * a).backward(inputs=[b])
    assert a.grad is None
    close(b.grad, 4.0)
    m = a * b
    (m * 5).backward(inputs=[m])  # a non-leaf input accumulates into its .grad
    close(m._grad, 5.0)
    assert a.grad is None
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (a * b).backward(inputs=[])


def test_autograd_grad(device):
    x = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = pg.tensor([3.0, 4.0], device=device, requires_grad=True)
    out = (x * y).sum()
    gx, gy = pg.autograd.grad(out, (x, y), retain_graph=True)
    close(gx, [3, 4])
    close(gy, [1, 2])
    assert x.grad is None and y.grad is None  # .grad untouched
    (gx,) = pg.autograd.grad([x * 2], [x], grad_outputs=[pg.ones(2, device=device)])
    close(gx, [2, 2])
    z = pg.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        pg.autograd.grad((x * 2).sum(), [x, z])
    gx, gz = pg.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gz is None
    gx, gz = pg.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
    close(gz, [0, 0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        pg.autograd.grad((x * 2).sum(), [pg.ones(2, device=device)])
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        pg.autograd.grad(pg.ones(2, device=device).sum(), [x])


def test_higher_order(device):
    x = pg.tensor([1.0, 2.0], dtype=pg.float64, device=device, requires_grad=True)
    (g,) = pg.autograd.grad((x ** 3).sum(), x, create_graph=True)
    close(g, [3, 12])
    assert g.requires_grad
    (g2,) = pg.autograd.grad(g.sum(), x)
    close(g2, [6, 12])
    # backward(create_graph=True) leaves a differentiable .grad
    y = pg.tensor(3.0, dtype=pg.float64, device=device, requires_grad=True)
    (y ** 2).backward(create_graph=True)
    close(y.grad, 6.0)
    assert y.grad.requires_grad
    (g3,) = pg.autograd.grad(y.grad, y)
    close(g3, 2.0)


class _Id(Function):
    @staticmethod
    def forward(ctx, x):
        return x.detach()

    @staticmethod
    def backward(ctx, g):
        return g


def test_long_chain_is_iterative(device):
    n = 100_000
    x = pg.tensor(1.0, device=device, requires_grad=True)
    y = x
    for _ in range(n):
        y = _Id.apply(y)
    assert n > 10 * sys.getrecursionlimit()
    y.backward()
    close(x.grad, 1.0)
    # dropping a long graph that was never run (saved tensors, grad_fn chain) must not recurse
    y = x
    for _ in range(n):
        y = _IdSave.apply(y)
    del y
    gc.collect()


class _IdSave(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.detach()

    @staticmethod
    def backward(ctx, g):
        return g


def test_freed_graph_releases_saved_tensors(device):
    import weakref

    x = pg.ones(3, device=device, requires_grad=True)
    h = x * 2
    out = (h * h).sum()
    node = out.grad_fn.next_functions[0][0]  # MulBackward0 that saved h twice
    assert node._saved is not None
    ref = weakref.ref(h)
    del h
    assert ref() is not None  # the graph keeps it alive
    out.backward()
    assert node._saved is None
    gc.collect()
    assert ref() is None
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node.saved_tensors  # noqa: B018 - the access itself must raise


# ------------------------------------------------------------------ grad modes
def test_no_grad_enable_grad_set_grad_enabled(device):
    x = pg.ones(2, device=device, requires_grad=True)
    with pg.no_grad():
        assert not pg.is_grad_enabled()
        y = x * 2
        with pg.enable_grad():
            z = x * 2
    assert pg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad
    with pg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    pg.set_grad_enabled(False)
    try:
        assert not pg.is_grad_enabled()
    finally:
        pg.set_grad_enabled(True)

    @pg.no_grad()
    def f():
        return (x * 2).requires_grad

    @pg.no_grad
    def g():
        return (x * 2).requires_grad

    @pg.enable_grad()
    def h():
        return (x * 2).requires_grad

    @pg.set_grad_enabled(False)
    def k():
        return pg.is_grad_enabled()

    assert f() is False and g() is False and g.__name__ == "g"
    with pg.no_grad():
        assert h() is True
    assert k() is False and pg.is_grad_enabled()


def test_inference_mode(device):
    x = pg.ones(2, device=device, requires_grad=True)
    with pg.inference_mode():
        assert pg.is_inference_mode_enabled() and not pg.is_grad_enabled()
        y = x * 2
        c = pg.ones(2, device=device)
        c.add_(1)  # in-place on inference tensors inside inference mode is fine
    assert not y.requires_grad and y.grad_fn is None and y.is_inference()
    assert not x.is_inference()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (c * x).sum()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        c.add_(1)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        c.requires_grad_()
    close(c.clone() * 1, [2, 2])  # a clone is a normal tensor

    @pg.inference_mode()
    def f():
        return (x * 2).is_inference()

    @pg.inference_mode
    def g():
        return pg.is_inference_mode_enabled()

    assert f() and g()
    with pg.inference_mode(False):
        assert not pg.is_inference_mode_enabled()


def test_requires_grad_freezes_part_of_model(device):
    w1 = pg.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    w2 = pg.tensor([[1.0], [1.0]], device=device, requires_grad=True)
    w1.requires_grad_(False)
    x = pg.ones(1, 2, device=device)
    h = x @ w1
    out = (h @ w2).sum()
    out.backward()
    assert w1.grad is None
    close(w2.grad, [[4.0], [6.0]])
    assert h.grad_fn is None  # nothing recorded below the frozen part


def test_detach(device):
    a = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    b = a * 2
    d = b.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d.add_(1)  # shares storage and version counter
    close(b.detach(), [3, 5])
    assert b._version == d._version == 1
    b2 = a * 3
    b2.detach_()
    assert b2.is_leaf and not b2.requires_grad
    v = (a * 2)[1:]
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        v.detach_()
    # .data has its own version counter
    s = a.sigmoid()
    s.data.mul_(1)
    s.sum().backward()


# ----------------------------------------------------------------------- hooks
def test_seed_hook_example(device):
    a = pg.tensor(2.0, device=device, requires_grad=True)
    b = pg.tensor(3.0, device=device, requires_grad=True)
    c = a * b
    d = pg.tensor(4.0, device=device, requires_grad=True)
    e = c * d
    seen = []

    def c_hook(grad):
        seen.append(grad.item())
        return grad + 2

    h = c.register_hook(c_hook)
    c.register_hook(lambda grad: seen.append(grad.item()))
    c.retain_grad()
    d.register_hook(lambda grad: grad + 100)
    e.retain_grad()
    e.register_hook(lambda grad: grad * 2)
    e.backward()
    assert seen == [8.0, 10.0]
    close(e.grad, 2.0)
    close(c.grad, 10.0)
    close(a.grad, 30.0)
    close(b.grad, 20.0)
    close(d.grad, 112.0)
    h.remove()


def test_hook_handles_and_order(device):
    x = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    order = []
    h1 = x.register_hook(lambda g: order.append(1))
    h2 = x.register_hook(lambda g: (order.append(2), g * 10)[1])
    x.register_hook(lambda g: order.append(("3 sees", g.tolist())))
    (x * 1).sum().backward()
    assert order == [1, 2, ("3 sees", [10.0, 10.0])]
    close(x.grad, [10, 10])  # leaf hooks run before accumulation
    order.clear()
    h2.remove()
    h2.remove()  # removing twice is harmless
    with h1:
        pass  # a handle is a context manager that removes the hook
    x.grad = None
    (x * 1).sum().backward()
    assert order == [("3 sees", [1.0, 1.0])]
    close(x.grad, [1, 1])
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        pg.ones(1, device=device).register_hook(lambda g: g)
    y = x * 2
    y.register_hook(lambda g: pg.ones(5, device=device))
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        y.sum().backward()


def test_retain_grad(device):
    x = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None
    y.retain_grad()
    assert y.retains_grad
    z = y * y
    z.retain_grad()  # retain_grad before the hook: still stores the hooked value (PyTorch 2.x)
    z.register_hook(lambda g: g * 3)
    z.sum().backward()
    close(z.grad, [3, 3])
    close(y.grad, [12, 24])
    close(x.grad, [24, 48])
    x.retain_grad()  # a no-op on leaves
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        pg.ones(1, device=device).retain_grad()


def test_hooks_and_retain_grad_across_inplace(device):
    # as torch 2.x: hooks registered before an in-place change see the gradient of the old value,
    # retain_grad follows the tensor to its new value
    a = pg.ones(3, device=device, requires_grad=True)
    b = a * 2
    b.retain_grad()
    seen = {}
    b.register_hook(lambda g: seen.__setitem__("old", g.tolist()))
    b.mul_(3)
    b.register_hook(lambda g: seen.__setitem__("new", g.tolist()))
    (b * 5).sum().backward()
    assert seen == {"old": [15.0] * 3, "new": [5.0] * 3}
    close(b.grad, [5.0] * 3)
    close(a.grad, [30.0] * 3)


# -------------------------------------------------------- gradient accumulation
def test_gradient_accumulation_equals_big_batch(device):
    gen = pg.Generator().manual_seed(0)
    x = pg.randn(8, 3, generator=gen).to(device)
    t = pg.randn(8, 2, generator=gen).to(device)
    w0 = pg.randn(3, 2, generator=gen).to(device)

    def loss_fn(w, xb, tb):
        return ((xb @ w - tb) ** 2).mean()

    w_big = w0.clone().requires_grad_()
    loss_fn(w_big, x, t).backward()

    steps = 4
    w_acc = w0.clone().requires_grad_()
    for i in range(steps):
        xb, tb = x[2 * i: 2 * i + 2], t[2 * i: 2 * i + 2]
        (loss_fn(w_acc, xb, tb) / steps).backward()
    close(w_acc.grad, w_big.grad.tolist(), tol=1e-5)
    # and an SGD step from the accumulated gradient equals the big-batch step
    with pg.no_grad():
        w_acc -= 0.1 * w_acc.grad
        w_big -= 0.1 * w_big.grad
    close(w_acc, w_big.tolist())
