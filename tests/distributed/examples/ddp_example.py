"""The basic DDP example (pytorch/examples, distributed/ddp/example.py), written after the
published one: ``spmd_main`` initialises the process group from the torchrun environment and
``demo_basic`` takes one SGD step of a two-layer ``ToyModel`` wrapped in DDP, on the devices
``torch.cuda.device_count() // local_world_size`` assigns to this process.

Edits for CPU, each marked ``# CPU:`` with the published line after ``published:``: gloo instead
of nccl; the model and labels stay on the CPU (no ``.cuda(...)``/``.to(device_ids[0])``), and DDP
gets no ``device_ids``. Added to be compared: the loss is printed, and ``--steps`` repeats the
step.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_basic(local_world_size, local_rank, steps):
    # this process's share of the GPUs (none on a CPU machine)
    n = torch.cuda.device_count() // local_world_size
    device_ids = list(range(local_rank * n, (local_rank + 1) * n))
    print(f"[{os.getpid()}] rank = {dist.get_rank()}, world_size = {dist.get_world_size()}, "
          f"n = {n}, device_ids = {device_ids}")
    model = ToyModel()  # CPU: published: model = ToyModel().cuda(device_ids[0])
    ddp_model = DDP(model)  # CPU: published: ddp_model = DDP(model, device_ids)
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
    for _ in range(steps):
        optimizer.zero_grad()
        outputs = ddp_model(torch.randn(20, 10))
        labels = torch.randn(20, 5)  # CPU: published: labels = torch.randn(20, 5).to(device_ids[0])
        loss = loss_fn(outputs, labels)
        loss.backward()
        optimizer.step()
        print(f"[rank {dist.get_rank()}] loss {loss.item():.6f}")


def spmd_main(local_world_size, local_rank, steps):
    env_dict = {key: os.environ[key] for key in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")}
    print(f"[{os.getpid()}] Initializing process group with: {env_dict}")
    dist.init_process_group(backend="gloo")  # CPU: published: dist.init_process_group(backend="nccl")
    print(f"[{os.getpid()}]: world_size = {dist.get_world_size()}, rank = {dist.get_rank()}, "
          f"backend={dist.get_backend()}")
    demo_basic(local_world_size, local_rank, steps)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--local_world_size", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args()
    spmd_main(args.local_world_size, args.local_rank, args.steps)
