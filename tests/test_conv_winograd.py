"""The numpy backend's Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions (float32, 3x3, stride 1,
with numba).

Checked against float64 im2col convolutions (the default path, itself checked against direct sums
in test_numpy_kernels.py) at odd and even plane sizes, every padding it takes, bands of tile rows
and non-contiguous operands; through ``conv2d`` and its input gradient on the cpu device; and the
routing: which convolutions take the path, and that without numba (or with
``PORTAGRAD_WINOGRAD=0``) none does.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from portagrad.backends.numpy import conv as nc
from portagrad.backends.numpy import winograd as wg

needs_numba = pytest.mark.skipif(not wg.available(), reason="numba not installed (or "
                                 "PORTAGRAD_WINOGRAD=0): the Winograd path is off")


def _im2col(x: np.ndarray, w: np.ndarray, padding: tuple[int, int]) -> np.ndarray:
    """The float64 stride-1 convolution by the im2col path."""
    N, _, H, W = x.shape
    out = np.empty((N, w.shape[0], H + 2 * padding[0] - 2, W + 2 * padding[1] - 2))
    nc._conv_forward(x.astype(np.float64), w.astype(np.float64), out, (1, 1), padding, (1, 1), 1)
    return out


def _case(N: int, C: int, O: int, H: int, W: int, seed: int = 0
          ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = (rng.standard_normal((O, C, 3, 3)) / np.sqrt(9 * C)).astype(np.float32)
    return x, w


def _check(got: np.ndarray, ref: np.ndarray, tile: int = 2) -> None:
    # float32 sums of 9*C products of unit-variance terms: im2col itself is off by ~1e-6 here,
    # F(4x4, 3x3) by up to ~2e-5 (its transforms' larger coefficients); a wrong transform entry
    # is off by the size of the terms
    assert np.isfinite(got).all()
    atol = (2e-5 if tile == 2 else 1e-4) * max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(got, ref, rtol=0, atol=atol)


_TILES = pytest.mark.parametrize("tile", [2, 4])


_SHAPES = [(2, 64, 16, 5, 7), (3, 64, 17, 8, 8), (1, 65, 64, 3, 4), (4, 64, 32, 9, 1),
           (2, 64, 16, 2, 2)]  # (N, C, O, H, W)
_PADDINGS = [(0, 0), (1, 1), (2, 2), (1, 0), (0, 2)]


_SHAPES4 = [(2, 64, 16, 9, 11), (3, 64, 17, 8, 8), (1, 65, 64, 13, 6), (2, 64, 16, 7, 10),
            (2, 64, 16, 6, 6)]  # planes whose last 4x4 block is cut at 1, 2 and 3 outputs


@needs_numba
@pytest.mark.parametrize(("shape", "padding", "tile"), [
    (s, p, t) for t, shapes in ((2, _SHAPES), (4, _SHAPES + _SHAPES4)) for s in shapes
    for p in _PADDINGS if s[3] + 2 * p[0] >= 3 and s[4] + 2 * p[1] >= 3])
def test_winograd_matches_im2col(shape: tuple[int, ...], padding: tuple[int, int],
                                 tile: int) -> None:
    """Odd and even planes (a last tile row or column partly outside the output), single rows
    and columns, every padding from 0 to 2 on each side, both output block sizes."""
    N, C, O, H, W = shape
    x, w = _case(N, C, O, H, W)
    ref = _im2col(x, w, padding)
    got = np.full(ref.shape, np.nan, np.float32)
    wg.conv3x3_winograd(x, w, got, padding, tile=tile)
    _check(got, ref, tile)


@needs_numba
@_TILES
def test_winograd_bands_and_strided_operands(monkeypatch: pytest.MonkeyPatch, tile: int) -> None:
    """Bands of one tile row (and a last, shorter band), a non-contiguous input and kernel (views
    of larger arrays) and a non-contiguous output."""
    x, w = _case(3, 64, 24, 11, 10, seed=1)
    ref = _im2col(x, w, (1, 1))
    whole = np.empty(ref.shape, np.float32)
    wg.conv3x3_winograd(x, w, whole, (1, 1), tile=tile)
    _check(whole, ref, tile)
    monkeypatch.setattr(wg, "_BAND_BYTES", 1)  # one row of tiles per band
    banded = np.empty(ref.shape, np.float32)
    wg.conv3x3_winograd(x, w, banded, (1, 1), tile=tile)
    _check(banded, ref, tile)  # (not bit for bit: BLAS may sum narrower products in another order)
    xs = np.zeros((3, 128, 11, 20), np.float32)[:, ::2, :, ::2]
    xs[...] = x
    ws = np.zeros((48, 64, 3, 3), np.float32)[::2]
    ws[...] = w
    out = np.zeros((3, 24, 11, 10, 2), np.float32)[..., 0]  # every last index skipped
    wg.conv3x3_winograd(xs, ws, out, (1, 1), tile=tile)
    _check(out, ref, tile)


@needs_numba
@_TILES
@pytest.mark.parametrize(("shape", "padding"), [
    ((2, 64, 80, 5, 7), (1, 1)), ((3, 96, 64, 8, 8), (0, 2)), ((1, 64, 70, 3, 4), (2, 2)),
    ((2, 64, 16, 4, 9), (1, 0)), ((2, 64, 48, 9, 7), (1, 1))])
def test_winograd_flipped_kernels(shape: tuple[int, ...], padding: tuple[int, int],
                                  tile: int) -> None:
    """``flipped=True`` (an input gradient): the kernels are the forward ones' transposes over
    channels with rows and columns reversed, taken from the forward (C, O, 3, 3) weights by a
    permutation of the transform (no flipped copy). Channel counts differ, so a transpose
    mixed up anywhere shows."""
    N, C, O, H, W = shape  # g: (N, C, H, W); the result has O channels
    g, w = _case(N, C, O, H, W, seed=4)  # w: the (O, C, 3, 3) kernels applied
    wfwd = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))  # forward (C, O, 3, 3)
    ref = _im2col(g, np.ascontiguousarray(w), padding)
    got = np.full(ref.shape, np.nan, np.float32)
    wg.conv3x3_winograd(g, wfwd, got, padding, flipped=True, tile=tile)
    _check(got, ref, tile)


def test_winograd_routing() -> None:
    """Only float32, 3x3, stride 1, undilated, ungrouped convolutions with padding 0-2 and 64
    input channels or more take the path (with numba); the others keep im2col."""
    x = np.zeros((2, 64, 8, 8), np.float32)
    w = np.zeros((32, 64, 3, 3), np.float32)
    one = (1, 1)
    assert wg.use_winograd(x, w, one, one, one, 1) == wg.available()
    assert not wg.use_winograd(x.astype(np.float64), w.astype(np.float64), one, one, one, 1)
    assert not wg.use_winograd(x, w, (2, 2), one, one, 1)
    assert not wg.use_winograd(x, w, one, one, (2, 2), 1)
    assert not wg.use_winograd(x, w, one, (3, 3), one, 1)
    assert not wg.use_winograd(x, w[:, :32], one, one, one, 2)
    assert not wg.use_winograd(x, np.zeros((32, 64, 5, 5), np.float32), one, one, one, 1)
    assert not wg.use_winograd(x[:, :32], w[:, :32], one, one, one, 1)  # too shallow
    assert not wg.use_winograd(x[:0], w, one, one, one, 1)
    assert not wg.use_winograd(x[:, :, :1, :1], w, one, (0, 0), one, 1)  # no output position


def test_winograd_off_without_numba_or_by_variable() -> None:
    """``PORTAGRAD_WINOGRAD=0``, ``PORTAGRAD_NUMBA=0`` (every numba path), or numba failing to
    import, turns the path off: the convolution then runs im2col and still computes the
    convolution."""
    code = (
        "import sys, numpy as np\n"
        "if sys.argv[1] == 'hide': sys.modules['numba'] = None  # import numba fails\n"
        "from portagrad.backends.numpy import conv as nc, winograd as wg\n"
        "x = np.ones((1, 64, 4, 4), np.float32); w = np.ones((16, 64, 3, 3), np.float32)\n"
        "o = np.empty((1, 16, 4, 4), np.float32)\n"
        "nc._conv_forward(x, w, o, (1, 1), (1, 1), (1, 1), 1)\n"
        "assert not wg.available() and o[0, 0, 1, 1] == 576 and o[0, 0, 0, 0] == 256\n"
    )
    for mode, extra in (("hide", {}), ("variable", {"PORTAGRAD_WINOGRAD": "0"}),
                        ("numba-off", {"PORTAGRAD_NUMBA": "0"})):
        env = dict(os.environ, **extra)
        subprocess.run([sys.executable, "-c", code, mode], check=True, env=env, timeout=120)


@needs_numba
@pytest.mark.parametrize("padding", [1, 0])
def test_conv2d_and_input_gradient_through_winograd(padding: int) -> None:
    """``conv2d`` on the cpu device and its input gradient (a convolution of the output gradient
    with the flipped kernels, channels swapped: Winograd again) against float64."""
    import portagrad as pg

    calls: list[tuple[int, ...]] = []
    real = wg.conv3x3_winograd

    def counted(xa: np.ndarray, *a: object, **k: object) -> None:
        calls.append(xa.shape)
        real(xa, *a, **k)  # type: ignore[arg-type]

    x, w = _case(2, 64, 64, 7, 6, seed=2)
    gshape = (2, 64, 7 + 2 * padding - 2, 6 + 2 * padding - 2)
    g = np.random.default_rng(3).standard_normal(gshape)
    results = {}
    orig = nc.conv3x3_winograd
    nc.conv3x3_winograd = counted
    try:
        for dt in (pg.float32, pg.float64):
            xt = pg.tensor(x, dtype=dt, requires_grad=True)
            y = pg.nn.functional.conv2d(xt, pg.tensor(w, dtype=dt), padding=padding)
            y.backward(pg.tensor(g, dtype=dt))
            assert xt.grad is not None
            results[dt] = (y.detach().numpy().astype(np.float64), xt.grad.numpy().astype(np.float64))
    finally:
        nc.conv3x3_winograd = orig
    assert calls == [x.shape, gshape]  # float32's forward and input gradient; float64 neither
    for got, ref in zip(results[pg.float32], results[pg.float64], strict=True):
        _check(got, ref)


@needs_numba
def test_block_size_follows_the_conv_precision_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """F(4x4, 3x3) only where ``torch.backends.mkldnn.conv.fp32_precision`` (or, when that is
    ``"none"``, ``mkldnn.fp32_precision``) allows less than float32's precision, and only on
    output planes of 6x6 or more; ``tile=`` other than 2 or 4 is refused."""
    import portagrad as pg

    flags = pg.backends.mkldnn
    tiles: list[int] = []

    def run(h: int) -> None:
        x, w = _case(1, 64, 16, h, h)
        out = np.empty((1, 16, h, h), np.float32)
        u_shapes: list[int] = []
        orig = np.matmul

        def spy(a: object, b: object, *args: object, **kw: object) -> object:
            if isinstance(a, np.ndarray) and a.shape[1:] == (9,):  # the kernel transform
                u_shapes.append(a.shape[0])
            return orig(a, b, *args, **kw)

        monkeypatch.setattr(wg.np, "matmul", spy)
        try:
            wg.conv3x3_winograd(x, w, out, (1, 1))
        finally:
            monkeypatch.setattr(wg.np, "matmul", orig)
        tiles.append({16: 2, 36: 4}[u_shapes[0]])
        _check(out, _im2col(x, w, (1, 1)), tiles[-1])

    saved = (flags.conv.fp32_precision, flags.fp32_precision)
    try:
        run(8)  # defaults: "none" -> full float32
        flags.conv.fp32_precision = "tf32"
        run(8)
        run(5)  # planes under 6x6 keep F(2x2, 3x3)
        flags.conv.fp32_precision = "ieee"
        flags.fp32_precision = "bf16"
        run(8)  # the op's own "ieee" wins
        flags.conv.fp32_precision = "none"
        run(8)  # "none" defers to mkldnn.fp32_precision
    finally:
        flags.conv.fp32_precision, flags.fp32_precision = saved
    assert tiles == [2, 4, 2, 2, 4]
    x, w = _case(1, 64, 16, 4, 4)
    with pytest.raises(ValueError, match="tile must be 2 or 4, got 3"):
        wg.conv3x3_winograd(x, w, np.empty((1, 16, 4, 4), np.float32), (1, 1), tile=3)


def _grad_weight64(x: np.ndarray, g: np.ndarray, padding: tuple[int, int]) -> np.ndarray:
    """The float64 weight gradient, summed directly: dW[o, c, i, j] = sum over n, y, x of
    g[n, o, y, x] * x_padded[n, c, y + i, x + j]."""
    ph, pw = padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    OH, OW = g.shape[2:]
    out = np.empty((g.shape[1], x.shape[1], 3, 3))
    for i in range(3):
        for j in range(3):
            out[:, :, i, j] = np.einsum("noyx,ncyx->oc", g.astype(np.float64),
                                        xp[:, :, i:i + OH, j:j + OW])
    return out


@needs_numba
@pytest.mark.parametrize(("shape", "padding"), [
    ((2, 64, 16, 8, 8), (1, 1)), ((3, 64, 17, 9, 7), (1, 1)), ((2, 65, 24, 7, 10), (0, 0)),
    ((1, 64, 16, 6, 6), (2, 2)), ((2, 64, 16, 11, 8), (1, 0)), ((4, 96, 70, 8, 9), (0, 2))])
def test_winograd_weight_gradient(shape: tuple[int, ...], padding: tuple[int, int]) -> None:
    """F(3x3, 2x2) weight gradients against float64 im2col's: odd output planes (a last tile
    row and column half past the edge, whose gradient must count as zero), every padding, more
    and fewer output channels than input ones (a transpose mixed up shows)."""
    N, C, O, H, W = shape
    rng = np.random.default_rng(5)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    OH, OW = H + 2 * padding[0] - 2, W + 2 * padding[1] - 2
    g = rng.standard_normal((N, O, OH, OW)).astype(np.float32)
    ref = _grad_weight64(x, g, padding)
    got = np.full((O, C, 3, 3), np.nan, np.float32)
    wg.conv3x3_winograd_grad_weight(x, g, got, padding)
    # sums of N*OH*OW products of unit-variance terms: scale the bound by the largest entry
    _check(got, ref)
    strided = np.zeros((O, C, 3, 3, 2), np.float32)[..., 0]  # a non-contiguous result
    wg.conv3x3_winograd_grad_weight(x, g, strided, padding)
    _check(strided, ref)


def test_winograd_weight_gradient_routing() -> None:
    """The weight gradient takes Winograd on the forward's conditions and output planes of 6x6
    or more; through ``conv2d``'s backward on the cpu device it is called, and agrees with
    float64."""
    import portagrad as pg

    one = (1, 1)
    x = np.zeros((2, 64, 8, 8), np.float32)
    g = np.zeros((2, 32, 8, 8), np.float32)
    assert wg.use_winograd_grad_weight(x, g, (3, 3), one, one, one, 1) == wg.available()
    assert not wg.use_winograd_grad_weight(x.astype(np.float64), g.astype(np.float64), (3, 3),
                                           one, one, one, 1)
    assert not wg.use_winograd_grad_weight(x, g[:, :, :4, :4], (3, 3), one, one, one, 1)
    assert not wg.use_winograd_grad_weight(x, g, (3, 3), (2, 2), one, one, 1)
    assert not wg.use_winograd_grad_weight(x, g, (3, 3), one, (3, 3), one, 1)
    assert not wg.use_winograd_grad_weight(x, g, (3, 3), one, one, (2, 2), 1)
    assert not wg.use_winograd_grad_weight(x, g, (5, 5), one, one, one, 1)
    assert not wg.use_winograd_grad_weight(x, g, (3, 3), one, one, one, 2)
    assert not wg.use_winograd_grad_weight(x[:, :32], g, (3, 3), one, one, one, 1)
    if not wg.available():
        return
    calls: list[tuple[int, ...]] = []
    real = nc.conv3x3_winograd_grad_weight

    def counted(xa: np.ndarray, *a: object) -> None:
        calls.append(xa.shape)
        real(xa, *a)  # type: ignore[arg-type]

    rng = np.random.default_rng(6)
    xn = rng.standard_normal((2, 64, 9, 7))
    wn = rng.standard_normal((24, 64, 3, 3)) / 24
    gn = rng.standard_normal((2, 24, 9, 7))
    grads = {}
    nc.conv3x3_winograd_grad_weight = counted
    try:
        for dt in (pg.float32, pg.float64):
            w = pg.tensor(wn, dtype=dt, requires_grad=True)
            y = pg.nn.functional.conv2d(pg.tensor(xn, dtype=dt), w, padding=1)
            y.backward(pg.tensor(gn, dtype=dt))
            assert w.grad is not None
            grads[dt] = w.grad.numpy().astype(np.float64)
    finally:
        nc.conv3x3_winograd_grad_weight = real
    assert calls == [(2, 64, 9, 7)]  # float32's; float64 keeps im2col
    _check(grads[pg.float32], grads[pg.float64])
