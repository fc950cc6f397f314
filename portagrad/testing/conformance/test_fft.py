"""The discrete Fourier transforms: ``fft_c2c``, ``fft_r2c`` and ``fft_c2r``, called directly on
views of the backend under test and compared with the reference (pocketfft through numpy).

All three have a host default on ``Backend``; a backend that overrides them with a device FFT
is checked here. Inputs sit at an offset, transposed or batched; the transforms run over one or
several axes, of even, odd and prime sizes, forward and backward, one-sided and full; ``fft_c2r``
must ignore the imaginary parts of the zero and Nyquist frequencies. A backend that declines
complex storage (``supports_complex`` false) skips these tests.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import portagrad as pg

from ._util import REF, Pair, Twin, supported_dtypes

_PAIRS = [(pg.float32, pg.complex64), (pg.float64, pg.complex128)]
_TOL = {"float32": 2e-5, "float64": 1e-12}  # relative to the largest magnitude of the result
_RNG = np.random.default_rng(20241205)
# (shape, axes): one axis of even, odd and prime size, several axes, a batch
_CASES = [((8,), (0,)), ((3, 7), (1,)), ((5, 6), (0,)), ((4, 6), (0, 1)), ((2, 3, 5), (1, 2)),
          ((2, 4, 3), (0, 2))]


def _need_complex(be: Any, dtype: Any) -> None:
    """Skip unless ``be`` stores ``dtype``: it opts in to complex tensors (``supports_complex``)
    and, for complex128, has float64."""
    if not getattr(be, "supports_complex", False):
        pytest.skip("the backend declines complex dtypes (supports_complex is false)")
    if dtype.name == "complex128" and pg.float64 not in supported_dtypes(be):
        pytest.skip("the backend does not store float64, so not complex128")


def _view(be: Any, arr: np.ndarray, dtype: Any, transposed: bool) -> Pair:
    """``arr`` at an offset of 3 elements, stored in order or with its axes reversed."""
    stored = np.array(arr.transpose() if transposed else arr, order="C").astype(dtype.numpy)
    flat = np.concatenate([np.zeros(3, dtype.numpy), stored.reshape(-1)])
    strides = [1] * stored.ndim
    for i in range(stored.ndim - 2, -1, -1):
        strides[i] = strides[i + 1] * stored.shape[i + 1]
    if transposed:
        strides.reverse()
    return Twin(be, flat, dtype).view(3, arr.shape, strides)


def _out(be: Any, shape: Sequence[int], dtype: Any) -> Pair:
    return Twin(be, np.zeros(int(np.prod(shape)), dtype.numpy), dtype).view(
        0, tuple(shape), tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape))))


def _compare(be: Any, method: str, args: tuple, out: Pair, real: Any, what: str) -> None:
    getattr(REF, method)(*[a.ref if isinstance(a, Pair) else a for a in args], out.ref)
    getattr(be, method)(*[a.dev if isinstance(a, Pair) else a for a in args], out.dev)
    got, want = be.to_host(out.dev), REF.to_host(out.ref)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    tol = _TOL[real.name]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


def _complex(shape: Sequence[int]) -> np.ndarray:
    return _RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)


@pytest.mark.parametrize("real,cplx", _PAIRS, ids=[r.name for r, _ in _PAIRS])
def test_fft_c2c(conformance_backend: Any, real: Any, cplx: Any) -> None:
    be = conformance_backend
    _need_complex(be, cplx)
    for shape, axes in _CASES:
        for transposed in (False, True):
            x = _view(be, _complex(shape), cplx, transposed)
            for forward in (True, False):
                _compare(be, "fft_c2c", (x, axes, forward), _out(be, shape, cplx), real,
                         f"fft_c2c {shape} axes={axes} forward={forward} t={transposed}")


@pytest.mark.parametrize("real,cplx", _PAIRS, ids=[r.name for r, _ in _PAIRS])
def test_fft_r2c(conformance_backend: Any, real: Any, cplx: Any) -> None:
    be = conformance_backend
    _need_complex(be, cplx)
    for shape, axes in _CASES:
        for transposed in (False, True):
            x = _view(be, _RNG.standard_normal(shape), real, transposed)
            for onesided in (True, False):
                oshape = list(shape)
                if onesided:
                    oshape[axes[-1]] = shape[axes[-1]] // 2 + 1
                _compare(be, "fft_r2c", (x, axes, onesided), _out(be, oshape, cplx), real,
                         f"fft_r2c {shape} axes={axes} onesided={onesided} t={transposed}")


@pytest.mark.parametrize("real,cplx", _PAIRS, ids=[r.name for r, _ in _PAIRS])
def test_fft_c2r(conformance_backend: Any, real: Any, cplx: Any) -> None:
    be = conformance_backend
    _need_complex(be, cplx)
    for shape, axes in _CASES:
        for last in (2 * (shape[axes[-1]] - 1), 2 * shape[axes[-1]] - 1):
            # arbitrary imaginary parts at the zero and Nyquist frequencies: to be ignored
            ishape = list(shape)
            ishape[axes[-1]] = last // 2 + 1
            for transposed in (False, True):
                x = _view(be, _complex(ishape), cplx, transposed)
                oshape = list(shape)
                oshape[axes[-1]] = last
                _compare(be, "fft_c2r", (x, axes, last), _out(be, oshape, real), real,
                         f"fft_c2r {shape} axes={axes} last={last} t={transposed}")
