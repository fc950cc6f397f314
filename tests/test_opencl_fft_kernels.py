"""The OpenCL FFT kernels (``portagrad.backends.opencl.fft``) on raw device buffers.

Complex-to-complex transforms of every size 1..70 and chosen larger ones up to 4096 (powers of
two, of 3, 5, 7, mixed, and primes and other sizes with a factor above 7, which go through
Bluestein's algorithm), forward and backward, in complex64 and complex128, with the passes of
a line in one launch (local memory) and one launch per pass, against
``numpy.fft`` computed in complex128: within ``1e-5`` (complex64) and ``1e-12`` (complex128) of
the largest magnitude of the result. Then batches along every axis of 3-D arrays (the axis in
the middle: strided lines), several axes at once, real-to-complex (one-sided and full) and
complex-to-real transforms (even, odd and unit sizes; an even size along the last dimension
takes the half-length transform, the others the complex one). The planner's factorisation is
checked against its definition. Only OpenCL devices run these.
"""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg

RNG = np.random.default_rng(23)
TOL = {"float32": 1e-5, "float64": 1e-12}
CDT = {"float32": np.complex64, "float64": np.complex128}
SIZES = [*range(1, 71), 97, 121, 127, 128, 210, 243, 256, 343, 625, 840, 1000, 1024, 1031, 2048,
         2310, 4093, 4096]


@pytest.fixture(params=["local", "global"])
def passes(request, monkeypatch) -> str:
    """Where the Stockham passes run: "local", every pass of a line of up to the device's
    longest in one launch (``fft_local``), or "global", one launch per pass (forced by a longest
    local line of 1; the path of longer lines)."""
    from portagrad.backends.opencl import fft

    if request.param == "global":
        real = fft.local_shape
        monkeypatch.setattr(fft, "local_shape", lambda dev, dt: (real(dev, dt)[0], 1))
    return request.param


@pytest.fixture
def dev(device):
    if not device.startswith("opencl"):
        pytest.skip("the FFT kernels belong to the OpenCL backend")
    backend = pg.empty(1, device=device)._storage.backend
    return backend._devices[pg.device(device).index or 0]


def _need(dev, dt: str) -> None:
    if dt == "float64" and not dev.fp64:
        pytest.skip(f"{dev.label} has no float64")


def _up(dev, a: np.ndarray):
    import pyopencl as cl

    a = np.ascontiguousarray(a)
    if a.nbytes == 0:
        return cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, size=1)
    return cl.Buffer(dev.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)


def _empty(dev, shape, dtype):
    import pyopencl as cl

    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, size=max(1, nbytes))


def _down(dev, buf, shape, dtype) -> np.ndarray:
    import pyopencl as cl

    out = np.empty(shape, dtype)
    if out.nbytes:
        cl.enqueue_copy(dev.queue, out, buf)
    return out


def _check(got: np.ndarray, ref: np.ndarray, dt: str) -> None:
    assert got.shape == ref.shape
    scale = max(float(np.abs(ref).max(initial=0.0)), 1e-30)
    err = float(np.abs(got.astype(ref.dtype) - ref).max(initial=0.0)) / scale
    assert err <= TOL[dt], f"relative error {err:.3g} above {TOL[dt]:g}"


def _crandn(shape, dt: str) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(CDT[dt])


def _c2c(dev, x: np.ndarray, axes, forward: bool, dt: str) -> np.ndarray:
    from portagrad.backends.opencl import fft

    out = _empty(dev, x.shape, x.dtype)
    src = _up(dev, x)
    fft.c2c(dev, dt, (src, 0), (out, 0), x.shape, axes, forward)
    return _down(dev, out, x.shape, x.dtype)


def _ref_c2c(x: np.ndarray, axes, forward: bool) -> np.ndarray:
    x = x.astype(np.complex128)
    if forward:
        return np.fft.fftn(x, axes=axes)
    return np.fft.ifftn(x, axes=axes, norm="forward")  # unnormalised backward


def test_factor():
    from portagrad.backends.opencl.fft import bluestein_size, factor

    for n in range(1, 5000):
        radices = factor(n)
        m = n
        for p in (2, 3, 5, 7):
            while m % p == 0:
                m //= p
        if m != 1:
            assert radices is None, n
            M = bluestein_size(n)
            assert M & (M - 1) == 0 and M >= 2 * n - 1 and M < 2 * (2 * n - 1), n
        else:
            assert radices is not None and int(np.prod(radices)) == n, n
            assert all(r in (2, 3, 4, 5, 7, 8) for r in radices), n


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("forward", [True, False], ids=["forward", "backward"])
def test_c2c_sizes(dev, dt, forward, passes):
    _need(dev, dt)
    for n in SIZES:
        x = _crandn((2, n), dt)
        got = _c2c(dev, x, [1], forward, dt)
        try:
            _check(got, _ref_c2c(x, [1], forward), dt)
        except AssertionError as exc:
            raise AssertionError(f"n={n}: {exc}") from None


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_c2c_large(dev, dt):
    _need(dev, dt)
    for n in (1 << 16, 3 * 5 * 7 * 11 * 13):  # a power of two; a size with factors above 7
        x = _crandn((1, n), dt)
        _check(_c2c(dev, x, [1], True, dt), _ref_c2c(x, [1], True), dt)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("shape,axes", [((4, 6, 5), [0]), ((4, 6, 5), [1]), ((4, 6, 5), [2]),
                                        ((4, 6, 5), [0, 2]), ((3, 17, 2), [1, 0, 2]),
                                        ((5, 31, 7), [1]), ((2, 3, 0), [1]), ((3, 1, 4), [1]),
                                        ((6, 8), [])])
def test_c2c_axes(dev, dt, shape, axes, passes):
    _need(dev, dt)
    x = _crandn(shape, dt)
    for forward in (True, False):
        _check(_c2c(dev, x, axes, forward, dt), _ref_c2c(x, axes, forward), dt)


def test_c2c_offsets(dev):
    """Operands at element offsets inside larger buffers; the input is left as it was."""
    from portagrad.backends.opencl import fft

    x = _crandn((3, 50), "float32")
    src = _up(dev, x)
    out = _empty(dev, (4, 50), np.complex64)
    fft.c2c(dev, "float32", (src, 50), (out, 60), (2, 50), [1], True)
    got = _down(dev, out, (4, 50), np.complex64).reshape(-1)[60:160].reshape(2, 50)
    _check(got, _ref_c2c(x[1:], [1], True), "float32")
    np.testing.assert_array_equal(_down(dev, src, x.shape, x.dtype), x)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("shape,axes", [((7,), [0]), ((4, 6, 5), [1]), ((4, 6, 5), [2, 0]),
                                        ((2, 13, 3), [1]), ((3, 64), [1]), ((5, 1), [1]),
                                        ((2,), [0]), ((3, 4, 8), [0, 2]), ((2, 3, 74), [2]),
                                        ((4, 8192), [1])])
def test_r2c(dev, dt, shape, axes, passes):
    from portagrad.backends.opencl import fft

    _need(dev, dt)
    x = RNG.standard_normal(shape).astype(dt)
    for onesided in (True, False):
        oshape = list(shape)
        if onesided:
            oshape[axes[-1]] = oshape[axes[-1]] // 2 + 1
        out = _empty(dev, oshape, CDT[dt])
        fft.r2c(dev, dt, (_up(dev, x), 0), (out, 0), shape, axes, onesided)
        xd = x.astype(np.float64)
        ref = np.fft.rfftn(xd, axes=axes) if onesided else np.fft.fftn(xd, axes=axes)
        _check(_down(dev, out, oshape, CDT[dt]), ref, dt)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("shape,axes", [((4, 6, 5), [1]), ((4, 6, 5), [0, 2]), ((2, 9, 3), [1]),
                                        ((3, 40), [1]), ((0, 4), [1]), ((3, 4, 8), [0, 2]),
                                        ((2, 37), [1]), ((2, 4096), [1])])
def test_c2r(dev, dt, shape, axes, passes):
    """Output sizes even, odd and 1 along the last axis; the imaginary parts of the zero and
    Nyquist frequencies are ignored (the inputs have them)."""
    from portagrad.backends.opencl import fft

    _need(dev, dt)
    last = axes[-1]
    for L in (shape[last], 2 * shape[last] + 1, 1):
        hshape = list(shape)
        hshape[last] = L // 2 + 1
        x = _crandn(hshape, dt)
        oshape = list(shape)
        oshape[last] = L
        out = _empty(dev, oshape, dt)
        fft.c2r(dev, dt, (_up(dev, x), 0), (out, 0), hshape, axes, L)
        sizes = [hshape[a] for a in axes[:-1]] + [L]
        if 0 in oshape:
            ref = np.zeros(oshape)
        else:
            ref = np.fft.irfftn(x.astype(np.complex128), s=sizes, axes=axes, norm="forward")
        _check(_down(dev, out, oshape, dt), ref, dt)


def test_pg_fft_runs_the_kernels(dev, device, monkeypatch):
    """``pg.fft`` on an OpenCL device reaches these kernels (not the host default), strided
    inputs included, with numpy's results."""
    from portagrad.backends.opencl import fft

    calls: list[str] = []
    for name in ("c2c", "r2c", "c2r"):
        real = getattr(fft, name)
        monkeypatch.setattr(fft, name, lambda *a, _r=real, _n=name: (calls.append(_n), _r(*a))[1])
    x = RNG.standard_normal((6, 11)).astype(np.float32)
    t = pg.tensor(x, device=device)
    spec = pg.fft.rfft(t.T, dim=0)  # a transposed (strided) input, onesided along dim 0
    assert calls[0] == "r2c"  # (which then runs c2c passes)
    calls.clear()
    _check(spec.cpu().numpy(), np.fft.rfft(x.T.astype(np.float64), axis=0), "float32")
    full = pg.fft.fft(spec, dim=1)
    assert calls == ["c2c"]
    calls.clear()
    _check(full.cpu().numpy(), np.fft.fft(np.fft.rfft(x.T.astype(np.float64), axis=0), axis=1),
           "float32")
    back = pg.fft.irfft(spec, n=11, dim=0)
    assert calls[0] == "c2r"
    np.testing.assert_allclose(back.cpu().numpy(), x.T, rtol=0, atol=1e-5)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_local_shape(dev, dt):
    """The one-launch kernel's lines fit half the local memory, and every device (OpenCL
    guarantees 32 KiB of it) takes lines of 512 entries or more that way."""
    from portagrad.backends.opencl.fft import local_shape

    wg, nmax = local_shape(dev, dt)
    item = np.dtype(CDT[dt]).itemsize
    assert wg & (wg - 1) == 0 and 1 <= wg <= dev.max_wg
    assert nmax & (nmax - 1) == 0 and 512 <= nmax <= 4096
    assert 2 * nmax * item <= int(dev.properties.extra["local_mem_size"]) // 2


def test_captured_fft_step_is_bit_identical(dev, device):
    """A captured step of transforms (its scratch buffers and tables included) replays the
    traced enqueues with eager's bits: one-launch lines, per-pass lines and Bluestein."""
    import warnings

    from portagrad.capture import capture

    def step(x):
        spec = pg.fft.rfft(x, dim=1)
        return pg.fft.irfft(spec * spec, n=x.shape[1], dim=1) + pg.fft.fft(x, dim=0).abs()

    for shape in ((6, 16), (3, 8192), (4, 37)):
        data = [pg.tensor(RNG.standard_normal(shape).astype(np.float32), device=device)
                for _ in range(4)]
        eager = [step(x).cpu().numpy().tobytes() for x in data]
        cstep = capture(step)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback to eager
            captured = [cstep(x).cpu().numpy().tobytes() for x in data]
        assert captured == eager, shape
        assert any(r.trace is not None for r in cstep._rec.runs), shape


def test_even_last_dimension_takes_the_half_length_transform(dev, monkeypatch):
    """rfft/irfft along an even last dimension pack the reals in pairs (one complex transform
    of half the length); an odd one or another axis complexify (covered by the tests above)."""
    from portagrad.backends.opencl import fft

    calls: list[str] = []
    for name in ("_r2c_even", "_c2r_even"):
        real = getattr(fft, name)
        monkeypatch.setattr(fft, name, lambda *a, _r=real, _n=name: (calls.append(_n), _r(*a))[1])
    x = RNG.standard_normal((3, 10)).astype(np.float32)
    out = _empty(dev, (3, 6), np.complex64)
    fft.r2c(dev, "float32", (_up(dev, x), 0), (out, 0), x.shape, [1], True)
    other = _empty(dev, (2, 10), np.complex64)
    fft.r2c(dev, "float32", (_up(dev, x), 0), (other, 0), x.shape, [0], True)  # not the last
    assert calls == ["_r2c_even"]
    spec = _down(dev, out, (3, 6), np.complex64)
    _check(spec, np.fft.rfft(x.astype(np.float64), axis=1), "float32")
    back = _empty(dev, (3, 10), np.float32)
    fft.c2r(dev, "float32", (_up(dev, spec), 0), (back, 0), (3, 6), [1], 10)
    assert calls == ["_r2c_even", "_c2r_even"]
    _check(_down(dev, back, (3, 10), np.float32), 10 * x.astype(np.float64), "float32")


def test_benchmark_runs(dev, device, capsys):
    """``python -m benchmarks.fft`` runs (one small size) and prints every case; it checks its
    own results against numpy."""
    from benchmarks import fft as bench

    bench.main(["--device", device, "--quick", "--exps", "10"])
    out = capsys.readouterr().out
    for case in ("n = 2^10", "n = 65537", "64 x 1024", "rfft 64 x 1024", "rfft n = 2^18"):
        assert any(line.startswith(case) and "ratio" in line for line in out.splitlines()), case
