"""A type checker sees the Tensor API: mypy on ``tests/typecheck/api_usage.py`` finds every name."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_sees_the_tensor_api() -> None:
    # errors inside portagrad itself are the lint env's business; this checks the usage file only
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-incremental",
         "--config-file", str(ROOT / "pyproject.toml"), "tests/typecheck/api_usage.py"],
        check=False, cwd=ROOT, env={**os.environ, "MYPYPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert "attr-defined" not in out, out
    assert proc.returncode == 0, out
