"""Threads sharing a device: several models trained at once, data loading and evaluation beside them.

PyTorch users run training, data-loading, evaluation and serving threads in one process; on a
device every thread shares the backend's caches, allocator, queue and (OpenCL) fusion group. Each
thread's results must be exactly those of the same work run alone: the stress tests compare every
step's loss and every gradient, bit for bit, with a serial run. The Python interpreter's switch
interval is lowered to a microsecond while they run, so that threads interleave between almost any
two bytecodes instead of every 5 ms (the default, which hides most races).

The OpenCL-only tests below pin the individual races deterministically (the stress tests only
make them likely): every kernel launch holds its device's launch lock, a flush does not drop a node
another thread recorded while it waited for the group, and a flush never writes memory that a
dying output buffer has already given back to the allocator.

Joins use long timeouts: they detect a hang (a deadlock), not slowness.
"""
from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad import nn
from portagrad._memory import pinning_available
from portagrad.backends.interface import View

HANG_S = 300  # a join that takes longer is a deadlock, not a slow machine


@contextlib.contextmanager
def fine_switching() -> Iterator[None]:
    """Threads switch every microsecond inside the block (the default interval is 5 ms)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run_threads(targets: list[Callable[[], None]]) -> None:
    """Run each target in its own thread; re-raise the first exception any of them raised."""
    errors: list[BaseException] = []

    def guard(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # handed to the test's thread below
                errors.append(exc)
        return run

    threads = [threading.Thread(target=guard(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=HANG_S)
    assert not any(t.is_alive() for t in threads), "a thread hung (deadlock?)"
    if errors:
        raise errors[0]


class SmallCNN(nn.Module):
    """Convolution, batch norm, max pooling and a linear layer: the OpenCL conv, norm, pool, GEMM
    and reduction kernels, beside the fused elementwise ones."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x: pg.Tensor) -> pg.Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.reshape(x.shape[0], -1))


def make_job(seed: int, device: str) -> tuple[nn.Module, pg.Tensor, pg.Tensor]:
    """Model ``seed`` (an MLP for odd seeds, a small CNN for even ones), its inputs and targets."""
    pg.manual_seed(seed)
    if seed % 2:
        model: nn.Module = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        x = pg.randn(16, 8)
    else:
        model = SmallCNN()
        x = pg.randn(16, 1, 8, 8)
    return model.to(device), x.to(device), pg.randint(0, 3, (16,)).to(device)


def train(job: tuple[nn.Module, pg.Tensor, pg.Tensor], steps: int) -> list[tuple[float, list[bytes]]]:
    """``steps`` SGD steps with momentum; per step the loss and the bytes of every gradient."""
    model, x, y = job
    opt = pg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        out.append((loss.item(), [p.grad.cpu().numpy().tobytes() for p in model.parameters()]))
    return out


def train_alone_and_together(device: str, n: int, steps: int,
                             beside: list[Callable[[], None]] = ()) -> None:
    """Train ``n`` jobs one after the other, then the same jobs (rebuilt) in ``n`` threads at once
    with the ``beside`` targets running too, and require identical steps."""
    alone = [train(make_job(s, device), steps) for s in range(n)]
    jobs = [make_job(s, device) for s in range(n)]
    together: list[Any] = [None] * n

    def trainer(s: int) -> Callable[[], None]:
        def run() -> None:
            together[s] = train(jobs[s], steps)
        return run

    with fine_switching():
        run_threads([trainer(s) for s in range(n)] + list(beside))
    for s in range(n):
        assert len(together[s]) == steps
        for step, (got, want) in enumerate(zip(together[s], alone[s])):
            assert got[0] == want[0], f"thread {s}, step {step}: loss {got[0]} != {want[0]} alone"
            for k, (g, w) in enumerate(zip(got[1], want[1])):
                assert g == w, f"thread {s}, step {step}: gradient {k} differs from the run alone"


def test_threads_train_as_if_alone(device: str) -> None:
    train_alone_and_together(device, n=8, steps=24)


def test_loading_and_evaluation_beside_training(device: str) -> None:
    # a "data loading" thread copies batches host->device (pinned and non-blocking when pinning
    # is available) and reads them back; an "evaluation" thread runs a frozen model under no_grad;
    # on OpenCL a third one reads the memory statistics. Each checks its own results exactly.
    pin = pinning_available()
    rounds = 60
    pg.manual_seed(99)
    frozen = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device).eval()
    ex = pg.randn(32, 8).to(device)
    with pg.no_grad():
        want_eval = frozen(ex).cpu().numpy()

    def loader() -> None:
        rng = np.random.default_rng(0)
        for i in range(rounds):
            a = rng.standard_normal((64, 33)).astype(np.float32)
            t = pg.from_numpy(a)
            if pin and i % 2:
                t = t.pin_memory()
            d = t.to(device, non_blocking=bool(i % 2))
            back = (d * 2.0).to("cpu").numpy()
            np.testing.assert_array_equal(back, a * np.float32(2), err_msg=f"loader round {i}")

    def evaluator() -> None:
        for i in range(rounds):
            with pg.no_grad():
                got = frozen(ex).cpu().numpy()
            np.testing.assert_array_equal(got, want_eval, err_msg=f"evaluation round {i}")

    def stats() -> None:
        for _ in range(rounds):
            s = pg.opencl.memory_stats()
            assert s["allocated"] >= 0 and s["cached"] >= 0 and s["reserved"] >= s["cached"], s

    beside = [loader, evaluator] + ([stats] if pg.device(device).type == "opencl" else [])
    train_alone_and_together(device, n=6, steps=16, beside=beside)


# ------------------------------------------------------------- the allocation epoch is per thread
def test_other_threads_allocations_are_not_a_backward_runs_own(device: str) -> None:
    # the engine lets a leaf's .grad take over memory allocated during its run (the run's epoch);
    # a tensor another thread allocates meanwhile (a data-loading thread's batch) is not such memory
    from portagrad import _raw

    x = pg.ones(2, device=device)
    epoch, prev = _raw.open_epoch()
    try:
        mine = _raw.new_on(x._storage, (2,), pg.float32)
        theirs: list[pg.Tensor] = []
        run_threads([lambda: theirs.append(_raw.new_on(x._storage, (2,), pg.float32))])
    finally:
        _raw.close_epoch(prev)
    assert _raw.owned(mine, epoch)
    assert not _raw.owned(theirs[0], epoch)


def test_overlapping_backward_runs_leave_no_epoch_open(device: str) -> None:
    # run A opens, run B (another thread) opens, A closes, B closes: afterwards no allocation may
    # carry A's epoch (with one process-wide epoch, B's close restored A's)
    from portagrad import _raw

    x = pg.ones(2, device=device)
    step = threading.Barrier(2, timeout=HANG_S)
    opened: dict[str, int] = {}

    def run_a() -> None:
        opened["a"], prev = _raw.open_epoch()
        step.wait()  # A open
        step.wait()  # B open
        _raw.close_epoch(prev)
        step.wait()  # A closed

    def run_b() -> None:
        step.wait()
        opened["b"], prev = _raw.open_epoch()
        step.wait()
        step.wait()
        _raw.close_epoch(prev)

    run_threads([run_a, run_b])
    later = _raw.new_on(x._storage, (2,), pg.float32)
    assert not _raw.owned(later, opened["a"]) and not _raw.owned(later, opened["b"])


# ---------------------------------------------------------------- OpenCL: each race on its own
@pytest.fixture
def be(opencl_devices: list[str]) -> Any:
    b = pg.zeros(1, device=opencl_devices[0])._storage.backend  # the instance tensors use
    pg.opencl.synchronize()
    return b


@pytest.fixture
def fuser(be: Any) -> Any:
    if be._fz is None:
        pytest.skip("fusion is off in this process (PORTAGRAD_OPENCL_FUSION=0)")
    gc.collect()
    gc.disable()  # a finalizer running half-way would flush the group at the wrong moment
    try:
        yield be._fz
    finally:
        gc.enable()


def test_every_kernel_launch_holds_its_device_lock(be: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # pyopencl sets a kernel object's arguments, then enqueues it: two threads launching one
    # cached kernel object interleave unless both steps happen under one lock
    import pyopencl as cl

    locks = [d.launch_lock for d in be._devices]
    unlocked: list[str] = []
    call = cl.Kernel.__call__

    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not any(lock._is_owned() for lock in locks):
            unlocked.append(self.function_name)
        return call(self, *args, **kwargs)

    monkeypatch.setattr(cl.Kernel, "__call__", checked)
    jobs = [make_job(s, "opencl:0") for s in (1, 2)]  # an MLP and a CNN: most kernel families
    for job in jobs:
        train(job, 2)
    x = pg.randn(5, 7).to("opencl:0")
    x.sort(dim=1)
    x.cumsum(1)
    x.argmax(1)
    x[:, ::2].exp().cpu()
    pg.opencl.synchronize()
    assert not unlocked, f"kernels launched without their device's launch lock: {sorted(set(unlocked))}"


def _stale_buffer(be: Any, n: int, value: float) -> None:
    """Leave a buffer of ``n`` float32 holding ``value`` on top of the allocator's cache (the cache
    hands out the buffer freed last first), so the next allocation of that size gets it."""
    t = pg.full((n,), value, device="opencl:0")
    t.cpu()
    del t


def test_flush_keeps_a_node_recorded_while_it_waited(fuser: Any, be: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Thread A records ``y = a * 2`` and is stopped after registering its input, before appending
    # its node; thread B's flush() then sees no node but a registered input and waits for the lock
    # to reset the group. It must not reset it once A's node is in: y would never be computed.
    from portagrad.backends.opencl import fusion

    n = 1024
    a = pg.ones(n, device="opencl:0")
    _stale_buffer(be, n, 5.0)
    recorder_waits = threading.Event()
    flusher_waiting = threading.Event()
    out: list[pg.Tensor] = []

    def record() -> None:
        out.append(a * 2.0)

    def flush() -> None:
        assert recorder_waits.wait(HANG_S)
        fuser.flush()

    recorder = threading.Thread(target=record, daemon=True)
    flusher = threading.Thread(target=flush, daemon=True)

    class SlowNode(fusion._Node):
        __slots__ = ()

        def __init__(self, *args: Any) -> None:
            if threading.current_thread() is recorder:
                recorder_waits.set()
                assert flusher_waiting.wait(HANG_S)
            super().__init__(*args)

    class SpyLock:
        """The fuser's lock, telling when the flushing thread starts waiting for it."""

        def __init__(self, lock: Any) -> None:
            self.lock = lock

        def __enter__(self) -> None:
            if threading.current_thread() is not recorder:
                flusher_waiting.set()
            self.lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self.lock.release()

    monkeypatch.setattr(fusion, "_Node", SlowNode)
    monkeypatch.setattr(fuser, "_lock", SpyLock(fuser._lock))
    recorder.start()
    flusher.start()
    recorder.join(HANG_S)
    flusher.join(HANG_S)
    assert not recorder.is_alive() and not flusher.is_alive(), "a thread hung (deadlock?)"
    monkeypatch.undo()
    np.testing.assert_array_equal(out[0].cpu().numpy(), np.full(n, 2.0, np.float32))


def test_flush_never_writes_memory_a_dying_output_gave_back(fuser: Any, be: Any) -> None:
    # CPython runs a buffer's __del__ (which gives its memory back to the allocator's cache) before
    # it clears the weak references to it, and the fuser refers to its outputs weakly: a flush in
    # another thread during that __del__ gets the dying buffer back. It must not write it then:
    # the memory is already in the cache (another tensor's next, or released by empty_cache()).
    n = 1024
    a = pg.ones(n, device="opencl:0")
    _stale_buffer(be, n, 5.0)
    y = a * 2.0  # pending: the fuser holds y's buffer weakly; y's buffer is the stale one
    assert fuser.pending
    buf = y._storage.buffer
    seen: list[np.ndarray] = []
    release = buf._release

    def release_then_flush_elsewhere(*args: Any) -> None:
        release(*args)  # the memory is back in the cache; __del__ has not returned yet
        t = threading.Thread(target=fuser.flush, daemon=True)
        t.start()
        t.join(HANG_S)
        assert not t.is_alive(), "the flush hung (deadlock?)"
        # the cache hands this memory out next: read what it holds now, without writing it
        nxt = be.allocate(0, n * 4)
        seen.append(be.to_host(View(nxt, 0, (n,), (1,), pg.float32)))

    buf._release = release_then_flush_elsewhere
    del buf
    del y  # y's buffer dies here, in this thread
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], np.full(n, 5.0, np.float32),
                                  err_msg="a flush wrote into memory the allocator already had back")
