"""Checks of the optional convolution and max-pooling fast paths, shared by the kit's
``test_fast_paths`` and by backend-specific tests (which run them under their own settings, such
as another kernel layout).

Each check runs a case on ``device`` and on the ``cpu`` device (or the numpy reference backend for
direct method calls) and compares. Through the public API they also hold for a backend without the
fast paths (the core composes the operation then).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.autograd import gradcheck

from ._util import REF

__all__ = ["CONV_METHODS", "POOL_METHODS", "CONV_CASES", "POOL_CASES", "POOL_KINDS",
           "need_fp64", "check_conv2d_case", "check_conv1d", "check_conv2d_empty_batch",
           "check_conv2d_gradcheck", "check_conv_methods", "check_max_pool2d_case",
           "check_max_pool2d_rules", "check_max_pool1d_and_empty", "check_max_pool_methods",
           "check_max_pool2d_gradcheck"]

CONV_METHODS = ("conv2d", "conv2d_grad_input", "conv2d_grad_weight")
POOL_METHODS = ("max_pool2d", "max_pool2d_grad_input")


class NoFloat64(Exception):
    """The device has no float64 (callers skip)."""


def _backend(device: str) -> Any:
    return pg.empty(1, device=device)._storage.backend


def need_fp64(device: str) -> None:
    """Raise :class:`NoFloat64` when ``device`` has no float64."""
    dev = pg.device(device)
    if not _backend(device).get_device_properties(dev.index or 0).fp64:
        raise NoFloat64(f"{device} has no float64")


def _rand(shape: tuple, seed: int, dtype: Any = np.float64) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _on(arr: np.ndarray, device: str, dtype: Any, transposed: bool = False) -> Any:
    """``arr`` on ``device``; ``transposed``: as a non-contiguous (last two axes swapped) view."""
    if transposed:
        return pg.tensor(np.ascontiguousarray(arr.swapaxes(-1, -2)), dtype=dtype,
                         device=device).transpose(-1, -2)
    return pg.tensor(arr, dtype=dtype, device=device)


def _tol(dtype: Any) -> dict:
    return dict(rtol=1e-5, atol=1e-4) if dtype == pg.float32 else dict(rtol=1e-12, atol=1e-12)


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


def _conv_run(device: str, case: tuple, dtype: Any, transposed: bool, seed: int = 0) -> list:
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


def check_conv2d_case(device: str, case: tuple, dtype: Any) -> None:
    """``conv2d`` forward and all three gradients on ``device`` equal the cpu's."""
    if dtype == pg.float64:
        need_fp64(device)
    transposed = case[0] == 3  # batched cases read a non-contiguous input
    got = _conv_run(device, case, dtype, transposed)
    want = _conv_run("cpu", case, dtype, transposed)
    for name, g, w in zip(("output", "grad input", "grad weight", "grad bias"), got, want):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, err_msg=f"conv2d {case} {dtype}: {name}", **_tol(dtype))


def check_conv1d(device: str, stride: int, padding: int, dilation: int, groups: int) -> None:
    need_fp64(device)

    def run(dev: str) -> list:
        x = _on(_rand((3, 4, 13), 5), dev, pg.float64).requires_grad_()
        w = _on(_rand((8, 4 // groups, 3), 6), dev, pg.float64).requires_grad_()
        out = F.conv1d(x, w, None, stride, padding, dilation, groups)
        (out * out).sum().backward()
        return [t.detach().cpu().numpy() for t in (out, x.grad, w.grad)]

    for g, w in zip(run(device), run("cpu")):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def check_conv2d_empty_batch(device: str) -> None:
    x = pg.randn(0, 4, 5, 5, device=device, requires_grad=True)
    w = pg.randn(6, 2, 3, 3, device=device, requires_grad=True)
    out = F.conv2d(x, w, None, 1, 1, 1, 2)
    assert out.shape == (0, 6, 5, 5)
    out.sum().backward()
    assert x.grad is not None and w.grad is not None
    assert x.grad.shape == (0, 4, 5, 5)
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.zeros((6, 2, 3, 3), np.float32))


def check_conv2d_gradcheck(device: str, groups: int) -> None:
    need_fp64(device)
    pg.manual_seed(11)
    x = pg.randn(2, 4, 5, 6, dtype=pg.float64, device=device, requires_grad=True)
    w = pg.randn(4, 4 // groups, 3, 2, dtype=pg.float64, device=device, requires_grad=True)
    b = pg.randn(4, dtype=pg.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a, k, c: F.conv2d(a, k, c, (2, 1), (1, 0), (1, 2), groups), (x, w, b))


def _view(device: str, arr: np.ndarray, strided: bool) -> Any:
    """A backend View of ``arr`` on ``device``; ``strided``: a non-contiguous view at an offset."""
    if not strided:
        return pg.tensor(arr, device=device)._v
    big = np.zeros(arr.shape[:-1] + (arr.shape[-1] + 3,), arr.dtype)
    big[..., 1:1 + arr.shape[-1]] = arr
    t = pg.tensor(np.ascontiguousarray(big.swapaxes(0, 1)), device=device).transpose(0, 1)
    return t[..., 1:1 + arr.shape[-1]]._v


def _filled(device: str, shape: tuple, dtype: Any, strided: bool) -> Any:
    """A View filled with 7 (the methods must overwrite it); ``strided``: a non-contiguous one."""
    if not strided:
        return pg.full(shape, 7.0, dtype=dtype, device=device)._v
    t = pg.full(shape[:-1] + (shape[-1] + 2,), 7.0, dtype=dtype, device=device)
    return t[..., 1:1 + shape[-1]]._v


def check_conv_methods(device: str, case: tuple, strided: bool) -> None:
    """The three convolution methods called directly (strided inputs are allowed by the contract;
    strided outputs only when ``strided``, which built-in backends accept) against the numpy
    backend's."""
    need_fp64(device)
    N, C, H, W, O, k, s, p, d, groups = case
    s, p, d = (s, s), (p, p) if isinstance(p, int) else p, (d, d)
    OH = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    OW = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    xn, wn = _rand((N, C, H, W), 1), _rand((O, C // groups) + k, 2)
    gn = _rand((N, O, OH, OW), 3)
    res = {}
    for dev in (device, "cpu"):
        be = _backend(dev) if dev != "cpu" else REF
        x, w, g = (_view(dev, a, strided) for a in (xn, wn, gn))
        out = _filled(dev, (N, O, OH, OW), pg.float64, strided)
        gx = _filled(dev, (N, C, H, W), pg.float64, strided)
        gw = _filled(dev, (O, C // groups) + k, pg.float64, strided)
        be.conv2d(x, w, out, s, p, d, groups)
        be.conv2d_grad_input(g, w, gx, s, p, d, groups)
        be.conv2d_grad_weight(x, g, gw, s, p, d, groups)
        res[dev] = [be.to_host(v) for v in (out, gx, gw)]
    for name, a, b in zip(CONV_METHODS, res[device], res["cpu"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"{name} {case}")


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
POOL_KINDS = ("randn", "ties", "nan", "-inf")


def _pool_input(kind: str, shape: tuple, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "ties":  # few distinct values: many ties in every window
        return rng.integers(0, 3, shape).astype(np.float64)
    x = rng.standard_normal(shape)
    if kind == "nan":  # NaN in some windows, sometimes several in one
        x[rng.random(shape) < 0.15] = np.nan
    elif kind == "-inf":  # whole regions of -inf: windows of only -inf (and padding)
        x[rng.random(shape) < 0.6] = -np.inf
    return x


def _pool_run(device: str, xn: np.ndarray, case: tuple, dtype: Any) -> tuple:
    H, W, k, s, p, d, cm = case
    x = _on(xn, device, dtype).requires_grad_()
    out, ind = F.max_pool2d(x, k, s, p, d, cm, return_indices=True)
    r = _on(_rand(tuple(out.shape), 4), device, dtype)
    (out * r).sum().backward()
    assert x.grad is not None
    return out.detach().cpu().numpy(), ind.cpu().numpy(), x.grad.cpu().numpy()


def check_max_pool2d_case(device: str, case: tuple, kind: str, dtype: Any) -> None:
    """Values (NaN where NaN), indices and the input gradient equal the cpu's."""
    if dtype == pg.float64:
        need_fp64(device)
    xn = _pool_input(kind, (3, 2, case[0], case[1]), 7)
    (o, i, g), (wo, wi, wg) = _pool_run(device, xn, case, dtype), _pool_run("cpu", xn, case, dtype)
    what = f"max_pool2d {case} {kind} {dtype}"
    np.testing.assert_array_equal(o, wo, err_msg=what + " values")
    np.testing.assert_array_equal(i, wi, err_msg=what + " indices")
    np.testing.assert_allclose(g, wg, err_msg=what + " gradient", **_tol(dtype))


def check_max_pool2d_rules(device: str) -> None:
    """PyTorch's rules by hand: the first maximum wins ties, the last NaN is pointed at, a window
    of only -inf points at its first position inside the input."""
    need_fp64(device)
    nan, inf = math.nan, math.inf
    xn = np.array([[[[1., 1., nan, 2.],
                     [nan, 0., 3., nan],
                     [-inf, -inf, 2., 2.],
                     [-inf, -inf, 2., 2.]]]])
    x = pg.tensor(xn, device=device)
    out, ind = F.max_pool2d(x, 2, 2, return_indices=True)
    np.testing.assert_array_equal(out.cpu().numpy(), [[[[nan, nan], [-inf, 2.]]]])
    np.testing.assert_array_equal(ind.cpu().numpy(), [[[[4, 7], [8, 10]]]])
    out, ind = F.max_pool2d(x, 2, 2, 1, return_indices=True)  # padding: corners are 1 element
    np.testing.assert_array_equal(ind.cpu().numpy()[0, 0], [[0, 2, 3], [4, 6, 7], [12, 14, 15]])


def check_max_pool1d_and_empty(device: str) -> None:
    need_fp64(device)
    x = _on(_rand((2, 3, 11), 8), device, pg.float64).requires_grad_()
    out, ind = F.max_pool1d(x, 3, 2, 1, return_indices=True, ceil_mode=True)
    out.sum().backward()
    xc = x.detach().cpu().requires_grad_()
    outc, indc = F.max_pool1d(xc, 3, 2, 1, return_indices=True, ceil_mode=True)
    outc.sum().backward()
    assert x.grad is not None and xc.grad is not None
    np.testing.assert_array_equal(out.detach().cpu().numpy(), outc.detach().numpy())
    np.testing.assert_array_equal(ind.cpu().numpy(), indc.numpy())
    np.testing.assert_array_equal(x.grad.cpu().numpy(), xc.grad.numpy())
    e = pg.randn(0, 3, 6, 6, device=device, requires_grad=True)
    out = F.max_pool2d(e, 2)
    assert out.shape == (0, 3, 3, 3)
    out.sum().backward()
    assert e.grad is not None and e.grad.shape == (0, 3, 6, 6)


def check_max_pool_methods(device: str, strided: bool) -> None:
    """The two pooling methods called directly, against the numpy backend's."""
    need_fp64(device)
    N, C, H, W, k, s, p, d = 2, 3, 9, 8, (3, 2), (2, 1), (1, 1), (1, 2)
    OH, OW = 5, 6
    xn, gn = _pool_input("ties", (N, C, H, W), 9), _rand((N, C, OH, OW), 10)
    res = {}
    for dev in (device, "cpu"):
        be = _backend(dev) if dev != "cpu" else REF
        x, g = _view(dev, xn, strided), _view(dev, gn, strided)
        out = _filled(dev, (N, C, OH, OW), pg.float64, strided)
        ind = _filled(dev, (N, C, OH, OW), pg.int64, strided)
        gx = _filled(dev, (N, C, H, W), pg.float64, strided)
        be.max_pool2d(x, out, ind, k, s, p, d)
        be.max_pool2d_grad_input(g, ind, gx, k, s, p, d)
        res[dev] = [be.to_host(v) for v in (out, ind, gx)]
    for name, a, b in zip(("values", "indices", "grad input"), res[device], res["cpu"]):
        np.testing.assert_array_equal(a, b, err_msg=f"max_pool2d methods: {name}")


def check_max_pool2d_gradcheck(device: str) -> None:
    need_fp64(device)
    pg.manual_seed(12)
    x = pg.randn(2, 3, 7, 6, dtype=pg.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a: F.max_pool2d(a, 3, 2, 1, 1, True), (x,))
    assert gradcheck(lambda a: F.max_pool2d(a, 2, 1), (x,))  # overlapping windows
