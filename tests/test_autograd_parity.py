"""Autograd engine behaviours checked against PyTorch 2.x (expected values are torch's, written
out): repeated and non-leaf ``grad`` inputs, only the nodes on a path to an input running,
tensor-hook result checks, ``is_grads_batched``, ``GradientEdge`` inputs, new-style custom
Functions (``setup_context``) and non-tensor Function outputs."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import grad
from portagrad.autograd.graph import get_gradient_edge


def _x(device, **kw):
    return pg.tensor([1.0, 2.0, 3.0], dtype=pg.float64, device=device, **kw)


def _eq(t, expected):
    assert t is not None
    np.testing.assert_allclose(t.detach().cpu().numpy(), np.asarray(expected, dtype=np.float64))


# ------------------------------------------------------------------- repeated inputs
def test_grad_input_listed_twice_gets_its_gradient_in_both_slots(device):
    x = _x(device, requires_grad=True)
    gx1, gx2 = grad((x ** 2).sum(), [x, x], allow_unused=True)
    _eq(gx1, [2, 4, 6])
    _eq(gx2, [2, 4, 6])
    gx1, gx2 = grad((x ** 2).sum(), [x, x])  # no "not been used" error
    _eq(gx1, [2, 4, 6])
    _eq(gx2, [2, 4, 6])


def test_grad_repeated_non_leaf_input(device):
    x = _x(device, requires_grad=True)
    y = x * 2
    g1, gx, g2 = grad((y * y).sum(), [y, x, y])
    _eq(g1, [4, 8, 12])
    _eq(g2, [4, 8, 12])
    _eq(gx, [8, 16, 24])


# ------------------------------------------------------------------- only the needed nodes run
def test_grad_does_not_run_hooks_off_the_path_to_the_inputs(device):
    x = _x(device, requires_grad=True)
    w = _x(device, requires_grad=True)
    a = x.exp()
    a.retain_grad()
    log = []
    a.register_hook(lambda g: log.append("tensor"))
    a.grad_fn.register_prehook(lambda go: log.append("pre"))
    a.grad_fn.register_hook(lambda gi, go: log.append("post"))
    (gw,) = grad((a * w).sum(), w)
    np.testing.assert_allclose(gw.cpu().numpy(), np.exp([1.0, 2.0, 3.0]))
    assert a.grad is None
    assert log == []


def test_backward_inputs_does_not_run_hooks_off_the_path(device):
    x = _x(device, requires_grad=True)
    w = _x(device, requires_grad=True)
    a = x.exp()
    a.retain_grad()
    log = []
    a.register_hook(lambda g: log.append("tensor"))
    (a * w).sum().backward(inputs=[w])
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.exp([1.0, 2.0, 3.0]))
    assert x.grad is None
    assert a.grad is None
    assert log == []


def test_grad_wrt_non_leaf_leaves_its_grad_fn_alone(device):
    x = _x(device, requires_grad=True)
    y = x ** 2
    (g,) = grad(y.sum(), y)
    _eq(g, [1, 1, 1])
    (gx,) = grad(y, x, g)  # y's grad_fn was not run, so not freed
    _eq(gx, [2, 4, 6])


def test_grad_wrt_non_leaf_runs_its_tensor_hooks_and_retain_grad(device):
    x = _x(device, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    (g,) = grad((y * y).sum(), [y])
    _eq(g, [40, 80, 120])
    _eq(y.grad, [40, 80, 120])


# ------------------------------------------------------------------- tensor hook results
def test_hook_changing_dtype_raises(device):
    x = _x(device, requires_grad=True)

    def h(g):
        return g.float()

    x.register_hook(h)
    with pytest.raises(RuntimeError, match=r"hook 'h' has changed the type of value \(was "
                                           r"portagrad.DoubleTensor got portagrad.FloatTensor\)"):
        (x * 2).sum().backward()


def test_hook_changing_dtype_on_non_leaf_raises(device):
    x = _x(device, requires_grad=True)
    y = x * 1
    y.register_hook(lambda g: g.float())
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the type of value"):
        (y * 2).sum().backward()


def test_hook_returning_a_non_tensor_raises_type_error(device):
    x = _x(device, requires_grad=True)
    x.register_hook(lambda g: 5)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        (x * 2).sum().backward()


# ------------------------------------------------------------------- grad() arguments
def test_grad_is_grads_batched(device):
    x = _x(device, requires_grad=True)
    w = pg.ones(3, dtype=pg.float64, device=device, requires_grad=True)
    eye = pg.eye(3, dtype=pg.float64, device=device)
    (g,) = grad(x * 2, x, eye, is_grads_batched=True)
    _eq(g, np.eye(3) * 2)
    y = x ** 2
    (g,) = grad(y, x, eye, is_grads_batched=True, retain_graph=True)
    _eq(g, np.diag([2.0, 4.0, 6.0]))
    (g,) = grad(y, x, pg.ones(3, dtype=pg.float64, device=device), retain_graph=True)  # kept
    _eq(g, [2, 4, 6])
    (g,) = grad(y, x, eye, is_grads_batched=True)  # the graph is freed afterwards
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        grad(y, x, pg.ones(3, dtype=pg.float64, device=device))
    gx, gw = grad(x * 2, [x, w], eye, is_grads_batched=True, allow_unused=True)
    _eq(gx, np.eye(3) * 2)
    assert gw is None
    gx, gw = grad(x * 2, [x, w], eye, is_grads_batched=True, materialize_grads=True)
    _eq(gw, [0, 0, 0])  # (torch: not batched)
    (g,) = grad((x * 2).sum(), x, pg.ones(4, dtype=pg.float64, device=device),
                is_grads_batched=True)
    _eq(g, np.full((4, 3), 2.0))
    with pytest.raises(RuntimeError, match="interpret the first dimension of each grad_output"):
        grad(x * 2, x, pg.ones(3, dtype=pg.float64, device=device), is_grads_batched=True)


def test_grad_with_no_inputs_raises(device):
    x = _x(device, requires_grad=True)
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty."):
        grad(x.sum(), [])
    with pytest.raises(RuntimeError, match="cannot be empty"):
        grad(x.sum(), ())


def test_grad_accepts_gradient_edges(device):
    x = _x(device, requires_grad=True)
    y = x.exp()
    (g,) = grad((y * 2).sum(), get_gradient_edge(y))
    _eq(g, [2, 2, 2])
    y = x.exp()
    ge, gx = grad((y * 2).sum(), [get_gradient_edge(y), x])
    _eq(ge, [2, 2, 2])
    np.testing.assert_allclose(gx.cpu().numpy(), 2 * np.exp([1.0, 2.0, 3.0]))
    (g,) = grad((x * 2).sum(), get_gradient_edge(x))  # a leaf's edge
    _eq(g, [2, 2, 2])
    w = _x(device, requires_grad=True)
    y = x.exp()
    (g,) = grad((w * 2).sum(), [get_gradient_edge(y)], materialize_grads=True)
    _eq(g, [0, 0, 0])


def test_inference_mode_mode_keyword():
    with pg.inference_mode(mode=False):
        assert not pg.is_inference_mode_enabled()
    with pg.inference_mode(mode=True):
        assert pg.is_inference_mode_enabled()
    assert isinstance(pg.inference_mode(mode=False), pg.inference_mode)


# ------------------------------------------------------------------- custom Functions
def test_function_non_tensor_output_gets_no_gradient(device):
    seen = []

    class F(pg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3, 5, x * 2

        @staticmethod
        def backward(ctx, g, g2, g3):
            seen.append((g2, g3))
            return g * 3

    x = _x(device, requires_grad=True)
    y, n, z = F.apply(x)
    assert n == 5
    y.sum().backward()
    _eq(x.grad, [3, 3, 3])
    assert seen[0][0] is None
    _eq(seen[0][1], [0, 0, 0])  # an unused tensor output is zero-filled


def test_function_setup_context(device):
    calls = []

    class F(pg.autograd.Function):
        @staticmethod
        def forward(x, k=2):
            return x * k, 7

        @staticmethod
        def setup_context(ctx, inputs, output):
            calls.append((len(inputs), inputs[1], type(output)))
            ctx.save_for_backward(inputs[0])
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g, g2):
            (x,) = ctx.saved_tensors
            assert g2 is None
            return g * ctx.k, None

    x = _x(device, requires_grad=True)
    y, n = F.apply(x)
    assert n == 7
    assert y.grad_fn.name() == "FBackward"
    assert calls == [(2, 2, tuple)]
    y.sum().backward()
    _eq(x.grad, [2, 2, 2])
    with pg.no_grad():
        y, _ = F.apply(x, k=3)
    assert y.grad_fn is None
    _eq(y, [3, 6, 9])
    assert len(calls) == 2  # setup_context runs without grad too (torch)


def test_save_for_backward_of_a_non_tensor_raises_type_error(device):
    class F(pg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but "
                                        "argument 1 is of type int"):
        F.apply(_x(device, requires_grad=True))


def test_legacy_function_call_raises(device):
    class F(pg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward "
                                           "method is deprecated"):
        F()(_x(device, requires_grad=True))


def test_grad_input_whose_node_runs_is_captured_before_its_hooks(device):
    x = _x(device, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    gy, gx = grad((y * y).sum(), [y, x])
    _eq(gy, [4, 8, 12])  # torch: the gradient as it arrives at y
    _eq(gx, [80, 160, 240])  # the hook's result flows on
