"""portagrad.distributed on 2 MPI ranks: all_reduce bandwidth against raw mpi4py, the staging cost
of OpenCL tensors, and a DDP training step against one process.

Run: ``python -m benchmarks.distributed [--quick]`` from the repository root (it starts
``mpiexec -n 2`` on itself; under mpiexec already, it runs as it is).

1. ``all_reduce`` (SUM, float32) of 1 KiB .. 256 MiB: raw ``comm.Allreduce(MPI.IN_PLACE, a)``
   against ``dist.all_reduce(t)`` on a ``cpu`` tensor over the same memory, with the header check
   (the default) and without (``PORTAGRAD_DISTRIBUTED_CHECKS=0``). Bandwidth is the bytes reduced
   per second (algorithm bandwidth); best of several timed loops, each ended by the last rank.
2. OpenCL tensors (``opencl:{rank}``): ``dist.all_reduce`` of the same sizes; the difference to
   the ``cpu`` tensor is the staging (device->host read, pinned host buffer, non-blocking write
   back, waited for with ``synchronize``).
3. One training step (forward, backward, SGD step) of an MLP (8 layers, 1.7 M parameters, batch 512
   per rank): one process alone (the other rank sleeping) against DDP on 2 ranks, and DDP's counters
   (``_get_ddp_logging_data``): the time the communication thread spent reducing buckets during
   backward, the time backward waited at its end, and so the share of the communication hidden.
4. The same MLP trained with Adam under ``fully_shard`` (each Linear a unit, then the root)
   against DDP on 2 ranks: the step time, and the parameter plus Adam-state elements each rank
   holds.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    p.add_argument("--part", choices=["all", "allreduce", "opencl", "ddp", "fsdp"], default="all",
                   help="run one part only")
    return p.parse_args(argv)


def _under_mpi() -> bool:
    return any(int(os.environ.get(v, "1") or 1) > 1 for v in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"))


def _launch(argv: list[str]) -> int:
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    mpiexec = here if os.path.exists(here) else "mpiexec"
    env = dict(os.environ)
    env.setdefault("POCL_DEVICES", "pthread pthread")
    env.setdefault("HYDRA_LAUNCHER", "fork")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")  # one BLAS thread per rank, as the launcher gives
    cmd = [mpiexec, "-n", "2", sys.executable, "-m", "benchmarks.distributed", *argv]
    return subprocess.call(cmd, env=env)


def _timed(comm: Any, fn: Any, number: int, repeat: int) -> float:
    """Best seconds per call over ``repeat`` loops of ``number`` calls, all ranks starting
    together and the slowest rank's time counted."""
    best = float("inf")
    for _ in range(repeat):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = comm.allreduce(time.perf_counter() - t0, op=_max())
        best = min(best, dt / number)
    return best


def _max() -> Any:
    from mpi4py import MPI

    return MPI.MAX


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if not _under_mpi():
        return _launch(list(argv if argv is not None else sys.argv[1:]))
    import portagrad as pg
    import portagrad.distributed as dist

    dist.init_process_group("mpi")
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    lead = rank == 0

    def say(*a: Any) -> None:
        if lead:
            print(*a, flush=True)

    say(f"{comm.Get_size()} ranks, {MPI.Get_library_version().splitlines()[0].strip()}")
    repeat = 3 if args.quick else 5
    kib = [1, 16, 256, 4096, 65536] if args.quick else [1, 4, 16, 64, 256, 1024, 4096, 16384,
                                                        65536, 262144]
    world_pg = dist.group.WORLD
    assert world_pg is not None
    if args.part in ("all", "allreduce"):
        _allreduce(comm, say, world_pg, kib, repeat)
    if args.part in ("all", "opencl") and pg.opencl.is_available():
        _opencl(comm, say, rank, args.quick, repeat)
    if args.part in ("all", "ddp"):
        _ddp(comm, say, lead, args.quick, repeat)
    if args.part in ("all", "fsdp"):
        _fsdp(comm, say, args.quick, repeat)
    dist.destroy_process_group()
    return 0


def _allreduce(comm: Any, say: Any, world_pg: Any, kib: list[int], repeat: int) -> None:
    import portagrad as pg
    import portagrad.distributed as dist
    from mpi4py import MPI

    say("\nall_reduce SUM float32, cpu tensors: bandwidth GB/s (ratio to raw mpi4py)")
    say(f"{'size':>9} {'mpi4py':>9} {'portagrad':>17} {'no header check':>17}")
    for k in kib:
        n = k * 256
        a = np.ones(n, np.float32)
        t = pg.from_numpy(a)
        number = max(1, min(2000, (64 << 20) // (k << 10)))
        raw = ours = bare = float("inf")
        for _ in range(repeat):  # interleaved, so that a busy moment of the machine hits all three
            raw = min(raw, _timed(comm, lambda: comm.Allreduce(MPI.IN_PLACE, a), number, 1))  # noqa: B023
            world_pg._checks = True
            ours = min(ours, _timed(comm, lambda: dist.all_reduce(t), number, 1))  # noqa: B023
            world_pg._checks = False
            bare = min(bare, _timed(comm, lambda: dist.all_reduce(t), number, 1))  # noqa: B023
            world_pg._checks = True
        gb = (k << 10) / 1e9
        size = f"{k} KiB" if k < 1024 else f"{k >> 10} MiB"
        say(f"{size:>9} {gb / raw:9.3f} {gb / ours:9.3f} ({raw / ours:4.2f}x) "
            f"{gb / bare:9.3f} ({raw / bare:4.2f}x)")
    tiny = pg.ones(1)
    world_pg._checks = True
    with_check = _timed(comm, lambda: dist.all_reduce(tiny), 2000, repeat)
    world_pg._checks = False
    without = _timed(comm, lambda: dist.all_reduce(tiny), 2000, repeat)
    world_pg._checks = True
    say(f"header check: one 4-byte all_reduce takes {with_check * 1e6:.1f} us with it, "
        f"{without * 1e6:.1f} us without (+{(with_check - without) * 1e6:.1f} us per collective)")



def _opencl(comm: Any, say: Any, rank: int, quick: bool, repeat: int) -> None:
    import portagrad as pg
    import portagrad.distributed as dist

    if pg.opencl.device_count() >= 1:
        dev = f"opencl:{rank % pg.opencl.device_count()}"
        say(f"\nall_reduce SUM float32 of OpenCL tensors ({dev} on rank {rank}): staging cost")
        say(f"{'size':>9} {'cpu tensor ms':>14} {'opencl ms':>10} {'staging ms':>11}")
        for k in [16, 1024, 16384] if quick else [16, 256, 1024, 4096, 16384, 65536]:
            n = k * 256
            tc = pg.ones(n)
            td = pg.ones(n, device=dev)
            number = max(1, min(200, (16 << 20) // (k << 10)))
            cpu_t = _timed(comm, lambda: dist.all_reduce(tc), number, repeat)  # noqa: B023

            def dev_step(td: Any = td, dev: str = dev) -> None:
                dist.all_reduce(td)
                pg.opencl.synchronize(pg.device(dev).index)

            dev_t = _timed(comm, dev_step, number, repeat)
            size = f"{k} KiB" if k < 1024 else f"{k >> 10} MiB"
            say(f"{size:>9} {cpu_t * 1e3:14.3f} {dev_t * 1e3:10.3f} {(dev_t - cpu_t) * 1e3:11.3f}")
        say(f"pinned host memory held for staging: {dist._staging.pool.allocated >> 20} MiB")



def _ddp(comm: Any, say: Any, lead: bool, quick: bool, repeat: int) -> None:
    """A DDP step against one process on the same per-rank batch."""
    import portagrad as pg
    from portagrad import nn, optim
    from portagrad.nn.parallel import DistributedDataParallel as DDP

    def model() -> Any:
        pg.manual_seed(0)
        layers: list[Any] = [nn.Linear(256, 512), nn.ReLU()]
        for _ in range(6):  # 1 MiB of weights each: one bucket each at bucket_cap_mb=1
            layers += [nn.Linear(512, 512), nn.ReLU()]
        return nn.Sequential(*layers, nn.Linear(512, 10))

    batch = 512  # per rank: backward long enough to hide a reduction behind
    x = pg.randn(batch, 256)
    y = pg.randint(0, 10, (batch,))
    loss_fn = nn.CrossEntropyLoss()
    steps = 10 if quick else 30

    def step_fn(m: Any, opt: Any) -> Any:
        def step() -> None:
            opt.zero_grad()
            loss_fn(m(x), y).backward()
            opt.step()
        return step

    single = model()
    nparams = sum(p.numel() for p in single.parameters())
    single_t = float("inf")
    if lead:
        step = step_fn(single, optim.SGD(single.parameters(), lr=0.01))
        step()
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            single_t = min(single_t, (time.perf_counter() - t0) / steps)
        comm.Ibarrier().Wait()
    else:  # sleep (not spin) while rank 0 measures alone
        req = comm.Ibarrier()
        while not req.Test():
            time.sleep(0.002)
    say(f"\nDDP training step, MLP of {nparams / 1e6:.2f} M parameters, batch {batch} per rank")
    for cap in (25.0, 1.0):
        ddp = DDP(model(), bucket_cap_mb=cap)
        step = step_fn(ddp, optim.SGD(ddp.parameters(), lr=0.01))
        step()
        ddp._reset_ddp_logging_data()
        ddp_t = _timed(comm, lambda: [step() for _ in range(steps)], 1, repeat) / steps  # noqa: B023
        info = ddp._get_ddp_logging_data()
        say(f"bucket_cap_mb={cap:g}: {info['num_buckets']} buckets; step {ddp_t * 1e3:.1f} ms vs "
            f"{single_t * 1e3:.1f} ms alone ({(ddp_t / single_t - 1) * 100:+.0f} %); per backward: "
            f"backward computing {info['avg_backward_compute_time'] * 1e3:.1f} ms, reducing "
            f"{info['avg_backward_comm_time'] * 1e3:.1f} ms of which "
            f"{info['avg_backward_compute_comm_overlap_time'] * 1e3:.1f} ms during the computation "
            f"({info['comm_hidden_fraction'] * 100:.0f} % hidden), then waiting "
            f"{info['avg_backward_wait_time'] * 1e3:.1f} ms")


def _fsdp(comm: Any, say: Any, quick: bool, repeat: int) -> None:
    """An Adam step under fully_shard against DDP on the same per-rank batch."""
    import portagrad as pg
    from portagrad import nn, optim
    from portagrad.distributed.fsdp import fully_shard
    from portagrad.nn.parallel import DistributedDataParallel as DDP

    def model() -> Any:
        pg.manual_seed(0)
        layers: list[Any] = [nn.Linear(256, 512), nn.ReLU()]
        for _ in range(6):
            layers += [nn.Linear(512, 512), nn.ReLU()]
        return nn.Sequential(*layers, nn.Linear(512, 10))

    batch = 512
    x = pg.randn(batch, 256)
    y = pg.randint(0, 10, (batch,))
    loss_fn = nn.CrossEntropyLoss()
    steps = 10 if quick else 30

    def timed(m: Any) -> tuple[float, int]:
        opt = optim.Adam(m.parameters(), lr=1e-3)

        def step() -> None:
            opt.zero_grad()
            loss_fn(m(x), y).backward()
            opt.step()

        step()
        t = _timed(comm, lambda: [step() for _ in range(steps)], 1, repeat) / steps
        held = sum(p.numel() for p in m.parameters()) + sum(
            v.numel() for st in opt.state.values() for k, v in st.items() if k != "step")
        return t, held

    ddp_t, ddp_held = timed(DDP(model()))
    sharded = model()
    for layer in sharded:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fsdp_t, fsdp_held = timed(fully_shard(sharded))
    say(f"\nAdam step of the same MLP on {comm.Get_size()} ranks, batch {batch} per rank: DDP "
        f"{ddp_t * 1e3:.1f} ms, fully_shard {fsdp_t * 1e3:.1f} ms "
        f"({(fsdp_t / ddp_t - 1) * 100:+.0f} %); parameter + Adam-state elements per rank: DDP "
        f"{ddp_held / 1e6:.2f} M, fully_shard {fsdp_held / 1e6:.2f} M")


if __name__ == "__main__":
    sys.exit(main())
