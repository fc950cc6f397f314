"""The parts of distributed training that need no second process: DistributedSampler, the
autograd hooks DDP is built on, argument errors before any communication, the launcher's command."""
from __future__ import annotations

import sys

import pytest

import portagrad as pg
import portagrad.distributed as dist
from portagrad.autograd.engine import queue_callback
from portagrad.distributed import run
from portagrad.utils.data import DistributedSampler


# ------------------------------------------------------------------ sampler
@pytest.mark.parametrize("n, replicas", [(10, 3), (12, 4), (7, 2), (2, 5)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_sampler_covers_the_dataset_once_per_epoch(n, replicas, shuffle):
    for epoch in range(2):
        shards = []
        for r in range(replicas):
            s = DistributedSampler(range(n), replicas, r, shuffle=shuffle, seed=5)
            s.set_epoch(epoch)
            shards.append(list(s))
            assert len(s) == len(shards[-1]) == -(-n // replicas)
        flat = [i for shard in shards for i in shard]
        assert sorted(set(flat)) == list(range(n))  # every index at least once ...
        pad = replicas * -(-n // replicas) - n
        assert len(flat) == n + pad  # ... and only the padding twice


def test_sampler_order_and_padding_as_pytorch():
    # PyTorch's values for range(10), 3 replicas, no shuffle: padded with the first 2 indices
    assert [list(DistributedSampler(range(10), 3, r, shuffle=False)) for r in range(3)] == [
        [0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    # drop_last drops the uneven tail instead
    assert [list(DistributedSampler(range(10), 3, r, shuffle=False, drop_last=True))
            for r in range(3)] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]


def test_sampler_shuffles_by_seed_and_epoch():
    a = DistributedSampler(range(50), 2, 0, seed=1)
    b = DistributedSampler(range(50), 2, 0, seed=1)
    assert list(a) == list(b)  # the same permutation on every rank
    first = list(a)
    a.set_epoch(1)
    b.set_epoch(1)
    assert list(a) != first and list(a) == list(b)
    assert list(DistributedSampler(range(50), 2, 0, seed=2)) != first


def test_sampler_lengths_match_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TS

    for n, k, drop in [(10, 3, False), (10, 3, True), (11, 4, True), (3, 5, False)]:
        for r in range(k):
            mine = DistributedSampler(range(n), k, r, shuffle=False, drop_last=drop)
            theirs = TS(range(n), k, r, shuffle=False, drop_last=drop)
            assert list(mine) == list(theirs) and len(mine) == len(theirs)
    del torch


def test_sampler_rejects_a_bad_rank():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), 3, 3)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), 3, -1)


# ------------------------------------------------------------ autograd hooks
def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    w = pg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (w * 3).sum().backward()
    (w * 3).sum().backward()
    assert seen == [[3.0, 3.0], [6.0, 6.0]]  # after accumulation, once per backward
    h.remove()
    (w * 3).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_grad_hook_errors_as_pytorch():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        pg.ones(2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="cannot be registered on non-leaf tensors"):
        (pg.ones(2, requires_grad=True) * 2).register_post_accumulate_grad_hook(print)


def test_queue_callback_runs_once_at_the_end_of_backward():
    a = pg.ones(2, requires_grad=True)
    b = pg.ones(2, requires_grad=True)
    log = []

    def hook(p):
        log.append("hook")
        if len(log) == 1:
            queue_callback(lambda: log.append(("end", a.grad is not None and b.grad is not None)))

    a.register_post_accumulate_grad_hook(hook)
    b.register_post_accumulate_grad_hook(hook)
    (a * b).sum().backward()
    assert log == ["hook", "hook", ("end", True)]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward"):
        queue_callback(lambda: None)


# ------------------------------------------------------------ API, no MPI needed
def test_uninitialized_and_bad_arguments():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="Invalid backend: 'nccl2'"):
        dist.init_process_group("nccl2")
    with pytest.raises(ValueError, match="init_method 'udp://x:1' is not supported"):
        dist.init_process_group(init_method="udp://x:1")
    with pytest.raises(TypeError, match="timedelta"):
        dist.init_process_group(timeout=5)
    assert [op.name for op in dist.ReduceOp][:5] == ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
    with pytest.raises(TypeError, match="must be a portagrad Tensor"):
        dist.all_reduce([1.0])


def test_launcher_command():
    cmd = run.build_command(["--nproc-per-node", "2", "--nnodes", "2", "--hostfile", "hosts",
                             "--mpiexec", "mpiexec", "train.py", "--lr", "1"])
    assert cmd == ["mpiexec", "-n", "4", "-f", "hosts", "-ppn", "2", sys.executable, "-m",
                   "portagrad.distributed.run", "--_rank", "auto", "train.py", "--lr", "1"]
    cmd = run.build_command(["--nproc-per-node", "3", "--mpiexec", "mpiexec", "-m", "portagrad",
                             "demo"])
    assert cmd[:3] == ["mpiexec", "-n", "3"] and cmd[-3:] == ["-m", "portagrad", "demo"]
    with pytest.raises(SystemExit, match="needs --hostfile"):
        run.build_command(["--nnodes", "2", "x.py"])
