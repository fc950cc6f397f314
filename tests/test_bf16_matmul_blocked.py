"""The numpy backend's bfloat16 products: operands widened to float32 by shifting the 16-bit
patterns (layout kept), and few-row products against a large operand widened block by block.

Both must give exactly what widening everything with ml_dtypes' cast and one float32 product
gives (each output a float32 dot product over all of K, rounded once to bfloat16).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import portagrad as pg
from portagrad import _dtype as D
from portagrad.backends.interface import View
from portagrad.backends.numpy import arrays, backend, bf16_dot, jit

pytestmark = pytest.mark.backend_independent

BF16 = ml_dtypes.bfloat16


def _view(a: np.ndarray, base: np.ndarray) -> View:
    off = (a.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 2
    return View(base.reshape(-1).view(np.uint8), off, a.shape,
                tuple(s // 2 for s in a.strides), D.bfloat16)


def test_widen_is_exact_for_every_bit_pattern_and_layout() -> None:
    bits = np.arange(65536, dtype=np.uint16)
    a = bits.view(BF16).reshape(256, 256)
    for arr in (a, a.T, a[::2, 1::3], a.reshape(16, 16, 256).transpose(2, 0, 1), a[:1],
                a.reshape(-1)[7:8].reshape(())):
        got = arrays.nd(arrays.f32_view(_view(arr, a)))
        assert got.shape == arr.shape
        # the float32 whose top half is the bfloat16 (NaN payloads kept)
        np.testing.assert_array_equal(got.view(np.uint32),
                                      arr.view(np.uint16).astype(np.uint32) << 16)
        want = arr.astype(np.float32)
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])
    # a transposed dense block keeps its memory order (BLAS takes it transposed)
    t = arrays.nd(arrays.f32_view(_view(a.T, a)))
    assert t.strides == (4, 1024)


@pytest.mark.parametrize("M,K,N,layout", [
    (1, 768, 5000, "linear"),  # x @ W.T: the weight's transpose, a dense block
    (3, 300, 4099, "linear"),  # a ragged last block
    (16, 1024, 1100, "linear"),
    (2, 512, 2100, "rowmajor"),  # b itself C-contiguous: its column blocks are gathered
])
def test_few_rows_blocked_equals_one_product(monkeypatch, M, K, N, layout) -> None:
    rng = np.random.default_rng(M * N)
    x = rng.standard_normal((M, K)).astype(BF16)
    if layout == "linear":
        w = rng.standard_normal((N, K)).astype(BF16)
        b = w.T
    else:
        w = rng.standard_normal((K, N)).astype(BF16)
        b = w
    want = (x.astype(np.float32) @ b.astype(np.float32)).astype(BF16)
    monkeypatch.setattr(backend, "_BF16_BLOCK", 1 << 16)  # several blocks even for small N
    o = np.empty((1, M, N), BF16)
    av = _view(x[None], x)
    bv = _view(b[None], w)
    ov = _view(o, o)
    assert backend._bf16_few_rows(av, bv, ov)
    np.testing.assert_array_equal(o[0].view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("M,K,N", [(4, 300, 1001), (5, 257, 1003), (7, 512, 260), (8, 96, 1000),
                                   (42, 128, 1030)])
def test_jit_register_blocks(M: int, K: int, N: int) -> None:
    """With numba, 4 to 64 rows run in blocks of four rows of x times three of W, the rows left
    over one at a time: ragged blocks of W's rows (N not a multiple of 3 or 4) and rows of x (M
    not a multiple of 4), each output within a bfloat16 rounding of the float64 product."""
    if not jit.available():
        pytest.skip("numba not installed (or PORTAGRAD_NUMBA=0)")
    rng = np.random.default_rng(M + N)
    x = rng.standard_normal((M, K)).astype(BF16)
    w = rng.standard_normal((N, K)).astype(BF16)
    want = x.astype(np.float64) @ w.astype(np.float64).T
    o = np.full((1, M, N), np.nan, BF16)
    assert backend._bf16_few_rows(_view(x[None], x), _view(w.T[None], w), _view(o, o))
    got = o[0].astype(np.float64)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=2.0 ** -7, atol=1e-6 * np.abs(want).max())


def test_other_shapes_take_the_general_path() -> None:
    x = np.ones((1, 17, 64), BF16)  # 17 rows: more than few
    w = np.ones((1, 64, 1 << 15), BF16)
    o = np.empty((1, 17, 1 << 15), BF16)
    assert not backend._bf16_few_rows(_view(x, x), _view(w, w), _view(o, o))
    small = np.ones((1, 64, 64), BF16)  # a small operand: widened whole
    o2 = np.empty((1, 1, 64), BF16)
    assert not backend._bf16_few_rows(_view(x[:, :1], x), _view(small, small), _view(o2, o2))


@pytest.mark.parametrize("numba", [True, False])
def test_x_at_w_t_through_the_public_api(numba: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """``x @ W.T`` of bfloat16 tensors (what linear layers compute): the float32 product of the
    bfloat16 values, rounded once, whichever path the backend takes (without numba the blocked
    one for 1 and 2 rows: the same float32 products, bit for bit; with numba those rows take the
    loop over the bit patterns, 40 rows too (without numba one batched product): float32 sums in
    another order, so within a bfloat16 rounding of numpy's 2-D one, or a float32 summation error
    where terms cancel)."""
    if numba and not jit.available():
        pytest.skip("numba not installed (or PORTAGRAD_NUMBA=0)")
    monkeypatch.setattr(bf16_dot, "_STATE", [None])  # the bfloat16 instruction: test_bf16_dot.py
    if not numba:
        monkeypatch.setattr(jit, "_STATE", [None])
    rng = np.random.default_rng(1)
    for rows in (1, 2, 40):
        x = pg.tensor(rng.standard_normal((rows, 256)), dtype=pg.bfloat16)
        w = pg.tensor(rng.standard_normal((5000, 256)), dtype=pg.bfloat16)
        got = (x @ w.T).float().numpy()
        want = (x.float().numpy() @ w.float().numpy().T).astype(BF16).astype(np.float32)
        if rows <= 2 and not numba:
            np.testing.assert_array_equal(got, want)
        else:
            # one bfloat16 step, or float32 sums in another order where terms cancel
            np.testing.assert_allclose(got, want, rtol=2.0 ** -7, atol=1e-6 * np.abs(want).max())
