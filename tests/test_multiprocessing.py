"""Tensors across processes: shared memory for Hogwild, values otherwise."""
from __future__ import annotations

import gc
import os
import pickle
import selectors
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import portagrad as pg
import portagrad.multiprocessing as mp


def _hogwild_worker(w: pg.Tensor, rank: int) -> None:
    # each worker adds into the shared tensor in place: the parent sees it
    with pg.no_grad():
        w[rank].add_(rank + 1)


def _echo_worker(q_in: mp.Queue, q_out: mp.Queue) -> None:
    t = q_in.get()
    q_out.put((t * 2).detach())


def test_share_memory_hogwild() -> None:
    w = pg.zeros(4, 3).share_memory_()
    assert w.is_shared()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_hogwild_worker, args=(w, r)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    np.testing.assert_array_equal(w.numpy()[:, 0], [1, 2, 0, 0])


def test_queue_by_value_roundtrip() -> None:
    ctx = mp.get_context("spawn")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_echo_worker, args=(q_in, q_out))
    p.start()
    x = pg.arange(6, dtype=pg.float32).reshape(2, 3)
    q_in.put(x)
    y = q_out.get(timeout=60)
    p.join(60)
    np.testing.assert_array_equal(y.numpy(), x.numpy() * 2)


def test_pickle_by_value_keeps_metadata(device: str) -> None:
    x = pg.randn(3, device=device, requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert y.requires_grad and y.device == x.device and y.dtype is x.dtype
    np.testing.assert_array_equal(y.detach().cpu().numpy(), x.detach().cpu().numpy())


def test_non_leaf_refused() -> None:
    """Sent to another process a non-leaf that requires grad is refused (its graph cannot go
    along); pickled by value it loads as a leaf that requires grad, as PyTorch's."""
    import io
    from multiprocessing.reduction import ForkingPickler

    x = pg.randn(3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="non-leaf tensor which requires_grad"):
        ForkingPickler(io.BytesIO()).dump(x)
    y = pickle.loads(pickle.dumps(x))
    assert y.requires_grad and y.is_leaf and y.grad_fn is None
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy())


# ------------------------------------------------------------- shared blocks: ownership, leaks
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SHM_DIR = "/dev/shm"
needs_dev_shm = pytest.mark.skipif(not os.path.isdir(_SHM_DIR) or os.name != "posix",
                                   reason="POSIX shared memory listed in /dev/shm")


def _script(tmp_path, body: str) -> subprocess.Popen[str]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    env = dict(os.environ, PYTHONPATH=_REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=str(tmp_path), text=True)


def _finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=30)
        raise AssertionError(f"timed out; stdout={out!r} stderr={err!r}") from None


def _readline(proc: subprocess.Popen[str], timeout: float = 120) -> str:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
    try:
        if not sel.select(timeout):
            proc.kill()
            raise AssertionError(f"no output in {timeout}s: {proc.communicate(timeout=30)!r}")
    finally:
        sel.close()
    assert proc.stdout is not None
    return proc.stdout.readline()


def _gone(names: list[str], timeout: float = 30) -> list[str]:
    """The blocks of ``names`` still in /dev/shm after waiting up to ``timeout`` seconds (the
    resource tracker, a separate process, unlinks them asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [n for n in names if os.path.exists(os.path.join(_SHM_DIR, n))]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _assert_clean(err: str) -> None:
    assert "Traceback" not in err and "KeyError" not in err, err


_SEND_SCRIPT = """
    import gc, os, sys
    import portagrad as pg
    import portagrad.multiprocessing as mp

    def child(q, out):
        t = q.get(timeout=60)
        t.add_(1)
        out.put(float(t.sum()))

    if __name__ == "__main__":
        ctx = mp.get_context(sys.argv[1] if len(sys.argv) > 1 else "{method}")
        q, out = ctx.Queue(), ctx.Queue()
        t = pg.ones(4).share_memory_()
        name = mp.reductions._SHM[id(t._storage)]
        p = ctx.Process(target=child, args=(q, out))
        p.start()
        q.put(t)
        print(out.get(timeout=60), t.tolist(), flush=True)
        p.join(60)
        print(p.exitcode, name, flush=True)
"""


@needs_dev_shm
@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_receivers_leave_the_owners_block_alone(tmp_path, method):
    """A receiver used to unregister the sender's block from the resource tracker they share:
    the tracker printed KeyError tracebacks when the owner unlinked it."""
    if method not in mp.get_all_start_methods():
        pytest.skip(f"no {method} start method")
    out, err = _finish(_script(tmp_path, _SEND_SCRIPT.format(method=method)))
    _assert_clean(err)
    got, end = out.strip().splitlines()
    assert got == "8.0 [2.0, 2.0, 2.0, 2.0]"
    code, name = end.split()
    assert code == "0" and name.startswith(mp.SHM_PREFIX)
    assert _gone([name]) == []


def test_block_freed_before_receipt_is_a_clear_error():
    a, b = mp.Pipe()
    try:
        t = pg.arange(4.0).share_memory_()
        name = mp.reductions._SHM[id(t._storage)]
        a.send(t)  # pickled now: only the handle is in the pipe
        del t
        gc.collect()
        with pytest.raises(mp.SharedBlockFreedError, match=f"{name}.*sending process freed"):
            b.recv()
        t2 = pg.arange(4.0).share_memory_()
        a.send(t2)
        assert b.recv().tolist() == [0.0, 1.0, 2.0, 3.0]  # the pipe still works
    finally:
        a.close()
        b.close()
    assert issubclass(mp.SharedBlockFreedError, RuntimeError)


_OWNER_SCRIPT = """
    import time
    import portagrad as pg
    import portagrad.multiprocessing as mp

    keep = [pg.ones(1000).share_memory_(), pg.zeros(3, 3).share_memory_()]
    model = pg.nn.Linear(4, 2)
    model.share_memory()
    print(" ".join(mp.reductions._SHM.values()), flush=True)
    time.sleep(600)
"""


@needs_dev_shm
def test_killed_owner_leaves_no_block(tmp_path):
    proc = _script(tmp_path, _OWNER_SCRIPT)
    try:
        names = _readline(proc).split()
    finally:
        proc.send_signal(signal.SIGKILL)
        _, err = _finish(proc)
    assert len(names) >= 3 and all(n.startswith(f"{mp.SHM_PREFIX}{proc.pid}_") for n in names)
    assert _gone(names) == []
    _assert_clean(err)


_KILLED_CHILD_SCRIPT = """
    import sys, time
    import portagrad as pg
    import portagrad.multiprocessing as mp

    def child(q):
        t = pg.full((100,), 3.0).share_memory_()
        q.put((t, list(mp.reductions._SHM.values())))
        time.sleep(600)

    if __name__ == "__main__":
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        t, names = q.get(timeout=60)
        p.kill()
        p.join(60)
        print(float(t.sum()), p.exitcode, " ".join(names), flush=True)
"""


@needs_dev_shm
def test_killed_child_leaves_no_block_after_a_receiver_mapped_it(tmp_path):
    """The parent maps a block of a child that is then SIGKILLed; the child shares the parent's
    resource tracker, which unlinks the block when the parent exits -- unless a receiver had
    unregistered it, as receivers used to."""
    out, err = _finish(_script(tmp_path, _KILLED_CHILD_SCRIPT))
    total, code, *names = out.split()
    assert total == "300.0" and code == str(-signal.SIGKILL) and names
    assert _gone(names) == []
    _assert_clean(err)


def test_share_memory_refuses_device_tensors(device: str) -> None:
    # Hogwild on a device must fail loudly: a device tensor would be copied on every send, so a
    # child's updates would never reach the parent
    model = pg.nn.Linear(3, 2).to(device)
    x = pg.ones(4, device=device)
    if pg.device(device).type == "cpu":
        assert x.share_memory_() is x and x.is_shared()
        assert model.share_memory() is model
        assert all(p.is_shared() for p in model.parameters())
        return
    with pytest.raises(RuntimeError, match=f"cannot share a tensor on device '{device}'"):
        x.share_memory_()
    assert not x.is_shared()
    with pytest.raises(RuntimeError, match="no inter-process memory handles"):
        model.share_memory()
    assert not any(p.is_shared() for p in model.parameters())


def _spawned(rank: int, w: pg.Tensor, fail_rank: int) -> None:
    if rank == fail_rank:
        raise ValueError(f"rank {rank} failed")
    w[rank] += rank + 1  # shared memory: seen by the parent


def _exits(rank: int) -> None:
    os._exit(3 if rank == 1 else 0)


def test_spawn_runs_fn_per_rank_and_reports_failures() -> None:
    w = pg.zeros(2).share_memory_()
    assert pg.multiprocessing.spawn(_spawned, args=(w, -1), nprocs=2) is None
    assert w.tolist() == [1.0, 2.0]
    ctx = pg.multiprocessing.start_processes(_spawned, args=(w, 1), nprocs=2, join=False,
                                             start_method="fork")
    assert isinstance(ctx, pg.multiprocessing.ProcessContext) and len(ctx.pids()) == 2
    with pytest.raises(pg.multiprocessing.ProcessRaisedException,
                       match="(?s)Process 1 terminated with the following error.*"
                             "ValueError: rank 1 failed") as info:
        while not ctx.join():
            pass
    assert info.value.error_index == 1
    # fork is enough for a child that touches no device (and much faster to start)
    with pytest.raises(pg.multiprocessing.ProcessExitedException,
                       match="process 1 terminated with exit code 3") as exited:
        pg.multiprocessing.start_processes(_exits, nprocs=2, start_method="fork")
    assert exited.value.exit_code == 3
