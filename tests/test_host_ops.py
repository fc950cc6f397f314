"""``portagrad.backends._host_ops``, the reference of seven primitives shared by the numpy backend
(which writes into ``out``) and the interface's host defaults (which take a new array): both ways
give the same bits, into strided outputs too, and the in-place and fast-path cases keep their
rules."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends import _host_ops

DTYPES = [pg.uint8, pg.int32, pg.int64, pg.float16, pg.bfloat16, pg.float32, pg.float64]


def _data(shape: tuple[int, ...], dt: Any, rng: np.random.Generator) -> np.ndarray:
    x = np.round(rng.standard_normal(shape) * 3)  # ties
    if dt.is_floating_point and x.size:
        x.flat[::5] = np.nan
    return (np.abs(x) if dt is pg.uint8 else x).astype(dt.numpy)


def _strided(shape: tuple[int, ...], np_dtype: Any) -> np.ndarray:
    """An output of ``shape`` with a gap between elements, NaN (or 7) around them."""
    store = np.full(shape[:-1] + (2 * shape[-1],), 7, np_dtype) if shape else np.full(2, 7, np_dtype)
    return store[..., ::2] if shape else store[0, ...]


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (9,), (3, 4), (2, 3, 5)])
def test_out_gives_the_bits_of_a_new_array(dt: Any, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    x = _data(shape, dt, rng)
    nd = dt.numpy
    axis = len(shape) - 1 if shape else 0
    cond = rng.random(shape) > 0.5
    b = _data(shape, dt, rng)
    calls: list[tuple[Callable[..., Any], tuple[Any, ...], Any]] = [
        (_host_ops.where, (cond, x, b, nd, dt.name), nd),
        (_host_ops.where, (cond, 3, b, nd, dt.name), nd),
        (_host_ops.arg_reduce, ("argmax", x, axis), np.int64),
        (_host_ops.arg_reduce, ("argmin", x, axis), np.int64),
        (_host_ops.cumsum, (x, axis, nd), nd),
    ]
    for fn, args, out_dtype in calls:
        want = fn(*args)
        out = _strided(want.shape, out_dtype)
        assert fn(*args, out=out) is out
        _same(out, want)
    for descending in (False, True):
        vals, idx = _host_ops.sort(x, axis, descending)
        outs = (_strided(vals.shape, nd), _strided(idx.shape, np.int64))
        _host_ops.sort(x, axis, descending, out=outs)
        _same(outs[0], vals)
        _same(outs[1], idx)
    if dt.is_floating_point:
        for kind in ("uniform", "normal"):
            want = _host_ops.random(kind, x.size, nd, 5, 3, -1.0, 2.0).reshape(shape)
            for out in (np.empty(shape, nd), _strided(shape, nd)):
                _host_ops.random(kind, x.size, nd, 5, 3, -1.0, 2.0, out=out)
                _same(out, want)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_gather_broadcast_row_index_and_smaller_index(dt: Any) -> None:
    """An index that is one row broadcast over the other axes (np.take) and a general one, both
    smaller than ``x`` along the other axes, match take_along_axis on the leading part."""
    rng = np.random.default_rng(1)
    x = _data((4, 6, 5), dt, rng)
    row = rng.integers(0, 6, 8)
    broadcast = np.lib.stride_tricks.as_strided(row, (3, 8, 2), (0, 8, 0))
    general = rng.integers(0, 6, (3, 8, 2))
    for index in (broadcast, general):
        want = np.take_along_axis(x[:3, :, :2], np.ascontiguousarray(index), axis=1)
        _same(_host_ops.gather(x, 1, index), want)
        out = _strided(want.shape, dt.numpy)
        _host_ops.gather(x, 1, index, out=out)
        _same(out, want)


def test_where_in_place_on_a_writes_only_b_positions() -> None:
    """``a`` is ``out`` itself (``masked_fill_``): the positions where ``cond`` holds keep their
    values (copying ``b`` first would overwrite them)."""
    out = np.arange(6, dtype=np.float32)
    cond = np.array([True, False, True, False, False, True])
    _host_ops.where(cond, out, -1.0, np.dtype(np.float32), "float32", out=out)
    np.testing.assert_array_equal(out, [0, -1, 2, -1, -1, 5])
    with pytest.raises(RuntimeError, match="overflow"):
        _host_ops.where(cond, 300, np.zeros(6, np.uint8), np.dtype(np.uint8), "uint8",
                        out=np.zeros(6, np.uint8))
