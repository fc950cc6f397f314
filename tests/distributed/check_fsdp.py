"""Run under ``mpiexec -n N``: ``fully_shard`` trains as DDP does. A transformer-like block and an
MLP with uneven row counts (5 and 7 rows: padded on 2 and 3 ranks; a 0-d parameter), sharded per
block then at the root, take 3 Adam steps on each rank's part of the batch; the losses and the
gathered parameters equal DDP's (float32 to 1e-6, float64 to 1e-12). Also: each rank holds only
its rows (parameters, gradients and Adam state: the world's shards add up to the model), gradient
accumulation with ``set_requires_gradient_sync(False)``, ``unshard``/``reshard``, the
``FullyShardedDataParallel`` wrapper, and the full state dict. Argument: the device (``opencl``:
``opencl:{rank % count}``)."""
from __future__ import annotations

import sys

import numpy as np

import portagrad as pg
import portagrad.distributed as dist
from portagrad import nn, optim
from portagrad.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from portagrad.distributed.device_mesh import init_device_mesh
from portagrad.distributed.fsdp import (FSDPModule, FullyShardedDataParallel, ModuleWrapPolicy,
                                        ShardedParameter, fully_shard)
from portagrad.nn.parallel import DistributedDataParallel as DDP
from portagrad.utils.checkpoint import checkpoint


class Block(nn.Module):
    """Pre-norm attention-free transformer block: LayerNorm, MLP with a residual."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 7)  # 7 rows: uneven on 2 and 3 ranks
        self.down = nn.Linear(7, d)

    def forward(self, x: pg.Tensor) -> pg.Tensor:
        return x + self.down(pg.tanh(self.up(self.norm(x))))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(6, 5)  # 5 rows
        self.blocks = nn.ModuleList([Block(5), Block(5)])
        self.out = nn.Linear(5, 3)
        self.scale = nn.Parameter(pg.tensor(1.5))  # 0-d

    def forward(self, x: pg.Tensor, ckpt: bool = False) -> pg.Tensor:
        h = self.inp(x)
        for b in self.blocks:
            h = checkpoint(b, h, use_reentrant=False) if ckpt else b(h)
        return self.out(h) * self.scale


def shard(model: Net, mesh: object = None) -> Net:
    for b in model.blocks:
        fully_shard(b, mesh=mesh)
    return fully_shard(model, mesh=mesh)


def main() -> int:
    kind = sys.argv[1]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"opencl:{rank % pg.opencl.device_count()}" if kind.startswith("opencl") else kind
    done = []
    gen = np.random.default_rng(0)
    B = 4
    loss_fn = nn.CrossEntropyLoss()
    mine = slice(rank * B, (rank + 1) * B)

    def gathered(model: nn.Module) -> dict[str, np.ndarray]:
        return {k: v.cpu().numpy() for k, v in get_model_state_dict(
            model, options=StateDictOptions(full_state_dict=True)).items()}

    for dtype, tol in ((pg.float32, 1e-6), (pg.float64, 1e-12)):
        xs = [pg.tensor(gen.standard_normal((world * B, 6)), dtype=dtype, device=dev)
              for _ in range(3)]
        ys = [pg.tensor(gen.integers(0, 3, world * B), device=dev) for _ in range(3)]
        pg.manual_seed(5)
        ref = Net().to(dev, dtype)
        init = {k: v.clone() for k, v in ref.state_dict().items()}
        ddp = DDP(ref)
        model = Net().to(dev, dtype)
        model.load_state_dict(init)
        mesh = init_device_mesh("cpu", (world,))
        shard(model, mesh)
        assert isinstance(model, FSDPModule) and isinstance(model.blocks[0], FSDPModule)
        assert all(isinstance(p, ShardedParameter) for p in model.parameters())
        opt = optim.Adam(model.parameters(), lr=0.05)
        ref_opt = optim.Adam(ddp.parameters(), lr=0.05)
        for step in range(3):
            opt.zero_grad()
            ref_opt.zero_grad()
            loss = loss_fn(model(xs[step][mine]), ys[step][mine])
            want = loss_fn(ddp(xs[step][mine]), ys[step][mine])
            loss.backward()
            want.backward()
            opt.step()
            ref_opt.step()
            np.testing.assert_allclose(float(loss.item()), float(want.item()), rtol=tol,
                                       atol=tol, err_msg=f"[rank {rank}] loss at step {step}")
        got = gathered(model)
        for k, v in ref.state_dict().items():
            np.testing.assert_allclose(got[k], v.cpu().numpy(), rtol=tol, atol=tol,
                                       err_msg=f"[rank {rank}] {dtype} {k} after 3 steps")
        done.append(f"{dtype}: 3 Adam steps: losses and gathered parameters equal DDP's")

        # this rank holds only its rows: the world's parameter, gradient and Adam-state elements
        # add up to the model's, and none holds more than ceil(rows / world) rows of each
        local = sum(p.numel() for p in model.parameters())
        state = sum(t.numel() for s in opt.state.values() for k, t in s.items()
                    if k != "step")
        grads = sum(p.grad.numel() for p in model.parameters())
        assert state == 2 * local and grads == local, (state, grads, local)
        counts = [None] * world
        dist.all_gather_object(counts, local)
        full = sum(p.numel() for p in ref.parameters())
        assert sum(counts) == full, (counts, full)
        for p in model.parameters():
            assert p.shape[0] <= -(-p.rows // world), (p.shape, p.global_shape)
        done.append(f"{dtype}: shards add up to the model ({counts} of {full} elements)")

    # gradient accumulation: two micro-batches with sync off then on == DDP's no_sync
    pg.manual_seed(9)
    ref = Net().to(dev)
    ddp = DDP(ref)
    model = Net().to(dev)
    model.load_state_dict(ref.state_dict())
    shard(model)
    x = pg.tensor(gen.standard_normal((world * B, 6)), dtype=pg.float32, device=dev)
    y = pg.tensor(gen.integers(0, 3, world * B), device=dev)
    model.set_requires_gradient_sync(False)
    loss_fn(model(x[mine]), y[mine]).backward()
    assert all(p.grad is None for p in model.parameters()), "no gradient before the sync"
    model.set_requires_gradient_sync(True)
    loss_fn(model(x[mine] * 2), y[mine]).backward()
    with ddp.no_sync():
        loss_fn(ddp(x[mine]), y[mine]).backward()
    loss_fn(ddp(x[mine] * 2), y[mine]).backward()
    full_grads = {}
    for name, p in model.named_parameters():
        gs = p.grad.detach()
        padded = p._padded(gs)
        out = pg.empty((p.chunk_rows * world, *padded.shape[1:]), dtype=gs.dtype, device=dev)
        dist.all_gather_into_tensor(out, padded.contiguous())
        full_grads[name] = out[:p.rows].reshape(p.global_shape).cpu().numpy()
    for name, p in ref.named_parameters():
        np.testing.assert_allclose(full_grads[name], p.grad.cpu().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"[rank {rank}] accumulated grad {name}")
    done.append("set_requires_gradient_sync(False) accumulates; the synced backward reduces the sum")

    # activation checkpointing: the recomputation re-gathers each block in backward
    pg.manual_seed(13)
    ref2 = Net().to(dev)
    model2 = Net().to(dev)
    model2.load_state_dict(ref2.state_dict())
    shard(model2)
    opt2, ref_opt2 = optim.Adam(model2.parameters(), lr=0.05), optim.Adam(ref2.parameters(),
                                                                            lr=0.05)
    for _ in range(2):
        for o in (opt2, ref_opt2):
            o.zero_grad()
        loss_fn(model2(x[mine], ckpt=True), y[mine]).backward()
        # the reference: every rank's gradients averaged, as DDP does
        loss_fn(ref2(x[mine], ckpt=True), y[mine]).backward()
        for p in ref2.parameters():
            dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
        opt2.step()
        ref_opt2.step()
    got2 = gathered(model2)
    for k, v in ref2.state_dict().items():
        np.testing.assert_allclose(got2[k], v.cpu().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"[rank {rank}] checkpointed {k}")
    done.append("under activation checkpointing (re-gathered in backward): 2 steps equal "
                "data parallel's")

    # unshard/reshard; forward without grad gathers too
    model.unshard()
    assert tuple(model.out.weight.shape) == (3, 5) and not isinstance(model.out.weight,
                                                                      ShardedParameter)
    with pg.no_grad():
        a = model(x).cpu().numpy()
    model.reshard()
    assert isinstance(model.out.weight, ShardedParameter)
    with pg.no_grad():
        b = model(x).cpu().numpy()
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b, ref(x).detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    done.append("unshard/reshard, and a no-grad forward, give the unsharded model's outputs")

    # .to(dtype) after sharding keeps the shards (the same parameter objects, cast)
    late = Net().to(dev)
    late.load_state_dict(ref.state_dict())
    shard(late)
    late.to(pg.float64)
    assert all(isinstance(p, ShardedParameter) and p.dtype is pg.float64
               for p in late.parameters())
    with pg.no_grad():
        got64 = late(x.double()).cpu().numpy()
    np.testing.assert_allclose(got64, ref.double()(x.double()).detach().cpu().numpy(),
                               rtol=1e-12, atol=1e-12)
    loss_fn(late(x[mine].double()), y[mine]).backward()
    assert all(p.grad is not None and p.grad.dtype is pg.float64 for p in late.parameters())
    done.append("module.to(float64) after sharding: shards cast, forward and backward in float64")

    # the wrapper name: blocks wrapped by the policy; keys without the wrapper's prefix
    plain = Net().to(dev)
    plain.load_state_dict(ref.state_dict())
    fsdp = FullyShardedDataParallel(plain, auto_wrap_policy=ModuleWrapPolicy({Block}))
    assert isinstance(plain.blocks[1], FSDPModule) and isinstance(plain, FSDPModule)
    assert set(fsdp.state_dict()) == set(ref.state_dict()), sorted(fsdp.state_dict())
    loss_fn(fsdp(x[mine]), y[mine]).backward()
    try:
        fully_shard(plain)
    except ValueError as exc:
        assert "already" in str(exc), exc
    else:
        raise AssertionError("fully_shard twice on one module did not raise")
    done.append("FullyShardedDataParallel(auto_wrap_policy=ModuleWrapPolicy) wraps the blocks")

    dist.destroy_process_group()
    if rank == 0:
        print("\n".join(f"ok {n}" for n in done))
        print(f"checks: {len(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
