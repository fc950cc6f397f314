"""MPICH's shared-memory segment files, and removing them when a job ends abnormally.

MPICH maps a file ``/dev/shm/mpich_shm_*`` (about 2 MiB) into the ranks of each host for their
intra-host messages and removes it in ``MPI_Finalize``. A job that ends otherwise -- ``MPI_Abort``,
a rank killed -- leaves the file behind, and ``/dev/shm`` (memory) fills up over many failed runs.
A rank can name the files it maps (``/proc/self/maps``, Linux); they are safe to unlink once every
rank of the host has mapped them (the mappings stay valid), which :func:`remove` does just before
an abort, and the launcher does for the files its ranks reported (:func:`report`) when a rank was
killed.
"""
from __future__ import annotations

import os
import socket

__all__ = ["mapped_files", "remove", "report", "read_reports", "RUN_DIR_VAR"]

RUN_DIR_VAR = "PORTAGRAD_RUN_DIR"  # set by the launcher: where ranks report their pid and files
_PREFIX = "/dev/shm/mpich_shm_"


def mapped_files() -> list[str]:
    """The MPICH shared-memory files this process maps (empty where ``/proc`` is missing)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[-1].strip() for line in f if _PREFIX in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith(_PREFIX) and not p.endswith("(deleted)"))


def remove(paths: list[str]) -> list[str]:
    """Unlink ``paths`` that still exist; returns those removed."""
    gone = []
    for p in paths:
        try:
            os.unlink(p)
            gone.append(p)
        except OSError:  # already removed (by MPICH or another rank), or not ours
            pass
    return gone


def report(run_dir: str, rank: int) -> None:
    """Write ``rank pid host`` and the mapped files to ``run_dir/rank<rank>.txt`` for the launcher."""
    lines = [f"{rank} {os.getpid()} {socket.gethostname()}", *mapped_files()]
    tmp = os.path.join(run_dir, f".rank{rank}.txt")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, os.path.join(run_dir, f"rank{rank}.txt"))


def read_reports(run_dir: str) -> dict[int, tuple[int, str, list[str]]]:
    """``pid -> (rank, host, files)`` from the reports in ``run_dir``."""
    out: dict[int, tuple[int, str, list[str]]] = {}
    try:
        names = [n for n in os.listdir(run_dir) if n.startswith("rank") and n.endswith(".txt")]
    except OSError:
        return out
    for name in names:
        try:
            with open(os.path.join(run_dir, name)) as f:
                first, *files = f.read().splitlines()
            rank, pid, host = first.split(" ", 2)
            out[int(pid)] = (int(rank), host, [p for p in files if p.startswith(_PREFIX)])
        except (OSError, ValueError):
            continue
    return out
