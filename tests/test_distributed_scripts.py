"""torchrun-style scripts as written, the parts that need no second process: DistributedSampler's
shuffle order against PyTorch's, the launcher's torchrun flags and environment, the backend
mapping of ``init_process_group`` helpers, and the restricted unpickling of object collectives."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from portagrad.utils.data import DistributedSampler
from portagrad.utils.data._torch_randperm import torch_randperm

# torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist(), from torch 2.13 CPU
LITERAL = {
    (10, 0): [4, 1, 7, 5, 3, 9, 0, 8, 6, 2],
    (10, 1): [5, 6, 1, 2, 0, 8, 9, 3, 7, 4],
    (7, 42): [1, 6, 3, 5, 4, 0, 2],
    (20, 2 ** 33 + 7): [15, 17, 9, 12, 7, 1, 19, 3, 4, 11, 18, 8, 2, 14, 16, 0, 10, 13, 6, 5],
    (5, -3): [1, 4, 0, 3, 2],
}


@pytest.mark.parametrize("n, seed", list(LITERAL))
def test_torch_randperm_literal(n, seed):
    assert torch_randperm(n, seed) == LITERAL[(n, seed)]


def test_torch_randperm_edges_and_errors():
    assert torch_randperm(0, 3) == [] and torch_randperm(1, 3) == [0]
    with pytest.raises(TypeError, match="n must be an int"):
        torch_randperm(2.5, 0)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="non-negative"):
        torch_randperm(-1, 0)


def test_sampler_shuffle_is_torch_order_literal():
    # seed 1, epoch 0 -> the permutation of seed 1; rank r takes every 3rd from r (padded to 12)
    perm = LITERAL[(10, 1)]
    padded = perm + perm[:2]
    got = [list(DistributedSampler(range(10), 3, r, seed=1)) for r in range(3)]
    assert got == [padded[r::3] for r in range(3)]
    s = DistributedSampler(range(10), 1, 0, seed=0)
    s.set_epoch(1)  # seed + epoch
    assert list(s) == LITERAL[(10, 1)]


def test_sampler_shuffle_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TS

    for n in (1, 2, 7, 64, 1000, 4099):
        for seed in (0, 3, 12345, 2 ** 32 + 1):
            for epoch in (0, 1, 5):
                g = torch.Generator()
                g.manual_seed(seed + epoch)
                assert torch_randperm(n, seed + epoch) == torch.randperm(n, generator=g).tolist()
                for k, drop in ((2, False), (3, True), (3, False)):
                    for r in range(k):
                        mine = DistributedSampler(range(n), k, r, seed=seed, drop_last=drop)
                        ref = TS(range(n), k, r, seed=seed, drop_last=drop)
                        mine.set_epoch(epoch)
                        ref.set_epoch(epoch)
                        assert list(mine) == list(ref), (n, seed, epoch, k, r, drop)


# ------------------------------------------------------------------ the launcher
def _read_env(folder, rank, restart):
    with open(os.path.join(folder, f"env{rank}_{restart}.json")) as f:
        return json.load(f)


def test_launcher_torchrun_flags_set_torchrun_environment(tmp_path):
    from test_distributed import SCRIPTS, launch

    proc = launch("--standalone", "--nproc_per_node=2", "--device-type", "cpu",
                  "--master-addr", "10.1.2.3", "--master_port", "29555", "--role", "trainer",
                  "--rdzv-backend", "c10d", "--monitor-interval", "0.5", "--run-path",
                  os.path.join(SCRIPTS, "check_torchrun_env.py"), str(tmp_path), "plain")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    envs = [_read_env(tmp_path, r, 0) for r in range(2)]
    run_id = envs[0]["TORCHELASTIC_RUN_ID"]
    assert len(run_id) == 36 and envs[1]["TORCHELASTIC_RUN_ID"] == run_id  # --standalone: a uuid
    for r, env in enumerate(envs):
        assert env == {
            "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_RANK": str(r),
            "ROLE_NAME": "trainer", "ROLE_WORLD_SIZE": "2", "MASTER_ADDR": "10.1.2.3",
            "MASTER_PORT": "29555", "TORCHELASTIC_RUN_ID": run_id,
            "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_USE_AGENT_STORE": "False", "OMP_NUM_THREADS": "1",
            "PORTAGRAD_DEVICE": "cpu", "mpi_rank": r, "launched": True, "node_local_rank": r,
            "error_file": True}, env


def test_launcher_max_restarts_relaunches_the_group(tmp_path):
    from test_distributed import SCRIPTS, launch

    logs = tmp_path / "logs"
    proc = launch("--nproc-per-node", "2", "--device-type", "cpu", "--max-restarts", "2",
                  "--rdzv-id", "job7", "--log-dir", str(logs), "--monitor-interval", "0",
                  os.path.join(SCRIPTS, "check_torchrun_env.py"), str(tmp_path), "fail-first",
                  timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "starting it again (restart 1 of 2)" in out, out
    assert "root cause (first failure): rank 1: ValueError: the first attempt fails on purpose" \
        in out, out
    assert "restart 2 of 2" not in out, out  # the second attempt succeeded
    for r in range(2):
        first, second = _read_env(tmp_path, r, 0), _read_env(tmp_path, r, 1)
        assert (first["TORCHELASTIC_RESTART_COUNT"], second["TORCHELASTIC_RESTART_COUNT"]) == (
            "0", "1")
        assert second["TORCHELASTIC_MAX_RESTARTS"] == "2"
        assert second["TORCHELASTIC_RUN_ID"] == "job7" and second["error_file"]
    with open(logs / "job7" / "attempt_0" / "1" / "error.json") as f:
        assert "the first attempt fails on purpose" in f.read()


def test_launcher_no_python_runs_an_executable(tmp_path):
    from test_distributed import SCRIPTS, launch

    proc = launch("--nproc-per-node", "2", "--device-type", "cpu", "--no-python",
                  sys.executable, os.path.join(SCRIPTS, "check_torchrun_env.py"), str(tmp_path),
                  "plain")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for r in range(2):
        env = _read_env(tmp_path, r, 0)
        assert (env["RANK"], env["LOCAL_RANK"], env["GROUP_RANK"], env["mpi_rank"]) == (
            str(r), str(r), "0", r)


def test_launcher_refuses_what_mpi_cannot_do():
    from portagrad.distributed import run

    for argv, needle in [
            (["--nnodes", "1:4", "x.py"], "elastic node ranges are not supported"),
            (["--node-rank", "1", "x.py"], "run the launcher once"),
            (["--redirects", "3", "x.py"], "--redirects is not supported"),
            (["--tee", "3", "x.py"], "--tee is not supported"),
            (["--no-python", "-m", "x"], "Don't use both"),
            (["--standalone", "--nnodes", "2", "--hostfile", "h", "x.py"], "one host")]:
        with pytest.raises(SystemExit) as info:
            run.build_command(["--mpiexec", "mpiexec", *argv])
        assert needle in str(info.value) or info.value.code == 2, (argv, info.value)
    # torchrun's N:N form and both spellings of its flags parse
    cmd = run.build_command(["--mpiexec", "mpiexec", "--nnodes", "1:1", "--rdzv_id", "a",
                             "--rdzv-endpoint", "h:1", "--node_rank", "0", "x.py", "--y"])
    assert cmd[:3] == ["mpiexec", "-n", "1"] and cmd[-2:] == ["x.py", "--y"]
    cmd = run.build_command(["--mpiexec", "mpiexec", "--no-python", "prog", "a"])
    assert cmd[-3:] == ["--_exec", "prog", "a"]


def test_job_environment_defaults():
    from portagrad.distributed import run

    a = run._parser().parse_args(["--rdzv-endpoint", "node9:3000", "x.py"])
    env = run.job_environment(a, 0, "none")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["TORCHELASTIC_RUN_ID"]) == (
        "node9", "3000", "none")
    a = run._parser().parse_args(["x.py"])
    assert run.job_environment(a, 3, "r")["MASTER_ADDR"] == "127.0.0.1"
    assert run.job_environment(a, 3, "r")["TORCHELASTIC_RESTART_COUNT"] == "3"
    v = run.rank_variables(5, 8, 1, 4, 1, 2, base={})
    assert v["GROUP_RANK"] == "1" and v["ROLE_RANK"] == "5" and "TORCHELASTIC_ERROR_FILE" not in v


# ------------------------------------------------------- helpers scripts call, no MPI needed
def test_record_writes_the_error_file(tmp_path, monkeypatch):
    from portagrad.distributed.elastic.multiprocessing.errors import record

    path = tmp_path / "error.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))

    @record
    def fails(x):
        raise KeyError(x)

    with pytest.raises(KeyError):
        fails("k")
    msg = json.loads(path.read_text())["message"]
    assert msg["message"] == "KeyError: 'k'" and "raise KeyError(x)" in msg["extraInfo"][
        "py_callstack"] and int(msg["extraInfo"]["timestamp"]) > 0

    @record
    def exits(code):
        raise SystemExit(code)

    assert exits(0) is None
    with pytest.raises(SystemExit):
        exits(3)
    assert record(lambda: 5)() == 5


def test_launch_environment_helpers(monkeypatch):
    import portagrad.distributed as dist

    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert not dist.is_torchelastic_launched()
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    monkeypatch.setenv("LOCAL_RANK", "2")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "x")
    assert dist.get_node_local_rank(fallback_rank=3) == 2 and dist.is_torchelastic_launched()
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device("opencl:0") == "mpi"
    with pytest.raises(TypeError):
        dist.get_default_backend_for_device(3)


@pytest.mark.parametrize("backend", ["gloo", "nccl", "mpi", "cpu:gloo,cuda:nccl", "GLOO", None])
def test_backend_names_accepted(backend):
    from portagrad.distributed._world import check_backend

    check_backend(backend)


@pytest.mark.parametrize("backend, exc", [("nccl2", ValueError), ("cpu:", ValueError),
                                          (":gloo", ValueError), (3, TypeError)])
def test_backend_names_refused(backend, exc):
    import portagrad.distributed as dist

    with pytest.raises(exc):
        dist.init_process_group(backend)  # refused before MPI starts


def test_init_method_and_store_refused_before_mpi_starts():
    import portagrad.distributed as dist

    with pytest.raises(ValueError, match="udp://h:1"):
        dist.init_process_group(init_method="udp://h:1")
    with pytest.raises(ValueError, match="store is not supported"):
        dist.init_process_group(store=object())


def test_premul_sum_factor():
    import portagrad as pg
    import portagrad.distributed as dist

    op = dist._make_nccl_premul_sum(pg.tensor([2.5]))
    assert op.op is dist.ReduceOp.PREMUL_SUM and op.factor == 2.5
    with pytest.raises(ValueError, match="one element"):
        dist._make_nccl_premul_sum(pg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        dist._make_nccl_premul_sum("2")


def test_future_without_a_work():
    from portagrad.distributed._future import Future

    f = Future()
    assert not f.done()
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    chained = f.then(lambda fut: fut.value() + 1)
    f.set_result(4)
    assert f.done() and f.wait() == 4 and seen == [4] and chained.wait() == 5
    with pytest.raises(RuntimeError, match="only be marked completed once"):
        f.set_result(5)
    g = Future()
    g.set_exception(ValueError("bad"))
    with pytest.raises(ValueError, match="bad"):
        g.then(lambda fut: 1).wait()


def test_object_bytes_refuse_code():
    import pickle

    from portagrad.distributed._object_collectives import dumps, loads
    from portagrad.serialization import WeightsOnlyError

    assert loads(dumps({"a": [1, (2.5, "x")], "b": {1, 2}, "c": b"z"})) == {
        "a": [1, (2.5, "x")], "b": {1, 2}, "c": b"z"}

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with pytest.raises(WeightsOnlyError):
        loads(dumps(Evil()))
    with pytest.raises(WeightsOnlyError):  # a bare pickle (not the save format) is refused too
        loads(pickle.dumps(Evil()))


# ------------------------------------------- one PyTorch script, torchrun vs portagrad's launcher
def _script_outputs(folder):
    return [json.loads((folder / f"{r}.json").read_text()) for r in range(2)]


def test_torch_script_as_written_matches_torchrun(tmp_path):
    """tests/distributed/torch_script.py, written for PyTorch (torch.distributed with gloo,
    @record, DistributedSampler, DeviceMesh, object collectives, all_to_all...), run by
    portagrad's launcher under compat: each rank sees what it would under torchrun. Without torch
    the values are checked against local expectations; with it, against torchrun's own run."""
    from test_distributed import SCRIPTS, _env, launch

    script = os.path.join(SCRIPTS, "torch_script.py")
    mine = tmp_path / "portagrad"
    mine.mkdir()
    proc = launch("--standalone", "--nproc_per_node", "2", "--device-type", "cpu", "-m",
                  "portagrad.compat", script, str(mine), timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = _script_outputs(mine)
    perm = torch_randperm(23, 7 + 2)
    padded = perm + perm[:1]
    for r, out in enumerate(got):
        assert out["sampler"] == padded[r::2]
        assert out["all_to_all_single"] == [2 * r, 2 * r + 1, 100 + 2 * r, 101 + 2 * r]
        assert out["all_gather_object"] == [{"name": f"r{j}", "rank": j, "t": [j, 1.5]}
                                            for j in range(2)]
        assert out["batch_isend_irecv"] == [1 - r] * 2 and out["mesh"] == [2, r, 2, [2.0]]
        assert out["env"]["RANK"] == str(r) and out["launched"] and out["local_rank"] == r
    torch = pytest.importorskip("torch")
    theirs = tmp_path / "torch"
    theirs.mkdir()
    env = _env()
    env.pop("PYTHONPATH", None)  # the real torch, not portagrad
    ref = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc_per_node", "2", script, str(theirs)], env=env,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240)
    assert ref.returncode == 0, ref.stdout[-3000:] + ref.stderr[-3000:]
    assert got == _script_outputs(theirs), torch.__version__


def test_launcher_names_the_failed_rank_without_log_dir(tmp_path):
    from test_distributed import SCRIPTS, launch

    proc = launch("--nproc-per-node", "2", "--device-type", "cpu",
                  os.path.join(SCRIPTS, "check_torchrun_env.py"), str(tmp_path), "fail-first")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "root cause (first failure): rank 1: ValueError: the first attempt fails on purpose" \
        in out, out
    where = re.search(r"\(see (\S+)/none/attempt_0/1/error.json\)", out)
    assert where and os.path.basename(where.group(1)).startswith("portagrad_run_"), out
    shutil.rmtree(where.group(1))  # kept after a failure, as torchrun keeps its folder
