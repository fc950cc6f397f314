"""A torchrun-style PyTorch script, as written for PyTorch: run by ``torchrun`` it uses torch and
gloo, run by ``python -m portagrad.distributed.run ... -m portagrad.compat`` it uses portagrad on
MPI. Each rank writes what it saw to ``<argv[1]>/<RANK>.json``; the test compares the two runs."""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.elastic.multiprocessing.errors import record
from torch.utils.data import DistributedSampler

ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
       "ROLE_NAME", "ROLE_WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
       "GROUP_WORLD_SIZE", "OMP_NUM_THREADS")


@record
def main():
    dist.init_process_group(backend="gloo", device_id=None)
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {"env": {k: os.environ.get(k) for k in ENV},
           "launched": dist.is_torchelastic_launched(),
           "local_rank": dist.get_node_local_rank()}
    sampler = DistributedSampler(list(range(23)), seed=7)
    sampler.set_epoch(2)
    out["sampler"] = list(sampler)
    t = torch.arange(4, dtype=torch.float32) + rank
    work = dist.all_reduce(t, async_op=True)
    out["all_reduce_future"] = [x.tolist() for x in work.get_future().wait()]
    inp = torch.arange(world * 2, dtype=torch.int64) + 100 * rank
    o = torch.empty_like(inp)
    dist.all_to_all_single(o, inp)
    out["all_to_all_single"] = o.tolist()
    inp = torch.arange(sum(range(1, world + 1)), dtype=torch.float64) + 10 * rank
    o = torch.empty((rank + 1) * world, dtype=torch.float64)
    dist.all_to_all_single(o, inp, [rank + 1] * world, list(range(1, world + 1)))
    out["all_to_all_single_splits"] = o.tolist()
    outs = [torch.empty(2, dtype=torch.int32) for _ in range(world)]
    dist.all_to_all(outs, [torch.tensor([rank, j], dtype=torch.int32) for j in range(world)])
    out["all_to_all"] = [x.tolist() for x in outs]
    r = torch.empty(3)
    dist.reduce_scatter(r, [torch.full((3,), float(rank * world + j)) for j in range(world)])
    out["reduce_scatter"] = r.tolist()
    m = (torch.arange(6.0).reshape(2, 3) + rank).t()
    dist.all_reduce(m)
    out["all_reduce_non_contiguous"] = m.tolist()
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "name": f"r{rank}", "t": (rank, 1.5)})
    out["all_gather_object"] = objs
    box = [{"step": 3, "lr": 0.1}, [rank]] if rank == 0 else [None, None]
    dist.broadcast_object_list(box, src=0)
    out["broadcast_object_list"] = box
    send = torch.full((2,), rank)
    recv = torch.empty(2, dtype=send.dtype)
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % world),
           dist.P2POp(dist.irecv, recv, (rank - 1) % world)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    out["batch_isend_irecv"] = recv.tolist()
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
    v = torch.ones(1)
    dist.all_reduce(v, group=mesh.get_group("dp"))
    out["mesh"] = [mesh.size(), mesh.get_local_rank(), mesh["dp"].size(), v.tolist()]
    with open(os.path.join(sys.argv[1], f"{rank}.json"), "w") as f:
        json.dump(out, f, sort_keys=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
