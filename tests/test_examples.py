"""Every script in examples/ runs (everyday PyTorch-style snippets and the digits training script)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py"))
ARGS = {"train_digits.py": ["--device", "cpu", "--epochs", "2", "--checkpoint", "ck.safetensors"]}


@pytest.mark.parametrize("script", EXAMPLES)
def test_example_runs(script, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script),
                           *ARGS.get(script, [])], capture_output=True, text=True, timeout=300,
                          cwd=str(tmp_path), env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    if script == "train_digits.py":
        assert "re-loaded model: test acc" in proc.stdout
