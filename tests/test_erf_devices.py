"""float32 ``erf`` on every device against ``math.erf``: the shared polynomials of
``portagrad/backends/erf32.py`` (the numpy backend's whole-array evaluation, the OpenCL backend's
compiled one, which replaced the device library's ``erf``)."""
from __future__ import annotations

import math

import numpy as np

import portagrad as pg

# ulp of math.erf rounded to float32. The numpy backend's bound is pinned at 2 by
# tests/test_numpy_kernels.py; a device's exp and division may each be off by a few ulp in
# OpenCL, which moves the branch above 1 a little.
MAX_ULP = 4.0


def _grid() -> np.ndarray:
    rng = np.random.default_rng(0)
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    x = np.concatenate([np.linspace(-7, 7, 20001), rng.standard_normal(20000) * 2,
                        np.geomspace(tiny, 1.0, 2000), np.geomspace(1.0, 1e30, 200)])
    return np.concatenate([x, -x]).astype(np.float32)


def test_erf_float32_max_ulp(device: str) -> None:
    x = _grid()
    got = pg.erf(pg.tensor(x, device=device)).cpu().numpy()
    ref = np.array([math.erf(v) for v in x.astype(np.float64).tolist()])
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - ref) / spacing
    worst = int(err.argmax())
    assert err[worst] <= MAX_ULP, (
        f"{err[worst]} ulp at {x[worst]!r}: {got[worst]!r} vs {ref[worst]!r}")


def test_erf_float32_special_values(device: str) -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 4.0, -40.0, 1e-40], np.float32)
    got = pg.erf(pg.tensor(x, device=device)).cpu().numpy()
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[[1, 2, 3, 4, 7, 8]], np.array([1, -1, 0, 0, 1, -1], np.float32))
    assert np.signbit(got[4]) and not np.signbit(got[3])  # erf(-0.0) is -0.0
    np.testing.assert_allclose(got[5:7], [math.erf(1.0), -math.erf(1.0)], rtol=3e-7)
    # subnormals are not flushed: erf(x) ~ 2x/sqrt(pi) there
    np.testing.assert_allclose(got[9], 1e-40 * 2 / math.sqrt(math.pi), rtol=1e-3)
