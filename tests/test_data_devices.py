"""DataLoader workers and the default device: workers collate on the host, never touch a device,
never hang and never outlive the loader's process. Each case runs in a subprocess with a timeout,
so a regression fails instead of hanging the suite."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import portagrad as pg

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, timeout: float = 90) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=ROOT)


def test_workers_collate_on_the_host_whatever_the_default_device(device: str) -> None:
    r = _run(f"""
        import numpy as np
        import portagrad as pg
        from portagrad.utils.data import DataLoader, TensorDataset
        pg.set_default_device({device!r})
        pg.ones(3).sum().item()  # the parent has used the device before the workers fork
        ds = TensorDataset(pg.arange(10.0, device="cpu"), pg.arange(10, device="cpu"))
        for pin in (False, True):
            for data in (ds, list(range(10)), [np.float32(i) for i in range(10)]):
                dl = DataLoader(data, batch_size=4, num_workers=2, pin_memory=pin)
                batches = [b if isinstance(b, list) else [b] for b in dl]
                print(pin, [[t.tolist() for t in b] for b in batches][0],
                      sorted({{str(t.device) for b in batches for t in b}}),
                      all(t.is_pinned() == pin for b in batches for t in b))
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "False [[0.0, 1.0, 2.0, 3.0], [0, 1, 2, 3]] ['cpu'] True"
    assert lines[1] == "False [[0, 1, 2, 3]] ['cpu'] True"
    assert lines[2] == "False [[0.0, 1.0, 2.0, 3.0]] ['cpu'] True"
    pinned = lines[3:]  # pinned when a backend can pin; else a warning and unpinned batches
    assert all(line.startswith("True [[0") and "['cpu']" in line for line in pinned)


def test_forked_workers_refuse_device_tensors(opencl_devices: list[str]) -> None:
    r = _run("""
        import portagrad as pg
        from portagrad.utils.data import ConcatDataset, DataLoader, Dataset, Subset, TensorDataset

        class OnDevice(Dataset):
            def __init__(self):
                self.x = pg.arange(8.0, device="opencl:0")
            def __len__(self):
                return 8
            def __getitem__(self, i):
                return self.x[i] * 2

        class MakesDeviceTensors(Dataset):
            def __len__(self):
                return 4
            def __getitem__(self, i):
                return pg.ones(1, device="opencl:0")

        on_device = TensorDataset(pg.zeros(4, device="opencl:0"))
        wrapped = Subset(ConcatDataset([TensorDataset(pg.zeros(4)), on_device]), [0, 5])
        for ds in (on_device, OnDevice(), wrapped):
            try:
                list(DataLoader(ds, batch_size=2, num_workers=2))
            except RuntimeError as exc:
                print("REFUSED", exc)
        try:
            list(DataLoader(MakesDeviceTensors(), batch_size=2, num_workers=2, timeout=30))
        except RuntimeError as exc:
            print("WORKER", str(exc).replace(chr(10), " "))
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4, r.stdout
    for line in lines[:3]:
        assert line.startswith("REFUSED DataLoader(num_workers=2): the dataset holds a tensor on "
                               "device 'opencl:0'") and "multiprocessing_context='spawn'" in line
    assert lines[3].startswith("WORKER Caught RuntimeError in DataLoader worker process")
    assert "Cannot use device 'opencl:0' in DataLoader worker process" in lines[3]


def test_workers_exit_when_the_loader_process_is_killed() -> None:
    r = _run("""
        import os, signal, sys
        import portagrad as pg
        from portagrad.utils.data import DataLoader
        it = iter(DataLoader(list(range(100)), batch_size=2, num_workers=2))
        next(it)
        print(" ".join(str(w.pid) for w in it._workers), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    assert r.returncode == -9, r.stderr
    pids = [int(p) for p in r.stdout.split()]
    assert len(pids) == 2

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(")")[-1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    if not Path("/proc").exists():
        pytest.skip("needs /proc to watch the workers")
    deadline = time.monotonic() + 15
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in pids), "DataLoader workers outlived their killed parent"


def test_a_hung_worker_gives_a_clear_timeout_error(device: str) -> None:
    r = _run(f"""
        import time
        import portagrad as pg
        from portagrad.utils.data import DataLoader, Dataset
        pg.set_default_device({device!r})

        class Hangs(Dataset):
            def __len__(self):
                return 4
            def __getitem__(self, i):
                time.sleep(3600)

        t0 = time.monotonic()
        try:
            list(DataLoader(Hangs(), batch_size=2, num_workers=1, timeout=0.5))
        except RuntimeError as exc:
            print(exc, time.monotonic() - t0 < 30)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "DataLoader timed out after 0.5 seconds True"


def test_default_device_applies_to_main_process_collate(device: str) -> None:
    from portagrad.utils.data import DataLoader

    with pg.device(device):
        batch = next(iter(DataLoader([1, 2, 3], batch_size=3)))
    assert batch.device == pg.device(device)  # in the main process, as PyTorch
    assert batch.tolist() == [1, 2, 3]


def test_multiprocessing_context_is_checked_as_pytorch() -> None:
    import multiprocessing

    from portagrad.utils.data import DataLoader

    with pytest.raises(ValueError, match="only be used with multi-process loading"):
        DataLoader(range(3), multiprocessing_context="spawn")
    with pytest.raises(ValueError, match="valid start method in .*got multiprocessing_context='x'"):
        DataLoader(range(3), num_workers=1, multiprocessing_context="x")
    with pytest.raises(TypeError, match="valid context object"):
        DataLoader(range(3), num_workers=1, multiprocessing_context=3)
    spawn = multiprocessing.get_context("spawn")
    assert DataLoader(range(3), num_workers=1, multiprocessing_context=spawn
                      ).multiprocessing_context is spawn
    assert DataLoader(range(3), num_workers=1, multiprocessing_context="spawn"
                      ).multiprocessing_context is spawn
