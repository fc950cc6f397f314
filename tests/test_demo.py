"""The demo: the full default run reaches >= 97% test accuracy; the command line works."""
from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

import portagrad as pg
from portagrad import demo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_full_default_demo_reaches_97_percent_on_cpu():
    out = io.StringIO()
    with demo.single_threaded_blas():
        res = demo.run(device="cpu", progress=False, out=out)  # the defaults of the CLI
    assert res["test_accuracy"] >= 0.97, out.getvalue()
    assert res["device"] == "cpu" and len(res["history"]) == 12
    assert "test accuracy of the re-loaded model" in out.getvalue()


def test_short_demo_on_each_device(device, tmp_path):
    out = io.StringIO()
    ck = tmp_path / "ck.safetensors"
    res = demo.run(epochs=2, device=device, progress=False, out=out, checkpoint=str(ck))
    assert res["device"] == str(pg.device(device))
    assert res["test_accuracy"] > 0.8, out.getvalue()
    loaded = pg.load(ck, map_location="cpu")
    assert loaded["epoch"] == 2 and set(loaded["model"]) == {"0.weight", "0.bias", "3.weight",
                                                             "3.bias", "7.weight", "7.bias"}
    assert loaded["optimizer"]["param_groups"][0]["momentum"] == 0.9


def test_amp_demo_on_each_device(device):
    try:
        (pg.zeros(1, dtype=demo.amp_dtype(pg.device(device)), device=device) + 1).cpu()
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines both 16-bit float dtypes (DTypeError)")
    out = io.StringIO()
    res = demo.run(epochs=2, device=device, progress=False, out=out, amp=True)
    assert res["amp_dtype"] == demo.amp_dtype(pg.device(device))
    assert res["amp_dtype"] in (pg.bfloat16, pg.float16)
    assert f"autocast({res['amp_dtype']})" in out.getvalue()
    assert res["test_accuracy"] > 0.8, out.getvalue()


def test_command_line(tmp_path):
    ck = tmp_path / "demo.safetensors"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "portagrad", "demo", "--epochs", "1",
                           "--device", "cpu", "--checkpoint", str(ck), "--batch-size", "64",
                           "--lr", "0.1", "--seed", "1", "--amp"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "device: cpu" in proc.stdout and "epoch  1/1" in proc.stdout
    assert "mixed precision: autocast(portagrad.bfloat16)" in proc.stdout
    assert ck.exists() and pg.load(ck)["seed"] == 1
    bad = subprocess.run([sys.executable, "-m", "portagrad", "demo", "--epochs", "0"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode == 2 and "--epochs" in bad.stderr
