"""The OpenCL backend's convolution and max-pool fast paths (``portagrad/backends/opencl/conv.py``)
against the numpy backend's, through the public API and by direct backend calls.

Runs on OpenCL devices only (the ``device`` fixture's other devices skip). Each comparison runs
twice: with the device's own kernel layout and with the GPU-style one forced (``ew_style =
"grid"``: one element per work-item and the per-element gather kernels), so the GPU kernels are
checked on PoCL too."""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.autograd import gradcheck
from portagrad.nn import _fused
from portagrad.nn import functional as _functional

METHODS = ("conv2d", "conv2d_grad_input", "conv2d_grad_weight", "max_pool2d",
           "max_pool2d_grad_input")


def _backend(device):
    return pg.empty(1, device=device)._storage.backend


@pytest.fixture(params=["native", "grid"])
def ocl(request, device, monkeypatch):
    """An OpenCL device (others skip), with its own kernel style or the GPU ("grid") style."""
    if pg.device(device).type != "opencl":
        pytest.skip("OpenCL-only test")
    if request.param == "grid":
        be = _backend(device)
        monkeypatch.setattr(be.device(pg.device(device).index or 0), "ew_style", "grid")
    return device


def _need_fp64(device):
    if not pg.opencl.get_device_properties(pg.device(device).index or 0).fp64:
        pytest.skip(f"{device} has no float64")


def _rand(shape, seed, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _on(arr, device, dtype, transposed=False):
    """``arr`` on ``device``; ``transposed``: as a non-contiguous (last two axes swapped) view."""
    if transposed:
        return pg.tensor(np.ascontiguousarray(arr.swapaxes(-1, -2)), dtype=dtype,
                         device=device).transpose(-1, -2)
    return pg.tensor(arr, dtype=dtype, device=device)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-4) if dtype == pg.float32 else dict(rtol=1e-12, atol=1e-12)


def test_opencl_backend_has_the_fast_paths(ocl):
    from portagrad.backends.opencl.conv import ConvMixin

    be = _backend(ocl)
    for name in METHODS:
        assert getattr(be, name, None) is not None
        assert getattr(type(be), name) is getattr(ConvMixin, name)
    x = pg.randn(1, 1, 4, 4, device=ocl)
    assert _fused.conv_fast_path(x) and _functional._max_pool_fast_path(x)


# ------------------------------------------------------------------ convolution
CONV_CASES = [
    # (N, C, H, W, O, kernel, stride, padding, dilation, groups)
    (1, 3, 7, 9, 4, (3, 3), 1, 1, 1, 1),
    (3, 3, 7, 9, 4, (3, 3), 2, 0, 1, 1),
    (3, 4, 9, 7, 6, (2, 5), 1, (2, 1), 1, 2),
    (1, 4, 9, 7, 6, (2, 5), 2, 1, 2, 2),
    (3, 6, 7, 7, 6, (3, 3), 1, 1, 1, 6),  # depthwise
    (3, 4, 9, 9, 8, (3, 3), 2, (2, 1), 2, 4),  # depthwise, channel multiplier 2
    (3, 5, 5, 7, 3, (1, 1), 1, 0, 1, 1),
    (1, 4, 5, 7, 4, (1, 1), 2, 0, 1, 2),
    (3, 2, 9, 11, 5, (2, 5), 2, (2, 1), 2, 1),
    (3, 2, 6, 6, 3, (4, 2), 1, "same", 1, 1),  # even kernel: more padding after than before
]


def _conv_run(device, case, dtype, transposed, seed=0):
    N, C, H, W, O, k, s, p, d, groups = case
    xn = _rand((N, C, H, W), seed)
    wn = _rand((O, C // groups) + k, seed + 1)
    bn = _rand((O,), seed + 2)
    x = _on(xn, device, dtype, transposed).requires_grad_()
    w = _on(wn, device, dtype).requires_grad_()
    b = _on(bn, device, dtype).requires_grad_()
    out = F.conv2d(x, w, b, s, p, d, groups)
    r = _on(_rand(tuple(out.shape), seed + 3), device, dtype)
    (out * r).sum().backward()
    return [t.detach().cpu().numpy() for t in (out, x.grad, w.grad, b.grad)]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=["f32", "f64"])
def test_conv2d_matches_numpy_backend(ocl, case, dtype):
    if dtype == pg.float64:
        _need_fp64(ocl)
    transposed = case[0] == 3  # batched cases read a non-contiguous input
    got = _conv_run(ocl, case, dtype, transposed)
    want = _conv_run("cpu", case, dtype, transposed)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, **_tol(dtype))


@pytest.mark.parametrize("stride,padding,dilation,groups",
                         [(1, 1, 1, 1), (2, 2, 2, 2), (3, 0, 1, 4)])
def test_conv1d_matches_numpy_backend(ocl, stride, padding, dilation, groups):
    _need_fp64(ocl)
    def run(device):
        x = _on(_rand((3, 4, 13), 5), device, pg.float64).requires_grad_()
        w = _on(_rand((8, 4 // groups, 3), 6), device, pg.float64).requires_grad_()
        out = F.conv1d(x, w, None, stride, padding, dilation, groups)
        (out * out).sum().backward()
        return [t.detach().cpu().numpy() for t in (out, x.grad, w.grad)]

    for g, w in zip(run(ocl), run("cpu")):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_conv2d_empty_batch(ocl):
    x = pg.randn(0, 4, 5, 5, device=ocl, requires_grad=True)
    w = pg.randn(6, 2, 3, 3, device=ocl, requires_grad=True)
    out = F.conv2d(x, w, None, 1, 1, 1, 2)
    assert out.shape == (0, 6, 5, 5)
    out.sum().backward()
    assert x.grad.shape == (0, 4, 5, 5)
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.zeros((6, 2, 3, 3), np.float32))


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_gradcheck(ocl, groups):
    _need_fp64(ocl)
    pg.manual_seed(11)
    x = pg.randn(2, 4, 5, 6, dtype=pg.float64, device=ocl, requires_grad=True)
    w = pg.randn(4, 4 // groups, 3, 2, dtype=pg.float64, device=ocl, requires_grad=True)
    b = pg.randn(4, dtype=pg.float64, device=ocl, requires_grad=True)
    assert gradcheck(lambda a, k, c: F.conv2d(a, k, c, (2, 1), (1, 0), (1, 2), groups), (x, w, b))


# ------------------------------------------------------------------ direct backend calls
def _view(device, arr, strided):
    """A backend View of ``arr`` on ``device``; ``strided``: a non-contiguous view at an offset."""
    if not strided:
        return pg.tensor(arr, device=device)._v
    big = np.zeros(arr.shape[:-1] + (arr.shape[-1] + 3,), arr.dtype)
    big[..., 1:1 + arr.shape[-1]] = arr
    t = pg.tensor(np.ascontiguousarray(big.swapaxes(0, 1)), device=device).transpose(0, 1)
    return t[..., 1:1 + arr.shape[-1]]._v


def _empty(device, shape, dtype, strided):
    """A View filled with 7 (the methods must overwrite it); ``strided``: a non-contiguous one."""
    if not strided:
        return pg.full(shape, 7.0, dtype=dtype, device=device)._v
    t = pg.full(shape[:-1] + (shape[-1] + 2,), 7.0, dtype=dtype, device=device)
    return t[..., 1:1 + shape[-1]]._v


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", [CONV_CASES[2], CONV_CASES[5], CONV_CASES[8]],
                         ids=["groups", "depthwise", "dilated"])
def test_conv_methods_on_strided_views(ocl, case, strided):
    """The contract allows strided inputs (and this backend accepts strided outputs too)."""
    _need_fp64(ocl)
    N, C, H, W, O, k, s, p, d, groups = case
    s, p, d = (s, s), (p, p) if isinstance(p, int) else p, (d, d)
    OH = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    OW = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    xn, wn = _rand((N, C, H, W), 1), _rand((O, C // groups) + k, 2)
    gn = _rand((N, O, OH, OW), 3)
    res = {}
    for dev in (ocl, "cpu"):
        be = _backend(dev)
        x, w, g = (_view(dev, a, strided) for a in (xn, wn, gn))
        out = _empty(dev, (N, O, OH, OW), pg.float64, strided)
        gx = _empty(dev, (N, C, H, W), pg.float64, strided)
        gw = _empty(dev, (O, C // groups) + k, pg.float64, strided)
        be.conv2d(x, w, out, s, p, d, groups)
        be.conv2d_grad_input(g, w, gx, s, p, d, groups)
        be.conv2d_grad_weight(x, g, gw, s, p, d, groups)
        res[dev] = [be.to_host(v) for v in (out, gx, gw)]
    for a, b in zip(res[ocl], res["cpu"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ max pooling
POOL_CASES = [
    # (H, W, kernel, stride, padding, dilation, ceil_mode)
    (8, 8, (2, 2), (2, 2), (0, 0), (1, 1), False),
    (7, 9, (3, 3), (2, 2), (1, 1), (1, 1), False),
    (7, 9, (3, 3), (1, 1), (1, 1), (1, 1), False),  # overlapping windows
    (9, 7, (3, 3), (2, 2), (1, 1), (2, 2), True),
    (7, 5, (2, 3), (1, 2), (1, 1), (1, 1), True),
    (5, 5, (2, 2), (2, 2), (0, 0), (1, 1), True),  # a last window half outside
    (9, 11, (2, 5), (3, 2), (1, 2), (1, 1), True),
]


def _pool_input(kind, shape, seed):
    rng = np.random.default_rng(seed)
    if kind == "ties":  # few distinct values: many ties in every window
        return rng.integers(0, 3, shape).astype(np.float64)
    x = rng.standard_normal(shape)
    if kind == "nan":  # NaN in some windows, sometimes several in one
        x[rng.random(shape) < 0.15] = np.nan
    elif kind == "-inf":  # whole regions of -inf: windows of only -inf (and padding)
        x[rng.random(shape) < 0.6] = -np.inf
    return x


def _pool_run(device, xn, case, dtype):
    H, W, k, s, p, d, cm = case
    x = _on(xn, device, dtype).requires_grad_()
    out, ind = F.max_pool2d(x, k, s, p, d, cm, return_indices=True)
    r = _on(_rand(tuple(out.shape), 4), device, dtype)
    (out * r).sum().backward()
    return out.detach().cpu().numpy(), ind.cpu().numpy(), x.grad.cpu().numpy()


@pytest.mark.parametrize("case", POOL_CASES, ids=[str(i) for i in range(len(POOL_CASES))])
@pytest.mark.parametrize("kind", ["randn", "ties", "nan", "-inf"])
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=["f32", "f64"])
def test_max_pool2d_matches_numpy_backend(ocl, case, kind, dtype):
    if dtype == pg.float64:
        _need_fp64(ocl)
    xn = _pool_input(kind, (3, 2, case[0], case[1]), 7)
    (o, i, g), (wo, wi, wg) = _pool_run(ocl, xn, case, dtype), _pool_run("cpu", xn, case, dtype)
    np.testing.assert_array_equal(o, wo)  # NaN where NaN
    np.testing.assert_array_equal(i, wi)
    np.testing.assert_allclose(g, wg, **_tol(dtype))


def test_max_pool2d_rules(ocl):
    """PyTorch's rules by hand: the first maximum wins ties, the last NaN is pointed at, a window
    of only -inf points at its first position inside the input."""
    _need_fp64(ocl)
    nan, inf = math.nan, math.inf
    xn = np.array([[[[1., 1., nan, 2.],
                     [nan, 0., 3., nan],
                     [-inf, -inf, 2., 2.],
                     [-inf, -inf, 2., 2.]]]])
    x = pg.tensor(xn, device=ocl)
    out, ind = F.max_pool2d(x, 2, 2, return_indices=True)
    np.testing.assert_array_equal(out.cpu().numpy(), [[[[nan, nan], [-inf, 2.]]]])
    np.testing.assert_array_equal(ind.cpu().numpy(), [[[[4, 7], [8, 10]]]])
    out, ind = F.max_pool2d(x, 2, 2, 1, return_indices=True)  # padding: corners are 1 element
    np.testing.assert_array_equal(ind.cpu().numpy()[0, 0], [[0, 2, 3], [4, 6, 7], [12, 14, 15]])


def test_max_pool1d_and_empty(ocl):
    _need_fp64(ocl)
    x = _on(_rand((2, 3, 11), 8), ocl, pg.float64).requires_grad_()
    out, ind = F.max_pool1d(x, 3, 2, 1, return_indices=True, ceil_mode=True)
    out.sum().backward()
    xc = x.detach().cpu().requires_grad_()
    outc, indc = F.max_pool1d(xc, 3, 2, 1, return_indices=True, ceil_mode=True)
    outc.sum().backward()
    np.testing.assert_array_equal(out.detach().cpu().numpy(), outc.detach().numpy())
    np.testing.assert_array_equal(ind.cpu().numpy(), indc.numpy())
    np.testing.assert_array_equal(x.grad.cpu().numpy(), xc.grad.numpy())
    e = pg.randn(0, 3, 6, 6, device=ocl, requires_grad=True)
    out = F.max_pool2d(e, 2)
    assert out.shape == (0, 3, 3, 3)
    out.sum().backward()
    assert e.grad.shape == (0, 3, 6, 6)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_max_pool_methods_on_strided_views(ocl, strided):
    _need_fp64(ocl)
    N, C, H, W, k, s, p, d = 2, 3, 9, 8, (3, 2), (2, 1), (1, 1), (1, 2)
    OH, OW = 5, 6
    xn, gn = _pool_input("ties", (N, C, H, W), 9), _rand((N, C, OH, OW), 10)
    res = {}
    for dev in (ocl, "cpu"):
        be = _backend(dev)
        x, g = _view(dev, xn, strided), _view(dev, gn, strided)
        out = _empty(dev, (N, C, OH, OW), pg.float64, strided)
        ind = _empty(dev, (N, C, OH, OW), pg.int64, strided)
        gx = _empty(dev, (N, C, H, W), pg.float64, strided)
        be.max_pool2d(x, out, ind, k, s, p, d)
        be.max_pool2d_grad_input(g, ind, gx, k, s, p, d)
        res[dev] = [be.to_host(v) for v in (out, ind, gx)]
    for a, b in zip(res[ocl], res["cpu"]):
        np.testing.assert_array_equal(a, b)


def test_max_pool2d_gradcheck(ocl):
    _need_fp64(ocl)
    pg.manual_seed(12)
    x = pg.randn(2, 3, 7, 6, dtype=pg.float64, device=ocl, requires_grad=True)
    assert gradcheck(lambda a: F.max_pool2d(a, 3, 2, 1, 1, True), (x,))
    assert gradcheck(lambda a: F.max_pool2d(a, 2, 1), (x,))  # overlapping windows
