"""The corpus in ``tests/compat/``: unmodified PyTorch scripts run through ``python -m
portagrad.compat`` on every backend, each must exit 0 with a falling loss; where PyTorch is
installed, each script's first loss must equal PyTorch's from the same weights and data (both
runs draw from one numpy stream, ``PORTAGRAD_COMPAT_SHARED_RNG``; see ``tests/compat/README.md``).
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import torch_shim_conflict

# a device that cannot load under portagrad.compat is skipped, with the reason
pytestmark = pytest.mark.usefixtures("torch_shim_ok")

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "compat"
TIMEOUT = 180
SEED = "20240521"
NUM = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"


@dataclass(frozen=True)
class Script:
    """A corpus run: the script and its arguments, the regex whose matches are the losses that
    must fall, and the arguments of the (shorter) first-loss comparison with PyTorch, or None."""

    id: str
    script: str
    args: tuple[str, ...]
    loss: str
    compare: tuple[str, ...] | None


SCRIPTS = [
    Script("mnist_cnn", "mnist_cnn.py", (), r"Train Epoch.*loss: " + NUM,
           ("--no-accel", "--epochs", "1", "--samples", "64")),
    Script("vae", "vae.py", (), r"Average loss: " + NUM, ("--epochs", "1")),
    Script("dcgan", "dcgan.py", (), r"discriminator loss " + NUM, ("--iters", "1")),
    # the comparison switches dropout off: nn.LSTM/nn.GRU drop between layers inside the kernel
    Script("word_lm_lstm", "word_language_model.py", ("--model", "LSTM"), r"valid loss\s+" + NUM,
           ("--model", "LSTM", "--dropout", "0", "--epochs", "1")),
    Script("word_lm_gru", "word_language_model.py", ("--model", "GRU"), r"valid loss\s+" + NUM,
           ("--model", "GRU", "--dropout", "0", "--epochs", "1")),
    Script("word_lm_transformer", "word_language_model.py", ("--model", "Transformer"),
           r"valid loss\s+" + NUM, ("--model", "Transformer", "--dropout", "0", "--epochs", "1")),
    Script("seq2seq_transformer", "seq2seq_transformer.py", (), r"train loss: " + NUM,
           ("--steps", "1", "--dropout", "0", "--profile-steps", "1")),
    Script("time_sequence_lbfgs", "time_sequence_lbfgs.py", (), r"(?m)^loss: " + NUM,
           ("--steps", "1")),
    Script("super_resolution", "super_resolution.py", (), r"Avg\. Loss: " + NUM, ("--nEpochs", "1")),
    Script("mnist_hogwild", "mnist_hogwild.py", (), r"Test set: Average loss: " + NUM, None),
    Script("linear_regression", "linear_regression.py", (), r"step \d+ loss " + NUM,
           ("--steps", "1")),
    Script("reinforce", "reinforce.py", (), r"Average length \(loss\): " + NUM,
           ("--episodes", "10")),
    Script("gcn", "gcn.py", (), r"training loss: " + NUM, ("--epochs", "1")),
    Script("siamese", "siamese.py", (), r"Train Epoch: \d+ loss: " + NUM, ("--epochs", "1")),
    Script("accelerator_device", "accelerator_device.py", (), r"loss: " + NUM, ("--steps", "1")),
    Script("save_load", "save_load.py", (), r"step \d+ loss: " + NUM, ("--steps", "10")),
]

# torch names the corpus uses that portagrad does not provide yet. A run that fails only because
# one of them is missing is an expected failure naming it; once a name exists the run must pass,
# and the name should leave this set.
PENDING: set[str] = set()

# Known portagrad bugs and limits the corpus found: (script id, device type or None for all) ->
# (text, or texts, in the failure that identify it; description). Other failures still fail.
KNOWN_BUGS: dict[tuple[str, str | None], tuple[str | tuple[str, ...], str]] = {
    ("mnist_hogwild", "opencl"): (
        "cannot share a tensor on device",
        "OpenCL tensors cannot be shared between processes: share_memory() says so, as the "
        "rules for device tensors without inter-process handles ask"),
    ("mnist_hogwild", "xp"): (
        "cannot share a tensor on device",
        "the Array API plugin's tensors have no inter-process memory handles either (arrays of "
        "array_api_strict, torch, JAX... held by one process): share_memory() says so"),
}

_MISSING = re.compile(r"\(torch\.([\w.]+) is not implemented in portagrad\)")


def _env(device: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PORTAGRAD_COMPAT_SHARED_RNG", None)
    env["PYTHONFAULTHANDLER"] = "1"  # a crash shows the Python stack in the failure
    if device is not None:
        env["PORTAGRAD_DEVICE"] = device
        if device == "cpu":
            # no accelerator either, so `torch.accelerator` picks cpu as on a machine without one
            env["PORTAGRAD_DISABLE_PLUGINS"] = "opencl"
    return env


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)


# The runs are subprocesses that mostly wait (interpreter start, OpenCL kernel builds): the selected
# ones start together on a small pool when the first test needs one, and each test takes its own.
_POOL = ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 1)))
_RUNS: dict[tuple[str, str, str | None], Future[subprocess.CompletedProcess[str]]] = {}


def _command(kind: str, spec: Script, device: str | None) -> tuple[list[str], dict[str, str]]:
    """The command of one run: ``train`` (plain), ``compare`` (shared stream) or ``torch``."""
    env = _env(device)
    if kind == "train":
        return [sys.executable, "-m", "portagrad.compat", str(CORPUS / spec.script),
                *spec.args], env
    assert spec.compare is not None
    env["PORTAGRAD_COMPAT_SHARED_RNG"] = SEED
    if kind == "torch":
        return [sys.executable, str(CORPUS / "_run_torch.py"), str(CORPUS / spec.script),
                *spec.compare], env
    return [sys.executable, "-m", "portagrad.compat", str(CORPUS / spec.script),
            *spec.compare], env


def _start(kind: str, spec: Script, device: str | None) -> Future[subprocess.CompletedProcess[str]]:
    key = (kind, spec.id, device)
    if key not in _RUNS:
        _RUNS[key] = _POOL.submit(_run, *_command(kind, spec, device))
    return _RUNS[key]


@pytest.fixture(scope="module", autouse=True)
def _start_selected_runs(request: pytest.FixtureRequest) -> Iterator[None]:
    have_torch = importlib.util.find_spec("torch") is not None
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.module is not sys.modules[__name__] or "spec" not in params:
            continue
        spec, device = params["spec"], params.get("device")
        if device is not None and torch_shim_conflict(device):
            continue  # skipped by the torch_shim_ok fixture
        if item.originalname == "test_script_trains":
            _start("train", spec, device)
        elif have_torch:
            _start("torch", spec, None)
            _start("compare", spec, device)
    yield
    _POOL.shutdown(wait=True, cancel_futures=True)


def _losses(spec: Script, out: str) -> list[float]:
    return [float(v) for v in re.findall(spec.loss, out)]


def _expected_failure(spec: Script, device: str | None, text: str) -> None:
    """xfail when ``text`` (the failure) is only a pending name or a known bug; else return."""
    missing = [name for name in _MISSING.findall(text) if name in PENDING]
    if missing:
        pytest.xfail(f"{spec.script} needs torch.{missing[0]}, not in portagrad yet")
    dev_type = None if device is None else device.split(":")[0]
    for key in ((spec.id, None), (spec.id, dev_type)):
        if key in KNOWN_BUGS:
            signatures, why = KNOWN_BUGS[key]
            if any(sig in text for sig in ((signatures,) if isinstance(signatures, str)
                                           else signatures)):
                pytest.xfail(f"known portagrad bug or limit: {why}")


def _compat_run(spec: Script, device: str, kind: str) -> str:
    proc = _start(kind, spec, device).result()
    if proc.returncode != 0:
        _expected_failure(spec, device, proc.stderr)
        pytest.fail(f"{spec.script} ({kind} run) exited {proc.returncode} on {device}:\n"
                    f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout


@pytest.mark.parametrize("spec", SCRIPTS, ids=[s.id for s in SCRIPTS])
def test_script_trains(spec: Script, device: str) -> None:
    out = _compat_run(spec, device, "train")
    losses = _losses(spec, out)
    assert len(losses) >= 2, f"{spec.script} printed fewer than two losses:\n{out}"
    # compare the means of the first and last quarter: GAN and policy-gradient losses are noisy
    k = max(1, len(losses) // 4)
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    if not last < first:
        _expected_failure(spec, device, "loss did not fall")
    assert last < first, f"{spec.script}: loss did not fall ({losses})"


def _torch_first_loss(spec: Script) -> float:
    proc = _start("torch", spec, None).result()
    assert proc.returncode == 0, f"{spec.script} fails under PyTorch itself:\n{proc.stderr}"
    losses = _losses(spec, proc.stdout)
    assert losses, f"{spec.script} printed no loss under PyTorch:\n{proc.stdout}"
    return losses[0]


@pytest.mark.parametrize("spec", [s for s in SCRIPTS if s.compare is not None],
                         ids=[s.id for s in SCRIPTS if s.compare is not None])
def test_first_loss_matches_pytorch(spec: Script, device: str) -> None:
    pytest.importorskip("torch")
    assert spec.compare is not None
    expected = _torch_first_loss(spec)
    losses = _losses(spec, _compat_run(spec, device, "compare"))
    assert losses, f"{spec.script} printed no loss"
    assert losses[0] == pytest.approx(expected, rel=1e-4, abs=1e-6), (
        f"{spec.script}: first loss {losses[0]} under portagrad, {expected} under PyTorch")
