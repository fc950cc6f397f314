"""bfloat16 products on the CPU's bfloat16 dot-product instruction (``vdpbf16ps``, compiled by
llvmlite where the CPU has AVX-512 BF16): every output a float32 dot product of the bfloat16
values (each product exact, the sums in float32) rounded once to the nearest even bfloat16, as
PyTorch's bfloat16 GEMMs on such CPUs.

Where the instruction is missing (or llvmlite is), the kernel's own tests skip with that reason
and the public-API tests run the float32 paths they fall back to.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.numpy import backend, bf16_dot

pytestmark = pytest.mark.backend_independent

BF16 = ml_dtypes.bfloat16

needs_kernel = pytest.mark.skipif(not bf16_dot.available(),
                                  reason="no AVX-512 BF16 on this CPU, or no llvmlite")


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16)


def _value(out: np.ndarray) -> np.ndarray:
    return out.view(BF16).astype(np.float64)


def _within_one_rounding(out: np.ndarray, want: np.ndarray, scale: np.ndarray, K: int) -> bool:
    """Half a bfloat16 step of the result plus the float32 sum's error bound."""
    err = 2.0 ** -22 * K * scale + 1e-30
    return bool(np.all(np.abs(_value(out) - want) <= 2.0 ** -8 * (np.abs(want) + err) + err))


@needs_kernel
@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (4, 32, 3), (5, 31, 7), (7, 75, 5), (9, 64, 10),
                                   (13, 100, 4), (64, 768, 37), (3, 33, 2), (300, 40, 3)])
def test_every_tile_and_column_tail(M: int, K: int, N: int) -> None:
    """Tiles of 4 x 4 with rows of either operand left over, K below, at and past a multiple of
    32 (the last columns read by masked loads): the float64 product within half a bfloat16
    step and the float32 summation error."""
    rng = np.random.default_rng(M * 1000 + K * 10 + N)
    a = rng.standard_normal((M, K)).astype(BF16)
    w = rng.standard_normal((N, K)).astype(BF16)
    out = np.full((M, N), 0x7FC0, np.uint16)  # NaN: every output must be written
    bf16_dot.matmul_nt(_bits(a), _bits(w), out)
    want = a.astype(np.float64) @ w.astype(np.float64).T
    scale = np.abs(a.astype(np.float64)) @ np.abs(w.astype(np.float64)).T
    assert _within_one_rounding(out, want, scale, K)


@needs_kernel
def test_rounds_to_nearest_even_once() -> None:
    """Sums that fall exactly between two bfloat16 values round to the even one; one just past
    the middle rounds away; a sum past bfloat16's largest finite rounds to infinity."""
    a = np.zeros((4, 2), BF16)
    a[:, 0] = 1
    w = np.zeros((4, 2), BF16)
    w[:, 0] = 1
    w[:, 1] = [2.0 ** -8, 3 * 2.0 ** -8, 2.0 ** -8 + 2.0 ** -15, 0]  # 1 + w[:, 1] * a[:, 1]
    a[:, 1] = 1
    out = np.empty((4, 4), np.uint16)
    bf16_dot.matmul_nt(_bits(a), _bits(w), out)
    # 1 + 2^-8 (a tie) -> 1 (even); 1 + 3 * 2^-8 (a tie) -> 1 + 2^-6 (even); just past -> up
    np.testing.assert_array_equal(_value(out)[0], [1, 1 + 2.0 ** -6, 1 + 2.0 ** -7, 1])
    big = np.full((1, 2), 3.3e38, BF16)
    out1 = np.empty((1, 1), np.uint16)
    bf16_dot.matmul_nt(_bits(big), _bits(np.ones((1, 2), BF16)), out1)
    assert _value(out1)[0, 0] == np.inf


@needs_kernel
def test_row_strides_and_a_block_of_rows_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of a wider array (a row stride that is not K) and an ``a`` taller than one block of
    rows (several calls, each at its offset)."""
    monkeypatch.setattr(bf16_dot, "_A_BLOCK_BYTES", 256)  # 4 rows of K = 40 per call
    rng = np.random.default_rng(3)
    big_a = rng.standard_normal((23, 50)).astype(BF16)
    big_w = rng.standard_normal((11, 60)).astype(BF16)
    a, w = big_a[:, 3:43], big_w[:, 10:50]
    big_out = np.zeros((23, 20), np.uint16)
    out = big_out[:, 5:16]
    bf16_dot.matmul_nt(_bits(a), _bits(w), out)
    want = a.astype(np.float64) @ w.astype(np.float64).T
    np.testing.assert_allclose(_value(out), want, rtol=2.0 ** -8, atol=1e-5)
    assert not big_out[:, :5].any() and not big_out[:, 16:].any()  # nothing outside out


@needs_kernel
def test_infinities_and_nans_propagate() -> None:
    a = np.zeros((5, 40), BF16)
    a[0, 0] = np.inf
    a[1, 39] = np.nan  # in the masked tail
    a[2, 1] = 1
    w = np.zeros((3, 40), BF16)
    w[0, 0] = 1
    w[1, 1] = -np.inf
    out16 = np.empty((5, 3), np.uint16)
    bf16_dot.matmul_nt(_bits(a), _bits(w), out16)
    out = _value(out16)
    assert out[0, 0] == np.inf  # inf * 1
    assert np.isnan(out[0, 1])  # inf * 0 + 0 * -inf
    assert np.isnan(out[1]).all()  # nan * 0
    assert out[2, 1] == -np.inf
    assert np.isnan(out[3:, 1]).all()  # 0 * -inf
    assert (out[3:, [0, 2]] == 0).all() and out[2, 0] == 0 and out[2, 2] == 0


@needs_kernel
def test_empty_and_zero_length_products() -> None:
    out = np.full((3, 4), 7, np.uint16)
    bf16_dot.matmul_nt(np.zeros((3, 0), np.uint16), np.zeros((4, 0), np.uint16), out)
    assert (out == 0).all()
    bf16_dot.matmul_nt(np.zeros((0, 5), np.uint16), np.zeros((4, 5), np.uint16),
                       np.empty((0, 4), np.uint16))


@needs_kernel
def test_bad_operands_are_refused() -> None:
    a, w = np.zeros((2, 8), np.uint16), np.zeros((3, 8), np.uint16)
    with pytest.raises(TypeError, match="uint16"):
        bf16_dot.matmul_nt(a.astype(np.float32), w, np.empty((2, 3), np.uint16))
    with pytest.raises(TypeError, match="uint16"):
        bf16_dot.matmul_nt(a, w, np.empty((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"\(2, 8\) @ \(3, 7\)"):
        bf16_dot.matmul_nt(a, w[:, :7], np.empty((2, 3), np.uint16))
    with pytest.raises(ValueError, match="contiguous"):
        bf16_dot.matmul_nt(np.zeros((2, 16), np.uint16)[:, ::2], w, np.empty((2, 3), np.uint16))


def _layout(x: np.ndarray, how: str) -> np.ndarray:
    """``x``'s values in another memory layout: "c" as is, "t" column-major, "s" every other
    element of a wider array (no two neighbours contiguous)."""
    if how == "t":
        return np.ascontiguousarray(x.T).T
    if how == "s":
        return np.repeat(x, 2, axis=1)[:, ::2]
    return x


@needs_kernel
@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (8, 2, 32), (9, 3, 17), (7, 75, 5), (17, 64, 48),
                                   (16, 100, 33), (300, 40, 3), (5, 31, 16)])
@pytest.mark.parametrize("layout_a", ["c", "t", "s"])
@pytest.mark.parametrize("layout_b", ["c", "t"])
def test_nn_every_tile_layout_and_tail(M: int, K: int, N: int, layout_a: str,
                                       layout_b: str) -> None:
    """``matmul_nn``'s 8 x 32 tiles with rows and columns left over (N past a multiple of 16),
    odd K (the last pair half zero), ``a`` read in place (rows of even K) or packed (column-major,
    strided, odd K), ``b`` of either layout: the float64 product within half a bfloat16 step
    and the float32 summation error, every output written."""
    rng = np.random.default_rng(M * 1000 + K * 10 + N)
    a = rng.standard_normal((M, K)).astype(BF16)
    b = rng.standard_normal((K, N)).astype(BF16)
    out = np.full((M, N), 0x7FC0, np.uint16)
    bf16_dot.matmul_nn(_bits(_layout(a, layout_a)), _bits(_layout(b, layout_b)), out)
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert _within_one_rounding(out, want, scale, K)


@needs_kernel
def test_nn_writes_only_its_output_and_propagates_nans() -> None:
    """An output inside a wider array (its row stride not N) keeps the columns around it; an
    odd K's padding pairs an infinity with zeros only; NaN and inf as in the nt kernel."""
    a = np.zeros((9, 5), BF16)
    a[0, 0] = np.inf
    a[1, 4] = np.nan  # the last, unpaired column
    a[2, 1] = 1
    a[3:, 4] = 1
    b = np.zeros((5, 20), BF16)
    b[0, 0] = 1
    b[1, 1] = -np.inf
    b[4, 19] = np.inf  # the unpaired row: its pair's zero half must not make a NaN
    big = np.zeros((9, 40), np.uint16)
    bf16_dot.matmul_nn(_bits(a), _bits(b), big[:, 10:30])
    assert not big[:, :10].any() and not big[:, 30:].any()
    out = _value(big[:, 10:30])
    assert out[0, 0] == np.inf and np.isnan(out[0, 1])  # inf * 1; inf * 0 + 0 * -inf
    assert np.isnan(out[1]).all()  # nan * 0
    assert out[2, 1] == -np.inf
    assert (out[3:, 19] == np.inf).all()  # 1 * inf + 0 * 0 (the padding)
    # 32 columns, written in place through the wider array's row stride
    rng = np.random.default_rng(5)
    a2 = rng.standard_normal((11, 6)).astype(BF16)
    b2 = rng.standard_normal((6, 32)).astype(BF16)
    big2 = np.zeros((11, 50), np.uint16)
    bf16_dot.matmul_nn(_bits(a2), _bits(b2), big2[:, 7:39])
    assert not big2[:, :7].any() and not big2[:, 39:].any()
    want = a2.astype(np.float64) @ b2.astype(np.float64)
    np.testing.assert_allclose(_value(big2[:, 7:39]), want, rtol=2.0 ** -8, atol=1e-5)


@needs_kernel
def test_nn_empty_and_bad_operands() -> None:
    out = np.full((3, 4), 7, np.uint16)
    bf16_dot.matmul_nn(np.zeros((3, 0), np.uint16), np.zeros((0, 4), np.uint16), out)
    assert (out == 0).all()
    a, b = np.zeros((2, 8), np.uint16), np.zeros((8, 3), np.uint16)
    with pytest.raises(TypeError, match="uint16"):
        bf16_dot.matmul_nn(a, b.astype(np.float32), np.empty((2, 3), np.uint16))
    with pytest.raises(ValueError, match=r"\(2, 8\) @ \(7, 3\)"):
        bf16_dot.matmul_nn(a, b[:7], np.empty((2, 3), np.uint16))
    with pytest.raises(ValueError, match="contiguous"):
        bf16_dot.matmul_nn(a, b, np.empty((3, 2), np.uint16).T)


@needs_kernel
@pytest.mark.parametrize("kernel", ["nt", "nn"])
@pytest.mark.parametrize("batch_a,batch_b", [(3, 3), (1, 3), (3, 1)])
def test_a_batch_in_one_call(kernel: str, batch_a: int, batch_b: int) -> None:
    """3-D operands: every product of the batch at its own offsets, an operand of one matrix
    used for all (a batch stride of 0), an output inside a wider array."""
    rng = np.random.default_rng(batch_a * 10 + batch_b)
    M, K, N = 9, 40, 21
    a = rng.standard_normal((batch_a, M, K)).astype(BF16)
    b = rng.standard_normal((batch_b, K, N)).astype(BF16)
    big = np.zeros((3, M, N + 6), np.uint16)
    out = big[:, :, 3:3 + N]
    if kernel == "nt":
        bf16_dot.matmul_nt(_bits(a), _bits(np.ascontiguousarray(b.transpose(0, 2, 1))), out)
    else:
        bf16_dot.matmul_nn(_bits(a), _bits(b), out)
    assert not big[:, :, :3].any() and not big[:, :, 3 + N:].any()
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(_value(out), np.broadcast_to(want, (3, M, N)), rtol=2.0 ** -8,
                               atol=1e-5)
    with pytest.raises(ValueError, match="do not match"):
        bf16_dot.matmul_nn(_bits(a), _bits(b), np.empty((2, M, N), np.uint16))

@needs_kernel
@pytest.mark.parametrize("shape_a,shape_b,form", [
    ((1100, 64), (64, 48), "x @ W.T"),  # many rows, shallow: nn even with b's columns runs of K
    ((40, 96), (96, 300), "g @ W"),  # an input gradient: b's columns strided
    ((130, 24), (130, 40), "g.T @ x"),  # a weight gradient: both operands strided
])
def test_the_backend_takes_the_nn_kernel(monkeypatch: pytest.MonkeyPatch, shape_a, shape_b,
                                         form) -> None:
    """The products of a layer's gradients (and shallow ones of many rows) run on
    ``matmul_nn``, with the float32 product's values rounded once."""
    calls = []
    real = bf16_dot.matmul_nn
    monkeypatch.setattr(bf16_dot, "matmul_nn", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(7)
    x = pg.tensor(rng.standard_normal(shape_a), dtype=pg.bfloat16)
    w = pg.tensor(rng.standard_normal(shape_b), dtype=pg.bfloat16)
    a, b = {"x @ W.T": (x, w.T.T), "g @ W": (x, w), "g.T @ x": (x.T, w)}[form]
    if form == "x @ W.T":
        b = pg.tensor(rng.standard_normal(shape_b[::-1]), dtype=pg.bfloat16).T
    got = a @ b
    assert calls == [1]
    want = (a.float().numpy() @ b.float().numpy()).astype(BF16).astype(np.float64)
    g = got.float().numpy().astype(np.float64)
    assert np.all(np.abs(g - want) <= 2.0 ** -7 * np.abs(want) + 1e-5 * np.abs(want).max())

def test_switched_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bf16_dot, "_STATE", [])
    monkeypatch.setenv("PORTAGRAD_BF16_DOT", "0")
    assert not bf16_dot.available()
    with pytest.raises(RuntimeError, match="not available"):
        bf16_dot.matmul_nt(np.zeros((1, 1), np.uint16), np.zeros((1, 1), np.uint16),
                           np.empty((1, 1), np.uint16))


@pytest.mark.parametrize("shape_a,shape_b,transpose_b", [
    ((8, 768), (3072, 768), True),  # a decoder step at batch 8: x @ W.T
    ((40, 96), (96, 300), False),  # b's columns not contiguous: a bfloat16 copy, then the kernel
    ((3, 12, 50), (3, 50, 20), False),  # batched, matrix by matrix
    ((2, 6, 200), (200, 300), False),  # b broadcast over the batch
    ((2, 200), (300, 200), True),  # 2 rows: numba's loop where installed
])
def test_public_matmul_is_the_rounded_float32_product(shape_a, shape_b, transpose_b) -> None:
    """Whichever path runs, each output is the float32 product of the bfloat16 values rounded
    once to bfloat16: within a bfloat16 step of numpy's float32 product (or a float32 sum's
    error where terms cancel)."""
    rng = np.random.default_rng(sum(shape_a) + sum(shape_b))
    x = pg.tensor(rng.standard_normal(shape_a), dtype=pg.bfloat16)
    w = pg.tensor(rng.standard_normal(shape_b), dtype=pg.bfloat16)
    b = w.transpose(-1, -2) if transpose_b else w
    got = (x @ b)
    assert got.dtype is pg.bfloat16
    want = (x.float().numpy() @ b.float().numpy()).astype(BF16).astype(np.float64)
    g = got.float().numpy().astype(np.float64)
    tol = 2.0 ** -7 * np.abs(want) + 1e-5 * np.abs(want).max()
    assert np.all(np.abs(g - want) <= tol)


@needs_kernel
def test_the_backend_takes_the_kernel_for_a_decoder_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """x @ W.T of 8 rows runs on the instruction, not on float32 copies (a wrong answer from
    the fallback would pass the test above, so the path is checked here)."""
    calls = []
    real = bf16_dot.matmul_nt
    monkeypatch.setattr(bf16_dot, "matmul_nt", lambda *a: calls.append(1) or real(*a))
    x = pg.randn(8, 64, dtype=pg.bfloat16)
    w = pg.randn(100, 64, dtype=pg.bfloat16)
    y = x @ w.T
    assert calls == [1]
    np.testing.assert_allclose(y.float().numpy(), (x.float() @ w.float().T).numpy(),
                               rtol=2.0 ** -7, atol=1e-3)
    assert backend._BF16_DOT_MIN_ROWS <= 8


@needs_kernel
def test_a_damaged_cached_object_is_compiled_anew(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path) -> None:
    """The compiled object is cached with its SHA-256: a truncated file is not loaded (that
    could crash the process) but replaced by a fresh compilation, which then passes its check."""
    path = tmp_path / "bf16_dot-test.o"
    monkeypatch.setattr(bf16_dot, "_cache_path", lambda key: str(path))
    monkeypatch.setattr(bf16_dot, "_STATE", [])
    assert bf16_dot.available()
    whole = path.read_bytes()
    assert bf16_dot._read_object(str(path)) == whole[:-32]
    path.write_bytes(whole[:500])
    assert bf16_dot._read_object(str(path)) is None
    monkeypatch.setattr(bf16_dot, "_STATE", [])
    assert bf16_dot.available()
    assert path.read_bytes() == whole  # written again, whole
    monkeypatch.setattr(bf16_dot, "_STATE", [])
    assert bf16_dot.available()  # and read back from the cache


@needs_kernel
def test_size_one_dimensions_with_any_stride(monkeypatch: pytest.MonkeyPatch) -> None:
    """numpy calls an array contiguous whatever stride it reports along a dimension of size 1
    (``np.ascontiguousarray`` then returns it as it is): K == 1 or N == 1 products, through the
    kernel and through the public product of batches, where such strides arise."""
    a = np.arange(1, 25, dtype=np.float32).reshape(24, 1).astype(BF16)
    w_big = np.arange(1, 71, dtype=np.float32).reshape(35, 2).astype(BF16)
    w = np.lib.stride_tricks.as_strided(w_big[:, :1], shape=(35, 1), strides=(4, 70))
    out = np.empty((24, 35), np.uint16)
    bf16_dot.matmul_nt(_bits(a), w.view(np.uint16), out)
    want = (a.astype(np.float64) @ w.astype(np.float64).T).astype(BF16).astype(np.float64)
    np.testing.assert_array_equal(_value(out), want)
    monkeypatch.setattr(backend, "_BF16_DOT_BATCHED_MIN", 1)
    rng = np.random.default_rng(0)
    for shape_a, shape_w in (((2, 24, 1), (2, 35, 1)), ((2, 24, 6), (2, 1, 6)),
                             ((1, 24, 1), (2, 35, 1))):
        x = pg.tensor(rng.standard_normal(shape_a), dtype=pg.bfloat16)
        y = pg.tensor(rng.standard_normal(shape_w), dtype=pg.bfloat16)
        got = (x @ y.transpose(-1, -2)).float().numpy()
        ref = x.double().numpy() @ y.double().numpy().swapaxes(-1, -2)
        np.testing.assert_allclose(got, ref, rtol=2.0 ** -8, atol=1e-6)
