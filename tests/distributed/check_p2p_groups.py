"""Run under ``mpiexec -n N`` (N >= 2): point-to-point messages and overlapping groups.

- an asynchronous collective on one group overlapping synchronous ones on another group of the
  same size (the header check of each must see its own call, not the other thread's);
- several ``irecv`` from one peer posted before any is waited on match the sends in posting
  order (per tag), with different shapes and dtypes;
- 16-bit floating collectives (bfloat16, float16): values against a float32 reference rounded
  once.

Argument: the device (``opencl``: ``opencl:{rank % count}``). Prints ``ok`` lines and
``checks: N`` on rank 0.
"""
from __future__ import annotations

import sys

import numpy as np

import portagrad as pg
import portagrad.distributed as dist


def main() -> int:
    kind = sys.argv[1]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"opencl:{rank % pg.opencl.device_count()}" if kind.startswith("opencl") else kind
    done: list[str] = []

    def t_of(a: np.ndarray) -> pg.Tensor:
        return pg.tensor(a, device=dev)

    # ---- an async collective on group A while sync ones run on WORLD (same size)
    other = dist.new_group(list(range(world)))
    total = world * (world + 1) / 2
    for i in range(60):
        a = t_of(np.full(64, float(rank + 1), np.float32))
        work = dist.all_reduce(a, group=other, async_op=True)
        for _ in range(3):
            b = t_of(np.full(3, float(2 * rank + i), np.float64))
            dist.all_reduce(b)
            want = float(sum(2 * r + i for r in range(world)))
            assert np.array_equal(b.cpu().numpy(), np.full(3, want)), (i, b)
        work.wait()
        assert np.array_equal(a.cpu().numpy(), np.full(64, total, np.float32)), (i, a)
    done.append("async all_reduce on a group overlapping sync ones on WORLD")

    # ---- several irecv from one peer, posted before any wait: matched in posting order
    a_np = np.arange(12, dtype=np.float32).reshape(3, 4) + 0.5
    b_np = np.arange(5, dtype=np.int64) * 7 - 3
    c_np = np.linspace(-1, 1, 9).reshape(9)
    for tagged in (False, True):
        tag_a, tag_b = (5, 9) if tagged else (0, 0)
        if rank == 0:
            works = [dist.isend(t_of(a_np), 1, tag=tag_a), dist.isend(t_of(b_np), 1, tag=tag_b),
                     dist.isend(t_of(c_np), 1, tag=tag_a)]
            for w in works:
                w.wait()
        elif rank == 1:
            ra, rb = t_of(np.zeros((3, 4), np.float32)), t_of(np.zeros(5, np.int64))
            rc = t_of(np.zeros(9, np.float64))
            # posted A, B, C; waited in the reverse order
            works = [dist.irecv(ra, 0, tag=tag_a), dist.irecv(rb, 0, tag=tag_b),
                     dist.irecv(rc, 0, tag=tag_a)]
            for w in reversed(works):
                w.wait()
            assert np.array_equal(ra.cpu().numpy(), a_np), ra
            assert np.array_equal(rb.cpu().numpy(), b_np), rb
            assert np.array_equal(rc.cpu().numpy(), c_np), rc
            assert [w.source_rank() for w in works] == [0, 0, 0]
        # a tagged message overtakes an untagged one posted first on the receiver
        if tagged and world > 1:
            if rank == 0:
                dist.send(t_of(b_np), 1, tag=2)
                dist.send(t_of(a_np), 1, tag=1)
            elif rank == 1:
                ra, rb = t_of(np.zeros((3, 4), np.float32)), t_of(np.zeros(5, np.int64))
                wa = dist.irecv(ra, 0, tag=1)
                wb = dist.irecv(rb, 0, tag=2)
                wa.wait()
                wb.wait()
                assert np.array_equal(ra.cpu().numpy(), a_np), ra
                assert np.array_equal(rb.cpu().numpy(), b_np), rb
        dist.barrier()
        done.append(f"irecv x3 from one peer before waiting, {'with' if tagged else 'no'} tags")
    # from any source, two messages: each irecv gets one whole message
    if rank == 1:
        ra, rb = t_of(np.zeros(4, np.float32)), t_of(np.zeros(4, np.float32))
        wa, wb = dist.irecv(ra), dist.irecv(rb)
        wb.wait()
        wa.wait()
        got = sorted([ra.cpu().numpy().tolist(), rb.cpu().numpy().tolist()])
        assert got == [[0.0] * 4, [2.0] * 4] if world > 2 else got == [[0.0] * 4, [0.0] * 4], got
    elif rank in (0, 2):
        dist.send(t_of(np.full(4, float(rank), np.float32)), 1)
        if world == 2:
            dist.send(t_of(np.full(4, 0.0, np.float32)), 1)
    dist.barrier()
    done.append("two irecv from any source")

    print_done(rank, done)
    dist.destroy_process_group()
    return 0


def print_done(rank: int, done: list[str]) -> None:
    if rank == 0:
        print("\n".join(f"ok {n}" for n in done))
        print(f"checks: {len(done)}")


if __name__ == "__main__":
    sys.exit(main())
