"""A torchrun-style PyTorch script, as written for PyTorch: DDP with ``fp16_compress_hook``,
``join()`` over uneven inputs (rank r has 3 + 2r batches, both divisors) and
``ZeroRedundancyOptimizer`` with Adam. Run by ``torchrun`` it uses torch and gloo, run by
``python -m portagrad.distributed.run ... -m portagrad.compat`` portagrad on MPI. Each rank writes
its gradients and parameters to ``<argv[1]>/<RANK>.json``; the test compares the two runs.
Weights and data are formulas, not random draws, so both runs start equal."""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP


def model(dtype):
    m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2)).to(dtype)
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.linspace(-1, 1, p.numel(), dtype=dtype).reshape(p.shape) * (0.5 + i / 7))
    return m


def batch(rank, it, dtype):
    x = torch.sin(torch.arange(20, dtype=dtype).reshape(5, 4) * 0.37 + rank * 1.3 + it * 0.71)
    return x, torch.cos(x[:, :2] * 2.1)


def loss_of(ddp, rank, it, dtype):
    x, y = batch(rank, it, dtype)
    return ((ddp(x) - y) ** 2).sum()


def main():
    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    out = {}
    ddp = DDP(model(torch.float32))
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    loss_of(ddp, rank, 0, torch.float32).backward()
    out["fp16_hook_grads"] = [p.grad.tolist() for p in ddp.parameters()]
    for divide in (True, False):
        ddp = DDP(model(torch.float64))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with ddp.join(divide_by_initial_world_size=divide):
            for it in range(3 + 2 * rank):
                opt.zero_grad()
                loss_of(ddp, rank, it, torch.float64).backward()
                opt.step()
        out[f"join_{divide}"] = [p.tolist() for p in ddp.parameters()]
    ddp = DDP(model(torch.float64))
    zero = ZeroRedundancyOptimizer(ddp.parameters(), torch.optim.Adam, lr=0.05)
    for it in range(3):
        zero.zero_grad()
        loss_of(ddp, rank, it, torch.float64).backward()
        zero.step()
    out["zero_params"] = [p.tolist() for p in ddp.parameters()]
    out["zero_state_entries"] = len(zero.optim.state)
    zero.consolidate_state_dict(to=0)
    if rank == 0:
        sd = zero.state_dict()
        out["zero_state_dict"] = {str(k): v["exp_avg"].tolist() for k, v in sd["state"].items()}
    with open(os.path.join(sys.argv[1], f"{rank}.json"), "w") as f:
        json.dump(out, f, sort_keys=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
