"""portagrad.distributed on MPI: each test launches ``mpiexec -n 2`` (or 3) on a script under
``tests/distributed/`` that runs many checks in one launch (each launch costs an interpreter and an
import per rank), with a timeout.

The device fixture picks the backend: ``cpu``, or ``opencl:N`` meaning one OpenCL device per rank
(``opencl:{rank % count}``). Without mpi4py or mpiexec these tests skip with the reason -- except on
CI (``CI`` set) and in tox's numpy and opencl environments (``PORTAGRAD_REQUIRE_MPI``), where a
missing MPI fails them: ``pip install 'portagrad[mpi]'`` provides both.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

import portagrad as pg
from portagrad import demo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "distributed")


def _mpiexec() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = here if os.path.exists(here) else shutil.which("mpiexec")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        found = None
    if found is None:
        why = "mpi4py or mpiexec is not installed (pip install 'portagrad[mpi]')"
        if os.environ.get("CI") or os.environ.get("PORTAGRAD_REQUIRE_MPI"):
            pytest.fail(f"MPI is required here (CI or PORTAGRAD_REQUIRE_MPI set): {why}")
        pytest.skip(why)
    return found


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("POCL_DEVICES", "pthread pthread")
    # MPICH's Hydra: start local ranks by fork (no ssh), talk over the loopback interface, so
    # that a machine without a network (a CI container) runs the jobs too
    env.setdefault("HYDRA_LAUNCHER", "fork")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")  # one BLAS thread per rank, as the launcher gives
    env.setdefault("HYDRA_IFACE", "lo")
    env.pop("PORTAGRAD_DEVICE", None)
    return env


def _declines(device: str, dtype: str) -> bool:
    """Whether ``device``'s backend declines ``dtype`` (raises DTypeError), as a backend over
    array-api-strict declines the 16-bit floats."""
    from portagrad.errors import DTypeError

    try:
        (pg.zeros(1, dtype=getattr(pg, dtype), device=device) + 1).cpu()
    except DTypeError:
        return True
    return False


def mpirun(n: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``mpiexec -n n python args...`` with a timeout; stdin closed (CI has none)."""
    cmd = [_mpiexec(), "-n", str(n), sys.executable, *args]
    return subprocess.run(cmd, env=_env(), cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def launch(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m portagrad.distributed.run args...`` (the launcher starts mpiexec itself)."""
    _mpiexec()
    cmd = [sys.executable, "-m", "portagrad.distributed.run", *args]
    return subprocess.run(cmd, env=_env(), cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def _kind(device: str) -> str:
    return "opencl" if device.startswith("opencl") else device


def _checks(proc: subprocess.CompletedProcess) -> int:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    m = re.search(r"checks: (\d+)", proc.stdout)
    assert m, proc.stdout
    return int(m.group(1))


@pytest.mark.parametrize("ranks", [2, 3])
def test_collectives_against_numpy(device, ranks):
    """Every collective, ReduceOp and dtype, on every rank count, with async variants."""
    n = _checks(mpirun(ranks, os.path.join(SCRIPTS, "check_collectives.py"), _kind(device)))
    assert n >= 140


@pytest.mark.parametrize("ranks", [2, 3])
def test_overlapping_groups_and_receives_in_posting_order(device, ranks):
    """An async collective on one group overlapping sync ones on another of the same size; several
    irecv from one peer (and from any source) posted before any is waited on."""
    n = _checks(mpirun(ranks, os.path.join(SCRIPTS, "check_p2p_groups.py"), _kind(device)))
    assert n == 4


@pytest.mark.parametrize("ranks", [2, 3])
def test_16_bit_float_collectives(device, ranks):
    """bfloat16 (and float16 where the device has it): copies bit-exact, reductions in float32
    rounded once."""
    if _declines(device, "bfloat16"):
        pytest.skip(f"{device} declines bfloat16 (DTypeError): no 16-bit float to reduce")
    n = _checks(mpirun(ranks, os.path.join(SCRIPTS, "check_half.py"), _kind(device)))
    assert n >= 30


@pytest.mark.parametrize("ranks", [2, 3])
def test_sync_batchnorm_is_batchnorm_of_the_whole_batch(device, ranks):
    """Different (one empty) batch sizes per rank: outputs, input/weight/bias gradients and
    running statistics equal plain batch norm on the concatenated batch (float64)."""
    n = _checks(mpirun(ranks, os.path.join(SCRIPTS, "check_syncbn.py"), _kind(device),
                       timeout=240))
    assert n == 8


def test_ddp_gradients_match_single_process(device):
    """Several buckets, no_sync accumulation, unused parameters, construction broadcast."""
    proc = mpirun(2, os.path.join(SCRIPTS, "check_ddp.py"), _kind(device))
    n = _checks(proc)
    assert n == 11 - _declines(device, "bfloat16"), proc.stdout


@pytest.mark.parametrize("ranks", [2, 3])
def test_fully_shard_trains_as_ddp(device, ranks):
    """fully_shard per block then root (uneven row counts, a 0-d parameter): 3 Adam steps give
    DDP's losses and parameters (float32 and float64); shards, gradients and Adam state add up
    to the model; gradient accumulation without sync; the FullyShardedDataParallel wrapper."""
    n = _checks(mpirun(ranks, os.path.join(SCRIPTS, "check_fsdp.py"), _kind(device),
                       timeout=240))
    assert n == 9


def test_sharded_checkpoint_loads_on_other_world_sizes(device, tmp_path):
    """distributed.checkpoint: saved by 3 ranks (each its shards, rank 0 the index and the
    buffers), loaded onto 2 ranks, 1 rank, and a plain model."""
    folder = str(tmp_path / "ckpt")
    script = os.path.join(SCRIPTS, "check_dcp.py")
    assert _checks(mpirun(3, script, _kind(device), "save", folder)) == 1
    for n in (2, 1):
        assert _checks(mpirun(n, script, _kind(device), "load", folder)) == 2


def test_fully_shard_fits_under_a_per_rank_memory_cap(device):
    """A cap below parameters + Adam state: one process training the model unsharded runs out of
    memory; fully_shard on 2 and on 3 ranks trains, with a lower peak per rank on 3."""
    if _kind(device) != "opencl":
        pytest.skip(f"{device}'s backend has no per-process memory cap (the OpenCL "
                    f"allocator's); the shard sizes are checked by check_fsdp.py")
    script = os.path.join(SCRIPTS, "check_fsdp_memory.py")
    proc = mpirun(1, script, "opencl", "plain", timeout=240)
    assert proc.returncode == 0 and "OutOfMemoryError" in proc.stdout, proc.stdout + proc.stderr
    peaks = {}
    for n in (2, 3):
        proc = mpirun(n, script, "opencl", "fsdp", timeout=240)
        assert _checks(proc) == 1
        peaks[n] = int(re.search(r"peak: (\d+)", proc.stdout).group(1))
    assert peaks[3] < peaks[2], peaks


def test_mismatched_collectives_raise_on_every_rank():
    proc = mpirun(2, os.path.join(SCRIPTS, "check_faults.py"), "mismatch")
    assert _checks(proc) == 6
    # the message names what each rank called
    assert "rank 0: all_reduce(float32 tensor of shape (3,), op SUM)" in proc.stdout, proc.stdout
    assert "rank 1: all_reduce(float32 tensor of shape (4,), op SUM)" in proc.stdout, proc.stdout


@pytest.mark.parametrize("fault, needle", [
    ("raise", "[rank 1] aborting the MPI job after an uncaught ValueError on rank 1"),
    ("hang", "[rank 0] all_reduce (collective #3 of the group of ranks [0, 1]) timed out after 3 s"),
    ("kill", "BAD TERMINATION"),
    ("raise-early", "[rank 0] MPI initialisation did not complete within 3 s (the timeout of "
                    "init_process_group): another of the 2 ranks failed or exited before"),
])
def test_a_failed_rank_ends_the_job(fault, needle):
    t0 = time.monotonic()
    proc = mpirun(2, os.path.join(SCRIPTS, "check_faults.py"), fault, "3", timeout=60)
    elapsed = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert needle in out, out
    assert "was not stopped" not in out, out
    assert elapsed < 45, f"the job took {elapsed:.0f} s to end"
    if fault in ("raise", "hang"):  # an abort removes MPICH's shared-memory files
        assert _shm_files(proc.stdout) or not sys.platform.startswith("linux"), out
        left = [p for p in _shm_files(proc.stdout) if os.path.exists(p)]
        assert not left, f"left in /dev/shm: {left}"


def _shm_files(stdout: str) -> list[str]:
    """The files a check script printed on a ``shm files: ...`` line (Linux: from /proc)."""
    m = re.search(r"^shm files: (.*)$", stdout, re.M)
    return m.group(1).split() if m else []


def test_launcher_names_a_killed_rank_and_removes_its_shared_memory():
    """mpiexec names a killed rank by PID only, and leaves MPICH's /dev/shm files behind."""
    proc = launch("--nproc-per-node", "2", "--device-type", "cpu",
                  os.path.join(SCRIPTS, "check_killed.py"), timeout=90)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert re.search(r"\[portagrad.distributed.run\] rank 1 \(PID \d+ on \S+\) was killed by "
                     r"signal 9 \(SIGKILL\)", proc.stderr), out
    assert "was not stopped" not in out, out
    files = _shm_files(proc.stdout)
    if sys.platform.startswith("linux"):
        assert files, out
    left = [p for p in files if os.path.exists(p)]
    assert not left, f"left in /dev/shm: {left}"


def test_demo_on_two_ranks(device, tmp_path):
    """4 epochs on 2 ranks (the same global batch, so the same number of steps) reach the accuracy
    of 4 epochs in one process, within 2 points; rank 0 alone prints and saves the checkpoint."""
    if device != "cpu" and not device.startswith("opencl"):
        pytest.skip("the demo's launcher options pick cpu or OpenCL ranks; a plugin device's "
                    "collectives are covered by the tests above")
    ck = tmp_path / "ddp.safetensors"
    dev_args = [] if device == "cpu" else ["--device-type", "opencl"]
    proc = launch("--nproc-per-node", "2", *dev_args, "-m", "portagrad", "demo",
                  "--epochs", "4", "--no-progress", "--checkpoint", str(ck),
                  *(["--device", "cpu"] if device == "cpu" else []), timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "data parallel on 2 MPI ranks" in out and out.count("epoch  4/4") == 1, out
    acc = float(re.search(r"test accuracy of the re-loaded model: ([\d.]+)%", out).group(1))
    assert ck.exists()
    if device != "cpu":
        assert "on opencl:0" in out, out
    with demo.single_threaded_blas():
        single = demo.run(epochs=4, device=device, progress=False, out=io.StringIO())
    assert acc >= 100 * single["test_accuracy"] - 2.0, (single["test_accuracy"], out)


def test_launcher_sets_the_torchrun_environment(tmp_path):
    proc = launch("--nproc-per-node", "2", "--device-type", "cpu",
                  os.path.join(SCRIPTS, "check_launch.py"), str(tmp_path), "x", "--flag")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [(tmp_path / f"rank{r}.txt").read_text() for r in range(2)]
    assert lines == [
        "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 PORTAGRAD_DEVICE=cpu mpi_rank=0 "
        "args=['x', '--flag']",
        "RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 PORTAGRAD_DEVICE=cpu mpi_rank=1 "
        "args=['x', '--flag']"]


@pytest.mark.parametrize("ranks", [2, 3])
def test_script_collectives_against_local_values(device, ranks):
    """What torchrun-style scripts call beyond the core set: backend names on MPI, all_to_all
    (single, split sizes, list), reduce_scatter, PREMUL_SUM, non-contiguous tensors, futures,
    coalesced collectives, batch_isend_irecv, object collectives through the restricted
    unpickler, subgroups and DeviceMesh."""
    proc = mpirun(ranks, os.path.join(SCRIPTS, "check_scripts.py"), _kind(device), timeout=300)
    n = _checks(proc)
    assert n == (38 if ranks == 2 else 37), proc.stdout
    assert "code from a peer's bytes ran" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("ranks", [2, 3])
def test_ddp_comm_hooks_join_and_zero(device, ranks):
    """Communication hooks (default hooks against the values they define, a custom hook),
    static_graph and gradient_as_bucket_view, join() with uneven inputs (either divisor, early
    termination), ZeroRedundancyOptimizer against unsharded Adam (float64) and its state shards."""
    proc = mpirun(ranks, os.path.join(SCRIPTS, "check_ddp_more.py"), _kind(device), timeout=300)
    n = _checks(proc)
    fp16 = "fp16_compress_hook" in proc.stdout  # float16 only where the device has it (not PoCL)
    assert n == 18 - (not fp16) - _declines(device, "bfloat16"), proc.stdout
    assert fp16 or device != "cpu"


def test_ddp_hooks_join_and_zero_as_torchrun_runs_them(tmp_path):
    """tests/distributed/torch_ddp_more.py, written for PyTorch (fp16_compress_hook, join() over
    3 and 5 batches with both divisors, ZeroRedundancyOptimizer with Adam), run by portagrad's
    launcher under compat: the ranks agree with each other, and with torch installed the values
    equal torchrun's own run (fp16 gradients bit for bit, float64 parameters to 1e-12)."""
    import json

    import numpy as np

    script = os.path.join(SCRIPTS, "torch_ddp_more.py")
    mine = tmp_path / "portagrad"
    mine.mkdir()
    proc = launch("--standalone", "--nproc_per_node", "2", "--device-type", "cpu", "-m",
                  "portagrad.compat", script, str(mine), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = [json.loads((mine / f"{r}.json").read_text()) for r in range(2)]
    for key in ("fp16_hook_grads", "join_True", "join_False", "zero_params"):
        assert got[0][key] == got[1][key], key  # every rank ends with the same model
    assert got[0]["join_True"] != got[0]["join_False"]
    assert got[0]["zero_state_entries"] + got[1]["zero_state_entries"] == 4
    assert sorted(got[0]["zero_state_dict"]) == ["0", "1", "2", "3"]
    torch = pytest.importorskip("torch")
    theirs = tmp_path / "torch"
    theirs.mkdir()
    env = _env()
    env.pop("PYTHONPATH", None)  # the real torch, not portagrad
    ref = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc_per_node", "2", script, str(theirs)], env=env,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert ref.returncode == 0, ref.stdout[-3000:] + ref.stderr[-3000:]
    want = [json.loads((theirs / f"{r}.json").read_text()) for r in range(2)]
    for r in range(2):
        assert sorted(got[r]) == sorted(want[r])
        assert got[r]["fp16_hook_grads"] == want[r]["fp16_hook_grads"], torch.__version__
        assert got[r]["zero_state_entries"] == want[r]["zero_state_entries"]
        for key in ("join_True", "join_False", "zero_params"):
            for g, w in zip(got[r][key], want[r][key]):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13, err_msg=key)
    for k, w in want[0]["zero_state_dict"].items():
        np.testing.assert_allclose(got[0]["zero_state_dict"][k], w, rtol=1e-12, atol=1e-15)
