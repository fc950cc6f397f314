"""Elementwise fusion on the OpenCL backend (portagrad/backends/opencl/fusion.py).

Every result is compared with the same computation run unfused (the backend's fuser switched off),
bit for bit: fusion keeps every intermediate rounded to its dtype, so nothing may change. Hazards
(reads of pending outputs, writes to buffers a pending node reads, overlapping regions) are each
provoked on purpose.
"""
from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import portagrad as pg

pytestmark = pytest.mark.usefixtures("opencl_devices")

DEV = "opencl:0"


@pytest.fixture
def be(opencl_devices):
    b = pg.zeros(1, device=DEV)._storage.backend  # the instance tensors on opencl:0 use
    if b._fz is None:
        pytest.fail("fusion is off in this process (PORTAGRAD_OPENCL_FUSION is set)")
    pg.opencl.synchronize()
    return b


@pytest.fixture
def no_gc():
    """Counts of launches and stores are exact only if no finalizer runs (and flushes) half-way."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


@contextlib.contextmanager
def unfused(be):
    """Run the body with fusion off (every primitive launches its own kernel)."""
    fz = be._fz
    fz.flush()
    be._fz = None
    try:
        yield
    finally:
        be._fz = fz


def _rand(*shape, seed=0, dtype=np.float32, positive=False):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if positive:
        x = np.abs(x) + 0.5
    return pg.from_numpy(x).to(DEV)


def _both(be, fn):
    """``fn()`` fused and unfused, as numpy arrays."""
    got = fn()
    got = [t.cpu().numpy() for t in got] if isinstance(got, (tuple, list)) else got.cpu().numpy()
    with unfused(be):
        ref = fn()
        ref = [t.cpu().numpy() for t in ref] if isinstance(ref, (tuple, list)) else ref.cpu().numpy()
    return got, ref


def test_a_times_b_plus_c_is_one_kernel_storing_only_the_result(be, no_gc):
    a, b, c = _rand(1000, seed=1), _rand(1000, seed=2), _rand(1000, seed=3)
    fz = be._fz
    launches, stores = fz.launches, fz.stores
    y = a * b + c
    assert len(fz.nodes) == 2  # nothing launched yet
    got = y.cpu().numpy()
    assert fz.launches == launches + 1
    assert fz.stores == stores + 1  # the temporary a*b died unseen: never written
    ref = a.cpu().numpy() * b.cpu().numpy() + c.cpu().numpy()
    np.testing.assert_array_equal(got, ref)


def test_a_discarded_intermediate_is_not_stored(be, no_gc):
    # a captured step's replay keeps its temporaries alive and says when one is dead
    a, b, c = _rand(257, seed=1), _rand(257, seed=2), _rand(257, seed=3)
    stores = be._fz.stores
    t = a * b
    y = t + c
    be.discard(t._v.buffer)
    got = y.cpu().numpy()
    assert be._fz.stores == stores + 1  # t is alive but dead to everyone: never written
    np.testing.assert_array_equal(got, a.cpu().numpy() * b.cpu().numpy() + c.cpu().numpy())
    # the buffer is no longer the pending node's: written by another primitive (a copy that
    # flushes) and then read by a fused one, it holds the new value, not an inlined stale one
    t.copy_(c)
    z = t * 2.0
    np.testing.assert_array_equal(z.cpu().numpy(), c.cpu().numpy() * np.float32(2))


def test_a_live_intermediate_is_stored_too(be, no_gc):
    a, b, c = _rand(257, seed=1), _rand(257, seed=2), _rand(257, seed=3)
    stores = be._fz.stores
    t = a * b
    y = t + c
    y.cpu()
    assert be._fz.stores == stores + 2
    np.testing.assert_array_equal(t.cpu().numpy(), a.cpu().numpy() * b.cpu().numpy())
    np.testing.assert_array_equal(y.cpu().numpy(), t.cpu().numpy() + c.cpu().numpy())


def test_long_chain_is_bit_identical_and_split_into_capped_groups(be, no_gc):
    from portagrad.backends.opencl.fusion import MAX_NODES

    x0 = _rand(1000, seed=4)

    def chain():
        y = x0
        for _ in range(100):
            y = y * 1.0001 + 0.5
        return y

    launches = be._fz.launches
    got, ref = _both(be, chain)
    np.testing.assert_array_equal(got, ref)
    assert be._fz.launches - launches <= 200 // MAX_NODES + 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_fusable_op_matches_unfused(be, dtype):
    from portagrad.backends.opencl.fusion import _BINARY_OK, _UNARY_OK

    if dtype == np.float64 and not be.device(0).fp64:
        pytest.skip("opencl:0 has no cl_khr_fp64")
    a = _rand(301, seed=5, dtype=dtype)
    b = _rand(301, seed=6, dtype=dtype, positive=True)
    for op in sorted(_UNARY_OK):
        fn = getattr(pg, op)
        got, ref = _both(be, lambda: fn(a * 0.75) + 1.0)  # noqa: B023 - called within this iteration
        np.testing.assert_array_equal(got, ref, err_msg=op)
    prim = {"add": pg.add, "sub": pg.sub, "mul": pg.mul, "div": pg.div, "pow": pg.pow,
            "maximum": pg.maximum, "minimum": pg.minimum, "atan2": pg.atan2,
            "floordiv": pg.floor_divide, "remainder": pg.remainder, "fmod": pg.fmod}
    assert set(prim) == set(_BINARY_OK)
    for op, fn in sorted(prim.items()):
        got, ref = _both(be, lambda: fn(a * 3.0, b - 0.25) * 2.0)  # noqa: B023 - called within this iteration
        np.testing.assert_array_equal(got, ref, err_msg=op)
        got, ref = _both(be, lambda: fn(a + 1.0, 1.5) - b)  # noqa: B023 - called within this iteration; with a scalar operand
        np.testing.assert_array_equal(got, ref, err_msg=op)


def test_reflected_scalars_and_nan(be):
    a = _rand(64, seed=7)
    a[3] = float("nan")
    got, ref = _both(be, lambda: (2.0 - a) / (1.0 + a * a) + pg.maximum(a, a * 0.5))
    np.testing.assert_array_equal(got, ref)


def test_a_non_fusable_read_sees_pending_results(be):
    a, b = _rand(33, 31, seed=8), _rand(33, 31, seed=9)
    t = a * b + 1.0
    s = t.sum(dim=1)  # a reduction: flushes first
    ref = (a.cpu().numpy() * b.cpu().numpy() + np.float32(1)).sum(axis=1)
    np.testing.assert_allclose(s.cpu().numpy(), ref, rtol=1e-5)
    assert not be._fz.nodes


def test_write_after_read_keeps_the_old_value(be):
    a = _rand(100, seed=10)
    old = a.cpu().numpy().copy()
    y = a * 2.0
    a.fill_(7.0)  # fill flushes first: y must be computed from the old a
    np.testing.assert_array_equal(y.cpu().numpy(), old * np.float32(2))
    np.testing.assert_array_equal(a.cpu().numpy(), np.full(100, 7, np.float32))


def test_in_place_writes_into_a_buffer_a_pending_node_reads(be):
    a = _rand(100, seed=11)
    old = a.cpu().numpy().copy()
    av = a._v
    y = a * 3.0 + 1.0
    be.binary("mul", av, 0.5, av)  # out aliases a leaf of the group: same region, fused
    be.binary("add", av, 2.0, av)  # rewrites a pending output in place
    np.testing.assert_array_equal(y.cpu().numpy(), old * np.float32(3) + np.float32(1))
    np.testing.assert_array_equal(a.cpu().numpy(), old * np.float32(0.5) + np.float32(2))


def test_overlapping_regions_of_one_buffer_do_not_race(be):
    x = _rand(2001, seed=12)
    old = x.cpu().numpy().copy()
    u = x[:2000] * 2.0  # reads x[0:2000]
    w = x[1:]  # writes x[1:2001]: overlaps what u reads, at another offset
    be.binary("mul", w._v, 3.0, w._v)
    np.testing.assert_array_equal(u.cpu().numpy(), old[:2000] * np.float32(2))
    exp = old.copy()
    exp[1:] *= np.float32(3)
    np.testing.assert_array_equal(x.cpu().numpy(), exp)
    # and a pending output read at another offset
    t = x * 1.0
    v = t[1:] + 1.0
    np.testing.assert_array_equal(v.cpu().numpy(), exp[1:] + np.float32(1))


def test_reshaped_pending_output_is_inlined(be, no_gc):
    a, c = _rand(12, 10, seed=13), _rand(120, seed=14)
    launches = be._fz.launches
    y = (a * 2.0).reshape(120) + c
    got = y.cpu().numpy()
    assert be._fz.launches == launches + 1
    np.testing.assert_array_equal(got, (a.cpu().numpy() * np.float32(2)).reshape(120) + c.cpu().numpy())


def test_strided_broadcast_and_size_changes_fall_back(be):
    a = _rand(40, 25, seed=15)
    row = _rand(25, seed=16)
    got, ref = _both(be, lambda: ((a.t() * 2.0).t() + row) * (a[:, :5].sum() + 1.0) - a)
    np.testing.assert_array_equal(got, ref)
    got, ref = _both(be, lambda: [a * 2.0, (a[:3] + 1.0) * 3.0, a.reshape(-1)[:7] - 1.0])
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)


def test_more_inputs_and_scalars_than_one_group_holds(be):
    from portagrad.backends.opencl.fusion import MAX_LEAVES, MAX_SCALARS

    xs = [_rand(50, seed=100 + i) for i in range(MAX_LEAVES + 5)]

    def many():
        y = xs[0] * 1.0
        for i, x in enumerate(xs[1:]):
            y = y + x * float(i + MAX_SCALARS)
        return y

    got, ref = _both(be, many)
    np.testing.assert_array_equal(got, ref)


def test_groups_do_not_cross_devices(be, opencl_devices):
    if len(opencl_devices) < 2:
        pytest.skip("one OpenCL device")
    a0 = _rand(100, seed=17)
    a1 = a0.to("opencl:1")
    y0 = a0 * 2.0 + 1.0
    y1 = a1 * 2.0 + 1.0  # flushes device 0's group first
    np.testing.assert_array_equal(y0.cpu().numpy(), y1.cpu().numpy())
    np.testing.assert_array_equal(y1.to("opencl:0").cpu().numpy(), y0.cpu().numpy())


def test_autograd_through_fused_ops(be):
    x = _rand(200, seed=18).requires_grad_()

    def loss():
        y = (x * x + 1.0).sqrt() * 0.5 - x.tanh()
        return (y * y).sum()

    (gx,) = pg.autograd.grad(loss(), x)
    with unfused(be):
        (rx,) = pg.autograd.grad(loss(), x)
    np.testing.assert_array_equal(gx.cpu().numpy(), rx.cpu().numpy())


def test_optimizer_step_matches_unfused(be):
    def run():
        pg.manual_seed(0)
        model = pg.nn.Sequential(pg.nn.Linear(8, 16), pg.nn.Tanh(), pg.nn.Linear(16, 1)).to(DEV)
        opt = pg.optim.Adam(model.parameters(), lr=1e-2)
        xb = _rand(32, 8, seed=19)
        for _ in range(3):
            opt.zero_grad()
            loss = ((model(xb) - 1.0) ** 2).mean()
            loss.backward()
            opt.step()
        return [p.detach() for p in model.parameters()]

    got, ref = _both(be, run)
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)


def test_pending_inputs_are_held_then_released(be):
    base = pg.opencl.memory_allocated()
    a = _rand(1 << 16, seed=20)
    y = a * 2.0 + 1.0
    del a  # the pending group still reads a's buffer: it must not be reused
    junk = [_rand(1 << 16, seed=21 + i) for i in range(3)]  # would take the freed buffer
    np.testing.assert_array_equal(y.cpu().numpy(), y.cpu().numpy())
    assert np.isfinite(y.cpu().numpy()).all()
    del junk, y
    pg.opencl.synchronize()
    assert pg.opencl.memory_allocated() == base


def test_events_and_synchronize_flush(be):
    a = _rand(1000, seed=22)
    start = pg.opencl.Event(enable_timing=True)
    end = pg.opencl.Event(enable_timing=True)
    start.record()
    y = a * 2.0 + 1.0
    end.record()
    assert not be._fz.nodes
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    np.testing.assert_array_equal(y.cpu().numpy(), a.cpu().numpy() * np.float32(2) + np.float32(1))


#: the public backend methods that touch no device memory (or record into the group), so need not
#: flush: every other public method must carry @flushes. eigh, svd and eig are the interface's host
#: defaults, which reach the device only through to_host and the copies (which flush);
#: fused_attention only answers a question; discard edits the pending group itself; the tracing
#: methods flush themselves.
_NO_FLUSH = {"unary", "binary", "allocate", "device", "device_count", "get_device_properties",
             "memory_stats", "is_pinned", "pin_memory", "set_memory_fraction", "eigh", "svd", "eig",
             "fused_attention", "discard", "begin_trace", "end_trace"}


def test_every_public_method_but_a_few_flushes_first(be):
    # @flushes is opt-in: a new method that touches the device must not silently skip the flush
    from portagrad.backends.opencl.fusion import flushes

    wrapper = flushes(lambda self: None).__code__  # every decorated method runs this code
    cls = type(be)
    public = [n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))]
    flushing = {n for n in public if getattr(getattr(cls, n), "__code__", None) is wrapper}
    assert flushing == set(public) - _NO_FLUSH
    # and what the decorator does: a pending group is flushed before the method runs
    a = _rand(100, seed=60)
    y = a * 2.0
    assert be._fz.nodes
    be.event_query(be.record_event(0))
    assert not be._fz.nodes
    np.testing.assert_array_equal(y.cpu().numpy(), a.cpu().numpy() * np.float32(2))


def test_fusion_can_be_turned_off(opencl_devices):
    code = ("import portagrad as pg\nfrom portagrad.plugins.manager import get_backend\n"
            "a = pg.ones(10, device='opencl:0')\nprint((a * 2 + 1).sum().item(), get_backend('opencl')._fz)")
    env = dict(os.environ, PORTAGRAD_OPENCL_FUSION="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["30.0", "None"]


def test_fused_source_loads_before_it_stores():
    from portagrad.backends.opencl.fusion_kernels import fused_source

    src = fused_source("float32", "g", [("mul", (-1, ("s", 0)), -1), ("add", (0, -2), 0)], 1, 2, 1)
    body = src[src.index("pg_fused"):]
    assert body.index("(L1 + l1)[j]") < body.index("(O0 + o0)[j] = v1")
    assert "v0 = a * b" in body
    # the streaming variant: vector loads, non-temporal vector stores, then a scalar tail
    src = fused_source("float32", "cl", [("mul", (-1, ("s", 0)), -1), ("add", (0, -2), 0)], 1, 2, 1,
                       stream=True)
    body = src[src.index("pg_fused"):]
    assert "(float16)(s0)" in body and "__builtin_nontemporal_store(v1" in body
    assert body.index("__builtin_nontemporal_store") < body.index("for (long j = jv; j < j1; ++j)")


def test_a_declined_primitive_leaves_no_state_behind(be, no_gc):
    # the first operand registers as an input, the second (strided) makes the primitive decline:
    # nothing of it may stay in the (empty) group, or later primitives would see stale buffers
    a = _rand(6, 4, seed=23)
    strided = _rand(4, 6, seed=24).t()
    got = (a * strided).cpu().numpy()
    np.testing.assert_array_equal(got, a.cpu().numpy() * strided.cpu().numpy())
    fz = be._fz
    assert not fz.nodes and not fz._leaves and not fz._leaf_off and not fz._scalars
    launches = fz.launches
    y = a * 2.0 + 1.0
    assert len(fz.nodes) == 2
    y.cpu()
    assert fz.launches == launches + 1


def _stream_plans(be):
    return sum(1 for sig in be._fz._plans if sig[3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_streaming_vector_path_is_bit_identical(be, dtype, monkeypatch):
    # plain arithmetic on large arrays runs as 64-byte vectors with non-temporal stores on PoCL;
    # the threshold is lowered so that small arrays take it too: vector body, scalar tail (sizes
    # not a multiple of the width), scalars, in-place outputs, and misaligned offsets (which must
    # fall back to the scalar loop)
    from portagrad.backends.opencl import fusion

    dev = be.device(0)
    if dtype == np.float64 and not dev.fp64:
        pytest.skip("opencl:0 has no cl_khr_fp64")
    monkeypatch.setattr(fusion, "STREAM_MIN", 64)
    before = _stream_plans(be)
    for n in (64, 1000, 4099):
        a, b, c = (_rand(n + 1, seed=30 + i, dtype=dtype) for i in range(3))

        def arith():
            y = (a * b + c) / (b - 1.5) * 2.0  # noqa: B023 - arith() runs within this iteration
            return [y, -y + a, a[1:] * 3.0 - c[1:]]  # noqa: B023 - as above; a[1:]: offset 1, not vector-aligned

        got, ref = _both(be, arith)
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g, r)
        # in place, through the backend as the optimizers do: out aliases a leaf
        x = _rand(n, seed=40, dtype=dtype)
        old = x.cpu().numpy()
        be.binary("mul", x._v, 0.5, x._v)
        be.binary("add", x._v, b[:n]._v, x._v)
        np.testing.assert_array_equal(x.cpu().numpy(), old * dtype(0.5) + b.cpu().numpy()[:n])
    if dev.ew_style == "loop" and dev.is_pocl:
        assert _stream_plans(be) > before  # the vector path really ran


def test_streaming_at_full_size(be):
    from portagrad.backends.opencl.fusion import STREAM_MIN

    n = STREAM_MIN + 37
    a, b, c = (_rand(n, seed=50 + i) for i in range(3))
    got, ref = _both(be, lambda: a * b + c)
    np.testing.assert_array_equal(got, ref)


def test_a_read_waits_for_a_flush_another_thread_is_enqueueing(be, monkeypatch):
    # a flush empties the group before it enqueues the group's kernels: a thread that finds the
    # group empty in that window must wait for the kernels, not read the buffer ahead of them
    import threading

    x = _rand(4096, seed=7)
    expect = x.cpu().numpy() * np.float32(3.0) + np.float32(1.0)
    fz = be._fz
    launch = fz._launch
    emptied = threading.Event()

    def slow_launch(*args, **kwargs):
        emptied.set()  # the group is empty now, its kernels not yet enqueued
        threading.Event().wait(0.3)
        return launch(*args, **kwargs)

    monkeypatch.setattr(fz, "_launch", slow_launch)
    y = x * 3.0 + 1.0  # recorded, pending
    flusher = threading.Thread(target=fz.flush)
    flusher.start()
    assert emptied.wait(30)
    got = y.cpu().numpy()  # enqueued while the other thread is half-way through its flush
    flusher.join(30)
    np.testing.assert_array_equal(got, expect)


def test_threads_sharing_the_backend_get_their_own_results(be):
    # one pending group serves every thread: recording is serialised, and each thread's chains
    # must come out as if it ran alone
    import threading

    xs = [_rand(3000, seed=60 + i) for i in range(4)]

    def chain(x):
        y = x
        for _ in range(60):
            y = y * 1.0001 + 0.25
            y = y - x * 0.001
        return y

    with unfused(be):
        ref = [chain(x).cpu().numpy() for x in xs]
    got: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(i):
        try:
            got[i] = chain(xs[i]).cpu().numpy()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, in the middle of recordings too
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    for i in range(4):
        np.testing.assert_array_equal(got[i], ref[i])
