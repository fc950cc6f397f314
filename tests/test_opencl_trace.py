"""The OpenCL backend's traces (``begin_trace``/``end_trace``, what a captured step's replays
enqueue): the same work again on the buffers' current contents, the memory the traced calls
used for themselves kept by the trace and by nothing else, refusals."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.interface import View

pytestmark = pytest.mark.usefixtures("opencl_devices")

DEV = "opencl:0"
F32 = pg.float32


@pytest.fixture
def be(opencl_devices):
    b = pg.zeros(1, device=DEV)._storage.backend
    pg.opencl.synchronize()
    return b


def _view(be, arr: np.ndarray) -> View:
    arr = np.ascontiguousarray(arr, np.float32)
    v = View(be.allocate(0, arr.nbytes), 0, arr.shape,
             tuple(s // 4 for s in arr.strides), F32)
    be.from_host(v, arr)
    return v


def test_a_trace_repeats_in_place_updates(be):
    x = _view(be, np.arange(6, dtype=np.float32))
    token = be.begin_trace()
    be.binary("add", x, 1.0, x)  # fused (pending until the trace ends)
    be.binary("mul", x, 2.0, x)
    trace = be.end_trace(token)
    assert trace is not None and trace.calls
    for _ in range(2):
        trace.run()
    want = np.arange(6, dtype=np.float32)
    for _ in range(3):
        want = (want + 1) * 2
    np.testing.assert_array_equal(be.to_host(x), want)


def test_scratch_memory_is_the_traces_alone(be, monkeypatch):
    # the packed GEMM packs its operands into buffers it allocates: a traced product keeps
    # them, and the allocator hands that memory to nobody else while the trace lives
    monkeypatch.setattr(be, "_force_gemm_kind", "packed")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 33, 40)), rng.standard_normal((2, 40, 17))
    av, bv = _view(be, a), _view(be, b)
    out = _view(be, np.zeros((2, 33, 17)))
    alloc = be.device(0).allocator
    token = be.begin_trace()
    be.matmul(av, bv, out)
    be.matmul(av, bv, out)  # the second product's packs may reuse the first's memory
    trace = be.end_trace(token)
    assert trace is not None and trace.keep
    kept = {id(buf.mem) for buf in trace.keep}
    assert len(kept) == len(trace.keep)
    # (the cache holds none of it: allocations of every size class kept get other memory)
    fresh = [alloc.allocate(buf.size) for buf in trace.keep]
    assert not kept & {id(f.mem) for f in fresh}
    be.from_host(av, np.ascontiguousarray(2 * a, np.float32))
    trace.run()
    np.testing.assert_allclose(be.to_host(out), (2 * a) @ b, rtol=1e-5, atol=1e-4)


def test_the_memory_goes_back_with_the_trace(be, monkeypatch):
    monkeypatch.setattr(be, "_force_gemm_kind", "packed")
    av, bv = _view(be, np.ones((1, 30, 20))), _view(be, np.ones((1, 20, 10)))
    out = _view(be, np.zeros((1, 30, 10)))
    alloc = be.device(0).allocator
    token = be.begin_trace()
    be.matmul(av, bv, out)
    trace = be.end_trace(token)
    assert trace is not None and trace.keep
    held = alloc.stats()["allocated"]
    size = sum(buf.size for buf in trace.keep)
    del trace, token  # (the token is the tracer, which names its trace)
    assert alloc.stats()["allocated"] == held - size


def test_a_run_that_reads_the_host_is_not_traced(be):
    x = _view(be, np.ones(4))
    token = be.begin_trace()
    be.binary("add", x, 1.0, x)
    be.to_host(x)
    assert be.end_trace(token) is None
    np.testing.assert_array_equal(be.to_host(x), np.full(4, 2, np.float32))  # it did run
