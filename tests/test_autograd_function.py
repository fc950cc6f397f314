"""Custom ``autograd.Function``, gradcheck/gradgradcheck and anomaly detection."""
from __future__ import annotations

import warnings

import pytest

import portagrad as pg
from portagrad.autograd import Function

from test_autograd_graph import close


class ScaledMul(Function):
    """(a, k, b) -> (a + b) * k, a * b, and non-differentiable indices."""

    @staticmethod
    def forward(ctx, a, k, b):
        ctx.save_for_backward(a, b)
        ctx.k = k
        idx = pg.tensor([0, 1], device=a.device)
        ctx.mark_non_differentiable(idx)
        return (a + b) * k, a * b, idx

    @staticmethod
    def backward(ctx, g_sum, g_prod, g_idx):
        a, b = ctx.saved_tensors
        ScaledMul.seen_needs = ctx.needs_input_grad
        ga = g_sum * ctx.k + g_prod * b
        gb = g_sum * ctx.k + g_prod * a if ctx.needs_input_grad[2] else None
        return ga, None, gb


def test_custom_function_multiple_outputs(device):
    a = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    b = pg.tensor([3.0, 4.0], device=device)
    s, p, idx = ScaledMul.apply(a, 5.0, b)
    assert s.grad_fn is p.grad_fn and s.grad_fn.name() == "ScaledMulBackward"
    assert not idx.requires_grad
    (s.sum() + p.sum()).backward()
    assert ScaledMul.seen_needs == (True, False, False)
    close(a.grad, [5 + 3, 5 + 4])
    b2 = pg.tensor([3.0, 4.0], device=device, requires_grad=True)
    s, p, _ = ScaledMul.apply(a, 2.0, b2)
    (s * p).sum().backward()  # both outputs in one graph
    assert ScaledMul.seen_needs == (True, False, True)
    # (a+b)*k*a*b: d/db = k*a*b + (a+b)*k*a
    close(b2.grad, [2 * 3 + 4 * 2, 2 * 8 + 6 * 4])
    # without inputs that require grad nothing is recorded
    s, _, _ = ScaledMul.apply(b, 2.0, b)
    assert s.grad_fn is None and not s.requires_grad


def test_custom_function_gradcheck(device):
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x  # written with ops: differentiable again

    x = pg.tensor([0.5, -1.5, 2.0], dtype=pg.float64, device=device, requires_grad=True)
    assert pg.autograd.gradcheck(Cube.apply, (x,))
    assert pg.autograd.gradgradcheck(Cube.apply, (x,))


def test_function_saved_tensor_version_check(device):
    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    a = pg.ones(2, device=device, requires_grad=True)
    h = a * 1
    out = Sq.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; "
                                           "expected version 0 instead"):
        out.sum().backward()


def test_mark_dirty(device):
    class Double_(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    c = a * 1
    d = Double_.apply(c)
    assert d is c and c.grad_fn.name() == "Double_Backward" and c._version == 1
    (d * d).sum().backward()
    close(a.grad, [8, 16])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        Double_.apply(pg.ones(1, device=device, requires_grad=True))


def test_set_materialize_grads_and_none_grads(device):
    got = {}

    class Two(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got["g2"] = g2
            return g1, None  # None for the non-tensor argument

    a = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    o1, _ = Two.apply(a, False)
    o1.sum().backward()
    assert got["g2"] is None
    close(a.grad, [1, 1])
    o1, _ = Two.apply(a, True)
    o1.sum().backward()
    close(got["g2"], [0, 0])


def test_function_returning_input_and_bad_gradients(device):
    class Same(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    a = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = Same.apply(a)
    assert y is not a and y.grad_fn.name() == "SameBackward" and a.is_leaf
    y.sum().backward()
    close(a.grad, [3, 3])

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return pg.ones(5, device=g.device)

    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0 - got \\[5\\] "
                                           "but expected shape compatible with \\[2\\]"):
        BadShape.apply(a).sum().backward()

    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        TooMany.apply(a).sum().backward()


def test_once_differentiable(device):
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @pg.autograd.once_differentiable
        def backward(ctx, g):
            return g * 2

    x = pg.ones(2, device=device, requires_grad=True)
    (g,) = pg.autograd.grad(F.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad


# ----------------------------------------------------------------- gradcheck
def test_gradcheck_reports_jacobians(device):
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g

    x = pg.tensor([1.0, 2.0], dtype=pg.float64, device=device, requires_grad=True)
    with pytest.raises(pg.autograd.GradcheckError) as info:
        pg.autograd.gradcheck(Wrong.apply, (x,))
    msg = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 0" in msg
    assert "numerical:" in msg and "analytical:" in msg and "4." in msg
    assert pg.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False
    assert isinstance(info.value, RuntimeError)


def test_gradcheck_defaults_and_ops(device):
    import inspect

    sig = inspect.signature(pg.autograd.gradcheck)
    assert (sig.parameters["eps"].default, sig.parameters["atol"].default,
            sig.parameters["rtol"].default) == (1e-6, 1e-5, 1e-3)
    a = pg.tensor([[0.3, -0.2], [1.1, 0.4]], dtype=pg.float64, device=device, requires_grad=True)
    b = pg.tensor([[0.5], [-0.7]], dtype=pg.float64, device=device, requires_grad=True)
    assert pg.autograd.gradcheck(lambda a, b: ((a @ b).tanh() * a).sum(1), (a, b))
    assert pg.autograd.gradgradcheck(lambda a, b: (a @ b).sigmoid(), (a, b))
    with pytest.warns(UserWarning, match="not a double precision"):
        pg.autograd.gradcheck(lambda t: t * 2, (pg.ones(2, device=device, requires_grad=True),),
                              atol=1e-2, rtol=1e-2, eps=1e-3)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        pg.autograd.gradcheck(lambda t: t * 2, (pg.ones(2, dtype=pg.float64, device=device),))


# ------------------------------------------------------------ anomaly detection
def test_detect_anomaly_nan(device):
    a = pg.tensor([-1.0, 1.0], device=device, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pg.autograd.detect_anomaly():
            assert pg.autograd.is_anomaly_enabled()
            b = a.sqrt()
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in "
                                                   "its 0th output."):
                b.sum().backward()
    assert not pg.autograd.is_anomaly_enabled()
    msgs = [str(m.message) for m in w]
    assert any("Error detected in SqrtBackward0" in m and "b = a.sqrt()" in m for m in msgs)
    # check_nan=False: no NaN check
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pg.autograd.detect_anomaly(check_nan=False):
            a.sqrt().sum().backward()


def test_detect_anomaly_points_at_forward(device):
    a = pg.ones(2, device=device, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pg.autograd.set_detect_anomaly(True)
        try:
            b = a * 2
            c = b * b  # the op whose backward fails
            b.add_(1)
            with pytest.raises(RuntimeError, match="backtrace further above"):
                c.sum().backward()
        finally:
            pg.autograd.set_detect_anomaly(False)
    msg = next(str(m.message) for m in w if "Error detected in" in str(m.message))
    assert msg.startswith("Error detected in MulBackward0")
    assert "c = b * b" in msg
    assert "portagrad/_ops" not in msg  # the user's frames, not ours
    assert not pg.autograd.is_anomaly_enabled()
