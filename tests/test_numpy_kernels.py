"""The numpy backend's own kernels: erf without scipy, the Philox reference, convolution.

These call the host functions directly (they are the ``cpu`` device's kernels), against
``math.erf``, literal Philox words and a direct-sum convolution.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from portagrad.backends.numpy.special import erf

# Maximum errors in units in the last place (ulp of the reference rounded to the dtype), as
# measured over the grids below: float64 against math.erf, float32 and float16 against math.erf
# rounded to the dtype.
MAX_ULP = {np.float64: 2.0, np.float32: 2.0, np.float16: 1.0}


def _grid(dt: type) -> np.ndarray:
    rng = np.random.default_rng(0)
    tiny = np.finfo(dt).smallest_subnormal
    parts = [np.linspace(-7, 7, 40001), rng.standard_normal(20000) * 2,
             np.geomspace(float(tiny), 1.0, 4000), np.geomspace(1.0, 1e30, 200)]
    x = np.concatenate(parts)
    x = np.concatenate([x, -x, [0.0, -0.0, float(tiny), -float(tiny)]])
    with np.errstate(over="ignore"):
        return x.astype(dt)


def _ulp_errors(dt: type, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    erf(x, out)
    ref = np.array([math.erf(v) for v in x.astype(np.float64).tolist()])
    spacing = np.spacing(np.abs(ref).astype(dt)).astype(np.float64)
    return np.abs(out.astype(np.float64) - ref) / spacing


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16])
def test_erf_max_ulp_error(dt: type) -> None:
    err = _ulp_errors(dt, _grid(dt))
    assert err.max() <= MAX_ULP[dt], f"max error {err.max()} ulp at {_grid(dt)[err.argmax()]!r}"


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_erf_special_values(dt: type) -> None:
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 6.5, -40.0], dt)
    out = np.empty_like(x)
    erf(x, out)
    np.testing.assert_array_equal(out[[0, 1, 3, 4, 5, 6]], np.array([1, -1, 0, 0, 1, -1], dt))
    assert np.isnan(out[2])
    assert np.signbit(out[4]) and not np.signbit(out[3])  # erf(-0.0) is -0.0
    tiny = np.finfo(dt).smallest_subnormal * 1000
    erf(np.array([tiny], dt), out[:1])
    assert out[0] == dt(tiny * (2 / math.sqrt(math.pi)))  # subnormals are not flushed


@pytest.mark.parametrize("scale", [0.1, 0.7, 2.0, 10.0])
def test_erf32_value_does_not_depend_on_its_neighbours(scale: float) -> None:
    """float32 erf runs each branch on the elements that take it, the more common branch on the
    whole chunk: every element must get what it gets alone (the same bits), whatever the mix of
    the chunk (mostly below 1, mostly above, and NaN, infinities, zeros, the branch point)."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(3000) * scale).astype(np.float32)
    x[::97] = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, np.nextafter(1, 0),
                        4.0, 1e-40, -1e-3], np.float32)[np.arange(x[::97].size) % 11]
    out = np.empty_like(x)
    erf(x, out)
    alone = np.empty(1, np.float32)
    for i, v in enumerate(x):
        erf(x[i:i + 1], alone)
        assert alone.tobytes() == out[i:i + 1].tobytes(), (v, alone[0], out[i])


def test_erf_strided_in_place_and_other_dtype_out() -> None:
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
    want = np.array([[math.erf(v) for v in row] for row in x.tolist()])
    out = np.empty((6, 4), np.float32).T  # not contiguous
    erf(x[:, ::1], out)
    np.testing.assert_allclose(out, want, rtol=3e-7, atol=1e-7)
    y = x.copy()
    erf(y, y)  # in place
    np.testing.assert_allclose(y, want, rtol=3e-7, atol=1e-7)
    o64 = np.empty((4, 6))
    erf(x[::-1], o64)  # a float32 input written into float64
    np.testing.assert_allclose(o64, want[::-1], rtol=3e-7, atol=1e-7)


# ------------------------------------------------------------------------ Philox reference
# Words of the reference as it was before its chunked rewrite (the first column for seed 0 is
# Random123's known-answer vector for counter 0, key 0); the rewrite must stay bit-identical.
_COUNTERS = [0, 1, 2**32 - 1, 2**32, 2**64 - 1]
_WORDS = {
    0: [[0x6627e8d5, 0xf8e4cca4, 0xc5b20a9d, 0x6ad0c5ec, 0xf3ce744d],
        [0xe169c58d, 0x5cb200db, 0x4434ec4e, 0xea236249, 0xdfb9980f],
        [0xbc57ac4c, 0xb1a574eb, 0x11bbe4fb, 0x73a459f5, 0x5a7caad1],
        [0x9b00dbd8, 0x097eff67, 0x2a1ef7a5, 0x074944b3, 0x25d14252]],
    2**64 - 1: [[0x72a47709, 0x19fed511, 0xc25672de, 0x85af3999, 0x4d18d7d2],
                [0x15474739, 0x4b67e034, 0x7c03af71, 0xf0ea2a5e, 0x430ac65a],
                [0x9f41b01f, 0x9d2c02e2, 0xc1b7863e, 0x1c58f27c, 0xbd2fa22a],
                [0x22799a5a, 0x9fe857b4, 0x1d02bb96, 0x402bd930, 0x0afae10d]],
    0x0123456789ABCDEF: [[0xb850222e, 0xadca1466, 0x073402a4, 0xd9412d6a, 0x6e31b035],
                         [0xc58cb04b, 0x523e0d85, 0x9775331e, 0x59dd3f68, 0x36a95fcb],
                         [0x14a7a020, 0x65401425, 0x64c992ad, 0x9d46a012, 0x9d22ca15],
                         [0x7a84fff9, 0xb299da3f, 0x325045ac, 0x5d27ddd9, 0x16df4072]],
}


@pytest.mark.parametrize("seed", sorted(_WORDS))
def test_philox_words_literal(seed: int) -> None:
    from portagrad.backends import philox

    words = philox.philox4x32(np.array(_COUNTERS, np.uint64), seed)
    for got, want in zip(words, _WORDS[seed]):
        assert got.dtype == np.uint32
        assert got.tolist() == want


def _slot_words_scalar(seed: int, first: int, n: int) -> list[int]:
    """Slots ``first .. first+n-1`` of the stream, one Philox block per slot, by the contract's
    words alone: slot ``g`` is word ``g & 3`` of block ``g >> 2`` (``g`` modulo ``2**64``)."""
    from portagrad.backends import philox

    g = [(first + i) % 2 ** 64 for i in range(n)]
    blocks = philox.philox4x32(np.array([x >> 2 for x in g], np.uint64), seed)
    return [int(blocks[x & 3][i]) for i, x in enumerate(g)]


def test_philox_draws_literal() -> None:
    from portagrad.backends import philox

    assert philox.uniform(4, 42, 17, 0.0, 1.0, np.float32).tolist() == [
        0.8390454053878784, 0.3227429986000061, 0.23571979999542236, 0.314847469329834]
    assert philox.uniform(3, 42, 17, -1.0, 2.0, np.float64).tolist() == [
        1.5171363351362128, -0.2928405259211182, -0.11959640565997576]
    assert philox.uniform(3, 42, 17, 0.0, 1.0, np.float16).tolist() == [
        0.8388671875, 0.32275390625, 0.2357177734375]
    assert philox.normal(3, 7, 2**34 - 5, 0.0, 1.0, np.float64).tolist() == [
        0.8687919235205743, 0.868548987749342, 0.7974487679703239]


@pytest.mark.parametrize("offset", [0, 1, 2, 3, 2**34 - 6, 2**64 - 9])
def test_philox_slots_rule(offset: int) -> None:
    """Every draw reads the slots the contract names: one a 32/16-bit uniform element, two a
    float64 one, four a normal one, from ``offset`` on, across blocks and the 2**64 wrap."""
    from portagrad.backends import philox

    seed, n = 0x0123456789ABCDEF, 11
    assert philox.slots("uniform", np.float32) == philox.slots("uniform", np.float16) == 1
    assert philox.slots("uniform", np.float64) == 2 and philox.slots("normal", np.float32) == 4
    w = _slot_words_scalar(seed, offset, 4 * n)
    assert philox.words(4 * n, seed, offset).tolist() == w
    u32 = [float(np.float32((x >> 8) * 2.0**-24)) for x in w[:n]]
    assert philox.uniform(n, seed, offset, 0.0, 1.0, np.float32).tolist() == u32
    u64 = [((w[2 * i] >> 5) * 2.0**26 + (w[2 * i + 1] >> 6)) * 2.0**-53 for i in range(n)]
    assert philox.uniform(n, seed, offset, 0.0, 1.0, np.float64).tolist() == u64
    u1 = np.array([((w[4 * i] >> 5) * 2.0**26 + (w[4 * i + 1] >> 6) + 1) * 2.0**-53 for i in range(n)])
    u2 = np.array([((w[4 * i + 2] >> 5) * 2.0**26 + (w[4 * i + 3] >> 6)) * 2.0**-53 for i in range(n)])
    np.testing.assert_array_equal(philox.normal(n, seed, offset, 0.0, 1.0, np.float64),
                                  np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2))


def _philox_unchunked(counter: np.ndarray, seed: int) -> list[np.ndarray]:
    """The textbook rounds on whole arrays: what the chunked reference must reproduce."""
    m = np.uint64(0xFFFFFFFF)
    c = [counter & m, counter >> np.uint64(32), np.zeros_like(counter), np.zeros_like(counter)]
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for _ in range(10):
        p0, p1 = c[0] * np.uint64(0xD2511F53), c[2] * np.uint64(0xCD9E8D57)
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & m,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & m]
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return [w.astype(np.uint32) for w in c]


@pytest.mark.parametrize("n", [1, 16383, 16384, 40000, 65537])
def test_philox_chunk_edges(n: int) -> None:
    """Draws over several chunks of blocks equal the textbook rounds on whole arrays."""
    from portagrad.backends import philox

    offset, seed = 2**34 - 20001, 0xDEADBEEF12345678
    blocks = np.arange((offset >> 2), ((offset + 4 * n - 1) >> 2) + 1, dtype=np.uint64)
    want = _philox_unchunked(blocks, seed)
    got = philox.philox4x32(blocks, seed)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    slots = np.stack(want, axis=1).reshape(-1)[offset & 3:].astype(np.uint64)
    np.testing.assert_array_equal(philox.words(4 * n, seed, offset), slots[:4 * n])
    u = philox.uniform(n, seed, offset, -1.0, 1.0, np.float32)
    np.testing.assert_array_equal(
        u, np.float32(-1) + np.float32(2) * ((slots[:n] >> 8).astype(np.float32) * np.float32(2**-24)))
    u64 = philox.uniform(n, seed, offset, 0.0, 1.0, np.float64)
    hi, lo = slots[0:2 * n:2], slots[1:2 * n:2]
    np.testing.assert_array_equal(u64, ((hi >> 5).astype(np.float64) * 2.0**26 + (lo >> 6)) * 2.0**-53)


# -------------------------------------------------------------------------------- convolution
def _ref_conv(x: np.ndarray, w: np.ndarray, stride: tuple[int, int], padding: tuple[int, int],
              dilation: tuple[int, int], groups: int) -> tuple[np.ndarray, ...]:
    """Forward, and the input/weight gradients for an all-ones-times-``g`` seed, by direct sums
    over the kernel taps in float64."""
    N, C, H, W = x.shape
    O, Cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.zeros((N, C, H + 2 * ph, W + 2 * pw))
    xp[:, :, ph:ph + H, pw:pw + W] = x
    g = np.random.default_rng(1).standard_normal((N, O, OH, OW))
    out = np.zeros((N, O, OH, OW))
    gxp = np.zeros_like(xp)
    gw = np.zeros(w.shape)
    Og = O // groups
    for q in range(groups):
        cs, os_ = slice(q * Cg, (q + 1) * Cg), slice(q * Og, (q + 1) * Og)
        for u in range(kh):
            for v in range(kw):
                win = (slice(None), cs, slice(u * dh, u * dh + (OH - 1) * sh + 1, sh),
                       slice(v * dw, v * dw + (OW - 1) * sw + 1, sw))
                out[:, os_] += np.einsum("ncij,oc->noij", xp[win], w[os_, :, u, v])
                gxp[win] += np.einsum("noij,oc->ncij", g[:, os_], w[os_, :, u, v])
                gw[os_, :, u, v] += np.einsum("noij,ncij->oc", g[:, os_], xp[win])
    return out, g, gxp[:, :, ph:ph + H, pw:pw + W], gw


_CONV_CASES = [  # (N, C, H, W, O, kh, kw, stride, padding, dilation, groups)
    (2, 3, 9, 8, 4, 3, 3, (1, 1), (1, 1), (1, 1), 1),
    (3, 4, 8, 8, 6, 3, 3, (2, 2), (1, 1), (1, 1), 1),
    (2, 4, 7, 9, 4, 3, 2, (1, 2), (0, 1), (2, 1), 2),
    (2, 6, 6, 6, 6, 3, 3, (1, 1), (3, 0), (1, 1), 3),  # padding > kernel - 1: the col2im path
    (1, 2, 5, 5, 3, 1, 1, (2, 2), (0, 0), (1, 1), 1),
    (20, 2, 6, 5, 3, 3, 3, (1, 1), (2, 2), (2, 2), 1),  # a batch wider than a few registers
]


@pytest.mark.parametrize("case", _CONV_CASES)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_conv_kernels_against_direct_sums(case: tuple, dt: type) -> None:
    from portagrad import _dtype
    from portagrad._shape import contiguous_strides
    from portagrad.backends.interface import View
    from portagrad.backends.numpy.backend import NumpyBackend

    N, C, H, W, O, kh, kw, stride, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W))
    w = rng.standard_normal((O, C // groups, kh, kw))
    out, g, gx, gw = _ref_conv(x, w, stride, padding, dilation, groups)
    pdt = _dtype.float32 if dt == np.float32 else _dtype.float64

    def view(a: np.ndarray) -> View:
        a = np.ascontiguousarray(a, dt)
        return View(a.reshape(-1).view(np.uint8), 0, a.shape, contiguous_strides(a.shape), pdt)

    be = NumpyBackend()
    args = (stride, padding, dilation, groups)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dt == np.float32 else {"rtol": 1e-10, "atol": 1e-10}
    for fn, a, b, want in [(be.conv2d, x, w, out), (be.conv2d_grad_input, g, w, gx),
                           (be.conv2d_grad_weight, x, g, gw)]:
        o = view(np.full(want.shape, np.nan))
        fn(view(a), view(b), o, *args)
        got = np.ndarray(want.shape, dt, o.buffer)
        np.testing.assert_allclose(got, want, **tol, err_msg=fn.__name__)


# ------------------------------------------------------------------------------ max pooling
def _ref_max_pool(x: np.ndarray, k: int, s: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's scan of each window in row-major order: an element replaces the maximum when it
    is greater or NaN; the index starts at the window's first position."""
    N, C, H, W = x.shape
    OH, OW = (H - k) // s + 1, (W - k) // s + 1
    best = np.full((N, C, OH, OW), -np.inf, x.dtype)
    idx = np.zeros(best.shape, np.int64)
    oh, ow = np.arange(OH)[:, None] * s, np.arange(OW)[None, :] * s
    idx[...] = oh * W + ow
    for i in range(k):
        for j in range(k):
            v = x[:, :, i:i + (OH - 1) * s + 1:s, j:j + (OW - 1) * s + 1:s]
            upd = (v > best) | np.isnan(v)
            best = np.where(upd, v, best)
            idx = np.where(upd, (oh + i) * W + ow + j, idx)
    return best, idx


def _pool_input(kind: str, shape: tuple[int, ...], dt: type) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dt)
    if kind == "ties":  # few distinct values: many windows with equal maxima
        x = rng.integers(-1, 2, shape).astype(dt)
    elif kind == "nan":  # windows with one NaN, with several, and without
        x[rng.random(shape) < 0.3] = np.nan
    elif kind == "-inf":  # windows of only -inf among them
        x[rng.random(shape) < 0.7] = -np.inf
    elif kind == "zeros":  # -0.0 and 0.0 tie (the index is the first; the value's sign is
        # np.maximum's, on every path of this backend)
        x = np.where(rng.random(shape) < 0.5, -0.0, 0.0).astype(dt)
    return x


@pytest.mark.parametrize("shape", [(64, 16, 8, 8), (3, 5, 4, 4), (2, 3, 6, 2), (1, 1, 2, 2),
                                   (2, 2, 14, 14), (2, 2, 16, 16), (2, 3, 5, 7), (0, 3, 4, 4)])
@pytest.mark.parametrize("kind", ["random", "ties", "nan", "-inf", "zeros"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_max_pool_2x2_against_scan(shape: tuple[int, ...], kind: str, dt: type) -> None:
    """The 2x2 stride-2 path (small even planes), and the general paths it sits beside, against
    PyTorch's scan rule and against torch itself when installed; contiguous and strided outputs."""
    from portagrad import _dtype
    from portagrad._shape import contiguous_strides
    from portagrad.backends.interface import View
    from portagrad.backends.numpy.backend import NumpyBackend

    x = _pool_input(kind, shape, dt)
    want, want_idx = _ref_max_pool(x, 2, 2)
    pdt = _dtype.float32 if dt == np.float32 else _dtype.float64

    def view(a: np.ndarray, d: Any, transposed: bool = False) -> View:
        if not transposed:
            return View(a.reshape(-1).view(np.uint8), 0, a.shape, contiguous_strides(a.shape), d)
        # a (N, C, H, W) view whose (H, W) memory is transposed
        t = np.ascontiguousarray(a.transpose(0, 1, 3, 2))
        st = contiguous_strides(t.shape)
        return View(t.reshape(-1).view(np.uint8), 0, a.shape, (st[0], st[1], st[3], st[2]), d)

    be = NumpyBackend()
    for strided in (False, True):
        o = np.full(want.shape, 7, dt)
        ind = np.full(want.shape, -1, np.int64)
        ov, iv = view(o, pdt, strided), view(ind, _dtype.int64, strided)
        be.max_pool2d(view(x, pdt), ov, iv, (2, 2), (2, 2), (0, 0), (1, 1))
        got = np.ndarray(want.shape, dt, ov.buffer, 0, [s * o.itemsize for s in ov.strides])
        got_idx = np.ndarray(want.shape, np.int64, iv.buffer, 0, [s * 8 for s in iv.strides])
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got_idx, want_idx)
    try:  # the scan rule above is the reference; torch itself too where it is installed
        import torch
    except ImportError:
        return
    tv, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x), 2, return_indices=True)
    np.testing.assert_array_equal(got, tv.numpy())
    np.testing.assert_array_equal(got_idx, ti.numpy())


# ------------------------------------------------------------------- broadcast binary operands
@pytest.mark.parametrize("shape,strides", [
    ((64, 16, 8, 8), (0, 1, 0, 0)),  # a conv bias
    ((8, 4, 32, 16), (0, 0, 1, 0)),  # two leading broadcast axes, one repeated inner axis
    ((64, 128), (1, 0)),  # a column: nothing leading to drop
    ((16, 4, 128), (0, 128, 1)),  # dense inner block: left as it is
    ((4, 2048), (0, 0)),  # a scalar broadcast
])
@pytest.mark.parametrize("left", [False, True])
def test_binary_with_broadcast_operand(shape: tuple[int, ...], strides: tuple[int, ...],
                                       left: bool) -> None:
    """The dense copy of an operand repeated along inner axes gives numpy's own result."""
    from portagrad import _dtype
    from portagrad._shape import contiguous_strides
    from portagrad.backends.interface import View
    from portagrad.backends.numpy.backend import NumpyBackend

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    src = rng.standard_normal(4096).astype(np.float32)
    bv = View(src.view(np.uint8), 0, shape, strides, _dtype.float32)
    b = np.lib.stride_tricks.as_strided(src, shape, [s * 4 for s in strides])
    want = b - x if left else x - b
    xv = View(x.reshape(-1).view(np.uint8), 0, shape, contiguous_strides(shape), _dtype.float32)
    o = np.full(shape, np.nan, np.float32)
    ov = View(o.reshape(-1).view(np.uint8), 0, shape, contiguous_strides(shape), _dtype.float32)
    NumpyBackend().binary("sub", *((bv, xv) if left else (xv, bv)), ov)
    np.testing.assert_array_equal(o, want)


# -------------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("shape,axes", [
    ((4, 6, 5, 3), (0, 2, 3)),  # BatchNorm's statistics: (R0, K, R1)
    ((3, 1, 7, 2, 2), (0, 3, 4)),  # a size-1 axis between
    ((2, 3, 4), (0, 1)),  # (R, K): numpy's own path
    ((5, 4, 3), (1,)),  # (K, R, K): numpy's own path
    ((0, 3, 2), (0, 2)),  # empty
])
def test_sum_over_outer_and_inner_axes(shape: tuple[int, ...], axes: tuple[int, ...]) -> None:
    from portagrad import _dtype
    from portagrad._shape import contiguous_strides
    from portagrad.backends.interface import View
    from portagrad.backends.numpy.backend import NumpyBackend

    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    want = x.astype(np.float64).sum(axes, keepdims=True)
    xv = View(x.reshape(-1).view(np.uint8), 0, x.shape, contiguous_strides(x.shape), _dtype.float32)
    o = np.full(want.shape, np.nan, np.float32)
    ov = View(o.reshape(-1).view(np.uint8), 0, o.shape, contiguous_strides(o.shape), _dtype.float32)
    NumpyBackend().reduce("sum", xv, axes, ov)
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------- buffer pool
def test_buffer_pool_reuses_only_unreferenced_buffers() -> None:
    from portagrad.backends.numpy import pool

    if pool._FREE is None:
        pytest.skip("reference counts are not conclusive on this Python: the pool is off")
    p = pool.BufferPool(min_bytes=1024, max_bytes=1 << 20)
    a = p.allocate(4096)
    addr = a.ctypes.data
    view = a[100:200].view(np.float32)  # a view keeps its buffer in use
    del a
    b = p.allocate(4096)
    assert b.ctypes.data != addr
    del view
    c = p.allocate(4096)
    assert c.ctypes.data == addr  # free again: handed out again
    assert p.allocate(100).size == 100  # below min_bytes: not pooled
    assert p.pooled_bytes == 8192
    del b
    p.release_free()
    assert p.pooled_bytes == 4096  # c is still in use
    del c
    p.release_free()
    assert p.pooled_bytes == 0


def test_buffer_pool_respects_its_cap() -> None:
    from portagrad.backends.numpy import pool

    if pool._FREE is None:
        pytest.skip("reference counts are not conclusive on this Python: the pool is off")
    p = pool.BufferPool(min_bytes=1024, max_bytes=10000)
    held = [p.allocate(4096) for _ in range(4)]  # the third and fourth exceed the cap
    assert p.pooled_bytes == 8192 and all(h.size == 4096 for h in held)
    held.clear()
    p.allocate(8192)  # over the cap with every pooled buffer free: they are dropped first
    assert p.pooled_bytes == 8192


def test_philox_out_argument() -> None:
    from portagrad.backends import philox

    out = np.full(5, np.nan, np.float32)
    assert philox.uniform(5, 3, 9, 0.0, 1.0, np.float32, out=out) is out
    np.testing.assert_array_equal(out, philox.uniform(5, 3, 9, 0.0, 1.0, np.float32))
    o64 = np.empty(4)
    philox.normal(4, 3, 9, 0.0, 1.0, np.float64, out=o64)
    np.testing.assert_array_equal(o64, philox.normal(4, 3, 9, 0.0, 1.0, np.float64))
    with pytest.raises(ValueError, match="contiguous 1-D float32 array of 5 elements"):
        philox.uniform(5, 3, 9, 0.0, 1.0, np.float32, out=np.empty(5))
    with pytest.raises(ValueError, match="got float32 of shape \\(2, 3\\)"):
        philox.uniform(6, 3, 9, 0.0, 1.0, np.float32, out=np.empty((2, 3), np.float32))


def test_buffer_pool_tracks_a_bounded_number_per_size() -> None:
    from portagrad.backends.numpy import pool

    if pool._FREE is None:
        pytest.skip("reference counts are not conclusive on this Python: the pool is off")
    p = pool.BufferPool(min_bytes=1024, max_bytes=1 << 20, per_size=3)
    held = [p.allocate(2048) for _ in range(5)]
    assert p.pooled_bytes == 3 * 2048 and len({h.ctypes.data for h in held}) == 5


@pytest.mark.parametrize("case", [
    (3, 4, 9, 7, 5, 3, 3, (1, 1), (1, 1), (1, 1), 1),  # 9 output rows: bands of 2, the last of 1
    (2, 3, 11, 6, 4, 3, 2, (2, 1), (1, 0), (1, 2), 1),  # strided and dilated taps
    (2, 4, 8, 8, 6, 3, 3, (1, 1), (3, 0), (1, 1), 1),  # the col2im input gradient
])
def test_banded_im2col_matches_whole_image_and_direct_sums(case: tuple,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Large convolutions im2col a band of output rows at a time; forced onto small shapes here,
    the bands agree with the whole-image path and with the direct sums (not bit for bit: BLAS
    may sum a narrow band's columns in another order)."""
    from portagrad import _dtype
    from portagrad._shape import contiguous_strides
    from portagrad.backends.interface import View
    from portagrad.backends.numpy import conv as nc
    from portagrad.backends.numpy.backend import NumpyBackend

    N, C, H, W, O, kh, kw, stride, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W))
    w = rng.standard_normal((O, C // groups, kh, kw))
    want = _ref_conv(x, w, stride, padding, dilation, groups)

    def view(a: np.ndarray) -> View:
        a = np.ascontiguousarray(a, np.float32)
        return View(a.reshape(-1).view(np.uint8), 0, a.shape, contiguous_strides(a.shape),
                    _dtype.float32)

    def run() -> list[np.ndarray]:
        be = NumpyBackend()
        got = []
        for fn, a, b, ref in [(be.conv2d, x, w, want[0]), (be.conv2d_grad_input, want[1], w, want[2]),
                              (be.conv2d_grad_weight, x, want[1], want[3])]:
            o = view(np.full(ref.shape, np.nan))
            fn(view(a), view(b), o, stride, padding, dilation, groups)
            got.append(np.ndarray(ref.shape, np.float32, o.buffer).copy())
        return got

    whole = run()
    OW = (W + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    # bands of two output rows (the cache bound off, the width bound at two rows)
    monkeypatch.setattr(nc, "_BAND_BYTES", 1)
    monkeypatch.setattr(nc, "_BAND_MIN_COLS", 2 * OW * N)
    assert nc._chunk_rows(C * kh * kw, 9, OW * N, 4) == 2
    banded = run()
    for a, b, ref in zip(banded, whole, (want[0], want[2], want[3])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(a, ref, rtol=1e-4, atol=1e-4)


def test_weight_gradient_transposed_or_not_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small weight gradient is computed as the transposed product; both orientations agree
    with the direct sums (a large one takes the untransposed product)."""
    from portagrad import _dtype
    from portagrad._shape import contiguous_strides
    from portagrad.backends.interface import View
    from portagrad.backends.numpy import conv as nc
    from portagrad.backends.numpy.backend import NumpyBackend

    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 5, 7, 7))
    w = rng.standard_normal((6, 5, 3, 3))
    _, g, _, gw = _ref_conv(x, w, (1, 1), (1, 1), (1, 1), 1)

    def view(a: np.ndarray) -> View:
        a = np.ascontiguousarray(a, np.float64)
        return View(a.reshape(-1).view(np.uint8), 0, a.shape, contiguous_strides(a.shape),
                    _dtype.float64)

    for limit in (1 << 18, 0):
        monkeypatch.setattr(nc, "_SMALL_TRANSPOSE", limit)
        o = view(np.full(gw.shape, np.nan))
        NumpyBackend().conv2d_grad_weight(view(x), view(g), o, (1, 1), (1, 1), (1, 1), 1)
        np.testing.assert_allclose(np.ndarray(gw.shape, np.float64, o.buffer), gw, rtol=1e-10,
                                   atol=1e-10)


def _float_view(a: np.ndarray, dt: type) -> Any:
    """A float32/float64 ``View`` over a contiguous copy of ``a``."""
    from portagrad import _dtype
    from portagrad._shape import contiguous_strides
    from portagrad.backends.interface import View

    a = np.ascontiguousarray(a, dt)
    pdt = _dtype.float32 if dt == np.float32 else _dtype.float64
    return View(a.reshape(-1).view(np.uint8), 0, a.shape, contiguous_strides(a.shape), pdt)


def _view_makers(dt: type) -> tuple[Any, Any]:
    """``view(a)`` (None stays None) and ``zeros(*shape)``: ``_float_view`` in ``dt``."""
    def view(a: np.ndarray | None) -> Any:
        return None if a is None else _float_view(a, dt)

    def zeros(*shape: int) -> Any:
        return _float_view(np.zeros(shape), dt)

    return view, zeros


def _batch_norm_run(x: np.ndarray, g: np.ndarray, w: np.ndarray | None, b: np.ndarray | None,
                    dt: type) -> list[np.ndarray]:
    """The numpy backend's batch_norm then batch_norm_backward: every output as an array."""
    from portagrad.backends.numpy.backend import NumpyBackend

    view, zeros = _view_makers(dt)
    C = x.shape[1]
    be = NumpyBackend()
    xv, gv, wv = view(x), view(g), view(w)
    assert xv is not None and gv is not None
    rm, rv = view(np.linspace(-1, 1, C)), view(np.linspace(0.5, 2, C))
    out, mean, rstd = zeros(*x.shape), zeros(C), zeros(C)
    be.batch_norm(xv, wv, view(b), rm, rv, 0.1, 1e-5, out, mean, rstd)
    gx, gw, gb = zeros(*x.shape), zeros(C), zeros(C)
    be.batch_norm_backward(gv, xv, wv, mean, rstd, gx, gw if w is not None else None,
                           gb if b is not None else None)
    return [np.ndarray(v.shape, dt, v.buffer).copy() for v in (out, mean, rstd, rm, rv, gx, gw, gb)
            if v is not None]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(4, 3, 10), (1, 2, 1), (3, 5, 7)])
def test_batch_norm_in_place_path_matches_whole_array_path(
        dt: type, affine: bool, shape: tuple[int, int, int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """float32/float64 batch norm computes in the output's memory; it agrees with the
    whole-array path (still used for 16-bit floats), NaN channels and a one-element batch
    included."""
    from portagrad.backends.numpy import norms

    rng = np.random.default_rng(3)
    C = shape[1]
    x = rng.standard_normal(shape) * 3 + 1
    x[0, C - 1, 0] = np.nan  # a NaN channel stays NaN, the others are unaffected
    g = rng.standard_normal(shape)
    w, b = (rng.standard_normal(C), rng.standard_normal(C)) if affine else (None, None)
    fast = _batch_norm_run(x, g, w, b, dt)
    monkeypatch.setattr(norms, "_in_place", lambda out, *inputs: False)
    slow = _batch_norm_run(x, g, w, b, dt)
    tol = {"rtol": 2e-5, "atol": 2e-5} if dt == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    for a, b_ in zip(fast, slow, strict=True):
        np.testing.assert_allclose(a, b_, **tol)  # NaN where the other has NaN


@pytest.mark.parametrize("case", [c for c in _CONV_CASES if c[-1] == 1])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_per_sample_convolution_against_direct_sums(case: tuple, dt: type,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Convolutions with many output positions run one image at a time in the (N, C, H, W)
    layout; forced onto the small cases here, both weight-gradient orientations included."""
    from portagrad.backends.numpy import conv as nc

    monkeypatch.setattr(nc, "_PER_SAMPLE_MIN_POSITIONS", 1)
    monkeypatch.setattr(nc.conv_direct, "fits", lambda *a: False)  # (small planes' kernel)
    monkeypatch.setattr(nc, "_BATCHED_MAX_COLS", 0)  # (the batched path comes first)
    for limit in (1 << 18, 0):
        monkeypatch.setattr(nc, "_SMALL_TRANSPOSE", limit)
        test_conv_kernels_against_direct_sums(case, dt)


@pytest.mark.parametrize("case", [c for c in _CONV_CASES if c[-1] == 1])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_positions_major_convolution_against_direct_sums(case: tuple, dt: type,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Convolutions with few output channels run as a (positions, K) x (K, O) GEMM over a
    channels-last copy; forced onto the small cases here (the forward and the stride-1 input
    gradient, which is a convolution too), with the weight gradient beside them."""
    from portagrad.backends.numpy import conv as nc

    calls = []
    real = nc._conv_forward_positions_major
    monkeypatch.setattr(nc, "_conv_forward_positions_major",
                        lambda *a: calls.append(a[0].shape) or real(*a))
    monkeypatch.setattr(nc, "_POSITIONS_MAJOR_MIN_K", 1)
    monkeypatch.setattr(nc.conv_direct, "fits", lambda *a: False)  # (small planes' kernel)
    monkeypatch.setattr(nc, "_POSITIONS_MAJOR_MIN_ROWS", 1)
    monkeypatch.setattr(nc, "_BATCHED_MAX_COLS", 0)
    test_conv_kernels_against_direct_sums(case, dt)
    assert calls, "the positions-major path was not taken"


@pytest.mark.parametrize("case", [c for c in _CONV_CASES if c[-1] == 1])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_batched_convolution_against_direct_sums(case: tuple, dt: type,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Convolutions with few taps per output run as one batched GEMM over every image's copied
    taps, written straight into the output; forced onto every case here (strides, dilation,
    padding wider than the kernel, a 1x1 kernel)."""
    from portagrad.backends.numpy import conv as nc

    calls = []
    real = nc._conv_forward_batched
    monkeypatch.setattr(nc, "_conv_forward_batched", lambda *a: calls.append(a[0].shape) or real(*a))
    monkeypatch.setattr(nc, "_BATCHED_MAX_K", 1 << 20)
    monkeypatch.setattr(nc.conv_direct, "fits", lambda *a: False)  # (small planes' kernel)
    test_conv_kernels_against_direct_sums(case, dt)
    assert calls or case[0] == 1, "the batched path was not taken"


def test_batched_path_serves_first_layers() -> None:
    """One channel in (the demo CNN's and MNIST's first layers, 3x3 and 5x5), or three on images
    below 256 positions, take the batched path; three channels on 32x32 images do not (one image
    at a time is as fast there), nor a batch of one."""
    from portagrad.backends.numpy import conv as nc

    assert nc._batched_small(64, 64, 9) and nc._batched_small(64, 784, 9)
    assert nc._batched_small(16, 576, 25) and nc._batched_small(64, 64, 27)
    assert not nc._batched_small(64, 1024, 27) and not nc._batched_small(1, 64, 9)
    assert not nc._batched_small(64, 64, 144)


def test_positions_major_path_serves_small_channel_convolutions() -> None:
    """The demo CNN's second convolution (16 -> 32 channels on 4x4 planes, batch 64) and its
    input gradient take the positions-major path; ResNet's 256-channel ones do not."""
    from portagrad.backends.numpy import conv as nc

    assert nc._positions_major(64 * 16, 16 * 9, 32) and nc._positions_major(64 * 16, 32 * 9, 16)
    assert not nc._positions_major(16 * 64, 256 * 9, 256)
    assert not nc._positions_major(64 * 64, 1 * 9, 16)  # K = 9: the GEMM is a copy's worth


def _layer_norm_run(x: np.ndarray, g: np.ndarray, w: np.ndarray | None, b: np.ndarray | None,
                    dt: type) -> list[np.ndarray]:
    """The numpy backend's layer_norm then layer_norm_backward: every output as an array."""
    from portagrad.backends.numpy.backend import NumpyBackend

    view, zeros = _view_makers(dt)
    M, N = x.shape
    be = NumpyBackend()
    xv, gv, wv = view(x), view(g), view(w)
    assert xv is not None and gv is not None
    out, mean, rstd = zeros(M, N), zeros(M), zeros(M)
    be.layer_norm(xv, wv, view(b), 1e-5, out, mean, rstd)
    gx, gw, gb = zeros(M, N), zeros(N), zeros(N)
    be.layer_norm_backward(gv, xv, wv, mean, rstd, gx, gw if w is not None else None,
                           gb if b is not None else None)
    return [np.ndarray(v.shape, dt, v.buffer).copy() for v in (out, mean, rstd, gx, gw, gb)
            if v is not None]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(6, 10), (1, 1), (3, 33)])
def test_layer_norm_in_place_path_matches_whole_array_path(
        dt: type, affine: bool, shape: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """float32/float64 layer norm computes in the output's memory; it agrees with the
    whole-array path, NaN rows and one-element rows included."""
    from portagrad.backends.numpy import norms

    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape) * 3 + 1
    x[-1, 0] = np.nan  # a NaN row stays NaN, the others are unaffected
    g = rng.standard_normal(shape)
    N = shape[1]
    w, b = (rng.standard_normal(N), rng.standard_normal(N)) if affine else (None, None)
    fast = _layer_norm_run(x, g, w, b, dt)
    monkeypatch.setattr(norms, "_in_place", lambda out, *inputs: False)
    slow = _layer_norm_run(x, g, w, b, dt)
    tol = {"rtol": 2e-5, "atol": 2e-5} if dt == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    for a, b_ in zip(fast, slow, strict=True):
        np.testing.assert_allclose(a, b_, **tol)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
def test_few_rows_matmul_matches_float64_product(dt: type, layout: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A product with few rows (a small batch through a Linear layer) runs as its transpose into
    a scratch matrix: the same values as the float64 product, written into ``out`` only, for
    every operand layout; the rule takes the shape of a batch of 32 through a 784 -> 256 layer,
    one of 64 unless OpenBLAS runs the Zen kernels portagrad chose (as fast directly there), and
    leaves a batch of 256 alone."""
    from portagrad import _dtype
    from portagrad.backends.interface import View
    from portagrad.backends.numpy import backend as nb

    from portagrad import _blas_env

    assert nb._few_rows(32, 784, 256, np.dtype(np.float32))
    zen = _blas_env.chosen() == _blas_env.ZEN4_CORETYPE
    assert nb._few_rows(64, 784, 256, np.dtype(np.float32)) is not zen
    assert not nb._few_rows(256, 784, 256, np.dtype(np.float32))
    assert not nb._few_rows(64, 256, 10, np.dtype(np.float32))  # few columns too
    taken = []
    real = nb._few_rows
    monkeypatch.setattr(nb, "_few_rows", lambda *a: taken.append(real(*a)) or taken[-1])
    rng = np.random.default_rng(0)
    M, K, N = 24, 200, 300
    a64, b64 = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    pdt = _dtype.float32 if dt == np.float32 else _dtype.float64

    def view(m: np.ndarray, transposed: bool) -> View:
        """``m`` as a (1, R, C) View, stored transposed (column-major) when asked."""
        store = np.ascontiguousarray(m.T if transposed else m, dt)
        R, C = m.shape
        strides = (R * C, 1, R) if transposed else (R * C, C, 1)
        return View(store.reshape(-1).view(np.uint8), 0, (1, R, C), strides, pdt)

    a = view(a64, layout[0] == "T")
    b = view(b64, layout[1] == "T")
    buf = np.full(M * N + 8, np.nan, dt)
    out = View(buf.view(np.uint8), 4, (1, M, N), (M * N, N, 1), pdt)
    nb.NumpyBackend().matmul(a, b, out)
    assert taken == [True]
    tol = 1e-4 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(buf[4:4 + M * N].reshape(M, N), a64 @ b64, rtol=tol, atol=tol)
    assert np.isnan(buf[:4]).all() and np.isnan(buf[4 + M * N:]).all()


def test_maximum_minimum_clamp_without_numpy_deprecations() -> None:
    """float32 maximum/minimum (and clamp, built on them) pass ``out`` by keyword: numpy 2.4
    deprecates a third positional argument to np.maximum/np.minimum."""
    import warnings

    import portagrad as pg

    x = pg.tensor([1.0, -2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert pg.maximum(x, x * 2).tolist() == [2.0, -2.0, 6.0]
        assert pg.minimum(x, x * 2).tolist() == [1.0, -4.0, 3.0]
        assert x.clamp(-1.0, 2.0).tolist() == [1.0, -1.0, 2.0]


def test_min_max_reads_cpu_integers_in_place() -> None:
    """Index checks' (min, max) of a cpu integer tensor: Python ints, int64's extremes kept
    exactly, strided views read as they are; other dtypes take the reductions."""
    import portagrad as pg
    from portagrad import _raw

    t = pg.tensor([5, -(2 ** 63), 2 ** 63 - 1, 0])
    lo, hi = _raw.min_max(t)
    assert (lo, hi) == (-(2 ** 63), 2 ** 63 - 1) and type(lo) is int and type(hi) is int
    assert _raw.min_max(pg.arange(12).reshape(3, 4)[:, 1::2]) == (1, 11)
    assert _raw.min_max(pg.tensor([2.5, -1.0])) == (-1.0, 2.5)
    with pytest.raises(IndexError, match="Target 10 is out of bounds"):
        pg.nn.functional.cross_entropy(pg.zeros(2, 10), pg.tensor([3, 10]))
