"""The default methods of ``Backend``, on a backend that implements only the required core.

``CoreOnly`` forwards the eleven core methods to a numpy backend (its buffers are numpy arrays),
so everything else runs through the base class's defaults; every default is compared with the
numpy backend's own implementation on the same views, over the edge cases of the contract:
0-size and 0-d views, strided and offset views, broadcast (stride 0) operands, NaN, every dtype.
"""
from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.interface import (DEFAULTED_METHODS, HOST_DEFAULTS, LINALG_METHODS,
                                          OPTIONAL_METHODS, REQUIRED_METHODS, Backend, View)
from portagrad.backends.numpy import NumpyBackend
from portagrad.errors import UnsupportedOpError
from portagrad.plugins.manager import missing_methods

REF = NumpyBackend()
DTYPES = [pg.bool, pg.uint8, pg.int8, pg.int16, pg.int32, pg.int64, pg.float16, pg.bfloat16,
          pg.float32, pg.float64]
SHAPES = [(), (0,), (3, 0), (5,), (2, 3), (3, 4, 2)]


class CoreOnly(Backend):
    """The required core and nothing else (two devices, buffers counted per device)."""

    device_type = "coreonly"

    def __init__(self) -> None:
        self.reads = 0  # to_host calls: the defaults' host round trips

    def device_count(self) -> int:
        return 2

    def get_device_properties(self, index: int) -> Any:
        return REF.get_device_properties(0)

    def allocate(self, index: int, nbytes: int) -> Any:
        buf = REF.allocate(0, nbytes)
        self.memory_counter.track(index, buf, nbytes)
        return buf

    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        assert dst.is_contiguous() and src.flags.c_contiguous and src.dtype == dst.dtype.numpy
        REF.from_host(dst, src, non_blocking)

    def to_host(self, src: View) -> np.ndarray:
        self.reads += 1
        return REF.to_host(src)

    def copy(self, src: View, dst: View) -> None:
        REF.copy(src, dst)

    def fill(self, out: View, value: Any) -> None:
        REF.fill(out, value)

    def unary(self, op: str, x: View, out: View) -> None:
        REF.unary(op, x, out)

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        REF.binary(op, a, b, out)

    def reduce(self, op: str, x: View, axes: Any, out: View) -> None:
        REF.reduce(op, x, axes, out)

    def matmul(self, a: View, b: View, out: View) -> None:
        REF.matmul(a, b, out)


BE = CoreOnly()
RNG = np.random.default_rng(7)


def _sample(shape: tuple[int, ...], dtype: Any, nan: bool = True) -> np.ndarray:
    if dtype is pg.bool:
        return RNG.random(shape) > 0.5
    if dtype.is_floating_point:
        a = RNG.integers(-4, 5, size=shape).astype(np.float64) / 2  # ties for the stable sort
        if nan and a.size > 2:
            a.reshape(-1)[[1, -1]] = np.nan
        return a.astype(dtype.numpy)
    lo = 0 if dtype is pg.uint8 else -5
    return RNG.integers(lo, 6, size=shape).astype(dtype.numpy)


def _view(arr: np.ndarray, layout: str = "contiguous") -> View:
    """A view showing ``arr``: contiguous at an offset, or transposed (strided) at an offset."""
    dt = pg._dtype.from_numpy_dtype(arr.dtype)
    pad = 3
    if layout == "transposed" and arr.ndim >= 2:
        store = np.ascontiguousarray(np.swapaxes(arr, -1, -2))
        strides = list(pg._shape.contiguous_strides(store.shape))
        strides[-1], strides[-2] = strides[-2], strides[-1]
    else:
        store = np.ascontiguousarray(arr)
        strides = list(pg._shape.contiguous_strides(arr.shape))
    flat = np.concatenate([np.zeros(pad, arr.dtype), store.reshape(-1)])
    return View(flat.view(np.uint8), pad, tuple(arr.shape), tuple(strides), dt)


def _out(shape: tuple[int, ...], dtype: Any, layout: str = "contiguous") -> View:
    """A fresh output view, or (``strided``) every other element of a larger buffer, whose gaps
    hold a sentinel that must survive."""
    n = int(np.prod(shape)) if shape else 1
    if layout == "strided" and shape:
        buf = np.full(2 * n + 1, 1, dtype.numpy)
        strides = tuple(2 * s for s in pg._shape.contiguous_strides(shape))
        return View(buf.view(np.uint8), 1, shape, strides, dtype)
    return View(np.zeros(n, dtype.numpy).view(np.uint8), 0, shape,
                pg._shape.contiguous_strides(shape), dtype)


def _host(v: View) -> np.ndarray:
    return REF.to_host(v)


def _same(got: View, want: View) -> None:
    """Bit-identical results (NaN included), and the rest of the buffer (the gaps of a strided
    ``out``) untouched."""
    g, w = _host(got), _host(want)
    assert g.shape == w.shape and g.tobytes() == w.tobytes(), (g, w)
    assert got.buffer.tobytes() == want.buffer.tobytes()


def test_the_core_is_small_and_the_rest_has_defaults() -> None:
    assert len(REQUIRED_METHODS) == 11
    assert not set(REQUIRED_METHODS) & set(DEFAULTED_METHODS)
    assert set(HOST_DEFAULTS) <= set(DEFAULTED_METHODS)
    assert not set(OPTIONAL_METHODS) & (set(REQUIRED_METHODS) | set(DEFAULTED_METHODS))
    assert missing_methods(BE) == []
    for meth in DEFAULTED_METHODS:
        assert getattr(CoreOnly, meth) is getattr(Backend, meth)  # really the defaults


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_where(dtype: Any, layout: str) -> None:
    for shape in SHAPES:
        cond = _view(_sample(shape, pg.bool))
        a, b = _sample(shape, dtype), _sample(shape, dtype)
        scalar = True if dtype is pg.bool else 2.5 if dtype.is_floating_point else 3
        for av, bv in ((_view(a, "transposed"), _view(b)), (scalar, _view(b)),
                       (_view(a), scalar), (scalar, scalar)):
            got, want = _out(shape, dtype, layout), _out(shape, dtype, layout)
            BE.where(cond, av, bv, got)
            REF.where(cond, av, bv, want)
            _same(got, want)
        # broadcast condition (stride 0) and in place on a (masked_fill_): a is out itself
        if shape and 0 not in shape:
            bcond = View(cond.buffer, cond.offset, shape, (0,) * len(shape), pg.bool)
            got, want = _out(shape, dtype, layout), _out(shape, dtype, layout)
            for o in (got, want):
                REF.copy(_view(a), o)
            BE.where(bcond, got, _view(b), got)
            REF.where(bcond, want, _view(b), want)
            _same(got, want)


def test_where_checks_narrow_integer_scalars() -> None:
    cond = _view(np.array([True, False]))
    with pytest.raises(RuntimeError, match="without overflow"):
        BE.where(cond, 300, _view(np.zeros(2, np.uint8)), _out((2,), pg.uint8))
    got = _out((2,), pg.uint8)
    BE.where(cond, -1, _view(np.zeros(2, np.uint8)), got)  # wraps, as PyTorch's fill_(-1)
    assert _host(got).tolist() == [255, 0]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_arg_reduce_sort_cumsum(dtype: Any) -> None:
    for shape in SHAPES:
        x = _sample(shape, dtype)
        for layout in ("contiguous", "transposed"):
            xv = _view(x, layout)
            for axis in range(max(len(shape), 1)):
                kshape = tuple(1 if i == axis else s for i, s in enumerate(shape))
                if x.size:
                    for op in ("argmax", "argmin"):
                        got, want = _out(kshape, pg.int64), _out(kshape, pg.int64)
                        BE.arg_reduce(op, xv, axis, got)
                        REF.arg_reduce(op, xv, axis, want)
                        _same(got, want)
                if not shape or not x.size:
                    continue  # the core never sorts or sums an empty or 0-d tensor here
                vals = [_out(shape, dtype), _out(shape, dtype)]
                inds = [_out(shape, pg.int64), _out(shape, pg.int64)]
                for descending in (False, True):
                    BE.sort(xv, axis, descending, vals[0], inds[0])
                    REF.sort(xv, axis, descending, vals[1], inds[1])
                    _same(inds[0], inds[1])
                    _same(vals[0], vals[1])
                if dtype is not pg.bool:
                    got, want = _out(shape, dtype), _out(shape, dtype)
                    BE.cumsum(xv, axis, got)
                    REF.cumsum(xv, axis, want)
                    _same(got, want)


def test_sort_nan_and_ties_rules() -> None:
    keys = np.array([[3, 1, 2, 1, np.nan, 0]], np.float32)
    for descending, order in ((False, [5, 1, 3, 2, 0, 4]), (True, [4, 0, 2, 1, 3, 5])):
        vals, inds = _out(keys.shape, pg.float32), _out(keys.shape, pg.int64)
        BE.sort(_view(keys), 1, descending, vals, inds)
        assert _host(inds)[0].tolist() == order


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gather_scatter(dtype: Any) -> None:
    x = _sample((4, 5), dtype, nan=False)
    idx = RNG.integers(0, 5, size=(3, 2)).astype(np.int64)  # smaller than x on both axes
    got, want = _out((3, 2), dtype), _out((3, 2), dtype)
    BE.gather(_view(x, "transposed"), 1, _view(idx), got)
    REF.gather(_view(x, "transposed"), 1, _view(idx), want)
    _same(got, want)
    src = _sample((2, 3), dtype, nan=False).T  # index's shape (the contract), strided
    for reduce in (None, "add"):
        if reduce == "add" and dtype is pg.bool:
            continue
        perm = np.stack([RNG.permutation(5)[:2] for _ in range(3)]).astype(np.int64)
        for layout in ("contiguous", "strided"):
            got, want = _out((4, 5), dtype, layout), _out((4, 5), dtype, layout)
            for o in (got, want):
                REF.copy(_view(x), o)
            index = _view(idx if reduce == "add" else perm)  # duplicates accumulate with "add"
            BE.scatter(got, 1, index, _view(src, "transposed"), reduce)
            REF.scatter(want, 1, index, _view(src, "transposed"), reduce)
            _same(got, want)
    # 0-d: gather and scatter along dim 0 of a scalar
    got = _out((), dtype)
    BE.gather(_view(x[0, :1].reshape(())), 0, _view(np.zeros((), np.int64)), got)
    assert _host(got) == x[0, 0]
    BE.scatter(got, 0, _view(np.zeros((), np.int64)), _view(x[1, :1].reshape(())), None)
    assert _host(got) == x[1, 0]


@pytest.mark.parametrize("dtype", [pg.float16, pg.bfloat16, pg.float32, pg.float64], ids=str)
def test_random_is_the_reference_stream(dtype: Any) -> None:
    for kind, a, b in (("uniform", -1.0, 3.0), ("normal", 0.5, 2.0)):
        for shape in ((0,), (), (7, 3)):
            got, want = _out(shape, dtype), _out(shape, dtype)
            BE.random(kind, got, 1234, 99, a, b)
            REF.random(kind, want, 1234, 99, a, b)
            _same(got, want)


def test_unknown_names_are_typed_errors() -> None:
    x = _view(np.ones(3, np.float32))
    with pytest.raises(UnsupportedOpError, match="arg_reduce op 'argmean'.*coreonly"):
        BE.arg_reduce("argmean", x, 0, _out((1,), pg.int64))
    with pytest.raises(UnsupportedOpError, match="random op 'gamma'.*known random ops: uniform"):
        BE.random("gamma", _out((3,), pg.float32), 0, 0, 0.0, 1.0)


def test_copy_between_synchronize_and_empty_work_read_nothing() -> None:
    src = _view(_sample((2, 3), pg.bfloat16))
    dst = _out((2, 3), pg.bfloat16)
    BE.copy_between(dst, src)
    assert _host(dst).tobytes() == _host(src).tobytes()  # bit for bit, NaN included
    before = BE.reads
    BE.copy_between(_out((0,), pg.float32), _view(np.zeros(0, np.float32)))
    BE.where(_view(np.zeros((2, 0), bool)), 1.0, 2.0, _out((2, 0), pg.float32))
    BE.sort(_view(np.zeros(0, np.float32)), 0, False, _out((0,), pg.float32),
            _out((0,), pg.int64))
    assert BE.reads == before
    peak = BE.memory_stats(1)["peak_allocated"]
    BE.synchronize(1)  # nothing to wait for: no read back, no allocation in the statistics
    BE.empty_cache(0)
    assert BE.reads == before and BE.memory_stats(1)["peak_allocated"] == peak


def test_memory_stats_come_from_the_counter_and_go_down() -> None:
    gc.collect()
    start = BE.memory_stats(1)["allocated"]
    BE.reset_peak_memory_stats(1)
    bufs = [BE.allocate(1, 1000), BE.allocate(1, 24)]
    stats = BE.memory_stats(1)
    assert stats["allocated"] == stats["reserved"] == start + 1024
    assert stats["peak_allocated"] == start + 1024
    del bufs
    gc.collect()
    stats = BE.memory_stats(1)
    assert stats["allocated"] == start and stats["peak_allocated"] == start + 1024
    BE.reset_peak_memory_stats(1)
    assert BE.memory_stats(1)["peak_allocated"] == start


def test_a_backend_that_tracks_nothing_reports_zeros() -> None:
    class Untracked(CoreOnly):
        def allocate(self, index: int, nbytes: int) -> Any:
            return REF.allocate(0, nbytes)

    be = Untracked()
    keep = be.allocate(0, 4096)
    assert be.memory_stats(0) == {"allocated": 0, "reserved": 0, "peak_allocated": 0}
    assert keep.nbytes == 4096


def test_the_library_runs_on_the_core_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tensors on a core-only device: a training step that goes through where (relu's
    gradient), gather (cross-entropy), sort, cumsum, argmax and random."""
    from portagrad.plugins import manager

    monkeypatch.setitem(manager.get_state().backends, "coreonly", BE)
    pg.manual_seed(0)
    w = pg.randn(4, 3, device="coreonly:1", requires_grad=True)
    x = pg.randn(5, 4, device="coreonly:1")
    y = pg.tensor([0, 2, 1, 1, 0], device="coreonly:1")
    loss = pg.nn.functional.cross_entropy((x @ w).relu(), y)
    loss.backward()
    assert w.grad is not None and w.grad.device == pg.device("coreonly:1")
    pg.manual_seed(0)
    wc = pg.randn(4, 3, requires_grad=True)
    xc = pg.randn(5, 4)
    pg.nn.functional.cross_entropy((xc @ wc).relu(), y.cpu()).backward()
    # float32: the cpu backend's fused cross-entropy rounds differently from the composed path
    np.testing.assert_allclose(w.grad.cpu().numpy(), wc.grad.numpy(), rtol=1e-5, atol=1e-7)
    v, i = x.sort(1)
    np.testing.assert_array_equal(i.cpu().numpy(), np.argsort(x.cpu().numpy(), 1, kind="stable"))
    assert x.cumsum(0).argmax(1).tolist() == xc.cumsum(0).argmax(1).tolist()
    moved = x.to("coreonly:0")  # copy_between's default
    np.testing.assert_array_equal(moved.cpu().numpy(), xc.numpy())


@pytest.mark.parametrize("name", ["numpy", "opencl"])
def test_built_in_backends_override_every_default(name: str) -> None:
    """The built-ins have fast versions of everything: no host round trip on cpu or opencl."""
    if name == "opencl":
        pytest.importorskip("pyopencl")
        from portagrad.backends.opencl.backend import OpenCLBackend as cls
    else:
        cls = NumpyBackend
    inherited = [m for m in DEFAULTED_METHODS if getattr(cls, m) is getattr(Backend, m)]
    assert inherited == []


@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_eigh_svd_defaults_are_the_numpy_backends(dtype: Any, layout: str) -> None:
    """The host defaults of the decompositions give the numpy backend's bits (both run LAPACK on
    the same host arrays), vectors included; values-only calls write only the values."""
    assert set(LINALG_METHODS) == {"eigh", "svd", "eig"}
    assert CoreOnly.eigh is Backend.eigh and CoreOnly.svd is Backend.svd
    assert CoreOnly.eig is Backend.eig
    for shape in [(4, 4), (2, 3, 3), (1, 1)]:
        a = RNG.standard_normal(shape).astype(dtype.numpy)
        outs = [(_out(shape[:-1], dtype), _out(shape, dtype)) for _ in range(2)]
        BE.eigh(_view(a, layout), "U", *outs[0])
        REF.eigh(_view(a, layout), "U", *outs[1])
        for g, w in zip(*outs):
            _same(g, w)
        vals = _out(shape[:-1], dtype)
        BE.eigh(_view(a, layout), "L", vals, None)
        np.testing.assert_allclose(_host(vals), np.linalg.eigvalsh(a), rtol=1e-5, atol=1e-5)
    for shape in [(4, 3), (2, 3, 5), (1, 1)]:
        a = RNG.standard_normal(shape).astype(dtype.numpy)
        *batch, m, n = shape
        k = min(m, n)
        for full in (False, True):
            us = [(_out((*batch, m, m if full else k), dtype), _out((*batch, k), dtype),
                   _out((*batch, n if full else k, n), dtype)) for _ in range(2)]
            BE.svd(_view(a, layout), full, *us[0])
            REF.svd(_view(a, layout), full, *us[1])
            for g, w in zip(*us):
                _same(g, w)
        s = _out((*batch, k), dtype)
        BE.svd(_view(a, layout), False, None, s, None)
        np.testing.assert_allclose(_host(s), np.linalg.svd(a, compute_uv=False), rtol=1e-5)


@pytest.mark.parametrize("dtype", [pg.float32, pg.float64, pg.complex64, pg.complex128],
                         ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_eig_default_is_the_numpy_backends(dtype: Any, layout: str) -> None:
    """The host default of ``eig`` (through ``to_host``/``from_host``) gives the numpy backend's
    own bits (both run LAPACK's geev on the same host array); values-only writes the values."""
    cdt = dtype.to_complex()
    for shape in [(4, 4), (2, 3, 3), (1, 1)]:
        a = RNG.standard_normal(shape)
        if dtype.is_complex:
            a = a + 1j * RNG.standard_normal(shape)
        a = a.astype(dtype.numpy)
        outs = [(_out(shape[:-1], cdt), _out(shape, cdt)) for _ in range(2)]
        Backend.eig(REF, _view(a, layout), *outs[0])
        REF.eig(_view(a, layout), *outs[1])
        for g, w in zip(*outs):
            _same(g, w)
        vals = _out(shape[:-1], cdt)
        REF.eig(_view(a, layout), vals, None)
        np.testing.assert_array_equal(_host(vals), _host(outs[1][0]))


def test_eigh_svd_reach_a_backend_without_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend object that does not subclass ``Backend`` (so has no ``eigh``/``svd``) gets the
    host defaults from the core; a core-only subclass inherits them."""
    from portagrad.plugins import manager

    class Duck:
        """The required core only, not a ``Backend`` subclass (no eigh or svd at all)."""

        device_type = "coreonly"

        def __getattr__(self, name: str) -> Any:
            if name in ("eigh", "svd"):
                raise AttributeError(name)
            return getattr(BE, name)

    for be in (BE, Duck()):
        monkeypatch.setitem(manager.get_state().backends, "coreonly", be)
        a = pg.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=pg.float64, device="coreonly:0")
        np.testing.assert_allclose(pg.linalg.eigvalsh(a).cpu().numpy(), [1.0, 3.0])
        np.testing.assert_allclose(pg.linalg.svdvals(a).cpu().numpy(), [3.0, 1.0])
