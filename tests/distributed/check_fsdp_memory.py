"""Run under ``mpiexec -n N``: with a per-rank memory cap smaller than the model's parameters plus
its Adam state (``set_per_process_memory_fraction``), ``fully_shard`` on N ranks trains (2
steps), while one process training the model unsharded runs out of memory. Eight blocks, each a
unit and run under activation checkpointing, so that backward re-gathers one block at a time
(its forward pre-hook runs again in the recomputation). Prints each rank's peak allocated bytes.
Arguments: the device kind (``opencl``: ``opencl:{rank % count}``, a backend with a memory cap)
and ``fsdp`` or ``plain``."""
from __future__ import annotations

import sys

import portagrad as pg
import portagrad.distributed as dist
from portagrad import nn, optim
from portagrad.distributed.fsdp import fully_shard
from portagrad.utils.checkpoint import checkpoint

WIDTH, DEPTH = 384, 8
CAP = 13 << 20  # bytes per rank: parameters + Adam state take 14.2 MiB


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(WIDTH, WIDTH) for _ in range(DEPTH)])
        self.head = nn.Linear(WIDTH, 10)

    def forward(self, x: pg.Tensor) -> pg.Tensor:
        for b in self.blocks:
            x = checkpoint(lambda h, b=b: pg.tanh(b(h)), x, use_reentrant=False)
        return self.head(x)


def main() -> int:
    kind, mode = sys.argv[1:3]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"opencl:{rank % pg.opencl.device_count()}" if kind.startswith("opencl") else kind
    total = pg.opencl.get_device_properties(dev).total_memory
    pg.opencl.set_per_process_memory_fraction(CAP / total, dev)
    pg.manual_seed(0)
    model = Net().to(dev)
    n = sum(p.numel() * 4 for p in model.parameters())
    assert 3 * n > CAP, "parameters + Adam state must exceed the cap"
    if mode == "fsdp":
        for b in model.blocks:
            fully_shard(b)
        fully_shard(model)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x = pg.randn(16, WIDTH, device=dev)
    y = pg.randint(0, 10, (16,), device=dev)
    try:
        for _ in range(2):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    except pg.OutOfMemoryError as exc:
        print(f"[rank {rank}] OutOfMemoryError: {str(exc)[:200]}")
        return 0 if mode == "plain" else 1
    if mode == "plain":
        raise AssertionError("the unsharded model trained within the cap")
    peak = pg.opencl.max_memory_allocated(dev)
    peaks: list = [None] * world
    dist.all_gather_object(peaks, peak)
    assert max(peaks) <= CAP, peaks
    dist.destroy_process_group()
    if rank == 0:
        print(f"parameters {n} bytes, cap {CAP}, peak allocated per rank: {peaks}")
        print(f"peak: {max(peaks)}")
        print("checks: 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
