"""Run by the launcher on 2 ranks: rank 0 prints the MPICH shared-memory files it maps, then
rank 1 is killed (SIGKILL) while rank 0 waits in a collective; the launcher must name rank 1 and
leave none of those files behind."""
from __future__ import annotations

import os
import signal
import sys

import portagrad as pg
import portagrad.distributed as dist
from portagrad.distributed import _shm

dist.init_process_group()
rank = dist.get_rank()
if rank == 0:
    print("shm files: " + " ".join(_shm.mapped_files()), flush=True)
dist.barrier()
if rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
dist.all_reduce(pg.ones(2))
print(f"rank {rank} was not stopped", flush=True)
sys.exit(0)
