"""The numpy backend's own kernels: erf without scipy, the Philox reference, convolution.

These call the host functions directly (they are the ``cpu`` device's kernels), against
``math.erf``, literal Philox words and a direct-sum convolution.
"""
from __future__ import annotations

import math

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
