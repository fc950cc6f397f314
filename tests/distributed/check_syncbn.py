"""Run under ``mpiexec -n N``: ``nn.SyncBatchNorm`` on N processes, each with a different slice
(of a different size; one empty on 3+ ranks) of one batch, gives what one process gets from plain
batch norm on the whole batch: outputs, input gradients, weight and bias gradients (summed over
the processes, as DDP would), running statistics after two steps, then eval outputs (float64).
Also through ``convert_sync_batchnorm`` with an explicit group. Argument: the device (``opencl``:
``opencl:{rank % count}``)."""
from __future__ import annotations

import sys

import numpy as np

import portagrad as pg
import portagrad.distributed as dist
from portagrad import nn


def main() -> int:
    kind = sys.argv[1]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"opencl:{rank % pg.opencl.device_count()}" if kind.startswith("opencl") else kind
    done: list[str] = []
    f64 = pg.float64

    def close(name: str, got: pg.Tensor, want: pg.Tensor | np.ndarray) -> None:
        w = want.detach().cpu().numpy() if isinstance(want, pg.Tensor) else want
        np.testing.assert_allclose(got.detach().cpu().numpy(), w, rtol=1e-10, atol=1e-12,
                                   err_msg=f"[rank {rank}] {name}")

    # per-rank batch sizes 3, 5, 0, 6, ...: different, one empty when there are 3 ranks or more
    sizes = [[3, 5, 0, 6, 2][r % 5] for r in range(world)]
    start = sum(sizes[:rank])
    mine = slice(start, start + sizes[rank])
    gen = np.random.default_rng(7)
    for shape_tail, plain_cls in (((4, 5), nn.BatchNorm1d), ((3, 2, 2), nn.BatchNorm2d),
                                  ((4,), nn.BatchNorm1d)):
        c = shape_tail[0]
        total = sum(sizes)
        batches = [gen.standard_normal((total,) + shape_tail) * 3 + 1.5 for _ in range(2)]
        weights = [gen.standard_normal((total,) + shape_tail) for _ in range(2)]  # loss weights
        sync = nn.SyncBatchNorm(c, momentum=0.3, dtype=f64).to(dev)
        plain = plain_cls(c, momentum=0.3, dtype=f64).to(dev)
        with pg.no_grad():
            for m in (sync, plain):
                m.weight.copy_(pg.tensor(np.linspace(0.5, 2.0, c), dtype=f64))
                m.bias.copy_(pg.tensor(np.linspace(-1.0, 1.0, c), dtype=f64))
        for step in range(2):
            xa = pg.tensor(batches[step], device=dev, requires_grad=True)
            ya = plain(xa)
            (ya * pg.tensor(weights[step], device=dev)).sum().backward()
            x = pg.tensor(batches[step][mine], device=dev, requires_grad=True)
            y = sync(x)
            (y * pg.tensor(weights[step][mine], device=dev)).sum().backward()
            tag = f"{plain_cls.__name__} {shape_tail} step {step}"
            close(f"output {tag}", y, ya[mine])
            close(f"input grad {tag}", x.grad, xa.grad[mine])
            for name in ("weight", "bias"):
                g = getattr(sync, name).grad.clone()
                dist.all_reduce(g)  # what DDP does with the local sums
                close(f"{name} grad {tag}", g, getattr(plain, name).grad)
            close(f"running_mean {tag}", sync.running_mean, plain.running_mean)
            close(f"running_var {tag}", sync.running_var, plain.running_var)
            assert int(sync.num_batches_tracked) == step + 1
        done.append(f"train {plain_cls.__name__} {shape_tail}: outputs, grads, running stats")
        sync.eval()
        plain.eval()
        x = pg.tensor(batches[0][mine], device=dev)
        close("eval", sync(x), plain(pg.tensor(batches[0], device=dev))[mine])
        done.append(f"eval {plain_cls.__name__} {shape_tail}: running statistics, no exchange")

    # convert_sync_batchnorm with an explicit group, float32, momentum None (cumulative)
    group = dist.new_group(list(range(world)))
    pg.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=None)).to(dev)
    ref = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=None)).to(dev)
    ref.load_state_dict(net.state_dict())
    net = nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group=group)
    assert type(net[1]) is nn.SyncBatchNorm
    full = gen.standard_normal((sum(sizes), 3)).astype(np.float32)
    for _ in range(2):
        out = net(pg.tensor(full[mine], device=dev))
        want = ref(pg.tensor(full, device=dev))
        np.testing.assert_allclose(out.detach().cpu().numpy(), want.detach().cpu().numpy()[mine],
                                   rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(net[1].running_var.cpu().numpy(), ref[1].running_var.cpu().numpy(),
                               rtol=2e-5)
    done.append("convert_sync_batchnorm with an explicit group, float32, cumulative average")

    # too few values over all the processes
    one = nn.SyncBatchNorm(2).to(dev)
    try:
        one(pg.ones(1 if rank == 0 else 0, 2, device=dev))
        raise AssertionError("no error for one value per channel")
    except ValueError as exc:
        assert "Expected more than 1 value per channel" in str(exc), exc
    done.append("one value per channel over all processes raises")

    dist.destroy_process_group()
    if rank == 0:
        print("\n".join(f"ok {n}" for n in done))
        print(f"checks: {len(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
