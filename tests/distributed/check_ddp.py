"""Run under ``mpiexec -n N``: DistributedDataParallel's gradients equal the single-process
gradients of the concatenated batch (several buckets, ``no_sync`` accumulation, unused
parameters), construction makes every rank equal, and the wrapped module's state_dict loads into
a plain model. Argument: the device (``opencl``: ``opencl:{rank % count}``)."""
from __future__ import annotations

import sys

import numpy as np

import portagrad as pg
import portagrad.distributed as dist
from portagrad import nn
from portagrad.errors import DTypeError
from portagrad.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self, spare: bool = False) -> None:
        super().__init__()
        self.a = nn.Linear(6, 16)
        self.bn = nn.BatchNorm1d(16)
        self.b = nn.Linear(16, 8)
        self.c = nn.Linear(8, 3)
        self.spare = nn.Linear(8, 3) if spare else None  # used only when asked

    def forward(self, x: pg.Tensor, use_spare: bool = False) -> pg.Tensor:
        h = self.b(pg.relu(self.bn(self.a(x))))
        out = self.c(pg.tanh(h))
        return out + self.spare(h) if use_spare else out


def grads(model: nn.Module) -> dict[str, np.ndarray | None]:
    return {n: (None if p.grad is None else p.grad.cpu().numpy().copy())
            for n, p in model.named_parameters()}


def main() -> int:
    kind = sys.argv[1]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"opencl:{rank % pg.opencl.device_count()}" if kind.startswith("opencl") else kind
    done = []

    def close(name: str, got: dict, want: dict) -> None:
        for k in want:
            g, w = got[k], want[k]
            if (g is None) != (w is None):
                raise AssertionError(f"[rank {rank}] {name}: {k} grad is {g} but want {w}")
            if g is not None:
                np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6,
                                           err_msg=f"[rank {rank}] {name}: {k}")
        done.append(name)

    pg.manual_seed(100 + rank)  # different initial weights on each rank: DDP must equalise them
    net = Net().to(dev)
    ddp = DDP(net, bucket_cap_mb=0.0001)  # 105-byte buckets: several of them
    assert len(ddp._buckets) >= 3, len(ddp._buckets)
    plain = Net().to(dev)
    plain.load_state_dict(ddp.module.state_dict())  # what DDP starts from (rank 0's weights)
    w = net.a.weight.detach().cpu().numpy()
    everyone = [pg.zeros_like(net.a.weight.detach()) for _ in range(world)]
    dist.all_gather(everyone, net.a.weight.detach())
    assert all(np.array_equal(e.cpu().numpy(), w) for e in everyone), "weights differ after DDP()"
    done.append("construction broadcasts rank 0's parameters")

    gen = np.random.default_rng(0)
    B = 4
    xs = [pg.tensor(gen.standard_normal((world * B, 6)).astype(np.float32), device=dev)
          for _ in range(3)]
    ys = [pg.tensor(gen.integers(0, 3, world * B), device=dev) for _ in range(3)]
    loss_fn = nn.CrossEntropyLoss()
    mine = slice(rank * B, (rank + 1) * B)

    # without BatchNorm the reference is literally one process on the concatenated batch
    pg.manual_seed(3)
    mlp = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                        nn.Linear(32, 3)).to(dev)
    dmlp = DDP(mlp, bucket_cap_mb=0.002)
    one = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                        nn.Linear(32, 3)).to(dev)
    one.load_state_dict(mlp.state_dict())
    loss_fn(dmlp(xs[0][mine]), ys[0][mine]).backward()
    loss_fn(one(xs[0]), ys[0]).backward()
    close(f"MLP gradients ({len(dmlp._buckets)} buckets) equal one process on the whole batch",
          grads(mlp), grads(one))

    # one step: the average of the shards' gradients == the gradient of the whole batch
    ddp.zero_grad(set_to_none=True)
    loss_fn(ddp(xs[0][mine]), ys[0][mine]).backward()
    plain.zero_grad(set_to_none=True)
    loss_fn(plain(xs[0]), ys[0]).backward()
    want = grads(plain)
    # BatchNorm normalises each shard by its own statistics: the exact reference is per shard
    ref = Net().to(dev)
    ref.load_state_dict(ddp.module.state_dict())
    acc: dict[str, np.ndarray] = {}
    for r in range(world):
        ref.zero_grad(set_to_none=True)
        part = slice(r * B, (r + 1) * B)
        loss_fn(ref(xs[0][part]), ys[0][part]).backward()
        for k, v in grads(ref).items():
            if v is not None:
                acc[k] = acc.get(k, 0) + v / world
    want = {k: acc.get(k) for k in want}
    close("gradients equal the single-process gradient of the concatenated batch", grads(ddp.module),
          want)
    stats = ddp._get_ddp_logging_data()
    assert stats["iterations"] == 1 and stats["num_buckets"] >= 3, stats

    # no_sync: accumulate locally, then the synced backward averages the sum
    ddp.zero_grad(set_to_none=True)
    with ddp.no_sync():
        loss_fn(ddp(xs[1][mine]), ys[1][mine]).backward()
    local = grads(ddp.module)
    loss_fn(ddp(xs[2][mine]), ys[2][mine]).backward()
    acc = {}
    for r in range(world):
        ref.load_state_dict(ddp.module.state_dict())
        ref.zero_grad(set_to_none=True)
        part = slice(r * B, (r + 1) * B)
        loss_fn(ref(xs[1][part]), ys[1][part]).backward()
        if r == rank:
            close("no_sync leaves the local gradient", local, grads(ref))
        loss_fn(ref(xs[2][part]), ys[2][part]).backward()
        for k, v in grads(ref).items():
            if v is not None:
                acc[k] = acc.get(k, 0) + v / world
    close("no_sync accumulation then one reduction", grads(ddp.module),
          {k: acc.get(k) for k in want})

    # unused parameters: 'spare' used on rank 0 only, so its gradient is rank 0's / world
    pg.manual_seed(7)
    net2 = Net(spare=True).to(dev)
    ddp2 = DDP(net2, find_unused_parameters=True, bucket_cap_mb=0.0001)
    ref = Net(spare=True).to(dev)
    ref.load_state_dict(ddp2.module.state_dict())
    use = rank == 0
    loss_fn(ddp2(xs[0][mine], use_spare=use), ys[0][mine]).backward()
    acc = {}
    for r in range(world):
        ref.zero_grad(set_to_none=True)
        part = slice(r * B, (r + 1) * B)
        loss_fn(ref(xs[0][part], use_spare=(r == 0)), ys[0][part]).backward()
        for k, v in grads(ref).items():
            if v is not None:
                acc[k] = acc.get(k, 0) + v / world
    close("find_unused_parameters: a parameter used on some ranks", grads(ddp2.module),
          {k: acc.get(k) for k in grads(ref)})
    ddp2.zero_grad(set_to_none=True)
    loss_fn(ddp2(xs[1][mine]), ys[1][mine]).backward()
    g2 = grads(ddp2.module)
    assert g2["spare.weight"] is None and g2["a.weight"] is not None, "unused on every rank"
    done.append("find_unused_parameters: a parameter no rank used keeps grad None")

    # without find_unused_parameters an unused parameter is reported at the next forward
    ddp3 = DDP(Net(spare=True).to(dev), bucket_cap_mb=0.0001)
    loss_fn(ddp3(xs[0][mine]), ys[0][mine]).backward()
    try:
        ddp3(xs[0][mine])
    except RuntimeError as exc:
        assert "find_unused_parameters=True" in str(exc) and "rank" in str(exc), exc
        done.append("unused parameters without find_unused_parameters raise")
    else:
        raise AssertionError("no error for unused parameters")

    try:  # (a backend that stores no bfloat16, e.g. over array-api-strict, skips this check)
        (pg.zeros(1, dtype=pg.bfloat16, device=dev) + 1).cpu()
        has_bf16 = True
    except DTypeError:
        has_bf16 = False
    if has_bf16:
        # bfloat16 parameters: construction broadcasts them, and the buckets reduce by the rule of
        # the 16-bit collectives (the float32 mean of the local gradients, rounded once)
        pg.manual_seed(11 + rank)
        bmlp = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(dev, pg.bfloat16)
        bddp = DDP(bmlp, bucket_cap_mb=0.0001)
        w0 = bmlp[0].weight.detach().float()
        ws = [pg.zeros_like(w0) for _ in range(world)]
        dist.all_gather(ws, w0)
        assert all(np.array_equal(w.cpu().numpy(), ws[0].cpu().numpy()) for w in ws), "bf16 broadcast"
        xb = xs[0][mine].to(pg.bfloat16)
        with bddp.no_sync():
            loss_fn(bddp(xb).float(), ys[0][mine]).backward()
        local = {n: p.grad.detach().float() for n, p in bmlp.named_parameters()}
        bddp.zero_grad(set_to_none=True)
        loss_fn(bddp(xb).float(), ys[0][mine]).backward()
        for n, p in bmlp.named_parameters():
            everyone = [pg.zeros_like(local[n]) for _ in range(world)]
            dist.all_gather(everyone, local[n])
            mean = sum(e.cpu().numpy() for e in everyone[1:]) + everyone[0].cpu().numpy()
            want = (mean * np.float32(1.0 / world)).astype(np.float32)
            got = p.grad.detach().float().cpu().numpy()
            assert p.grad.dtype is pg.bfloat16
            np.testing.assert_array_equal(got, pg.tensor(want).to(pg.bfloat16).float().numpy(),
                                          err_msg=f"[rank {rank}] bf16 DDP grad {n}")
        done.append("bfloat16 parameters: broadcast, and gradients averaged in float32, rounded once")

    # the wrapped module's state_dict loads into a plain model; buffers equal across ranks
    plain2 = Net().to(dev)
    plain2.load_state_dict(ddp.module.state_dict())
    assert set(ddp.state_dict()) == {"module." + k for k in plain2.state_dict()}
    done.append("state_dict loads into a plain model")
    # broadcast_buffers: each forward starts from rank 0's buffers (eval: the forward keeps them)
    ddp.eval()
    if rank:
        ddp.module.bn.running_mean.fill_(100.0 + rank)
    with pg.no_grad():
        ddp(xs[0][mine])
    rm = ddp.module.bn.running_mean.detach()
    allm = [pg.zeros_like(rm) for _ in range(world)]
    dist.all_gather(allm, rm)
    assert all(np.array_equal(m.cpu().numpy(), allm[0].cpu().numpy()) for m in allm)
    assert float(allm[0].abs().max().item()) < 50.0, "rank 0's statistics, not another's"
    done.append("buffers broadcast from rank 0 before each forward")
    dist.destroy_process_group()
    if rank == 0:
        print("\n".join(f"ok {n}" for n in done))
        print(f"checks: {len(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
