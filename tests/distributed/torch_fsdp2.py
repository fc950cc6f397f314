"""An FSDP2 training script as written for PyTorch (CPU, gloo): blocks then the root sharded with
``fully_shard`` on a 1-D ``DeviceMesh``, 4 Adam steps on each rank's half of the batch, the full state
dict gathered with ``get_model_state_dict``, and a sharded ``torch.distributed.checkpoint.save``
to ``argv[1]``. Run by torchrun it uses torch; by ``python -m portagrad.distributed.run ... -m
portagrad.compat`` it uses portagrad, and prints the same losses."""
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return x + torch.tanh(self.fc(self.norm(x)))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 13), Block(13), Block(13), nn.Linear(13, 4))
    for layer in model:
        if isinstance(layer, Block):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    assert isinstance(model, FSDPModule)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(16, 8)
    y = torch.randint(0, 4, (16,))
    mine = slice(rank * 8, rank * 8 + 8)
    for step in range(4):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[mine]), y[mine])
        loss.backward()
        opt.step()
        print(f"[rank {rank}] step {step} loss {loss.item():.6f}")
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    print(f"[rank {rank}] weight sum {float(full['0.weight'].sum()):.6f}")
    dcp.save({"model": model.state_dict()}, checkpoint_id=sys.argv[1])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
