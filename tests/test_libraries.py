"""Libraries built on PyTorch, used as their READMEs show, unmodified under ``python -m
portagrad.compat`` on every test device (``tests/libraries/``): transformers (GPT-2, BERT), timm,
torchvision, Lightning, torchmetrics, skorch, stable-baselines3, einops.

Each script prints one ``RESULT {json}`` line: outputs, losses, generated tokens, metrics. Where
the real PyTorch is installed beside the library, the script also runs under it
(``tests/compat/_run_torch.py``) and the two results must agree; both runs draw every random
number (initial weights, data, sampling) from one numpy stream (``PORTAGRAD_COMPAT_SHARED_RNG``),
so they start from the same weights. Where the library cannot import beside the real PyTorch here
(PyPI's torchvision wheel does not load beside PyTorch's CPU build, and timm imports torchvision),
the result on each other device must equal the one on ``cpu``.

The libraries are installed only by tox's ``libraries`` environment. Elsewhere a script whose
library is missing is skipped with the reason; with ``PORTAGRAD_REQUIRE_LIBRARIES`` set (that
environment) a missing library fails the test instead.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.usefixtures("torch_shim_ok")

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "libraries"
# a hang detector: the slowest run (transformers' import, then OpenCL kernel builds) takes about
# 30 s on a quiet 2-core machine
TIMEOUT = 600
SEED = "0"


@dataclass(frozen=True)
class Lib:
    """A library script: the modules it needs, whether the real PyTorch can run it here, and the
    tolerances of its comparison (``rtol``/``atol`` for floats; ``loose`` keys: their own)."""

    script: str
    needs: tuple[str, ...]
    torch_reference: bool = True
    rtol: float = 1e-4
    atol: float = 1e-5
    loose: dict[str, tuple[float, float]] = field(default_factory=dict)


LIBS = [
    Lib("transformers_gpt2", ("transformers",)),
    Lib("transformers_bert", ("transformers",)),
    # timm imports torchvision, which does not load beside the real PyTorch CPU build here
    Lib("timm_models", ("timm",), torch_reference=False, rtol=1e-3, atol=1e-4),
    # the v2 resize of a uint8 image rounds each pass to uint8 (PyTorch's fixed-point kernel);
    # float rounding on the two backends may land a value on the other side of .5: one level
    # (2/255 after the normalisation) on a few pixels
    Lib("torchvision_models", ("torchvision", "PIL"), torch_reference=False, rtol=1e-3,
        atol=1e-4, loose={"v2": (0.01, 0.02)}),
    Lib("lightning_fit", ("lightning",)),
    Lib("torchmetrics_check", ("torchmetrics",)),
    Lib("skorch_fit", ("skorch", "sklearn")),
    Lib("sb3_ppo", ("stable_baselines3", "gymnasium")),
    Lib("einops_check", ("einops",)),
]
HIDE = "torchvision"  # hidden from the real-PyTorch runs (see tests/compat/_run_torch.py)


def _env(device: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PORTAGRAD_COMPAT_SHARED_RNG"] = SEED
    env.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded: say so to transformers
    env.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    if device is None:
        env["PORTAGRAD_TEST_HIDE_MODULES"] = HIDE
    else:
        env["PORTAGRAD_DEVICE"] = device
        if device == "cpu":
            env["PORTAGRAD_DISABLE_PLUGINS"] = "opencl"  # no accelerator for the library to pick
    return env


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=SCRIPTS, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)


_POOL = ThreadPoolExecutor(max_workers=2)
_RUNS: dict[tuple[str, str | None], Future[subprocess.CompletedProcess[str]]] = {}


def _start(lib: Lib, device: str | None) -> Future[subprocess.CompletedProcess[str]]:
    """The run of ``lib`` under portagrad on ``device`` (None: under the real PyTorch)."""
    key = (lib.script, device)
    if key not in _RUNS:
        script = str(SCRIPTS / f"{lib.script}.py")
        cmd = ([sys.executable, str(ROOT / "tests" / "compat" / "_run_torch.py"), script]
               if device is None
               else [sys.executable, "-m", "portagrad.compat", script])
        _RUNS[key] = _POOL.submit(_run, cmd, _env(device))
    return _RUNS[key]


def _result(proc: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert len(lines) == 1, f"{what}: no RESULT line\n{proc.stdout[-2000:]}"
    return json.loads(lines[0][len("RESULT "):])


def _compare(got: Any, want: Any, rtol: float, atol: float, where: str,
             loose: dict[str, tuple[float, float]]) -> None:
    """Nested results equal: floats within the tolerances, everything else exactly."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), f"{where}: keys {got} != {want}"
        for k in want:
            r, a = loose.get(k, (rtol, atol))
            _compare(got[k], want[k], r, a, f"{where}.{k}", loose)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got} != {want}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, rtol, atol, f"{where}[{i}]", loose)
    elif isinstance(want, float) and not isinstance(want, bool):
        assert isinstance(got, (int, float)), f"{where}: {got!r} is not a number"
        assert math.isfinite(want) and math.isfinite(got), f"{where}: {got} vs {want}"
        assert abs(got - want) <= atol + rtol * abs(want), f"{where}: {got} != {want}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def _torch_runs(lib: Lib) -> bool:
    """Whether the real PyTorch is installed, and ``lib`` runs beside it here."""
    spec = importlib.util.find_spec("torch") if lib.torch_reference else None
    # (this repository's compat shim is not the real PyTorch)
    return spec is not None and spec.origin is not None and "portagrad" not in spec.origin


def _missing(lib: Lib) -> list[str]:
    return [m for m in lib.needs if importlib.util.find_spec(m) is None]


@pytest.mark.parametrize("lib", LIBS, ids=[lib.script for lib in LIBS])
def test_library_runs_unmodified(device: str, lib: Lib) -> None:
    missing = _missing(lib)
    if missing:
        why = (f"{', '.join(missing)} not installed (tox -e libraries installs the libraries "
               f"and runs these)")
        if os.environ.get("PORTAGRAD_REQUIRE_LIBRARIES"):
            pytest.fail(f"PORTAGRAD_REQUIRE_LIBRARIES is set, but {why}")
        pytest.skip(why)
    ours = _start(lib, device)
    if _torch_runs(lib):
        reference, what = _start(lib, None), "the real PyTorch"
    elif device != "cpu":
        reference, what = _start(lib, "cpu"), "portagrad on cpu"
    else:
        reference, what = None, ""
    got = _result(ours.result(), f"{lib.script} on {device}")
    if reference is None:
        # nothing here to compare with: a finite, complete result is what can be checked
        _compare(got, got, lib.rtol, lib.atol, lib.script, lib.loose)
        return
    want = _result(reference.result(), f"{lib.script} under {what}")
    _compare(got, want, lib.rtol, lib.atol, f"{lib.script} on {device} vs {what}", lib.loose)


def test_torchvision_compiled_ops_fail_with_torchvisions_message(device: str) -> None:
    """torchvision's C++ ops (nms, roi_align ...) are PyTorch-ABI binaries: under compat its
    extension does not load (``torch.ops.load_library`` refuses compiled libraries) and calling
    one raises torchvision's own error, not a crash inside portagrad."""
    lib = next(lib for lib in LIBS if lib.script == "torchvision_models")
    if _missing(lib):
        if os.environ.get("PORTAGRAD_REQUIRE_LIBRARIES"):
            pytest.fail("PORTAGRAD_REQUIRE_LIBRARIES is set, but torchvision is not installed")
        pytest.skip("torchvision not installed (tox -e libraries installs it)")
    got = _result(_start(lib, device).result(), f"torchvision on {device}")
    assert got["nms"].startswith("RuntimeError: Couldn't load custom C++ ops"), got["nms"]
