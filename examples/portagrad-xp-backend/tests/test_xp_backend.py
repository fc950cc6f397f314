"""What the xp backend does beyond the conformance kit: storage holders (strided and overlapping
writes, ``Tensor.view(dtype)``), memory statistics and out-of-memory, dtypes the library lacks,
the functions composed from the standard (erf, fmod), scatter with duplicates, convolution,
random streams and namespace selection. Runs on whichever library ``PORTAGRAD_XP_NAMESPACE``
chooses (the tox envs xp-strict and xp-torch)."""
from __future__ import annotations

import gc
import math

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.interface import View
from portagrad.errors import DTypeError

pytest.importorskip("array_api_compat")
xpb = pytest.importorskip("portagrad_xp_backend")
from portagrad_xp_backend import XpBackend, load_namespace, special  # noqa: E402

D = "xp:0"


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def test_registered_with_its_library() -> None:
    assert pg.xp.device_count() == 1
    props = pg.xp.get_device_properties(0)
    ns = load_namespace()
    assert props.name.startswith(ns.name) and props.extra["namespace"] == ns.name


def test_strided_writes_land_in_place() -> None:
    x = pg.zeros(4, 6, device=D)
    x[:, ::2] = pg.arange(12.0, device=D).reshape(4, 3)  # a stepped view
    x.t()[1].fill_(-1.0)  # a transposed row: column 1
    want = np.zeros((4, 6), np.float32)
    want[:, ::2] = np.arange(12.0).reshape(4, 3)
    want[:, 1] = -1.0
    np.testing.assert_array_equal(_np(x), want)
    y = pg.zeros(3, 4, device=D)
    y.t().copy_(pg.arange(12.0, device=D).reshape(4, 3))  # a transposed destination
    np.testing.assert_array_equal(_np(y), np.arange(12.0).reshape(4, 3).T)


def test_writes_into_a_broadcast_view_keep_the_last_value() -> None:
    b = pg.zeros(3, device=D)
    b.expand(2, 3).fill_(7.0)
    assert b.tolist() == [7.0, 7.0, 7.0]
    # the primitive itself: two rows written onto one (numpy's and PyTorch's CPU answer: the last)
    be = XpBackend()
    f32 = pg.float32
    buf = be.allocate(0, 12)
    src = View(be.allocate(0, 24), 0, (2, 3), (3, 1), f32)
    be.from_host(src, np.arange(6, dtype=np.float32))
    be.copy(src, View(buf, 0, (2, 3), (0, 1), f32))
    assert be.to_host(View(buf, 0, (3,), (1,), f32)).tolist() == [3.0, 4.0, 5.0]


def test_view_dtype_shares_the_bytes() -> None:
    x = pg.tensor([1.0, -2.0, 0.5], device=D)
    i = x.view(pg.int32)
    assert i.tolist() == np.array([1.0, -2.0, 0.5], np.float32).view(np.int32).tolist()
    i[0] = int(np.array(3.0, np.float32).view(np.int32))  # written as int32, read as float32
    assert x.tolist() == [3.0, -2.0, 0.5]
    x[1] = 4.0  # and back: the int32 view sees the float32 write
    assert i[1].item() == int(np.array(4.0, np.float32).view(np.int32))


def test_memory_stats_follow_live_buffers() -> None:
    gc.collect()
    before = pg.xp.memory_allocated()
    pg.xp.reset_peak_memory_stats()
    t = pg.empty(1000, dtype=pg.float64, device=D)
    assert pg.xp.memory_allocated() == before + 8000
    assert pg.xp.max_memory_allocated() >= before + 8000
    del t
    gc.collect()
    assert pg.xp.memory_allocated() == before
    assert pg.xp.max_memory_allocated() >= before + 8000


def test_out_of_memory_past_the_capacity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTAGRAD_XP_MEMORY_LIMIT", "4096")
    b = XpBackend()
    assert b.get_device_properties(0).total_memory == 4096
    keep = b.allocate(0, 4000)
    with pytest.raises(pg.OutOfMemoryError, match=r"xp:0: tried to allocate 100 bytes with 4000"):
        b.allocate(0, 100)
    assert b.memory_stats(0)["allocated"] == 4000
    del keep
    gc.collect()
    assert b.memory_stats(0) == {"allocated": 0, "reserved": 0, "peak_allocated": 4000}
    monkeypatch.setenv("PORTAGRAD_XP_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match="PORTAGRAD_XP_MEMORY_LIMIT"):
        XpBackend()


def test_a_dtype_the_library_lacks_is_a_dtype_error() -> None:
    ns = load_namespace()
    for name in ("bfloat16", "float16"):
        if ns.dtype(name) is None:
            with pytest.raises(DTypeError, match=f"has no {name}"):
                pg.zeros(2, dtype=getattr(pg, name), device=D)
        else:
            assert pg.ones(2, dtype=getattr(pg, name), device=D).sum().item() == 2.0


def test_unknown_namespace_names_the_choices() -> None:
    with pytest.raises(ImportError, match="array_api_strict, numpy, torch"):
        load_namespace("no_such_array_library")


def test_erf_from_the_standard_matches_math_erf() -> None:
    from array_api_compat import numpy as cnp

    x = np.concatenate([np.linspace(-7, 7, 2001), [0.0, -0.0, 2.9999999, 3.0, 1e-300,
                                                   np.inf, -np.inf]])
    got = special.erf(cnp, x)
    want = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(got, want, rtol=2e-15, atol=1e-300)  # a few ulps
    assert np.isnan(special.erf(cnp, np.array([np.nan]))[0])
    f32 = special.erf(cnp, np.array([0.5, -2.0], np.float32))
    assert f32.dtype == np.float32 and f32.tolist() == np.float32([math.erf(0.5), math.erf(-2.0)]).tolist()


def test_fmod_from_the_standard_matches_c() -> None:
    from array_api_compat import numpy as cnp

    a = np.array([5.5, -5.5, 5.5, -5.5, 3.0, -0.0, 7.0, np.inf, 1e300])
    b = np.array([2.0, 2.0, -2.0, -2.0, np.inf, 3.0, 0.0, 2.0, 3.0])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(special.fmod_float(cnp, a, b), np.fmod(a, b))
        assert np.signbit(special.fmod_float(cnp, a, b)[5])
    ia = np.array([7, -7, 7, -7, -2**31, 0], np.int32)
    ib = np.array([3, 3, -3, -3, 3, 5], np.int32)
    np.testing.assert_array_equal(special.fmod_int(cnp, ia, ib), np.fmod(ia, ib))


def test_scatter_add_accumulates_duplicates_in_order() -> None:
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 5, (3, 40))
    src = rng.standard_normal((3, 40)).astype(np.float32)
    z = pg.zeros(3, 5, device=D).scatter_add_(1, pg.tensor(idx, device=D), pg.tensor(src, device=D))
    want = np.zeros((3, 5), np.float32)
    np.add.at(want, (np.arange(3)[:, None], idx), src)  # in index order, as the backend adds
    np.testing.assert_array_equal(_np(z), want)
    many = pg.zeros(2, device=D).scatter_add_(0, pg.zeros(50, dtype=pg.int64, device=D),
                                              pg.tensor(src.reshape(-1)[:50], device=D))  # 50 duplicates
    want = np.zeros(2, np.float32)
    np.add.at(want, np.zeros(50, np.int64), src.reshape(-1)[:50])
    np.testing.assert_array_equal(_np(many), want)
    s = pg.zeros(6, device=D).scatter_(0, pg.tensor([1, 1, 4], device=D),
                                       pg.tensor([1.0, 2.0, 3.0], device=D))
    assert s.tolist() == [0.0, 2.0, 0.0, 0.0, 3.0, 0.0]  # the last write wins


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2), ((2, 1), (0, 1), (1, 2), 4)])
def test_convolution_matches_cpu(stride, padding, dilation, groups) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((8, 4 // groups, 3, 2))
    outs = {}
    for dev in ("cpu", D):
        xt = pg.tensor(x, device=dev, requires_grad=True)
        wt = pg.tensor(w, device=dev, requires_grad=True)
        y = pg.nn.functional.conv2d(xt, wt, None, stride, padding, dilation, groups)
        (y * y).sum().backward()
        outs[dev] = (_np(y), _np(xt.grad), _np(wt.grad))
    for got, want in zip(outs[D], outs["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_random_streams_are_the_cpu_streams() -> None:
    for dev_gen in (pg.rand, pg.randn):
        a = dev_gen(1000, generator=pg.Generator().manual_seed(3))
        b = dev_gen(1000, generator=pg.Generator(device=D).manual_seed(3), device=D)
        np.testing.assert_array_equal(_np(b), _np(a))


def test_pinned_host_memory_is_recognised() -> None:
    # the libraries keep host arrays: "pinned" is ordinary host memory, but pin_memory() works
    # wherever an accelerator is available, as in PyTorch
    p = pg.arange(6.0).pin_memory()
    assert p.is_pinned() and p.device == pg.device("cpu") and p.tolist() == list(range(6))
    assert not pg.arange(6.0).is_pinned()
    assert p.to(D, non_blocking=True).tolist() == list(range(6))

