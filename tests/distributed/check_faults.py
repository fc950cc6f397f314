"""Run under ``mpiexec -n 2``; the first argument picks the fault:

``mismatch``: the ranks call collectives with different shapes, dtypes or collectives, and a recv
with the wrong dtype: every rank gets a RuntimeError naming each rank's call, the tensors are left
untouched, and the group still works afterwards (prints ``ok`` lines, exits 0).
``raise``: rank 1 raises before a collective: the job must end (MPI_Abort) naming rank 1.
``raise-early``: rank 1 raises before init_process_group: rank 0, waiting in MPI's
initialisation, must give up after the ``timeout`` and end the job.
``hang``: rank 1 never arrives: rank 0's collective times out (``timeout`` of
init_process_group) with an error naming rank 0 and the collective, and the job ends.
``kill``: rank 1 is killed by SIGKILL: the job ends.
"""
from __future__ import annotations

import datetime
import os
import signal
import sys
import time

import numpy as np

import portagrad as pg
import portagrad.distributed as dist
from portagrad.distributed import _shm


def mismatch(rank: int) -> list[str]:
    done = []

    def expect_error(name: str, call: object, *tensors: pg.Tensor, needle: str) -> None:
        before = [t.numpy().copy() for t in tensors]
        try:
            call()  # type: ignore[operator]
        except RuntimeError as exc:
            msg = str(exc)
            assert needle in msg and "rank 0" in msg and "rank 1" in msg, msg
            for t, b in zip(tensors, before):
                assert np.array_equal(t.numpy(), b), f"{name}: tensor changed"
            done.append(name)
            if rank == 0 and name.startswith("shape"):
                print(msg, flush=True)
            return
        raise AssertionError(f"{name}: no error")

    t = pg.ones(3 + rank)
    expect_error("shape mismatch in all_reduce", lambda: dist.all_reduce(t), t,
                 needle="shape (3,)")
    t = pg.ones(3, dtype=pg.float32 if rank == 0 else pg.int64)
    expect_error("dtype mismatch in broadcast", lambda: dist.broadcast(t, 0), t, needle="int64")
    t = pg.ones(3)
    other = (lambda: dist.all_reduce(t)) if rank == 0 else (lambda: dist.broadcast(t, 0))
    expect_error("different collectives", other, t, needle="broadcast")
    w = pg.ones(2, 2)
    work = dist.all_reduce(w if rank == 0 else pg.ones(4), async_op=True)
    try:
        work.wait()
        raise AssertionError("async mismatch: no error")
    except RuntimeError as exc:
        assert "mismatched collective" in str(exc), exc
        done.append("mismatch in an async all_reduce raises at wait()")
    if rank == 0:
        dist.send(pg.ones(3), 1)
        done.append("send of a mismatched message completes")
    else:
        r = pg.zeros(3, dtype=pg.int64)
        expect_error("recv into a tensor of another dtype", lambda: dist.recv(r, 0), r,
                     needle="float32")
    t = pg.ones(3) * (rank + 1)
    dist.all_reduce(t)
    assert t.tolist() == [3.0, 3.0, 3.0]
    done.append("the group works after the mismatches")
    return done


def main() -> int:
    mode = sys.argv[1]
    timeout = datetime.timedelta(seconds=float(sys.argv[2]) if len(sys.argv) > 2 else 60)
    if mode == "raise-early" and os.environ.get("PMI_RANK") == "1":
        raise ValueError("rank 1 fails before init_process_group")
    dist.init_process_group("mpi", timeout=timeout)
    rank = dist.get_rank()
    t = pg.ones(4)
    if mode == "mismatch":
        done = mismatch(rank)
        dist.destroy_process_group()
        if rank == 0:
            print("\n".join(f"ok {n}" for n in done))
            print(f"checks: {len(done)}")
        return 0
    dist.all_reduce(t)  # everyone is up
    if rank == 0:  # the test checks that an abort removes them
        print("shm files: " + " ".join(_shm.mapped_files()), flush=True)
    dist.barrier()
    if rank == 1:
        if mode == "raise":
            raise ValueError("rank 1 fails on purpose")
        if mode == "hang":
            time.sleep(120)
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(t)
    print(f"rank {rank} was not stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
