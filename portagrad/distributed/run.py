"""``python -m portagrad.distributed.run``: start a data-parallel job (torchrun's role) on MPI.

    python -m portagrad.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m portagrad.distributed.run --nproc-per-node 2 -m portagrad demo
    python -m portagrad.distributed.run --nproc-per-node 4 --hostfile hosts train.py

runs ``mpiexec -n N`` (``-f HOSTFILE`` for several hosts, as any MPI job) on this module's
per-rank bootstrap, which sets the torchrun environment -- ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE`` -- plus ``PORTAGRAD_DEVICE``, the device of the rank:
``opencl:{LOCAL_RANK % count}`` when OpenCL devices are visible (``--device-type cpu`` to opt
out), else ``cpu``; then runs the script. Like torchrun it gives each rank one BLAS/OpenMP thread
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``) unless they are set. An
exception that escapes a rank aborts the whole job with the rank's traceback. When a rank ends
abnormally (killed, or an abort) the launcher names it -- mpiexec gives only its PID -- and
removes the shared-memory files MPICH leaves in ``/dev/shm`` after such an end (the ranks report
theirs at start-up; files on other hosts of a ``--hostfile`` job stay).
"""
from __future__ import annotations

import argparse
import os
import re
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from typing import IO

from ..accelerator._device_module import DeviceModule
from . import _shm
from ._group import abort_job
from ._mpi import mpi

__all__ = ["main", "build_command", "assign_device", "rank_environment"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m portagrad.distributed.run",
                                description="Run a script on N MPI ranks (torchrun for portagrad).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="ranks to start (on each host with --hostfile: MPI places them)")
    p.add_argument("--nnodes", type=int, default=1,
                   help="hosts; the total is nnodes * nproc-per-node ranks (needs --hostfile)")
    p.add_argument("--hostfile", default=None, help="an MPI hostfile, passed to mpiexec -f")
    p.add_argument("--mpiexec", default=None,
                   help="the mpiexec to use (default: the one next to this Python, else on PATH)")
    p.add_argument("--device-type", choices=["auto", "opencl", "cpu"], default="auto",
                   help="auto: opencl when available, else cpu")
    p.add_argument("-m", "--module", action="store_true",
                   help="the target is a module, run as python -m")
    p.add_argument("script", help="the script (or module, with -m) each rank runs")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def _mpiexec(explicit: str | None) -> str:
    if explicit:
        return explicit
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise SystemExit("mpiexec not found: pip install 'portagrad[mpi]' (MPICH from PyPI), or "
                         "install your system's MPI")
    return found


def build_command(argv: Sequence[str]) -> list[str]:
    """The mpiexec command line for the launcher's arguments."""
    a = _parser().parse_args(list(argv))
    if a.nproc_per_node < 1 or a.nnodes < 1:
        raise SystemExit("--nproc-per-node and --nnodes must be at least 1")
    if a.nnodes > 1 and not a.hostfile:
        raise SystemExit("--nnodes > 1 needs --hostfile (the hosts to run on)")
    cmd = [_mpiexec(a.mpiexec), "-n", str(a.nproc_per_node * a.nnodes)]
    if a.hostfile:
        cmd += ["-f", a.hostfile, "-ppn", str(a.nproc_per_node)]
    cmd += [sys.executable, "-m", "portagrad.distributed.run", "--_rank", a.device_type]
    cmd += ["-m", a.script] if a.module else [a.script]
    return cmd + list(a.script_args)


def assign_device(local_rank: int, device_type: str = "auto") -> str:
    """The device of local rank ``local_rank``: ``opencl:{local_rank % count}`` or ``cpu``."""
    if device_type in ("auto", "opencl"):
        ocl = DeviceModule("opencl")
        n = ocl.device_count() if ocl.is_available() else 0
        if n:
            return f"opencl:{local_rank % n}"
        if device_type == "opencl":
            raise RuntimeError("--device-type opencl: no OpenCL device is available")
    return "cpu"


def _rank_main(argv: list[str]) -> int:
    """Inside mpiexec: set the environment of this rank, then run the target."""
    device_type = argv[0]
    module = argv[1] == "-m"
    target_args = argv[2:] if module else argv[1:]
    MPI = mpi()
    world = MPI.COMM_WORLD
    node = world.Split_type(MPI.COMM_TYPE_SHARED)  # the ranks of this host
    local_rank, local_size = node.Get_rank(), node.Get_size()
    node.Free()
    run_dir = os.environ.pop(_shm.RUN_DIR_VAR, None)
    if run_dir:
        _shm.report(run_dir, world.Get_rank())
    os.environ.update(RANK=str(world.Get_rank()), WORLD_SIZE=str(world.Get_size()),
                      LOCAL_RANK=str(local_rank), LOCAL_WORLD_SIZE=str(local_size))
    try:
        os.environ["PORTAGRAD_DEVICE"] = assign_device(local_rank, device_type)
        sys.argv = list(target_args)
        if module:
            runpy.run_module(target_args[0], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target_args[0])))
            runpy.run_path(target_args[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code in (None, 0):
            return 0
        if world.Get_size() > 1:  # a rank that gives up must not leave the others waiting
            sys.stderr.write(f"[rank {world.Get_rank()}] exited with {code!r}: aborting the job\n")
            abort_job(code if isinstance(code, int) else 1)
        raise
    except BaseException:
        sys.stderr.write(f"[rank {world.Get_rank()}] " + traceback.format_exc())
        sys.stderr.write(f"[rank {world.Get_rank()}] aborting the MPI job\n")
        if world.Get_size() > 1:
            abort_job(1)
        raise
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--_rank"]:
        return _rank_main(argv[1:])
    cmd = build_command(argv)
    run_dir = tempfile.mkdtemp(prefix="portagrad-run-")
    try:
        env = rank_environment(os.environ)
        env[_shm.RUN_DIR_VAR] = run_dir  # where each rank reports its pid and MPICH's files
        with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE) as proc:  # (waits on exit)
            tail = _forward(proc.stdout)
            code = proc.wait()
        if code != 0:
            _after_failure(run_dir, tail)
        return code
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _forward(stream: IO[bytes] | None) -> str:
    """Copy mpiexec's output (the ranks' and its own) to ours as it comes; return the last 64 KiB,
    where mpiexec's report of a failed rank is."""
    assert stream is not None
    binary = getattr(sys.stdout, "buffer", None)  # (None: a text stream put in by the caller)
    tail = b""
    fd = stream.fileno()
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        if binary is not None:
            binary.write(chunk)
            binary.flush()
        else:
            sys.stdout.write(chunk.decode(errors="replace"))
            sys.stdout.flush()
        tail = (tail + chunk)[-65536:]
    return tail.decode(errors="replace")


# mpiexec's (MPICH Hydra's) report of a rank that ended abnormally
_BAD_END = re.compile(r"PID (\d+) RUNNING AT (\S+)\s*\n=\s*EXIT CODE: (\d+)")
_EXIT_STRING = re.compile(r"EXIT STRING: [^\n]*\(signal (\d+)\)")


def _after_failure(run_dir: str, tail: str) -> None:
    """Name the rank mpiexec reports failed (it gives only a PID), and remove the shared-memory
    files of MPICH that the ranks of this host reported, which an abnormal end leaves behind."""
    reports = _shm.read_reports(run_dir)
    killed = _EXIT_STRING.search(tail)
    for m in _BAD_END.finditer(tail):
        pid, host, code = int(m.group(1)), m.group(2), int(m.group(3))
        who = reports.get(pid)
        if who is None:
            continue
        how = f"ended with exit code {code}"
        if killed is not None:
            n = int(killed.group(1))
            name = signal.Signals(n).name if n in signal.valid_signals() else "?"
            how = f"was killed by signal {n} ({name})"
        sys.stderr.write(f"[portagrad.distributed.run] rank {who[0]} (PID {pid} on {host}) {how}"
                         f"\n")
    here = socket.gethostname()
    files = sorted({f for _, host, fs in reports.values() if host == here for f in fs})
    _shm.remove(files)


# BLAS thread pools: one thread per rank unless the user says otherwise (torchrun sets
# OMP_NUM_THREADS=1 too). N ranks of a host each spinning up a pool of one thread per core
# oversubscribe the cores many times, and a training step becomes several times slower.
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def rank_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` plus one BLAS/OpenMP thread per rank where ``base`` does not choose."""
    env = dict(base)
    for var in _THREAD_VARS:
        env.setdefault(var, "1")
    return env


if __name__ == "__main__":
    sys.exit(main())
