"""float32 products of a few rows against a weight read once (``f32_dot``, compiled by llvmlite
where the CPU has AVX-512F): each output a float32 dot product over K (the sums reassociated by
lanes, so the last bits may differ from BLAS's), and the numpy backend's ``x @ W.T`` of 2-64
rows with K >= 512 runs on it.

Where AVX-512F or llvmlite is missing, the kernel's own tests skip with that reason and the
public-API tests run the BLAS path they fall back to.
"""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.backends.numpy import backend, f32_dot

pytestmark = pytest.mark.backend_independent

needs_kernel = pytest.mark.skipif(
    not f32_dot.available(), reason="no AVX-512F on this CPU or no llvmlite, or switched off "
                                    "(PORTAGRAD_NUMBA=0 or PORTAGRAD_F32_DOT=0)")


def _close(out: np.ndarray, a: np.ndarray, w: np.ndarray) -> None:
    """Within a float32 sum's error bound of the float64 product."""
    want = a.astype(np.float64) @ w.astype(np.float64).T
    bound = 2.0 ** -22 * a.shape[1] * (np.abs(a).astype(np.float64) @ np.abs(w).T) + 1e-30
    assert np.all(np.abs(out - want) <= bound), np.abs(out - want).max()


@needs_kernel
@pytest.mark.parametrize("M", [1, 2, 3, 4, 5, 8, 9, 13, 64])
@pytest.mark.parametrize("K,N", [(1, 1), (15, 3), (16, 4), (17, 5), (100, 37), (768, 9)])
def test_every_tile_and_tail(M: int, K: int, N: int) -> None:
    rng = np.random.default_rng(M * 1000 + K + N)
    a = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    out = np.full((M, N), np.nan, np.float32)
    f32_dot.matmul_nt(a, w, out)
    _close(out, a, w)


@needs_kernel
def test_row_strides_and_only_the_output_written() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 40)).astype(np.float32)[:, :33]  # rows 40 apart
    w = rng.standard_normal((11, 50)).astype(np.float32)[:, 5:38]
    big = np.full((6, 20), 7.0, np.float32)
    f32_dot.matmul_nt(a, w, big[:, 3:14])
    _close(big[:, 3:14], a, w)
    assert (big[:, :3] == 7).all() and (big[:, 14:] == 7).all()


@needs_kernel
def test_infinities_and_nans_propagate() -> None:
    a = np.ones((4, 20), np.float32)
    w = np.ones((5, 20), np.float32)
    a[1, 3] = np.nan
    w[2, 19] = np.inf  # in the masked tail
    out = np.empty((4, 5), np.float32)
    f32_dot.matmul_nt(a, w, out)
    assert np.isnan(out[1]).all()
    assert np.isinf(out[[0, 2, 3], 2]).all() and (out[[0, 2, 3]][:, [0, 1, 3, 4]] == 20).all()


@needs_kernel
def test_bad_operands_are_refused() -> None:
    a, w, out = (np.zeros(s, np.float32) for s in ((2, 3), (4, 3), (2, 4)))
    with pytest.raises(TypeError, match="float32"):
        f32_dot.matmul_nt(a.astype(np.float64), w, out)
    with pytest.raises(ValueError, match="do not match"):
        f32_dot.matmul_nt(a, w[:, :2], out)
    with pytest.raises(ValueError, match="contiguous"):
        f32_dot.matmul_nt(np.zeros((3, 2), np.float32).T, w, out)


def test_switched_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f32_dot, "_STATE", [])
    monkeypatch.setenv("PORTAGRAD_F32_DOT", "0")
    assert not f32_dot.available()
    with pytest.raises(RuntimeError, match="not available"):
        f32_dot.matmul_nt(*(np.zeros((1, 1), np.float32) for _ in range(3)))


@needs_kernel
@pytest.mark.parametrize("rows,K,taken", [(8, 768, True), (2, 512, True), (64, 784, True),
                                          (1, 768, False), (8, 64, False), (65, 768, False)])
def test_the_backend_takes_the_kernel_for_few_rows_of_long_k(
        monkeypatch: pytest.MonkeyPatch, rows: int, K: int, taken: bool) -> None:
    """x @ W.T (a linear layer, recorded or not) runs on the kernel from 2 to 64 rows with K >=
    512 (and a million multiply-adds); one row (BLAS's vector product), short K and more rows
    keep BLAS."""
    calls = []
    real = f32_dot.matmul_nt
    monkeypatch.setattr(f32_dot, "matmul_nt", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(rows + K)
    x = pg.tensor(rng.standard_normal((rows, K)), dtype=pg.float32, requires_grad=True)
    w = pg.tensor(rng.standard_normal((1100, K)), dtype=pg.float32, requires_grad=True)
    b = pg.tensor(rng.standard_normal(1100), dtype=pg.float32)
    y = F.linear(x, w, b)
    assert bool(calls) is taken
    _close(y.detach().numpy() - b.numpy(), x.detach().numpy(), w.detach().numpy())
    y.sum().backward()  # (the gradients' products are not of this form: BLAS)
    np.testing.assert_allclose(w.grad.numpy(), np.ones((rows, 1100)).T @ x.detach().numpy(),
                               rtol=1e-5, atol=1e-4)
    assert backend._F32_NT_MAX_ROWS == 64


@pytest.mark.parametrize("shape_x,shape_w", [((8, 768), (2304, 768)), ((3, 600), (5, 600)),
                                             ((2, 4, 640), (70, 640))])
def test_public_linear_and_matmul_agree_with_numpy(shape_x, shape_w) -> None:
    """Whichever path runs (the kernel, or BLAS where it is not there)."""
    rng = np.random.default_rng(sum(shape_x))
    x = rng.standard_normal(shape_x).astype(np.float32)
    w = rng.standard_normal(shape_w).astype(np.float32)
    got = F.linear(pg.tensor(x), pg.tensor(w)).numpy()
    got2 = (pg.tensor(x) @ pg.tensor(w).T).numpy()
    x2 = x.reshape(-1, x.shape[-1])
    _close(got.reshape(-1, w.shape[0]), x2, w)
    _close(got2.reshape(-1, w.shape[0]), x2, w)
