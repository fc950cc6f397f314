"""The one place mpi4py is imported: lazily, so ``portagrad.distributed`` imports without it."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from typing import Any

__all__ = ["is_available", "mpi", "launched_rank"]

_MPI: Any = None

# The environment mpiexec gives each process: (rank, size) variables of MPICH's Hydra (PMI),
# Open MPI and PMIx launchers.
_RANK_SIZE_VARS = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                   ("PMIX_RANK", "PMIX_SIZE"))

# The init watchdog: a separate process, because MPI_Init holds the GIL (no Python thread runs
# while it waits) and cannot be interrupted. It waits for its stdin to close -- done when MPI_Init
# returns, or by the kernel when this process ends -- and after the limit names the problem and
# kills this process; mpiexec then ends the other ranks.
_WATCHDOG = """\
import os, select, signal, sys
pid, limit, msg = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
if not select.select([0], [], [], limit)[0]:
    sys.stderr.write(msg)
    sys.stderr.flush()
    os.kill(pid, signal.SIGKILL)
"""


def is_available() -> bool:
    """Whether mpi4py (and so an MPI library) can be imported."""
    return _MPI is not None or importlib.util.find_spec("mpi4py") is not None


def launched_rank() -> tuple[int, int] | None:
    """``(rank, size)`` of this process in the job mpiexec started, from its environment, before
    MPI is initialised; ``None`` when no launcher environment is found (a singleton)."""
    for rank_var, size_var in _RANK_SIZE_VARS:
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank is not None and size is not None and rank.isdigit() and size.isdigit():
            return int(rank), int(size)
    return None


def mpi(init_timeout: float | None = None) -> Any:
    """``mpi4py.MPI`` (importing it initialises MPI, with ``MPI_THREAD_MULTIPLE``: the
    communication thread of :class:`~portagrad.distributed.ProcessGroup` calls MPI too).

    ``init_timeout`` (seconds) bounds MPI's initialisation in a job of several processes started
    by mpiexec: there ``MPI_Init`` waits for every rank, forever if one failed before getting
    there (an exception before ``init_process_group``); past the limit this process prints why
    and is killed, and mpiexec ends the job."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py

            mpi4py.rc.thread_level = "multiple"
            watchdog = _start_watchdog(init_timeout)
            try:
                from mpi4py import MPI
            finally:
                if watchdog is not None:
                    watchdog.stdin.close()  # type: ignore[union-attr]
                    watchdog.wait()
        except ImportError as exc:
            raise RuntimeError("portagrad.distributed needs mpi4py and an MPI library: "
                               "pip install 'portagrad[mpi]'") from exc
        _MPI = MPI
    return _MPI


def _start_watchdog(limit: float | None) -> subprocess.Popen | None:
    launched = launched_rank()
    if limit is None or launched is None or launched[1] < 2 or "mpi4py.MPI" in sys.modules:
        return None
    rank, size = launched
    msg = (f"[rank {rank}] MPI initialisation did not complete within {limit:g} s (the timeout of "
           f"init_process_group): another of the {size} ranks failed or exited before calling "
           f"init_process_group, or never called it; ending this rank so that mpiexec ends the "
           f"job\n")
    return subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(limit), msg],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
