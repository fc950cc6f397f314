"""The optional GELU primitives ``gelu`` and ``gelu_backward`` (exact GELU, float32), called
directly on twin views against the numpy backend, and against float64 formulas.

The core uses them for contiguous float32 tensors (the backward while nothing records); the
inputs here sit at an offset in their buffers and the outputs are filled with a sentinel first,
so a primitive must read from the view's offset and overwrite every element of an output, and
nothing around it. Cases: sizes around vector widths and work-group sizes, 2-D views, the edge
values (zeros, infinities, NaN, the tails where ``erf`` saturates and the density underflows).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import portagrad as pg

from ._util import SENTINEL, Pair, check, contiguous, run_both, sample, specials

_DT = pg.float32
# (rtol, atol): a backend may round each step within an ulp (its own erf and exp): the
# composition's cancellation in 1 + erf(x / sqrt 2) for negative x makes the relative error of
# tiny results large, so the absolute part carries it
_TOL = (1e-5, 1e-6)
_SHAPES = [(1,), (7,), (64,), (1000,), (3, 257), (16, 33)]


def _has(be: Any) -> None:
    if getattr(be, "gelu", None) is None or getattr(be, "gelu_backward", None) is None:
        pytest.skip("the backend has no gelu/gelu_backward (optional; the core composes GELU)")


def _in(be: Any, arr: Any) -> Pair:
    return contiguous(be, np.asarray(arr), _DT, offset=3)


def _out(be: Any, shape: tuple[int, ...]) -> Pair:
    return contiguous(be, np.full(shape, SENTINEL[_DT.name], _DT.numpy), _DT, offset=2)


def _values(shape: tuple[int, ...]) -> np.ndarray:
    x = sample(_DT, shape, "finite") * 3
    flat = x.reshape(-1)
    edge = np.concatenate([specials(_DT), np.array([4.0, -4.0, 13.3, -13.3, 14.0, -14.0, 40.0,
                                                    -40.0, 1e-40, -1e-40], np.float32)])
    n = min(flat.size // 2, edge.size)
    flat[:n] = edge[:n]
    return x


def _ref64(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xd = x.astype(np.float64).reshape(-1)
    cdf = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) if np.isfinite(v) else np.nan
                    for v in xd.tolist()])
    with np.errstate(all="ignore"):
        pdf = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
        return (xd * cdf).reshape(x.shape), (g.astype(np.float64).reshape(-1)
                                             * (cdf + xd * pdf)).reshape(x.shape)


@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_gelu(conformance_backend: Any, shape: tuple) -> None:
    """``out = x * Phi(x)``, as the reference within a few ulp, and the float64 formula at the
    finite inputs."""
    be = conformance_backend
    _has(be)
    x = _values(shape)
    out = _out(be, shape)
    run_both(be, "gelu", _in(be, x), out)
    check(be, out, exact=False, tol=_TOL, what=f"gelu {shape}")
    want, _ = _ref64(x, np.ones_like(x))
    got = be.to_host(out.dev).astype(np.float64)
    fin = np.isfinite(x)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-5, atol=1e-6)
    assert np.isnan(got[np.isnan(x)]).all()


@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_gelu_backward(conformance_backend: Any, shape: tuple) -> None:
    """``out = g * gelu'(x)``, as the reference within a few ulp, and the float64 formula at the
    finite inputs."""
    be = conformance_backend
    _has(be)
    x = _values(shape)
    g = sample(_DT, shape, "finite")
    out = _out(be, shape)
    run_both(be, "gelu_backward", _in(be, g), _in(be, x), out)
    scale = float(np.abs(g).max()) if g.size else 1.0
    check(be, out, exact=False, tol=(_TOL[0], _TOL[1] * max(1.0, scale)),
          what=f"gelu_backward {shape}")
    _, want = _ref64(x, g)
    got = be.to_host(out.dev).astype(np.float64)
    fin = np.isfinite(x)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-5, atol=1e-6 * max(1.0, scale))
