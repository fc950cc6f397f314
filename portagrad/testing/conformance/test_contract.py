"""The contract itself: required methods, devices, host copies, memory accounting, out-of-memory,
pinned memory, events and copies between devices."""
from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.interface import (EVENT_METHODS, FFT_METHODS, LINALG_METHODS,
                                          OPTIONAL_METHODS, REQUIRED_METHODS, Backend, View)
from portagrad.errors import OutOfMemoryError, UnsupportedOpError
from portagrad.plugins.manager import missing_methods

from ...backends.helpers import contiguous_strides
from . import device_checks
from ._util import (REF, broadcast, check, contiguous, declined_dtypes, empty, reversed_axes,
                    sample, supported_dtypes)

# every method a backend can have: the contract's, and any the base class defines for all
ALL_METHODS = tuple(dict.fromkeys(
    REQUIRED_METHODS + OPTIONAL_METHODS
    + tuple(n for n in vars(Backend) if not n.startswith("_") and callable(vars(Backend)[n]))))

# which kit module exercises each method (a method the kit does not know is reported)
COVERED = {
    "device_count": "test_contract", "get_device_properties": "test_contract",
    "synchronize": "test_contract", "allocate": "test_contract", "memory_stats": "test_contract",
    "allocate_array": "test_contract", "binary_array": "test_contract",
    "reset_peak_memory_stats": "test_contract", "empty_cache": "test_contract",
    "from_host": "test_contract", "to_host": "test_contract", "copy_between": "test_contract",
    "host_array": "test_contract", "wrap_host": "test_contract", "pin_memory": "test_contract",
    "is_pinned": "test_contract", "record_event": "test_contract", "event_wait": "test_contract",
    "event_query": "test_contract", "event_elapsed_ms": "test_contract",
    "unary": "test_elementwise", "binary": "test_elementwise", "where": "test_elementwise",
    "copy": "test_elementwise", "fill": "test_elementwise", "reduce": "test_reductions",
    "arg_reduce": "test_reductions", "cumsum": "test_reductions", "sort": "test_reductions",
    "matmul": "test_indexing", "mm": "test_indexing", "gather": "test_indexing",
    "scatter": "test_indexing",
    "random": "test_random", "softmax": "test_fast_paths", "conv2d": "test_fast_paths",
    "conv2d_grad_input": "test_fast_paths", "conv2d_grad_weight": "test_fast_paths",
    "max_pool2d": "test_fast_paths", "max_pool2d_grad_input": "test_fast_paths",
    "softmax_backward": "test_norms", "layer_norm": "test_norms",
    "layer_norm_backward": "test_norms", "batch_norm": "test_norms",
    "batch_norm_backward": "test_norms", "cross_entropy": "test_norms",
    "cross_entropy_backward": "test_norms", "gelu": "test_activations",
    "gelu_backward": "test_activations", "attention": "test_attention",
    "attention_backward": "test_attention", "fused_attention": "test_attention",
    "discard": "test_elementwise", "begin_trace": "test_contract", "end_trace": "test_contract",
    "defer_check": "test_contract",
    "eigh": "test_linalg", "svd": "test_linalg", "eig": "test_linalg",
    "fft_c2c": "test_fft", "fft_r2c": "test_fft", "fft_c2r": "test_fft",
}


def test_contract_is_complete(conformance_contract: tuple[Any, str | None]) -> None:
    """The backend loads and implements every required method (the other tests skip if not)."""
    backend, problem = conformance_contract
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    assert not missing_methods(backend)


@pytest.mark.parametrize("name", ALL_METHODS)
def test_method_is_checked_by_the_kit(conformance_backend: Any, name: str) -> None:
    """Every method the backend has (its own or inherited from ``Backend``) is callable and
    has conformance tests; optional ones it lacks are skipped."""
    meth = getattr(conformance_backend, name, None)
    if meth is None:
        assert name in OPTIONAL_METHODS, f"required method {name} is missing"
        pytest.skip(f"the backend has no {name} (optional)")
    assert callable(meth), f"{name} is not callable"
    if name not in COVERED:  # a helper the base class gained after this kit version
        pytest.skip(f"the kit has no conformance test for {name} (not a method of the contract)")


def test_kit_covers_the_contract() -> None:
    """Every method of the contract has conformance tests in this kit."""
    assert set(REQUIRED_METHODS + OPTIONAL_METHODS + LINALG_METHODS + FFT_METHODS) <= set(COVERED)


def test_events_are_all_or_none(conformance_backend: Any) -> None:
    have = [m for m in EVENT_METHODS if getattr(conformance_backend, m, None) is not None]
    assert not have or len(have) == len(EVENT_METHODS), (
        f"events are all four methods or none; the backend has only {have}")


def test_device_properties(conformance_backend: Any) -> None:
    be = conformance_backend
    assert be.device_count() >= 1
    for i in range(be.device_count()):
        props = be.get_device_properties(i)
        assert isinstance(props.name, str) and props.name
        assert isinstance(props.total_memory, int) and props.total_memory >= 0
        assert isinstance(props.fp64, bool)
        stats = be.memory_stats(i)
        assert {"allocated", "reserved", "peak_allocated"} <= set(stats)
        assert all(isinstance(stats[k], int) and stats[k] >= 0
                   for k in ("allocated", "reserved", "peak_allocated"))
        be.synchronize(i)


def _dtype_ids(dtypes: Any) -> list[str]:
    return [d.name for d in dtypes]


_ALL_DTYPES = [pg.bool, pg.uint8, pg.int8, pg.int16, pg.int32, pg.int64, pg.float16, pg.bfloat16,
               pg.float32, pg.float64]


def _need(be: Any, dtype: Any) -> None:
    if dtype not in supported_dtypes(be):
        pytest.skip(f"the backend does not store {dtype.name}")


def test_core_dtypes_are_stored(conformance_backend: Any) -> None:
    got = supported_dtypes(conformance_backend)
    declined = dict(declined_dtypes(conformance_backend))
    for dt in (pg.bool, pg.int32, pg.int64, pg.float32):
        assert dt in got, f"the backend declines {dt.name}, which every backend stores: " \
                          f"{declined.get(dt.name)}"


@pytest.mark.parametrize("dtype", _ALL_DTYPES, ids=_dtype_ids(_ALL_DTYPES))
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (2, 3, 4)])
def test_host_roundtrip(conformance_backend: Any, dtype: Any, shape: tuple) -> None:
    """``to_host`` returns a new C-contiguous array of the view's numpy dtype (bfloat16 is
    ml_dtypes', never float32) with the stored bits; ``from_host`` into a view at an offset writes
    there and nowhere else."""
    be = conformance_backend
    _need(be, dtype)
    arr = sample(dtype, shape)
    p = contiguous(be, arr, dtype, offset=3)
    got = be.to_host(p.dev)
    assert got.dtype == arr.dtype, (f"to_host of a {dtype.name} view returned {got.dtype} data, "
                                    f"expected {arr.dtype} (the stored bits, not a conversion)")
    assert got.shape == arr.shape and got.flags.c_contiguous
    assert got.tobytes() == arr.tobytes()
    got[...] = 0 if got.size else got  # a new array: writing it does not touch the buffer
    assert be.to_host(p.dev).tobytes() == arr.tobytes()
    if not arr.size:
        return  # the core never uploads nothing
    # into the middle of a buffer of sentinels (x[2:5] = array, the host defaults' spans)
    dst = empty(be, (arr.size + 6,), dtype)
    pair = dst.twin.view(4, shape, contiguous_strides(shape))
    REF.from_host(pair.ref, arr)
    be.from_host(pair.dev, arr)
    check(be, pair, what=f"from_host of {dtype.name} {shape} at offset 4")


@pytest.mark.parametrize("dtype", _ALL_DTYPES, ids=_dtype_ids(_ALL_DTYPES))
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 5), (2, 0, 3)])
def test_allocate_array(conformance_backend: Any, dtype: Any, shape: tuple) -> None:
    """The optional typed allocation: the one object is the buffer of every View over its bytes
    (another shape, an offset, another dtype of the same size) and the handle (``View.cache``) of
    the View the core makes with it; both read what was written through either."""
    be = conformance_backend
    if getattr(be, "allocate_array", None) is None:
        pytest.skip("the backend has no allocate_array (optional)")
    _need(be, dtype)
    arr = sample(dtype, shape)
    buf = be.allocate_array(0, arr.nbytes, shape, dtype)
    strides = contiguous_strides(shape)
    first = View(buf, 0, shape, strides, dtype)
    first.cache = buf  # as the core sets it
    be.from_host(first, arr)
    assert be.to_host(first).tobytes() == arr.tobytes()
    again = View(buf, 0, shape, strides, dtype)  # a later View, no handle yet
    assert be.to_host(again).tobytes() == arr.tobytes()
    if arr.size < 2:
        return
    flat = arr.reshape(-1)
    tail = View(buf, 1, (flat.size - 1,), (1,), dtype)
    assert be.to_host(tail).tobytes() == flat[1:].tobytes()
    twin = {pg.float32: pg.int32, pg.float64: pg.int64, pg.int32: pg.float32}.get(dtype)
    if twin is not None and twin in supported_dtypes(be):
        other = View(buf, 0, (flat.size,), (1,), twin)
        assert be.to_host(other).tobytes() == arr.tobytes()
        be.from_host(View(buf, 2, (1,), (1,), twin), np.zeros(1, twin.numpy))
        flat = flat.copy()
        flat.view(twin.numpy)[2] = 0
        assert be.to_host(first).tobytes() == flat.tobytes()


@pytest.mark.parametrize("dtype", _ALL_DTYPES, ids=_dtype_ids(_ALL_DTYPES))
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (64, 80)])
def test_binary_array(conformance_backend: Any, dtype: Any, shape: tuple) -> None:
    """The optional operator result in one call: None, or what ``binary`` writes into a new
    contiguous result, read through the result's View (with the returned object as its
    ``cache``, as the core sets it) and through a later View of the buffer. Operands as the
    core passes them: Views of the result's shape and dtype (at an offset, transposed,
    broadcast with stride 0) or Python scalars."""
    be = conformance_backend
    if getattr(be, "binary_array", None) is None:
        pytest.skip("the backend has no binary_array (optional)")
    _need(be, dtype)
    ops = ("add", "mul", "sub", "div") if dtype.is_floating_point else ("add", "mul")
    x = contiguous(be, sample(dtype, shape), dtype, 1)
    other = [contiguous(be, sample(dtype, shape), dtype, 2),
             reversed_axes(be, sample(dtype, shape), dtype)]
    if shape:
        other.append(broadcast(be, sample(dtype, shape[-1:]), shape, dtype))
    scalar = 2.5 if dtype.is_floating_point else None if dtype is pg.bool else 3
    pairs: list[tuple[Any, Any]] = [(x.dev, y.dev) for y in other]
    if scalar is not None:
        pairs += [(x.dev, scalar), (scalar, other[1].dev)]
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    strides = contiguous_strides(shape)
    for op in ops:
        for a, b in pairs:
            with np.errstate(all="ignore"):
                got = be.binary_array(0, nbytes, shape, dtype, op, a, b)
                if got is None:
                    continue
                want = empty(be, shape, dtype)
                be.binary(op, a, b, want.dev)
            first = View(got, 0, shape, strides, dtype)
            first.cache = got  # as the core sets it
            expect = be.to_host(want.dev)
            what = f"binary_array {op} of {dtype.name} {shape}, operands {a!r}, {b!r}"
            np.testing.assert_array_equal(be.to_host(first), expect, err_msg=what)
            again = View(got, 0, shape, strides, dtype)  # a later View, no handle yet
            np.testing.assert_array_equal(be.to_host(again), expect, err_msg=what)


def test_allocate_zero_bytes(conformance_backend: Any) -> None:
    be = conformance_backend
    buf = be.allocate(0, 0)
    v = View(buf, 0, (0,), (1,), pg.float32)
    assert be.to_host(v).shape == (0,)
    be.fill(View(buf, 0, (0, 3), (3, 1), pg.float32), 1.0)


def _accounts(be: Any, index: int) -> bool:
    """Whether the backend accounts its allocations (the numpy backend reports zeros)."""
    before = be.memory_stats(index)["allocated"]
    buf = be.allocate(index, 1 << 20)
    after = be.memory_stats(index)["allocated"]
    del buf
    return after != before


def _settle() -> None:
    gc.collect()


@pytest.mark.parametrize("index", [0, 1])
def test_memory_stats_follow_allocations(conformance_backend: Any, index: int) -> None:
    """``allocated`` grows by at least the request and falls back when the buffer is freed;
    ``peak_allocated`` follows and ``reset_peak_memory_stats`` brings it down to ``allocated``."""
    be = conformance_backend
    if index >= be.device_count():
        pytest.skip("one device")
    _settle()
    if not _accounts(be, index):
        pytest.skip("the backend reports no memory accounting (all zeros)")
    _settle()
    be.empty_cache(index)
    s0 = be.memory_stats(index)
    nbytes = 3 << 20
    buf = be.allocate(index, nbytes)
    s1 = be.memory_stats(index)
    assert s1["allocated"] - s0["allocated"] >= nbytes, (s0, s1)
    assert s1["reserved"] >= s1["allocated"]
    assert s1["peak_allocated"] >= s1["allocated"]
    del buf
    _settle()
    s2 = be.memory_stats(index)
    assert s2["allocated"] <= s0["allocated"], f"allocated did not decrease after freeing: {s0} {s2}"
    assert s2["peak_allocated"] >= s1["allocated"]
    held = be.allocate(index, nbytes)  # the reset peak is what is allocated now, not 0
    be.reset_peak_memory_stats(index)
    s3 = be.memory_stats(index)
    assert s3["peak_allocated"] == s3["allocated"] >= nbytes, (
        f"reset_peak_memory_stats with {nbytes} bytes allocated: {s3} (the peak becomes the "
        f"current allocation)")
    del held
    _settle()
    be.empty_cache(index)
    s4 = be.memory_stats(index)
    assert s4["reserved"] >= s4["allocated"]
    assert s4["reserved"] <= s2["reserved"], "empty_cache grew the reserved memory"


def test_memory_stats_are_per_device(conformance_backend: Any) -> None:
    be = conformance_backend
    if be.device_count() < 2:
        pytest.skip("one device")
    _settle()
    if not _accounts(be, 1):
        pytest.skip("the backend reports no memory accounting")
    s0 = [be.memory_stats(i)["allocated"] for i in (0, 1)]
    buf = be.allocate(1, 2 << 20)
    s1 = [be.memory_stats(i)["allocated"] for i in (0, 1)]
    assert s1[0] == s0[0] and s1[1] - s0[1] >= 2 << 20, (s0, s1)
    del buf


def test_out_of_memory_is_a_typed_error(conformance_backend: Any) -> None:
    """An impossible allocation raises ``OutOfMemoryError`` (never a crash, hang or success), and
    the device still works afterwards."""
    be = conformance_backend
    total = be.get_device_properties(0).total_memory
    if total <= 0:
        pytest.skip("the device reports no total memory")
    with pytest.raises(OutOfMemoryError):
        buf = be.allocate(0, total * 4)
        be.synchronize(0)
        del buf
    p = contiguous(be, np.arange(4.0), pg.float32)
    np.testing.assert_array_equal(be.to_host(p.dev), np.arange(4.0, dtype=np.float32))
    assert issubclass(OutOfMemoryError, RuntimeError)


def test_out_of_memory_through_the_public_api(conformance_device: str) -> None:
    mod = getattr(pg, pg.device(conformance_device).type, None)
    be = pg.empty(1, device=conformance_device)._storage.backend
    total = be.get_device_properties(0).total_memory
    if total <= 0:
        pytest.skip("the device reports no total memory")
    with pytest.raises(pg.OutOfMemoryError):
        pg.empty(total, dtype=pg.float32, device=conformance_device)
    assert mod is None or mod.is_available()


def test_pinned_memory_non_blocking(conformance_backend: Any) -> None:
    """``from_host(non_blocking=True)`` from a pinned array (at an offset into the pinned buffer)
    lands intact: the device's next primitive already reads the new data (work on a device is
    ordered), and after ``synchronize`` the caller may overwrite the pinned array. ``is_pinned``
    knows pinned arrays and their views, and nothing else."""
    be = conformance_backend
    n = 40_003
    pinned = be.pin_memory((n + 8) * 4)
    if pinned is None:
        pytest.skip("the backend has no pinned memory")
    assert pinned.dtype == np.uint8 and pinned.ndim == 1 and pinned.nbytes >= (n + 8) * 4
    assert be.is_pinned(pinned) and be.is_pinned(pinned.view(np.float32)[3:])
    assert not be.is_pinned(np.zeros(16, np.uint8))
    whole = pinned[:(n + 8) * 4].view(np.float32)
    whole[:] = -1.0
    src = whole[5:5 + n]
    want = np.arange(n, dtype=np.float32)
    src[:] = want
    dst = empty(be, (n,), pg.float32)
    be.from_host(dst.dev, src, non_blocking=True)
    seen = empty(be, (n,), pg.float32)
    be.copy(dst.dev, seen.dev)  # enqueued behind the upload: must read what it wrote
    be.synchronize(0)
    src[:] = 0  # the caller may reuse the pinned array once the device is synchronized
    np.testing.assert_array_equal(be.to_host(dst.dev), want,
                                  err_msg="non-blocking upload, read after synchronize")
    np.testing.assert_array_equal(be.to_host(seen.dev), want,
                                  err_msg="a primitive after a non-blocking upload read old data")


def test_pinned_tensor_non_blocking(conformance_device: str) -> None:
    """Through the public API, in memory pinned by the backend under test
    (``pin_memory(device)``): a non-blocking copy to the device, used at once by an op, the pinned
    tensor overwritten after ``synchronize``; and a non-blocking copy back into pinned memory."""
    be = pg.empty(1, device=conformance_device)._storage.backend
    if be.pin_memory(16) is None:
        pytest.skip("the backend has no pinned memory")
    index = pg.device(conformance_device).index or 0
    want = np.arange(7, 507, dtype=np.float32)
    host = pg.arange(1000, dtype=pg.float32)[7:507].pin_memory(conformance_device)
    assert host.is_pinned() and be.is_pinned(host._storage.buffer), (
        "Tensor.pin_memory(device) did not use the device's own pinned memory")
    dev = host.to(conformance_device, non_blocking=True)
    doubled = dev * 2.0
    be.synchronize(index)
    host.zero_()
    np.testing.assert_array_equal(dev.cpu().numpy(), want)
    np.testing.assert_array_equal(doubled.cpu().numpy(), want * 2)
    back = pg.zeros(500, dtype=pg.float32).pin_memory(conformance_device)
    back.copy_(doubled, non_blocking=True)
    be.synchronize(index)
    np.testing.assert_array_equal(back.numpy(), want * 2)


def _has_events(be: Any) -> bool:
    return all(getattr(be, m, None) is not None for m in EVENT_METHODS)


def test_events(conformance_backend: Any) -> None:
    be = conformance_backend
    if not _has_events(be):
        pytest.skip("the backend has no events")
    e1 = be.record_event(0)
    p = contiguous(be, np.ones(100_000, np.float32), pg.float32)
    for _ in range(3):
        be.unary("exp", p.dev, p.dev)
    e2 = be.record_event(0)
    be.event_wait(e2)
    assert be.event_query(e2) is True, "event_query is not True after event_wait"
    assert be.event_query(e1) is True, "an earlier event is not complete after a later one"
    ms = be.event_elapsed_ms(e1, e2)
    assert isinstance(ms, float) and ms >= 0.0
    np.testing.assert_allclose(be.to_host(p.dev)[:3], np.exp(np.exp(np.exp(1.0))).astype(np.float32),
                               rtol=1e-5)


def test_event_elapsed_time_is_in_milliseconds(conformance_backend: Any) -> None:
    """Two events recorded 50 ms apart (the device idle in between, after a ``synchronize``) are
    at least 25 ms apart and no further apart than the host saw them: milliseconds, not seconds
    or microseconds. The bounds hold on any load: the sleep is a minimum, the host's clock the
    maximum."""
    be = conformance_backend
    if not _has_events(be):
        pytest.skip("the backend has no events")
    be.synchronize(0)
    t0 = time.perf_counter()
    start = be.record_event(0)
    be.synchronize(0)  # start has completed before the sleep begins
    time.sleep(0.05)
    end = be.record_event(0)
    be.event_wait(end)
    host_ms = (time.perf_counter() - t0) * 1000.0
    ms = be.event_elapsed_ms(start, end)
    assert 25.0 <= ms <= host_ms * 1.5 + 5.0, (
        f"event_elapsed_ms gave {ms!r} for events recorded 50 ms apart ({host_ms:.1f} ms on the "
        f"host clock): it must return milliseconds of elapsed time, idle time included")


def test_event_query_does_not_block(conformance_backend: Any) -> None:
    be = conformance_backend
    if not _has_events(be):
        pytest.skip("the backend has no events")
    be.synchronize(0)
    e = be.record_event(0)
    t0 = time.perf_counter()
    done = be.event_query(e)
    assert isinstance(done, bool)
    assert time.perf_counter() - t0 < 5.0
    be.event_wait(e)
    assert be.event_query(e)


def test_public_events(conformance_device: str) -> None:
    be = pg.empty(1, device=conformance_device)._storage.backend
    if conformance_device == "cpu" or not _has_events(be):
        pytest.skip("the backend has no events")
    mod = getattr(pg, pg.device(conformance_device).type)
    start, end = mod.Event(enable_timing=True), mod.Event(enable_timing=True)
    start.record()
    (pg.ones(64, 64, device=conformance_device) @ pg.ones(64, 64, device=conformance_device)).sum()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0


def test_unknown_ops_are_typed_errors(conformance_backend: Any) -> None:
    be = conformance_backend
    v = contiguous(be, np.ones(3), pg.float32).dev
    idx = empty(be, (1,), pg.int64).dev
    out = empty(be, (1,), pg.float32).dev
    for kind, call in (("unary", lambda: be.unary("no_such_op", v, v)),
                       ("binary", lambda: be.binary("no_such_op", v, v, v)),
                       ("binary", lambda: be.binary("no_such_op", v, 2.0, v)),
                       ("reduce", lambda: be.reduce("mean", v, (0,), out)),
                       ("arg_reduce", lambda: be.arg_reduce("argmean", v, 0, idx)),
                       ("random", lambda: be.random("gamma", v, 0, 0, 0.0, 1.0))):
        with pytest.raises(UnsupportedOpError, match=rf"{kind} op '\w+' is not implemented"):
            call()
            be.synchronize(0)


# ------------------------------------------------------------------ several devices
def _two(be: Any) -> None:
    if be.device_count() < 2:
        pytest.skip("needs two devices")


@pytest.mark.parametrize("dtype", [pg.float32, pg.int64, pg.bool, pg.float64], ids=str)
@pytest.mark.parametrize("direction", [(0, 1), (1, 0)], ids=["0to1", "1to0"])
def test_copy_between_devices(conformance_backend: Any, dtype: Any, direction: tuple) -> None:
    be = conformance_backend
    _two(be)
    _need(be, dtype)
    device_checks.check_copy_between(be, dtype, *direction)


def test_to_another_device_through_the_public_api(conformance_device: str) -> None:
    be = pg.empty(1, device=conformance_device)._storage.backend
    _two(be)
    device_checks.check_to_another_device(pg.device(conformance_device).type)


def test_visible_devices(conformance_device: str, conformance_origin: tuple[str, str]) -> None:
    """``PORTAGRAD_VISIBLE_DEVICES`` (set in another process, on a backend built there): only
    out-of-range devices of the type named hides them all; ``1,0`` picks and reorders."""
    device_type = pg.device(conformance_device).type
    if device_type == "cpu":
        pytest.skip("PORTAGRAD_VISIBLE_DEVICES does not apply to the cpu device")
    device_checks.check_visible_devices(*conformance_origin, device_type)


def test_trace(conformance_backend: Any) -> None:
    """``begin_trace``/``end_trace`` (optional): a traced run of calls, enqueued again by
    ``trace.run()``, does the same work on the buffers' current contents; a run that reads device
    memory on the host is refused (``None``)."""
    be = conformance_backend
    if getattr(be, "begin_trace", None) is None:
        pytest.skip("the backend has no begin_trace (optional)")
    a = np.arange(12, dtype=np.float32)
    x = contiguous(be, a, pg.float32)
    out = empty(be, (12,), pg.float32)
    tmp = be.allocate(0, 12 * 4)
    t = View(tmp, 0, (12,), (1,), pg.float32)
    token = be.begin_trace()
    be.binary("mul", x.dev, 2.0, t)
    be.binary("add", t, 1.0, out.dev)
    trace = be.end_trace(token)
    assert trace is not None
    np.testing.assert_array_equal(be.to_host(out.dev), a * 2 + 1)
    be.from_host(x.dev, np.full(12, 5, np.float32))  # new input, outside the trace
    trace.run()
    np.testing.assert_array_equal(be.to_host(out.dev), np.full(12, 11, np.float32))
    token = be.begin_trace()
    be.binary("add", x.dev, 1.0, out.dev)
    be.to_host(out.dev)  # a host read: the run's choices could depend on the data
    assert be.end_trace(token) is None


def test_defer_check(conformance_backend: Any) -> None:
    """``defer_check(view, check)`` (optional): ``check`` gets the view's values as they were in
    queue order when it was called, once, at the next ``to_host`` or ``synchronize``, and what it
    raises comes out of that call; reads work again afterwards."""
    be = conformance_backend
    if getattr(be, "defer_check", None) is None:
        pytest.skip("the backend has no defer_check (optional)")
    x = contiguous(be, np.array([3, -1], np.int64), pg.int64)
    seen: list[list[int]] = []
    be.defer_check(x.dev, lambda v: seen.append(np.asarray(v).tolist()))
    be.from_host(x.dev, np.array([7, 7], np.int64))  # a later write is not what it checks
    be.synchronize(0)
    assert seen == [[3, -1]]
    be.synchronize(0)
    assert seen == [[3, -1]]  # once

    def fail(values: Any) -> None:
        raise IndexError(f"bad value {int(values[0])}")

    be.defer_check(x.dev, fail)
    with pytest.raises(IndexError, match="bad value 7"):
        be.to_host(x.dev)
    np.testing.assert_array_equal(be.to_host(x.dev), [7, 7])
