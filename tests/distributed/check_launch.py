"""Run by the launcher: write what it set up for this rank to ``<argv[1]>/rank<N>.txt`` (files,
not stdout, where the ranks' lines could interleave)."""
from __future__ import annotations

import os
import sys

import portagrad.distributed as dist

dist.init_process_group()
keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "PORTAGRAD_DEVICE")
line = " ".join(f"{k}={os.environ.get(k)}" for k in keys) + f" mpi_rank={dist.get_rank()} " \
    f"args={sys.argv[2:]}"
with open(os.path.join(sys.argv[1], f"rank{dist.get_rank()}.txt"), "w") as f:
    f.write(line)
dist.destroy_process_group()
