"""16-bit (bfloat16, float16) matmul and convolution read their operands as they are.

On OpenCL devices the GPU GEMM kernel ("gpu3", forced here on any device) and the implicit-GEMM
convolution kernels load 16-bit values, widen them to float in registers, accumulate in float32
and round each output element once. So the result is the float32 product of the upcast operands
rounded once to the 16-bit type, and no float32 copy of an operand is allocated. On other devices
the same results are checked through whatever path they take.

Small integer operands make every product and partial sum exact in float32, whatever the order,
so the expected values are exact (the sums pass 256 and 2048, where a kernel that rounded partial
sums would differ). With random normal operands only the accumulation order differs from the
reference (blocked sums, fused multiply-adds), a few float32 units, which can move a value that
lies next to a 16-bit rounding boundary by one 16-bit unit: that is the tolerance.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F

NP = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
#: one unit in the last place relative to the value (7 and 10 stored mantissa bits)
ULP = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}
RNG = np.random.default_rng(16)


def _declines(device: str, dt: str) -> bool:
    try:
        pg.zeros(1, dtype=getattr(pg, dt), device=device) + 1
    except pg.errors.DTypeError:
        return True
    return False


@pytest.fixture(params=["bfloat16", "float16"])
def dt(request, device) -> str:
    if _declines(device, request.param):
        pytest.skip(f"{device} declines {request.param} (DTypeError)")
    return request.param


@pytest.fixture
def forced(device, monkeypatch):
    """On an OpenCL device, the "gpu3" GEMM and the implicit-GEMM convolution forced."""
    if device.startswith("opencl"):
        be = pg.empty(1, device=device)._storage.backend
        monkeypatch.setattr(be, "_force_gemm_kind", "gpu3")
        monkeypatch.setattr(be, "_force_conv_kind", "implicit")
        return be
    return None


def _round(x: np.ndarray, dt: str) -> np.ndarray:
    """``x`` rounded once to ``dt``, as float32."""
    return np.asarray(x, np.float32).astype(NP[dt]).astype(np.float32)


def _ints(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.integers(0, 9, shape).astype(np.float32)


def _normal(shape: tuple[int, ...], dt: str) -> np.ndarray:
    return _round(RNG.standard_normal(shape), dt)  # representable: the upcast is exact


def _on(x: np.ndarray, dt: str, device: str) -> pg.Tensor:
    return pg.tensor(x, device=device).to(getattr(pg, dt))


def _host(t: pg.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy()


def _assert_rounded_once(got: np.ndarray, want32: np.ndarray, absbound: np.ndarray, dt: str,
                         k: int) -> None:
    """``got`` is ``want32`` (the float32 result) rounded once to ``dt``, up to one 16-bit unit
    where float32 accumulation order can move the value across a rounding boundary; ``absbound``
    (the sums of absolute products) scales float32's rounding error."""
    want = _round(want32, dt)
    slack = ULP[dt] * np.abs(want) + 4 * k * 2.0 ** -24 * absbound
    bad = np.abs(got - want) > slack
    assert not bad.any(), f"{bad.sum()} of {bad.size} off: got {got[bad][:5]}, want {want[bad][:5]}"
    assert np.mean(got == want) > 0.9  # most elements are exactly the once-rounded value


# ------------------------------------------------------------------ matmul
@pytest.mark.parametrize("bsz,m,k,n,ta,tb", [
    (1, 37, 300, 70, False, False),  # ragged in every dimension
    (2, 65, 33, 129, True, False),  # batched, A transposed
    (3, 16, 40, 8, False, True),  # B transposed
    (1, 5, 1, 7, False, False),  # K = 1
    (1, 1, 1, 1, True, True),
])
def test_matmul_integers_exact(device, dt, forced, bsz, m, k, n, ta, tb):
    a, b = _ints((bsz, m, k)), _ints((bsz, k, n))
    at = _on(a.transpose(0, 2, 1).copy(), dt, device).transpose(1, 2) if ta else _on(a, dt, device)
    bt = _on(b.transpose(0, 2, 1).copy(), dt, device).transpose(1, 2) if tb else _on(b, dt, device)
    got = at @ bt
    assert got.dtype == getattr(pg, dt)
    np.testing.assert_array_equal(_host(got), _round(a @ b, dt))


@pytest.mark.parametrize("bsz,m,k,n", [(1, 129, 67, 131), (2, 64, 128, 64)])
def test_matmul_normal_rounded_once(device, dt, forced, bsz, m, k, n):
    a, b = _normal((bsz, m, k), dt), _normal((bsz, k, n), dt)
    got = _host(_on(a, dt, device) @ _on(b, dt, device))
    _assert_rounded_once(got, a @ b, np.abs(a) @ np.abs(b), dt, k)


@pytest.mark.parametrize("m,k,n", [(0, 4, 5), (3, 0, 4), (4, 5, 0)])
def test_matmul_empty(device, dt, forced, m, k, n):
    got = _on(_ints((m, k)), dt, device) @ _on(_ints((k, n)), dt, device)
    assert tuple(got.shape) == (m, n) and got.dtype == getattr(pg, dt)
    np.testing.assert_array_equal(_host(got), np.zeros((m, n), np.float32))


# ------------------------------------------------------------- convolution
#: (N, C, H, W, O, kernel, stride, padding, dilation, groups)
CONV = [(2, 17, 10, 9, 19, (3, 3), 1, 1, 1, 1),  # channels and positions not multiples of 8
        (2, 16, 8, 8, 24, (1, 1), 2, 0, 1, 1),
        (1, 6, 7, 7, 9, (3, 3), 2, 1, 2, 3)]


def _conv_grads(device, dt, x, w, gy, case):
    """Output, input gradient and weight gradient of ``conv2d`` on ``device`` in ``dt``
    (``dt`` "float32": the float32 reference)."""
    _, _, _, _, _, _, s, p, d, groups = case
    xt = _on(x, dt, device).requires_grad_()
    wt = _on(w, dt, device).requires_grad_()
    y = F.conv2d(xt, wt, None, s, p, d, groups)
    gx, gw = pg.autograd.grad(y, (xt, wt), _on(gy, dt, device))
    return _host(y), _host(gx), _host(gw)


def _conv_shapes(case):
    N, C, H, W, O, k, s, p, d, groups = case
    oh = (H + 2 * p - d * (k[0] - 1) - 1) // s + 1
    ow = (W + 2 * p - d * (k[1] - 1) - 1) // s + 1
    return (N, C, H, W), (O, C // groups) + k, (N, O, oh, ow)


@pytest.mark.parametrize("case", CONV, ids=["ragged", "1x1s2", "groups"])
def test_conv_integers_exact(device, dt, forced, case):
    xs, ws, ys = _conv_shapes(case)
    x, w, gy = _ints(xs), _ints(ws), _ints(ys)
    got = _conv_grads(device, dt, x, w, gy, case)
    want = _conv_grads("cpu", "float32", x, w, gy, case)
    for name, g, r in zip(("output", "grad input", "grad weight"), got, want):
        np.testing.assert_array_equal(g, _round(r, dt), err_msg=name)


@pytest.mark.parametrize("case", CONV[:1], ids=["ragged"])
def test_conv_normal_rounded_once(device, dt, forced, case):
    xs, ws, ys = _conv_shapes(case)
    x, w, gy = _normal(xs, dt), _normal(ws, dt), _normal(ys, dt)
    got = _conv_grads(device, dt, x, w, gy, case)
    want = _conv_grads("cpu", "float32", x, w, gy, case)
    bound = _conv_grads("cpu", "float32", np.abs(x), np.abs(w), np.abs(gy), case)
    k = xs[1] * ws[2] * ws[3] * max(ys[0] * ys[2] * ys[3] // ws[1], 1)  # largest sum length
    for g, r, b in zip(got, want, bound):
        _assert_rounded_once(g, r, b, dt, k)


def test_conv_grad_input_im2col_forced(device, dt, monkeypatch):
    """With im2col forced, a 16-bit input gradient still rounds once (it runs in float32 then:
    col2im would sum 16-bit column gradients)."""
    if device.startswith("opencl"):
        be = pg.empty(1, device=device)._storage.backend
        monkeypatch.setattr(be, "_force_conv_kind", "im2col")
    case = CONV[0]
    xs, ws, ys = _conv_shapes(case)
    x, w, gy = _ints(xs), _ints(ws), _ints(ys)
    got = _conv_grads(device, dt, x, w, gy, case)[1]
    np.testing.assert_array_equal(got, _round(_conv_grads("cpu", "float32", x, w, gy, case)[1], dt))


# --------------------------------------------------- no float32 operand copies
def _peak_extra(fn) -> int:
    """Bytes allocated on opencl:0 while ``fn`` runs, beyond what was allocated before."""
    pg.opencl.synchronize()
    base = pg.opencl.memory_allocated()
    pg.opencl.reset_peak_memory_stats()
    keep = fn()
    pg.opencl.synchronize()
    del keep
    return pg.opencl.max_memory_allocated() - base


def test_no_float32_operand_copies(device, dt, forced):
    """The 16-bit matmul ("gpu3") and convolution (implicit) allocate their 16-bit result and
    nothing else, and the implicit input gradient writes into its output allocating nothing:
    float32 copies of the operands would add at least an operand's size in float32."""
    if device != "opencl:0":
        pytest.skip("device memory statistics of the OpenCL kernels, measured on opencl:0")
    xs, ws, ys = _conv_shapes((4, 32, 16, 16, 32, (3, 3), 1, 1, 1, 1))
    a, b = _on(_ints((256, 256)), dt, device), _on(_ints((256, 256)), dt, device)
    x, w, gy = _on(_ints(xs), dt, device), _on(_ints(ws), dt, device), _on(_ints(ys), dt, device)
    gx = pg.empty(xs, dtype=x.dtype, device=device)
    assert _peak_extra(lambda: a @ b) <= 256 * 256 * 2
    assert _peak_extra(lambda: F.conv2d(x, w, padding=1)) <= int(np.prod(ys)) * 2
    # the input gradient through the backend, into a given output: no autograd bookkeeping
    assert _peak_extra(lambda: forced.conv2d_grad_input(gy._v, w._v, gx._v, (1, 1), (1, 1),
                                                        (1, 1), 1)) == 0
    np.testing.assert_array_equal(
        _host(gx), _round(_conv_grads("cpu", "float32", _host(x), _host(w), _host(gy),
                                      (4, 32, 16, 16, 32, (3, 3), 1, 1, 1, 1))[1], dt))
