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
import json
import os
import re
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ..accelerator._device_module import DeviceModule
from . import _shm
from ._group import abort_job
from ._mpi import mpi

__all__ = ["main", "build_command", "assign_device", "rank_environment", "job_environment",
           "rank_variables", "TORCHRUN_FLAGS"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m portagrad.distributed.run",
                                description="Run a script on N MPI ranks (torchrun for portagrad).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="ranks to start (on each host with --hostfile: MPI places them)")
    p.add_argument("--nnodes", type=_nnodes, default=1,
                   help="hosts; the total is nnodes * nproc-per-node ranks (needs --hostfile); "
                        "torchrun's 'N:N' is accepted, an elastic range 'M:N' is not")
    p.add_argument("--hostfile", default=None, help="an MPI hostfile, passed to mpiexec -f")
    p.add_argument("--mpiexec", default=None,
                   help="the mpiexec to use (default: the one next to this Python, else on PATH)")
    p.add_argument("--device-type", choices=["auto", "opencl", "cpu"], default="auto",
                   help="auto: opencl when available, else cpu")
    p.add_argument("-m", "--module", action="store_true",
                   help="the target is a module, run as python -m")
    _torchrun_flags(p)
    p.add_argument("script", help="the script (or module, with -m) each rank runs")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


# torchrun's own flags are accepted too (the table below; docs/distributed.md):
# ``--standalone``, ``--rdzv-*``, ``--master-addr``/``--master-port``, ``--node-rank 0``,
# ``--role``, ``--max-restarts N`` (the whole job is started again, up to N times, with
# ``TORCHELASTIC_RESTART_COUNT`` counting), ``--monitor-interval``, ``--run-path``,
# ``--no-python``, ``--log-dir`` (each rank's ``TORCHELASTIC_ERROR_FILE``, where ``@record``
# writes); each rank gets the environment torchrun gives (``GROUP_RANK``, ``ROLE_*``,
# ``MASTER_ADDR``/``MASTER_PORT``, ``TORCHELASTIC_*``...). What MPI cannot do -- elastic node
# ranges, one launcher per node, output redirection -- is refused with the reason.

#: torchrun's flags, each accepted under its two spellings, and what becomes of it here.
TORCHRUN_FLAGS = {
    "--standalone": "one host; the run id is a fresh uuid (as torchrun's)",
    "--rdzv-backend": "recorded: MPI's process manager is the rendezvous",
    "--rdzv-endpoint": "host:port gives MASTER_ADDR/MASTER_PORT unless those flags are given",
    "--rdzv-id": "TORCHELASTIC_RUN_ID (default 'none', as torchrun's)",
    "--rdzv-conf": "recorded: MPI's process manager is the rendezvous",
    "--master-addr": "MASTER_ADDR (default 127.0.0.1)",
    "--master-port": "MASTER_PORT (default 29500)",
    "--node-rank": "0 only: one launcher starts every host's ranks (with --hostfile)",
    "--role": "ROLE_NAME (default 'default')",
    "--max-restarts": "on a failure the whole job starts again, up to N times",
    "--monitor-interval": "the pause, in seconds, before a restart",
    "--start-method": "recorded: mpiexec starts the ranks",
    "--run-path": "the script runs with runpy.run_path in the rank's interpreter (always so)",
    "--no-python": "the target is an executable, run with the rank's environment",
    "--log-dir": "each rank's TORCHELASTIC_ERROR_FILE, LOG_DIR/RUN_ID/attempt_K/RANK/"
                 "error.json (default: a temporary folder, removed on success); the first "
                 "failure is reported",
}


_REFUSED = {"redirects": "mpiexec forwards every rank's output to this terminal",
            "tee": "mpiexec forwards every rank's output to this terminal",
            "local_ranks_filter": "mpiexec forwards every rank's output to this terminal",
            "local_addr": "MPI's process manager connects the ranks"}


def _nnodes(text: str) -> int:
    lo, sep, hi = str(text).partition(":")
    try:
        n, m = int(lo), int(hi) if sep else int(lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--nnodes must be N or N:N, got {text!r}") from None
    if n != m:
        raise argparse.ArgumentTypeError(
            f"--nnodes {text}: elastic node ranges are not supported (an MPI job has a fixed "
            f"number of ranks); give one number")
    return n


def _torchrun_flags(p: argparse.ArgumentParser) -> None:
    def both(name: str, **kw: Any) -> None:
        alias = "--" + name[2:].replace("-", "_")
        p.add_argument(*dict.fromkeys([name, alias]), **kw)  # (one spelling if they agree)

    p.add_argument("--standalone", action="store_true", help=TORCHRUN_FLAGS["--standalone"])
    both("--rdzv-backend", default="static", help=TORCHRUN_FLAGS["--rdzv-backend"])
    both("--rdzv-endpoint", default="", help=TORCHRUN_FLAGS["--rdzv-endpoint"])
    both("--rdzv-id", default="none", help=TORCHRUN_FLAGS["--rdzv-id"])
    both("--rdzv-conf", default="", help=TORCHRUN_FLAGS["--rdzv-conf"])
    both("--master-addr", default=None, help=TORCHRUN_FLAGS["--master-addr"])
    both("--master-port", type=int, default=None, help=TORCHRUN_FLAGS["--master-port"])
    both("--node-rank", type=int, default=0, help=TORCHRUN_FLAGS["--node-rank"])
    p.add_argument("--role", default="default", help=TORCHRUN_FLAGS["--role"])
    both("--max-restarts", type=int, default=0, help=TORCHRUN_FLAGS["--max-restarts"])
    both("--monitor-interval", type=float, default=0.1, help=TORCHRUN_FLAGS["--monitor-interval"])
    both("--start-method", choices=["spawn", "fork", "forkserver"], default="spawn",
         help=TORCHRUN_FLAGS["--start-method"])
    both("--run-path", action="store_true", help=TORCHRUN_FLAGS["--run-path"])
    both("--no-python", action="store_true", help=TORCHRUN_FLAGS["--no-python"])
    both("--log-dir", default=None, help=TORCHRUN_FLAGS["--log-dir"])
    for flag, why in _REFUSED.items():
        both("--" + flag.replace("_", "-"), default=None, help=f"refused: {why}")


def _refusals(a: argparse.Namespace) -> None:
    """``SystemExit`` naming the reason for a torchrun flag MPI cannot honour."""
    for flag, why in _REFUSED.items():
        if getattr(a, flag) is not None:
            raise SystemExit(f"--{flag.replace('_', '-')} is not supported: {why}")
    if a.node_rank != 0:
        raise SystemExit(f"--node-rank {a.node_rank}: run the launcher once, on one host, with "
                         f"--hostfile listing every host: MPI starts the ranks of all of them")
    if a.standalone and a.nnodes != 1:
        raise SystemExit("--standalone runs on one host: drop --nnodes (or --standalone)")
    if a.max_restarts < 0:
        raise SystemExit(f"--max-restarts must be at least 0, got {a.max_restarts}")
    if a.no_python and a.module:
        raise SystemExit("Don't use both the '--no-python' flag and the '--module' flag at the "
                         "same time.")


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
    _refusals(a)
    if a.nproc_per_node < 1 or a.nnodes < 1:
        raise SystemExit("--nproc-per-node and --nnodes must be at least 1")
    if a.nnodes > 1 and not a.hostfile:
        raise SystemExit("--nnodes > 1 needs --hostfile (the hosts to run on)")
    cmd = [_mpiexec(a.mpiexec), "-n", str(a.nproc_per_node * a.nnodes)]
    if a.hostfile:
        cmd += ["-f", a.hostfile, "-ppn", str(a.nproc_per_node)]
    cmd += [sys.executable, "-m", "portagrad.distributed.run", "--_rank", a.device_type]
    cmd += ["-m", a.script] if a.module else ["--_exec", a.script] if a.no_python else [a.script]
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


def rank_variables(rank: int, world: int, local_rank: int, local_world: int, group_rank: int,
                   group_world: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The per-rank variables torchrun sets (one role, so ``ROLE_RANK`` is ``RANK``), and
    ``TORCHELASTIC_ERROR_FILE`` when the launcher was given ``--log-dir``."""
    env = {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(local_rank),
           "LOCAL_WORLD_SIZE": str(local_world), "GROUP_RANK": str(group_rank),
           "GROUP_WORLD_SIZE": str(group_world), "ROLE_RANK": str(rank),
           "ROLE_WORLD_SIZE": str(world)}
    errors = (os.environ if base is None else base).get(_ERROR_DIR)
    if errors:
        folder = os.path.join(errors, str(rank))
        os.makedirs(folder, exist_ok=True)
        env["TORCHELASTIC_ERROR_FILE"] = os.path.join(folder, "error.json")
    return env


def _host_index(world: Any, MPI: Any) -> tuple[int, int]:
    """``(group_rank, group_world)``: the index of this host among the job's hosts, ordered by
    their first rank, and the number of hosts (collectives over ``world``)."""
    node = world.Split_type(MPI.COMM_TYPE_SHARED)  # the ranks of this host
    first = node.bcast(world.Get_rank() if node.Get_rank() == 0 else None, root=0)
    node.Free()
    firsts = sorted(r for r in world.allgather(first if first == world.Get_rank() else None)
                    if r is not None)
    return firsts.index(first), len(firsts)


def _exec_main(device_type: str, target: list[str]) -> int:
    """``--no-python``: set this rank's variables from the process manager's (without starting
    MPI here: the program may be an MPI program itself) and replace this process by ``target``."""
    for names in (("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),  # MPICH
                  ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                   "OMPI_COMM_WORLD_LOCAL_SIZE")):  # Open MPI
        if all(n in os.environ for n in names):
            rank, world, local_rank, local_world = (int(os.environ[n]) for n in names)
            break
    else:
        raise SystemExit("--no-python: the process manager set none of PMI_RANK/MPI_LOCALRANKID "
                         "(MPICH) or OMPI_COMM_WORLD_RANK/..._LOCAL_RANK (Open MPI)")
    # mpiexec places ranks in blocks of the same size on each host
    os.environ.update(rank_variables(rank, world, local_rank, local_world,
                                     rank // local_world, max(world // local_world, 1)))
    os.environ["PORTAGRAD_DEVICE"] = assign_device(local_rank, device_type)
    try:
        os.execvp(target[0], target)
    except OSError as exc:
        raise SystemExit(f"--no-python: cannot run {target[0]!r}: {exc}") from None
    return 1  # (not reached: execvp replaces the process)


def _rank_main(argv: list[str]) -> int:
    """Inside mpiexec: set the environment of this rank, then run the target."""
    device_type = argv[0]
    if argv[1] == "--_exec":
        return _exec_main(device_type, argv[2:])
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
    # and the rest of torchrun's variables
    os.environ.update(rank_variables(world.Get_rank(), world.Get_size(), local_rank, local_size,
                                     *_host_index(world, MPI)))
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
    a = _parser().parse_args(argv)
    run_id = str(uuid.uuid4()) if a.standalone else a.rdzv_id
    # as torchrun, error files go to a temporary folder without --log-dir (removed on success),
    # so that the rank that failed first is always named
    scratch = None if a.log_dir else tempfile.mkdtemp(prefix="portagrad_run_")
    log_dir = a.log_dir or scratch
    rc = 0
    for attempt in range(a.max_restarts + 1):
        env = rank_environment(os.environ)
        env.update(job_environment(a, attempt, run_id, log_dir))
        rc = _launch_once(cmd, env)
        if rc == 0:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            return 0
        _report_failure(env.get(_ERROR_DIR))
        if attempt < a.max_restarts:
            sys.stderr.write(f"[portagrad.distributed.run] the job failed (exit code {rc}): "
                             f"starting it again (restart {attempt + 1} of "
                             f"{a.max_restarts})\n")
            time.sleep(a.monitor_interval)
    return rc


def _launch_once(cmd: list[str], env: dict[str, str]) -> int:
    """One attempt of the job: mpiexec, to its end; its exit code. When it fails, the rank
    mpiexec reports by PID is named, and the shared-memory files MPICH leaves after an abnormal
    end are removed (those the ranks of this host reported at start-up)."""
    run_dir = tempfile.mkdtemp(prefix="portagrad-shm-")
    try:
        env = dict(env)
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


_ERROR_DIR = "PORTAGRAD_RUN_ERROR_DIR"  # the launcher tells the ranks where error files go


def job_environment(a: argparse.Namespace, restart_count: int, run_id: str,
                    log_dir: str | None = None) -> dict[str, str]:
    """The variables torchrun gives every rank of attempt ``restart_count`` of the job; error
    files go under ``log_dir`` (default ``--log-dir``; none without either)."""
    host, _, port = a.rdzv_endpoint.partition(":")
    addr = a.master_addr or host or _first_host(a.hostfile) or "127.0.0.1"
    env = {"MASTER_ADDR": addr,
           "MASTER_PORT": str(a.master_port if a.master_port is not None else port or 29500),
           "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_RESTART_COUNT": str(restart_count),
           "TORCHELASTIC_MAX_RESTARTS": str(a.max_restarts),
           "TORCHELASTIC_USE_AGENT_STORE": "False",  # no store: MPI connects the ranks
           "ROLE_NAME": a.role}
    log_dir = log_dir or a.log_dir
    if log_dir:
        env[_ERROR_DIR] = os.path.abspath(os.path.join(log_dir, run_id,
                                                       f"attempt_{restart_count}"))
    return env


def _first_host(hostfile: str | None) -> str | None:
    if not hostfile or not os.path.exists(hostfile):
        return None
    with open(hostfile) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                return line.split(":")[0].split()[0]
    return None


def _report_failure(folder: str | None) -> None:
    """Name the rank that failed first, from the error files ``@record`` wrote."""
    if not folder or not os.path.isdir(folder):
        return
    found = []
    for name in os.listdir(folder):
        path = os.path.join(folder, name, "error.json")
        try:
            with open(path) as f:
                msg = json.load(f)["message"]
            found.append((int(msg["extraInfo"]["timestamp"]), int(name), msg["message"], path))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a rank without an error file (or a torn one) is not the root cause
    if found:
        _, first, text, where = min(found)
        sys.stderr.write(f"[portagrad.distributed.run] root cause (first failure): rank {first}: "
                         f"{text} (see {where})\n")


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
