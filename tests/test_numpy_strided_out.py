"""The numpy backend's unary primitives writing into strided views: some of numpy's SIMD loops
(``negative`` with some input strides; ``isnan``/``isinf``/``isfinite``/``signbit`` from 16
elements) write wrong values through a non-contiguous ``out`` on AVX-512 CPUs (numpy 2.3 and 2.4),
so the backend computes those into a contiguous array and copies. Checked against the same ufunc
on contiguous copies, for the strides that went wrong, and through the public op that met it (the
conjugate of a strided complex view)."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.interface import View
from portagrad.backends.numpy.backend import NumpyBackend


def _view(a: np.ndarray, dtype: pg.dtype, offset: int, shape: tuple, strides: tuple) -> View:
    return View(a.reshape(-1).view(np.uint8), offset, shape, strides, dtype)


@pytest.mark.parametrize("op, ufunc", [("neg", np.negative), ("isnan", np.isnan),
                                       ("isinf", np.isinf), ("abs", np.abs), ("exp", np.exp)])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [3, 16, 33])
def test_unary_into_strided_out(op: str, ufunc, dt, n: int) -> None:
    be = NumpyBackend()
    rng = np.random.default_rng(n)
    src = (rng.standard_normal(n * 8 + 3) * 3).astype(dt)
    src[::5] = np.nan
    src[2::7] = np.inf
    pdt = pg.float32 if dt == np.float32 else pg.float64
    for sin in (1, 2, 4, 8):
        for sout in (2, 3):
            x = _view(src, pdt, 3, (n,), (sin,))
            ref = ufunc(src[3::sin][:n].copy())
            odt = np.bool_ if ref.dtype == np.bool_ else dt
            buf = np.zeros(n * sout + 1, odt)
            out = _view(buf, pg.bool if odt == np.bool_ else pdt, 1, (n,), (sout,))
            be.unary(op, x, out)
            np.testing.assert_array_equal(buf[1::sout][:n], ref)
            others = np.ones(buf.size, bool)
            others[1::sout] = False
            assert not buf[others].any()  # nothing written between the view's elements


def test_conj_of_a_strided_complex_view(device) -> None:
    from complex_support import need_complex
    need_complex(device)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    t = pg.tensor(a, device=device)[:, 1:2]
    np.testing.assert_array_equal(pg.conj_physical(t).cpu().numpy(), np.conj(a[:, 1:2]))
    y = pg.tensor(rng.standard_normal((3, 1)) + 0j, device=device, requires_grad=True)
    (g,) = pg.autograd.grad((y * t).real.sum(), y)  # the gradient is conj(t)
    np.testing.assert_array_equal(g.cpu().numpy(), np.conj(a[:, 1:2]))
