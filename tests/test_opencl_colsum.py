"""Sums down contiguous columns on CPU OpenCL devices (``backends/opencl/reduce_columns.py``).

A float sum over the rows of a matrix whose columns are contiguous (a bias gradient) takes a
kernel that walks the rows in vectors of adjacent columns. Each column is summed in row order from
zero as the general reduction kernel sums it: the results must be the same to the bit, at ragged
column counts, for row-strided views and strided outputs.
"""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.opencl import primitives, reduce_columns

pytestmark = pytest.mark.usefixtures("opencl_devices")

DEV = "opencl:0"


def _sequential(x: np.ndarray) -> np.ndarray:
    acc = np.zeros(x.shape[1:], x.dtype)
    for row in x:  # row order from zero, one rounding per add
        acc = acc + row
    return acc


@pytest.mark.parametrize("dtype", [pg.float32, pg.float64])
@pytest.mark.parametrize("rows,cols,view", [(300, 64, None), (37, 1001, None), (5, 17, None),
                                            (64, 40, "cols"), (9, 48, "t")])
def test_column_sums_are_sequential_and_match_the_general_kernel(dtype, rows, cols, view,
                                                                  monkeypatch):
    rng = np.random.default_rng(rows * cols)
    base = (rng.standard_normal((rows, cols + 13)) * 10.0 ** rng.integers(-3, 4, (rows, cols + 13)))
    xt = pg.tensor(base, dtype=dtype, device=DEV)
    if view == "cols":  # a row stride past the row: a slice of a wider matrix
        xt, ref = xt[:, 3:3 + cols], base[:, 3:3 + cols]
    elif view == "t":  # column-major: the columns are not contiguous, the general kernel runs
        xt, ref = xt[:, :cols].t().contiguous().t(), base[:, :cols]
    else:
        xt, ref = xt[:, :cols], base[:, :cols]
    ref = ref.astype(np.float32 if dtype == pg.float32 else np.float64)
    dev = pg.empty(1, device=DEV)._storage.backend.device(0)
    calls = []
    real = reduce_columns.launch_colsum
    monkeypatch.setattr(primitives, "launch_colsum", lambda *a: (calls.append(a), real(*a)))
    got = xt.sum(0).cpu().numpy()
    taken = reduce_columns.takes_colsum(dev, "sum", xt.dtype.name, xt.dtype.name, [cols],
                                        [xt.stride(1)], [rows], rows)
    assert taken == (not dev.is_gpu and view != "t" and cols >= 8 * dev.properties.compute_units)
    assert bool(calls) == taken
    np.testing.assert_array_equal(got, _sequential(ref))
    monkeypatch.setattr(primitives, "takes_colsum", lambda *a: False)
    np.testing.assert_array_equal(got, xt.sum(0).cpu().numpy())
    # into a strided output
    out = pg.zeros(cols, 2, dtype=dtype, device=DEV)
    pg.sum(xt, 0, out=out[:, 1])
    np.testing.assert_array_equal(out.cpu().numpy()[:, 1], got)


def test_colsum_is_taken_for_a_bias_gradient_on_cpu_devices():
    dev = pg.empty(1, device=DEV)._storage.backend.device(0)
    taken = reduce_columns.takes_colsum(dev, "sum", "float32", "float32", [1024], [1], [2048], 2048)
    assert taken == (not dev.is_gpu)
    assert not reduce_columns.takes_colsum(dev, "sum", "float16", "float16", [1024], [1], [2048],
                                           2048)
    assert not reduce_columns.takes_colsum(dev, "max", "float32", "float32", [1024], [1], [2048],
                                           2048)
    assert not reduce_columns.takes_colsum(dev, "sum", "float32", "float32", [1024], [2], [2048],
                                           2048)
