"""The few-row GEMM family "gemv" of the OpenCL backend (``portagrad.backends.opencl.gemm_gemv``).

A decoding step multiplies 1..8 activation rows by weights, mostly the transposed view ``W.T`` of
a ``Linear`` weight ``W[N, K]`` (``b`` k-fast), sometimes a row-major ``[K, N]`` matrix (n-fast).
Both kernels are checked, forced and as chosen automatically, at row counts 1, 2, 3 and 8 (and 11:
two launches), odd and unit ``K`` and ``N`` (vector tails, the ragged last block), batched and
broadcast, through views with offsets, in float32/float64/bfloat16/float16, against numpy
float64: integer-valued operands exactly (every partial sum is exact in float32, whatever the
order), normal ones within a summation-order tolerance. Only OpenCL devices run these.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import portagrad as pg

NP16 = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
RNG = np.random.default_rng(7)
SIZES = [(1, 1, 1), (1, 768, 3072), (2, 33, 17), (3, 1, 9), (3, 40, 1), (8, 19, 37),
         (2, 33, 70), (11, 70, 21)]


@pytest.fixture
def backend(device):
    if not device.startswith("opencl"):
        pytest.skip("the gemv kernels belong to the OpenCL backend")
    return pg.empty(1, device=device)._storage.backend


@pytest.fixture(params=["auto", "gemv"])
def kind(request, backend, monkeypatch) -> str:
    """The GEMM family: "gemv" forced, or the automatic choice (which must pick "gemv" for the
    k-fast layout at fewer than 8 rows: recorded through the module's launcher)."""
    from portagrad.backends.opencl import gemm

    if request.param == "gemv":
        monkeypatch.setattr(backend, "_force_gemm_kind", "gemv")
    calls: list[tuple] = []
    real = gemm.launch_gemv
    monkeypatch.setattr(gemm, "launch_gemv",
                        lambda dev, a, b, out: (calls.append(out.shape), real(dev, a, b, out)))
    backend._gemv_calls = calls
    return request.param


def _host(t) -> np.ndarray:
    return t.detach().cpu().to(pg.float64).numpy()


def _operands(dt: str, m: int, k: int, n: int, integer: bool, batch: tuple = ()):
    if integer:  # small integers: every product and partial sum exact in float32 and 16 bits
        a = RNG.integers(-3, 4, (*batch, m, k)).astype(np.float64)
        w = RNG.integers(-3, 4, (*batch, n, k)).astype(np.float64)
    else:
        a = RNG.standard_normal((*batch, m, k))
        w = RNG.standard_normal((*batch, n, k))
    if dt in NP16:  # the values the 16-bit operands hold
        a = a.astype(NP16[dt]).astype(np.float64)
        w = w.astype(NP16[dt]).astype(np.float64)
    return a, w


def _tensor(x: np.ndarray, dt: str, device: str, pad: int = 0):
    """``x`` on ``device`` in ``dt``, as a view at an offset (``pad`` leading rows and columns)."""
    big = np.zeros((*x.shape[:-2], x.shape[-2] + pad, x.shape[-1] + pad))
    big[..., pad:, pad:] = x
    t = pg.tensor(big, device=device).to(getattr(pg, dt))
    return t[..., pad:, pad:]


def _check(got: np.ndarray, a: np.ndarray, w: np.ndarray, dt: str, integer: bool) -> None:
    """``got`` against ``a @ w^T`` in float64: exact for integer operands (rounded once to a
    16-bit output), else within the float32/float64 summation-order bound
    ``c * eps * sqrt(k) * (|a| @ |w|^T)`` (plus one 16-bit rounding of the output)."""
    want = a @ np.swapaxes(w, -1, -2)
    if integer:
        want = want.astype(NP16[dt]).astype(np.float64) if dt in NP16 else want
        np.testing.assert_array_equal(got, want)
        return
    k = a.shape[-1]
    eps = np.finfo(np.float64 if dt == "float64" else np.float32).eps
    bound = 4 * eps * np.sqrt(k) * (np.abs(a) @ np.abs(np.swapaxes(w, -1, -2))) + 1e-300
    if dt in NP16:
        bound = bound + (2.0 ** -8 if dt == "bfloat16" else 2.0 ** -11) * np.abs(want)
    assert np.all(np.abs(got - want) <= bound), np.max(np.abs(got - want) / bound)


@pytest.mark.parametrize("dt", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("m,k,n", SIZES)
@pytest.mark.parametrize("layout", ["linear", "rowmajor"])
@pytest.mark.parametrize("integer", [True, False], ids=["int", "normal"])
def test_gemv_matches_numpy(device, backend, kind, dt, m, k, n, layout, integer):
    a, w = _operands(dt, m, k, n, integer)
    at = _tensor(a, dt, device, pad=1)
    if layout == "linear":  # W[N, K] stored, multiplied as its transposed view (b k-fast)
        bt = _tensor(w, dt, device, pad=2).transpose(0, 1)
    else:  # [K, N] row-major (b n-fast)
        bt = _tensor(np.ascontiguousarray(w.T), dt, device, pad=2)
    got = _host(at @ bt)
    _check(got, a, w, dt, integer)
    on_gpu = backend.device(int(device.split(":")[1])).is_gpu  # (GPUs time it against gpu3)
    if kind == "auto" and layout == "linear" and m < 8 and k > 1 and not on_gpu:
        assert backend._gemv_calls, "the k-fast few-row product did not take gemv"
    if kind == "gemv":
        assert backend._gemv_calls


@pytest.mark.parametrize("layout", ["linear", "rowmajor"])
@pytest.mark.parametrize("broadcast", [False, True], ids=["batched", "broadcast-b"])
def test_gemv_batched(device, backend, kind, layout, broadcast):
    bsz, m, k, n = 3, 2, 45, 29
    a, w = _operands("float32", m, k, n, True, (bsz,))
    if broadcast:
        w = np.broadcast_to(w[:1], w.shape)
    at = _tensor(a, "float32", device, pad=1)
    wt = _tensor(np.ascontiguousarray(w[:1] if broadcast else w), "float32", device)
    if broadcast:
        wt = wt.expand(bsz, n, k)
    bt = wt.transpose(1, 2) if layout == "linear" else wt.transpose(1, 2).contiguous()
    got = _host(pg.matmul(at, bt))
    np.testing.assert_array_equal(got, a @ np.swapaxes(w, 1, 2))


@pytest.mark.parametrize("m,k,n", [(0, 5, 3), (2, 0, 3), (2, 5, 0)])
def test_gemv_empty(device, backend, kind, m, k, n):
    a = pg.ones((m, k), device=device)
    b = pg.ones((n, k), device=device).transpose(0, 1)
    out = a @ b
    assert tuple(out.shape) == (m, n)
    np.testing.assert_array_equal(_host(out), np.full((m, n), float(k)))


def test_gemv_source_rejects_bad_row_count():
    pytest.importorskip("pyopencl", reason="pyopencl is not installed")
    from portagrad.backends.opencl.gemm_gemv import GEMV_ROWS, gemv_source

    with pytest.raises(ValueError, match="rows"):
        gemv_source("float32", GEMV_ROWS + 1, True, True, True, True)
