"""Run under ``mpiexec -n N``: sharded checkpoints. ``save FOLDER``: a model sharded with
``fully_shard`` on N ranks (seed 5; BatchNorm buffers, which are not sharded, filled with known
values) is saved with ``distributed.checkpoint.save`` with a step count. ``load FOLDER``: the same
model made with another seed and sharded on this run's N ranks (and, on rank 0, a plain unsharded
copy) is loaded from the folder; the gathered parameters and buffers equal the seed-5 model's.
Arguments: the device (``opencl``: ``opencl:{rank % count}``), the phase, the folder."""
from __future__ import annotations

import json
import os
import sys

import numpy as np

import portagrad as pg
import portagrad.distributed as dist
import portagrad.distributed.checkpoint as dcp
from portagrad import nn
from portagrad.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from portagrad.distributed.fsdp import fully_shard


def make(seed: int, dev: str) -> nn.Module:
    pg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Linear(5, 7), nn.Tanh(),
                          nn.Linear(7, 3)).to(dev)
    with pg.no_grad():
        model[1].running_mean.copy_(pg.arange(5.0) * 0.1 + seed)
    return model


def shard(model: nn.Module) -> nn.Module:
    fully_shard(model[2])
    return fully_shard(model)


def main() -> int:
    kind, phase, folder = sys.argv[1:4]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"opencl:{rank % pg.opencl.device_count()}" if kind.startswith("opencl") else kind
    done = []
    if phase == "save":
        model = shard(make(5, dev))
        offloaded = get_model_state_dict(model, options=StateDictOptions(cpu_offload=True))
        assert all(v.device.type == "cpu" for v in offloaded.values())
        # (the cpu copies keep their rows' placement: the same index as the model's own tensors)
        index = dcp.save({"model": offloaded, "step": 3}, checkpoint_id=folder)
        files = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
        assert files == [f"__{r}_0.safetensors" for r in range(world)], files
        with open(os.path.join(folder, "index.json")) as fh:
            assert json.load(fh) == index
        w = index["tensors"]["model.2.weight"]
        assert w["shape"] == [7, 5] and len(w["pieces"]) == min(world, 7), w
        bn = index["tensors"]["model.1.running_mean"]
        assert [p["file"] for p in bn["pieces"]] == ["__0_0.safetensors"], bn
        done.append(f"{world} ranks each wrote their shards; the index lists the pieces")
    else:
        want = make(5, dev).state_dict()
        model = shard(make(11, dev))
        sd = {"model": model.state_dict(), "step": 0}
        dcp.load(sd, checkpoint_id=folder)
        assert sd["step"] == 3, sd["step"]
        got = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
        for k, v in want.items():
            np.testing.assert_array_equal(got[k].cpu().numpy(), v.cpu().numpy(),
                                          err_msg=f"[rank {rank}] {k}")
        done.append(f"loaded onto {world} ranks: the saved model, gathered")
        if rank == 0:  # an unsharded model loads the whole tensors
            plain = make(12, dev)
            sd = {"model": plain.state_dict()}
            dcp.load(sd, checkpoint_id=folder, no_dist=True)
            for k, v in want.items():
                np.testing.assert_array_equal(plain.state_dict()[k].cpu().numpy(),
                                              v.cpu().numpy(), err_msg=k)
            done.append("loaded into a plain model")
        dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("\n".join(f"ok {n}" for n in done))
        print(f"checks: {len(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
