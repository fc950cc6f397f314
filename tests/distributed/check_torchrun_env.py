"""Run by the launcher with torchrun's flags: write this rank's torchrun variables to
``<argv[1]>/env<RANK>_<RESTART>.json``. With ``fail-first``, rank 1 raises on the job's first
attempt, through ``@record`` (which writes its error file), so that the launcher restarts the job."""
from __future__ import annotations

import json
import os
import sys

import portagrad.distributed as dist
from portagrad.distributed.elastic.multiprocessing.errors import record

KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
        "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
        "TORCHELASTIC_USE_AGENT_STORE", "OMP_NUM_THREADS", "PORTAGRAD_DEVICE")


@record
def main() -> None:
    out, mode = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    restart = os.environ["TORCHELASTIC_RESTART_COUNT"]
    seen = {k: os.environ.get(k) for k in KEYS}
    seen.update(mpi_rank=dist.get_rank(), launched=dist.is_torchelastic_launched(),
                node_local_rank=dist.get_node_local_rank(),
                error_file=bool(os.environ.get("TORCHELASTIC_ERROR_FILE")))
    with open(os.path.join(out, f"env{dist.get_rank()}_{restart}.json"), "w") as f:
        json.dump(seen, f)
    if mode == "fail-first" and restart == "0" and dist.get_rank() == 1:
        raise ValueError("the first attempt fails on purpose")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
