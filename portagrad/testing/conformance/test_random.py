"""``random``: the Philox4x32-10 streams of the contract. ``uniform`` is bit-identical to
:func:`portagrad.backends.helpers.philox_uniform` in every floating dtype; ``normal`` is within the
tolerance of the contract (float32: ``1e-5 + 1e-5 * |want|``)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.helpers import philox_normal, philox_uniform

from ._util import REF, check, contiguous, empty, supported_dtypes

FLOATS = [pg.float32, pg.float64, pg.float16, pg.bfloat16]
# (n, seed, offset, a, b): offsets at every position inside a block of four slots (so float64 and
# normal elements straddle two blocks), a counter crossing 2**32 (its high word: slot 2**34), a seed
# above 2**32, the slots wrapping at 2**64, odd sizes
_CASES = [(1, 0, 0, 0.0, 1.0), (1000, 42, 17, 0.0, 1.0), (257, 2 ** 40 + 7, 3, -2.0, 3.5),
          (300, 12345, 2 ** 34 - 102, 1.0, 2.0), (4099, 7, 2 ** 35 + 5, -1.0, 1.0),
          (70, 9, 2 ** 64 - 37, 0.0, 1.0)]


def _need(be: Any, dtype: Any) -> None:
    if dtype not in supported_dtypes(be):
        pytest.skip(f"the backend does not store {dtype.name}")


def _want_uniform(n: int, seed: int, offset: int, a: float, b: float, dtype: Any) -> np.ndarray:
    if dtype is pg.bfloat16:  # the float32 result rounded to bfloat16
        return philox_uniform(n, seed, offset, a, b, np.float32).astype(dtype.numpy)
    return philox_uniform(n, seed, offset, a, b, dtype.numpy)


def _want_normal(n: int, seed: int, offset: int, a: float, b: float, dtype: Any) -> np.ndarray:
    if dtype is pg.bfloat16:
        return philox_normal(n, seed, offset, a, b, np.float32).astype(dtype.numpy)
    return philox_normal(n, seed, offset, a, b, dtype.numpy)


@pytest.mark.parametrize("dtype", FLOATS, ids=[d.name for d in FLOATS])
def test_random_uniform_is_bit_identical(conformance_backend: Any, dtype: Any) -> None:
    be = conformance_backend
    _need(be, dtype)
    for n, seed, offset, a, b in _CASES:
        out = empty(be, (n,), dtype)
        be.random("uniform", out.dev, seed, offset, a, b)
        got = be.to_host(out.dev)
        want = _want_uniform(n, seed, offset, a, b, dtype)
        assert got.dtype == want.dtype
        if got.tobytes() != want.tobytes():
            first = int(np.flatnonzero(got.astype(np.float64) != want.astype(np.float64))[0])
            pytest.fail(f"uniform {dtype.name} n={n} seed={seed} offset={offset} [{a}, {b}): "
                        f"element {first} is {got[first]!r}, the Philox reference "
                        f"{want[first]!r}", pytrace=False)
        assert ((got >= a) & (got <= b)).all()


@pytest.mark.parametrize("dtype", FLOATS, ids=[d.name for d in FLOATS])
def test_random_normal_within_tolerance(conformance_backend: Any, dtype: Any) -> None:
    """float32: the contract's ``1e-5 + 1e-5 * |want|``; float64 is computed in float64 on a
    device with fp64, so it must agree to ``1e-10``; float16/bfloat16 are one rounding of it."""
    be = conformance_backend
    _need(be, dtype)
    rtol, atol = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "float16": (1e-3, 1e-3),
                  "bfloat16": (8e-3, 8e-3)}[dtype.name]
    for n, seed, offset, a, b in _CASES:
        out = empty(be, (n,), dtype)
        be.random("normal", out.dev, seed, offset, a, b)
        got = be.to_host(out.dev).astype(np.float64)
        want = _want_normal(n, seed, offset, a, b, dtype).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * max(1.0, abs(b)),
                                   err_msg=f"normal {dtype.name} n={n} seed={seed} "
                                           f"offset={offset} mean={a} std={b}")


@pytest.mark.parametrize("kind", ["uniform", "normal"])
def test_random_view_at_an_offset(conformance_backend: Any, kind: str) -> None:
    """A contiguous ``out`` that starts inside its buffer: element ``i`` of the view is element
    ``i`` of the draw, and nothing outside the view is written; 0-d and empty outputs."""
    be = conformance_backend
    for shape in ((40, 25), (), (0, 5)):
        out = contiguous(be, np.zeros(shape), pg.float32, 5)
        be.random(kind, out.dev, 99, 11, 1.0, 2.0)
        REF.random(kind, out.ref, 99, 11, 1.0, 2.0)
        tol = (0.0, 0.0) if kind == "uniform" else (1e-5, 2e-5)
        check(be, out, tol=tol, what=f"random {kind} into a view at offset 5, shape {shape}")


def test_random_through_the_public_api(conformance_device: str) -> None:
    """``pg.rand``/``pg.randn`` on the device give the cpu's numbers (the reproducibility the
    contract exists for)."""
    be = pg.empty(1, device=conformance_device)._storage.backend
    for dtype in (pg.float32, pg.float64):
        if dtype not in supported_dtypes(be):
            continue
        for fn in (pg.rand, pg.randn):
            pg.manual_seed(1234)
            got = fn(7, 13, dtype=dtype, device=conformance_device).cpu().numpy()
            pg.manual_seed(1234)
            want = fn(7, 13, dtype=dtype).numpy()
            if fn is pg.rand:
                assert got.tobytes() == want.tobytes(), f"pg.rand {dtype} differs from the cpu"
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5 if dtype is pg.float32 else 1e-10,
                                           atol=1e-5 if dtype is pg.float32 else 1e-10)
