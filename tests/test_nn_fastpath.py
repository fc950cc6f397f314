"""Backend fast paths for convolution and max pooling (``conv2d``, ``conv2d_grad_input``,
``conv2d_grad_weight``, ``max_pool2d``, ``max_pool2d_grad_input``; see backends/interface.py).

Where a backend has them (the numpy backend) the results must equal the composition from required
primitives (which every other backend uses): values, first and second derivatives. Max pooling
follows PyTorch: gradient to the first maximum of each window, ``-inf`` padding, ``ceil_mode``,
flat ``h * W + w`` indices."""
import itertools
import math

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.autograd import gradcheck, gradgradcheck
from portagrad._ops.nn import conv as conv_node
from portagrad._ops.nn import pool as pool_node

CONV_METHODS = ("conv2d", "conv2d_grad_input", "conv2d_grad_weight")
POOL_METHODS = ("max_pool2d", "max_pool2d_grad_input")


def _has(device, names):
    be = pg.empty(1, device=device)._storage.backend
    return all(getattr(be, n, None) is not None for n in names)


@pytest.fixture
def composed(monkeypatch):
    """A context switch: inside ``with composed():`` the fast paths are not used."""
    import contextlib

    @contextlib.contextmanager
    def ctx():
        with monkeypatch.context() as m:
            m.setattr(conv_node, "conv_fast_path", lambda x: False)
            m.setattr(pool_node, "max_pool_fast_path", lambda x: False)
            yield

    return ctx


def _grads(f, inputs, create_graph=False):
    """Output, and the gradients of sum(out * r) for a fixed random r (plus, with create_graph,
    the gradients of the sum of squared first gradients)."""
    out = f(*inputs)
    r = pg.from_numpy(np.random.default_rng(7).standard_normal(tuple(out.shape))).to(
        device=out.device, dtype=out.dtype)
    gs = pg.autograd.grad((out * r).sum(), inputs, create_graph=create_graph)
    res = [out.detach().cpu().numpy()] + [g.detach().cpu().numpy() for g in gs]
    if create_graph:
        tot = sum((g * g).sum() for g in gs)
        res += [g.detach().cpu().numpy() for g in pg.autograd.grad(tot, inputs, allow_unused=True)
                if g is not None]
    return res


CONV_CASES = [
    # (N, C, H, W, O, k, stride, padding, dilation, groups, bias)
    (2, 3, 6, 5, 4, (3, 2), 1, 1, 1, 1, True),
    (3, 4, 7, 6, 6, (3, 3), (2, 1), (0, 2), (1, 2), 2, False),
    (1, 2, 5, 5, 2, (2, 2), (2, 3), (1, 0), (2, 1), 2, True),
    (2, 6, 9, 7, 6, (3, 3), 2, 1, 1, 6, True),  # depthwise
    (2, 3, 5, 8, 5, (1, 1), 1, 0, 1, 1, True),  # 1x1
    (2, 2, 6, 6, 3, (4, 2), 1, "same", 1, 1, False),  # even kernel: asymmetric padding
    (1, 1, 3, 3, 1, (3, 3), 1, 0, 1, 1, True),  # output 1x1
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_fast_matches_composition(device, composed, case):
    N, C, H, W, O, k, s, p, d, groups, bias = case
    pg.manual_seed(3)
    x = pg.randn(N, C, H, W, dtype=pg.float64, device=device, requires_grad=True)
    w = pg.randn(O, C // groups, *k, dtype=pg.float64, device=device, requires_grad=True)
    b = pg.randn(O, dtype=pg.float64, device=device, requires_grad=True) if bias else None
    inputs = (x, w) + ((b,) if bias else ())
    f = lambda a, kk, *bb: F.conv2d(a, kk, bb[0] if bb else None, s, p, d, groups)  # noqa: E731
    fast = _grads(f, inputs, create_graph=True)
    with composed():
        ref = _grads(f, inputs, create_graph=True)
    assert len(fast) == len(ref)
    for a, r in zip(fast, ref):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-11)
    if groups == 1 or _has(device, CONV_METHODS):
        assert f(*inputs).grad_fn.name() == "ConvolutionBackward0"


@pytest.mark.parametrize("case", CONV_CASES[:3])
def test_conv2d_fast_gradcheck(device, case):
    N, C, H, W, O, k, s, p, d, groups, bias = case
    pg.manual_seed(4)
    x = pg.randn(N, C, H, W, dtype=pg.float64, device=device, requires_grad=True)
    w = pg.randn(O, C // groups, *k, dtype=pg.float64, device=device, requires_grad=True)
    b = pg.randn(O, dtype=pg.float64, device=device, requires_grad=True)
    f = lambda a, kk, bb: F.conv2d(a, kk, bb, s, p, d, groups)  # noqa: E731
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


@pytest.mark.parametrize("stride,padding,dilation,groups",
                         [(1, 1, 1, 1), (2, 2, 2, 2), (3, 0, 1, 4)])
def test_conv1d_fast_matches_composition(device, composed, stride, padding, dilation, groups):
    pg.manual_seed(5)
    x = pg.randn(2, 4, 11, dtype=pg.float64, device=device, requires_grad=True)
    w = pg.randn(8, 4 // groups, 3, dtype=pg.float64, device=device, requires_grad=True)
    b = pg.randn(8, dtype=pg.float64, device=device, requires_grad=True)
    f = lambda a, kk, bb: F.conv1d(a, kk, bb, stride, padding, dilation, groups)  # noqa: E731
    fast = _grads(f, (x, w, b))
    with composed():
        ref = _grads(f, (x, w, b))
    for a, r in zip(fast, ref):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-11)
    assert gradcheck(f, (x, w, b))


def test_conv2d_fast_float32_and_no_grad(device, composed):
    pg.manual_seed(6)
    x = pg.randn(5, 3, 9, 7, device=device)
    w = pg.randn(4, 3, 3, 3, device=device)
    b = pg.randn(4, device=device)
    with pg.no_grad():
        out = F.conv2d(x, w, b, 2, 1)
        with composed():
            ref = F.conv2d(x, w, b, 2, 1)
    assert out.dtype == pg.float32 and out.shape == ref.shape == (5, 4, 5, 4)
    np.testing.assert_allclose(out.cpu().numpy(), ref.cpu().numpy(), rtol=1e-5, atol=1e-5)
    # non-contiguous input (a transposed view)
    xt = pg.randn(5, 3, 7, 9, device=device).transpose(2, 3)
    with pg.no_grad():
        out = F.conv2d(xt, w, b, 1, 1)
        with composed():
            ref = F.conv2d(xt, w, b, 1, 1)
    np.testing.assert_allclose(out.cpu().numpy(), ref.cpu().numpy(), rtol=1e-5, atol=1e-5)


def test_conv2d_fast_errors_still_checked(device):
    x = pg.randn(1, 2, 4, 4, device=device)
    with pytest.raises(RuntimeError, match="channels"):
        F.conv2d(x, pg.randn(3, 3, 3, 3, device=device))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        with pg.no_grad():
            F.conv2d(x, pg.randn(3, 2, 5, 5, device=device))
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv2d(x, pg.randn(3, 2, 3, 3, dtype=pg.float64, device=device))


def test_numpy_backend_has_fast_paths():
    assert _has("cpu", CONV_METHODS + POOL_METHODS)
    from portagrad.backends.interface import OPTIONAL_METHODS

    assert set(CONV_METHODS + POOL_METHODS) <= set(OPTIONAL_METHODS)


# ------------------------------------------------------------------ max pooling
def _max_pool_ref(x, k, s, p, d, ceil_mode):
    """Brute-force PyTorch semantics: -inf padding, strict > so the first maximum wins, NaN
    propagates (the last NaN wins), a window of only -inf points at its first valid position."""
    from portagrad._ops.nn.im2col import out_size

    N, C, H, W = x.shape
    OH = out_size(H, k[0], s[0], p[0], p[0], d[0], ceil_mode)
    OW = out_size(W, k[1], s[1], p[1], p[1], d[1], ceil_mode)
    vals = np.empty((N, C, OH, OW), x.dtype)
    ind = np.empty((N, C, OH, OW), np.int64)
    for n, c, oh, ow in itertools.product(range(N), range(C), range(OH), range(OW)):
        best, bi = -math.inf, None
        for i, j in itertools.product(range(k[0]), range(k[1])):
            h, w = oh * s[0] - p[0] + i * d[0], ow * s[1] - p[1] + j * d[1]
            if not (0 <= h < H and 0 <= w < W):
                continue
            v = x[n, c, h, w]
            if bi is None:
                bi = h * W + w
            if v > best or np.isnan(v):
                best, bi = v, h * W + w
        vals[n, c, oh, ow], ind[n, c, oh, ow] = best, bi
    return vals, ind


POOL_CASES = [
    # (H, W, kernel, stride, padding, dilation, ceil_mode)
    (8, 8, (2, 2), (2, 2), (0, 0), (1, 1), False),
    (7, 6, (3, 3), (2, 2), (1, 1), (1, 1), False),
    (7, 6, (3, 3), (1, 1), (1, 1), (1, 1), False),  # overlapping windows
    (7, 6, (3, 3), (2, 2), (1, 1), (2, 2), True),
    (7, 5, (2, 3), (1, 2), (1, 1), (1, 1), True),
    (5, 5, (2, 2), (2, 2), (0, 0), (1, 1), True),  # ceil_mode: a last window half outside
]


@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d_values_indices(device, composed, case):
    H, W, k, s, p, d, cm = case
    pg.manual_seed(8)
    x = pg.randn(2, 3, H, W, dtype=pg.float64, device=device, requires_grad=True)
    out, ind = F.max_pool2d(x, k, s, p, d, cm, return_indices=True)
    want, want_ind = _max_pool_ref(x.detach().cpu().numpy(), k, s, p, d, cm)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), want)
    np.testing.assert_array_equal(ind.cpu().numpy(), want_ind)
    assert ind.dtype == pg.int64 and not ind.requires_grad
    f = lambda a: F.max_pool2d(a, k, s, p, d, cm)  # noqa: E731
    fast = _grads(f, (x,))
    with composed():
        ref = _grads(f, (x,))
    for a, r in zip(fast, ref):
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_max_pool2d_ties_and_padding(device, composed):
    # ties: the first maximum (in window order) gets the gradient; overlapping windows sum
    xn = np.array([[[[1., 1., 2., 2., 0.],
                     [1., 0., 2., 2., 0.],
                     [3., 3., 3., 3., 3.],
                     [4., -math.inf, 5., 5., -math.inf],
                     [-math.inf, 2., 5., 5., 4.]]]])
    # (no window of only -inf here: there the composition's index may point at padding, see
    # test_max_pool2d_all_minus_inf_window)
    for k, s, p, cm in [(2, 2, 0, False), (2, 2, 1, False), (3, 1, 1, False), (2, 2, 0, True),
                        (3, 2, 1, True)]:
        x = pg.from_numpy(xn.copy()).to(device=device).requires_grad_()
        out, ind = F.max_pool2d(x, k, s, p, 1, cm, return_indices=True)
        want, want_ind = _max_pool_ref(xn, (k, k), (s, s), (p, p), (1, 1), cm)
        np.testing.assert_array_equal(out.detach().cpu().numpy(), want)
        np.testing.assert_array_equal(ind.cpu().numpy(), want_ind)
        out.sum().backward()
        gwant = np.zeros(xn.size)
        np.add.at(gwant, want_ind.ravel(), 1.0)
        np.testing.assert_array_equal(x.grad.cpu().numpy().ravel(), gwant)
        with composed():
            x2 = pg.from_numpy(xn.copy()).to(device=device).requires_grad_()
            F.max_pool2d(x2, k, s, p, 1, cm).sum().backward()
        np.testing.assert_array_equal(x2.grad.cpu().numpy(), x.grad.cpu().numpy())


def test_max_pool2d_all_minus_inf_window(device):
    # a window with only -inf (and padding) points at its first position inside the input
    xn = np.full((1, 1, 3, 3), -math.inf)
    x = pg.from_numpy(xn).to(device=device).requires_grad_()
    out, ind = F.max_pool2d(x, 2, 2, 1, return_indices=True)
    want, want_ind = _max_pool_ref(xn, (2, 2), (2, 2), (1, 1), (1, 1), False)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), want)
    if _has(device, POOL_METHODS):
        np.testing.assert_array_equal(ind.cpu().numpy(), want_ind)
        out.sum().backward()
        assert np.isfinite(x.grad.cpu().numpy()).all() and x.grad.sum().item() == 4


def test_max_pool2d_nan(device):
    xn = np.array([[[[1., np.nan, 2., 0.], [np.nan, 0., 2., 7.],
                     [0., 0., 1., 1.], [0., 0., 1., 1.]]]])
    x = pg.from_numpy(xn).to(device=device)
    for p in (0, 1):
        out, ind = F.max_pool2d(x, 2, 2, p, return_indices=True)
        want, want_ind = _max_pool_ref(xn, (2, 2), (2, 2), (p, p), (1, 1), False)
        np.testing.assert_array_equal(out.cpu().numpy(), want)  # NaN propagates everywhere
        got_ind = ind.cpu().numpy()
        if _has(device, POOL_METHODS):
            np.testing.assert_array_equal(got_ind, want_ind)  # PyTorch: the last NaN's index
        else:
            # the composition follows argmax (the first NaN): still a NaN position of the window
            flat = xn.reshape(-1)
            nan_windows = np.isnan(want.reshape(-1))
            assert np.isnan(flat[got_ind.reshape(-1)[nan_windows]]).all()
            np.testing.assert_array_equal(got_ind.reshape(-1)[~nan_windows],
                                          want_ind.reshape(-1)[~nan_windows])


@pytest.mark.parametrize("dtype", [pg.float32, pg.float64])
def test_max_pool_1d_unbatched_and_module(device, composed, dtype):
    pg.manual_seed(9)
    x = pg.randn(3, 10, dtype=dtype, device=device, requires_grad=True)  # unbatched (C, L)
    out, ind = F.max_pool1d(x, 3, 2, 1, return_indices=True)
    want, want_ind = _max_pool_ref(x.detach().cpu().numpy()[None, :, None, :], (1, 3), (1, 2),
                                   (0, 1), (1, 1), False)
    assert out.shape == (3, 5) and ind.shape == (3, 5)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), want[0, :, 0])
    np.testing.assert_array_equal(ind.cpu().numpy(), want_ind[0, :, 0])
    out.sum().backward()
    g = x.grad.cpu().numpy()
    with composed():
        x2 = x.detach().clone().requires_grad_()
        F.max_pool1d(x2, 3, 2, 1).sum().backward()
    np.testing.assert_array_equal(g, x2.grad.cpu().numpy())
    m = pg.nn.MaxPool2d(2).to(device)
    y = pg.randn(2, 4, 6, 6, dtype=dtype, device=device)
    np.testing.assert_array_equal(m(y).cpu().numpy(),
                                  _max_pool_ref(y.cpu().numpy(), (2, 2), (2, 2), (0, 0), (1, 1),
                                                False)[0])


def test_demo_model_step_matches_composition(device, composed):
    """One training step of the demo CNN: equal loss and gradients with and without fast paths."""
    from portagrad.demo import build_model

    def run():
        pg.manual_seed(10)
        model = build_model().to(device)
        x = pg.randn(16, 1, 8, 8, device=device)
        y = pg.randint(0, 10, (16,), device=device)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return [loss.item()] + [p.grad.cpu().numpy() for p in model.parameters()]

    fast = run()
    with composed():
        ref = run()
    np.testing.assert_allclose(fast[0], ref[0], rtol=1e-5)
    for a, r in zip(fast[1:], ref[1:]):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-5)


def test_conv_with_zero_input_channels_is_zero(device):
    # an empty sum: zeros out, empty gradients (the numpy fast path once failed to reshape)
    x = pg.zeros(2, 0, 5, 5, device=device, requires_grad=True)
    w = pg.zeros(3, 0, 3, 3, device=device, requires_grad=True)
    y = pg.nn.functional.conv2d(x, w)
    assert tuple(y.shape) == (2, 3, 3, 3)
    np.testing.assert_array_equal(y.detach().cpu().numpy(), np.zeros((2, 3, 3, 3), np.float32))
    y.sum().backward()
    assert tuple(x.grad.shape) == (2, 0, 5, 5) and tuple(w.grad.shape) == (3, 0, 3, 3)
