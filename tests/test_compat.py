"""The ``torch`` compatibility hook (``portagrad.compat``), the ``torch.backends`` flag modules
and the ``--coverage`` report."""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import portagrad as pg
from portagrad import compat
from portagrad.compat import _coverage
from portagrad.compat._alias import AliasModule

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def hooked() -> Iterator[types.ModuleType]:
    """``import torch`` gives portagrad inside the test; a real torch comes back after it."""
    compat.install()
    try:
        yield importlib.import_module("torch")
    finally:
        compat.uninstall()


def _run(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, **kw)  # type: ignore[call-overload]


# ----------------------------------------------------------------------------- the alias
def test_torch_names_are_portagrads_objects(hooked: types.ModuleType) -> None:
    torch = hooked
    assert isinstance(torch, AliasModule) and torch.__name__ == "torch"
    assert torch.Tensor is pg.Tensor and torch.tensor is pg.tensor
    assert torch.nn.Linear is pg.nn.Linear
    F = importlib.import_module("torch.nn.functional")
    assert F.relu is pg.nn.functional.relu and F.__name__ == "torch.nn.functional"
    assert importlib.import_module("torch.nn.modules.linear").Linear is pg.nn.Linear
    assert importlib.import_module("torch.utils.data").DataLoader is pg.utils.data.DataLoader
    sched = importlib.import_module("torch.optim.lr_scheduler")
    assert sched.StepLR is pg.optim.lr_scheduler.StepLR
    # the same alias object however it is reached
    assert torch.nn is sys.modules["torch.nn"] and torch.nn.functional is F
    # a subpackage portagrad/__init__ does not import, which PyTorch makes an attribute
    assert torch.multiprocessing.__name__ == "torch.multiprocessing"
    x = torch.ones(2, 3)
    assert isinstance(x, pg.Tensor) and x.sum().item() == 6.0


def test_missing_attribute_names_module_and_attribute(hooked: types.ModuleType) -> None:
    torch = hooked
    with pytest.raises(AttributeError, match=re.escape(
            "portagrad (as torch) has no attribute 'xyz' (torch.xyz is not implemented in "
            "portagrad)")):
        _ = torch.xyz
    with pytest.raises(AttributeError, match=re.escape(
            "portagrad.nn (as torch.nn) has no attribute 'Xyz' (torch.nn.Xyz is not "
            "implemented in portagrad)")):
        _ = torch.nn.Xyz
    assert not hasattr(torch, "xyz")
    with pytest.raises(ImportError, match=r"cannot import name 'xyz' from 'torch' \(.*portagrad"):
        exec("from torch import xyz", {})
    # portagrad's array-backend plugins share the package but are not torch.backends.*
    with pytest.raises(AttributeError, match=r"torch\.backends\.numpy is not implemented"):
        _ = torch.backends.numpy


@pytest.mark.parametrize("name", ["torch.foo", "torch.nn.foo", "torch._refs", "torch._tensor",
                                  "torch._C._foo", "torch._dynamo._foo",
                                  "torch.backends.opencl", "torch.backends.numpy",
                                  "torch.backends.interface", "torch.backend_flags",
                                  "torch.plugins"])
def test_missing_submodule_is_module_not_found(hooked: types.ModuleType, name: str) -> None:
    with pytest.raises(ModuleNotFoundError,
                       match=re.escape(f"No module named '{name}' ({name} is not implemented in "
                                       "portagrad)")) as info:
        importlib.import_module(name)
    assert info.value.name == name


def test_flags_set_through_torch_reach_portagrad(hooked: types.ModuleType) -> None:
    cudnn = importlib.import_module("torch.backends.cudnn")
    assert cudnn is hooked.backends.cudnn
    saved = pg.backends.cudnn.benchmark
    try:
        cudnn.benchmark = not saved
        assert pg.backends.cudnn.benchmark is (not saved)
    finally:
        pg.backends.cudnn.benchmark = saved
    with pytest.raises(RuntimeError, match="expects a bool"):
        cudnn.deterministic = 1


def test_install_hides_and_uninstall_restores_other_torch_modules() -> None:
    fake = types.ModuleType("torch")
    saved = {n: sys.modules.pop(n) for n in list(sys.modules) if n == "torch"
             or n.startswith("torch.")}
    sys.modules["torch"] = fake
    try:
        compat.install()
        compat.install()  # twice is harmless
        assert compat.is_installed()
        assert importlib.import_module("torch") is not fake
        compat.uninstall()
        assert not compat.is_installed()
        assert sys.modules["torch"] is fake
        assert not any(isinstance(m, AliasModule) for m in sys.modules.values())
    finally:
        compat.uninstall()
        sys.modules.pop("torch", None)
        sys.modules.update(saved)


def test_modules_of_another_portagrad_do_not_count(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.machinery import ModuleSpec

    from portagrad.compat import _alias

    assert _alias._package_spec("portagrad.nn.functional") is not None
    # e.g. an editable install of another checkout answering for a module this one lacks
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: ModuleSpec(name, None, origin="/elsewhere/portagrad/x.py"))
    assert _alias._package_spec("portagrad.somewhere") is None


def test_name_mapping() -> None:
    assert compat.torch_to_portagrad("torch") == "portagrad"
    assert compat.torch_to_portagrad("torch.nn.functional") == "portagrad.nn.functional"
    assert compat.torch_to_portagrad("torchvision") is None
    # private modules map only through the documented allow-list, never to portagrad's own
    # private modules of the same name
    assert compat.torch_to_portagrad("torch._refs") is None
    assert compat.torch_to_portagrad("torch._tensor") is None
    assert compat.torch_to_portagrad("torch._C") == "portagrad._C"
    assert compat.torch_to_portagrad("torch._C._nn") == "portagrad._C._nn"
    assert compat.torch_to_portagrad("torch._C._other") is None
    assert compat.torch_to_portagrad("torch._dynamo.config") == "portagrad._dynamo.config"
    assert compat.torch_to_portagrad("torch.utils._pytree") == "portagrad.utils._pytree"
    assert compat.portagrad_to_torch("portagrad._C") == "torch._C"
    assert compat.portagrad_to_torch("portagrad._tensor") is None
    # torch.backends is the flags package: the array-backend plugins are out of its reach (and
    # test_missing_submodule_is_module_not_found imports torch.backends.numpy to show it)
    for name in ("torch.backends.numpy", "torch.backends.opencl", "torch.backends.interface"):
        assert not (compat.torch_to_portagrad(name) or "").startswith("portagrad.backends"), name
    assert compat.portagrad_to_torch("portagrad.backend_flags.cudnn") == "torch.backends.cudnn"
    assert compat.torch_to_portagrad("torch.backends.cudnn") == "portagrad.backend_flags.cudnn"
    assert compat.torch_to_portagrad("torch.backends") == "portagrad.backend_flags"
    for plugin_side in ("portagrad.backends", "portagrad.backends.cudnn",
                        "portagrad.backends.opencl", "portagrad.backends.interface"):
        assert compat.portagrad_to_torch(plugin_side) is None, plugin_side
    assert compat.torch_to_portagrad("torch.backend_flags") is None
    assert pg.backends.cudnn is pg.backend_flags.cudnn  # one module under both names
    assert compat.portagrad_to_torch("portagrad.backends.opencl") is None


# ----------------------------------------------------------------------------- the entry point
def test_entry_point_runs_script_like_python(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import torch.nn as nn
        print("argv", sys.argv[1:], sys.argv[0].endswith("script.py"))
        print("name", __name__, sys.path[0] == __file__.rsplit("/", 1)[0])
        print("linear", type(nn.Linear(2, 3)).__module__)
        if __name__ == "__main__":
            sys.exit(int(sys.argv[1]))
    """))
    proc = _run(["-m", "portagrad.compat", str(script), "3", "--flag"])
    assert proc.returncode == 3, proc.stderr
    assert "argv ['3', '--flag'] True" in proc.stdout
    assert "name __main__ True" in proc.stdout
    assert "linear portagrad.nn.modules.linear" in proc.stdout


def test_entry_point_reports_missing_names(tmp_path: Path) -> None:
    script = tmp_path / "missing.py"
    script.write_text("import torch\ntorch.definitely_missing_op(1)\n")
    proc = _run(["-m", "portagrad.compat", str(script)])
    assert proc.returncode == 1
    assert ("AttributeError: portagrad (as torch) has no attribute 'definitely_missing_op' "
            "(torch.definitely_missing_op is not implemented in portagrad)") in proc.stderr


def test_entry_point_module_mode_and_usage(tmp_path: Path) -> None:
    (tmp_path / "usetorch.py").write_text("import sys, torch\nprint(torch.zeros(2).shape, "
                                          "sys.argv[1:])\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    proc = subprocess.run([sys.executable, "-m", "portagrad.compat", "-m", "usetorch", "x"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "['x']" in proc.stdout and "2" in proc.stdout
    assert _run(["-m", "portagrad.compat"]).returncode == 2
    assert _run(["-m", "portagrad.compat", "--bogus"]).returncode == 2
    bad = _run(["-m", "portagrad.compat", str(tmp_path / "nope.py")])
    assert bad.returncode == 2 and "can't open file" in bad.stderr and "nope.py" in bad.stderr


def test_portagrad_modules_stay_portagrads_after_uninstall() -> None:
    compat.install()
    try:
        importlib.import_module("torch.nn.init")
        importlib.import_module("torch.backends.cudnn")
    finally:
        compat.uninstall()
    try:  # a real PyTorch imported afterwards binds its modules on its own packages
        importlib.import_module("torch.nn.init")
    except ImportError:
        pass
    for mod in (pg.nn.init, pg.nn.functional, pg.backends, pg.backends.cudnn, pg.optim):
        assert mod.__name__.startswith("portagrad.") and not isinstance(mod, AliasModule)


# ----------------------------------------------------------------------------- torch.backends
def test_importing_torch_submodules_leaves_portagrad_modules_alone(hooked) -> None:
    # the import system binds each imported submodule on its parent: on the alias, never on
    # portagrad's own package, which must not hand out aliases once the hook is gone
    importlib.import_module("torch.backends.cuda")
    importlib.import_module("torch.nn.functional")
    assert isinstance(hooked.backends.cuda, AliasModule)
    assert not isinstance(pg.backends.cuda, AliasModule)
    assert not isinstance(pg.nn.functional, AliasModule)
    assert not isinstance(pg.backends, AliasModule)


def test_backends_flags_defaults_and_types() -> None:
    cudnn, cuda, mps = pg.backends.cudnn, pg.backends.cuda, pg.backends.mps
    assert cudnn.is_available() is False and cudnn.version() is None
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (
        True, False, False, True)
    assert mps.is_available() is False and mps.is_built() is False
    assert cuda.is_built() is False
    assert cuda.matmul.allow_tf32 is False
    assert cuda.matmul.allow_fp16_reduced_precision_reduction is True
    assert pg.backends.opt_einsum.is_available() is False
    with pytest.raises(RuntimeError, match="set_benchmark_cudnn expects a bool, but got str"):
        cudnn.benchmark = "yes"
    with pytest.raises(RuntimeError, match="set_allow_tf32_cublas expects a bool, but got int"):
        cuda.matmul.allow_tf32 = 1
    with pytest.raises(AttributeError, match="Unknown attribute allow_fp8"):
        cuda.matmul.allow_fp8 = True
    with pytest.raises(AttributeError, match="Unknown attribute allow_fp8"):
        _ = cuda.matmul.allow_fp8
    assert cuda.flash_sdp_enabled() is True
    cuda.enable_flash_sdp(False)
    try:
        assert cuda.flash_sdp_enabled() is False
    finally:
        cuda.enable_flash_sdp(True)
    with pytest.raises(RuntimeError, match="expects a bool"):
        cuda.enable_math_sdp("no")


def test_cudnn_flags_context_restores() -> None:
    cudnn = pg.backends.cudnn
    with cudnn.flags(enabled=False, benchmark=True, deterministic=True, allow_tf32=False):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (
            False, True, True, False)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (
        True, False, False, True)


def test_backends_flags_match_pytorch() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or torch.backends.mps.is_available():
        pytest.skip("PyTorch's answers differ on a machine with CUDA or MPS")
    b = torch.backends
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(pg.backends.cudnn, name) == getattr(b.cudnn, name), name
    assert pg.backends.cudnn.is_available() == b.cudnn.is_available()
    assert pg.backends.mps.is_built() == b.mps.is_built()
    assert pg.backends.cuda.is_built() == b.cuda.is_built()
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        assert getattr(pg.backends.cuda.matmul, name) == getattr(b.cuda.matmul, name), name


# ----------------------------------------------------------------------------- coverage
def test_coverage_against_pytorch(capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    rows = _coverage.coverage(torch)
    by_ns = {ns: (present, missing) for ns, present, missing in rows}
    assert {"torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.optim"} <= set(by_ns)
    present, missing = by_ns["torch.nn"]
    assert "Linear" in present and "Linear" not in missing
    names = _coverage.torch_names(torch)
    assert not [n for n in names if n.startswith("_") or "cuda" in n or "quant" in n
                or "sparse" in n]
    assert "Optional" not in _coverage.torch_names(torch.nn.functional)  # typing re-export
    assert _coverage.torch_names(torch) == names  # counted the same way each time
    assert _coverage.main(missing=True) == 0
    out = capsys.readouterr().out
    assert re.search(r"torch\.nn\s+\d+ /\s+\d+", out) and "missing in torch" in out


def test_coverage_without_pytorch_says_so() -> None:
    # sys.modules[name] = None makes `import name` raise ModuleNotFoundError, as if not installed
    proc = _run(["-c", "import sys; sys.modules['torch'] = None; "
                       "from portagrad.compat.__main__ import main; sys.exit(main(['--coverage']))"])
    assert proc.returncode == 0, proc.stderr
    assert "PyTorch (the 'torch' package) is not installed" in proc.stdout


# ------------------------------------------------------------------ runpy and child processes
def test_alias_loader_answers_runpy(hooked: types.ModuleType, tmp_path: Path) -> None:
    """runpy asks the loader for code, source and whether it is a package: running ``torch.X``
    runs ``portagrad.X`` (its relative imports included) under the caller's name."""
    import runpy

    spec = importlib.util.find_spec("torch.distributed.run")
    assert spec is not None and spec.loader is not None
    assert spec.loader.is_package("torch.distributed.run") is False  # type: ignore[attr-defined]
    assert importlib.util.find_spec("torch.distributed").loader.is_package(  # type: ignore
        "torch.distributed") is True
    source = spec.loader.get_source("torch.distributed.run")  # type: ignore[attr-defined]
    assert source is not None and "def build_command" in source
    ns = runpy.run_module("torch.distributed.run", run_name="not_main")
    assert ns["__name__"] == "not_main"  # the `if __name__ == "__main__"` block did not run
    run = importlib.import_module("portagrad.distributed.run")
    assert ns["build_command"].__code__.co_filename == run.build_command.__code__.co_filename


def test_launcher_under_compat_runs_a_torch_script(tmp_path: Path) -> None:
    """``python -m portagrad.compat -m torch.distributed.run`` starts the ranks, whose own
    ``import torch`` (fresh interpreters under mpiexec) gives portagrad too."""
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if importlib.util.find_spec("mpi4py") is None or not os.path.exists(mpiexec):
        if os.environ.get("CI") or os.environ.get("PORTAGRAD_REQUIRE_MPI"):
            pytest.fail("MPI is required here (CI or PORTAGRAD_REQUIRE_MPI set)")
        pytest.skip("mpi4py or mpiexec is not installed (pip install 'portagrad[mpi]')")
    script = tmp_path / "allreduce.py"
    script.write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist
        dist.init_process_group()
        t = torch.ones(2) * (dist.get_rank() + 1)
        dist.all_reduce(t)
        print(f"rank {dist.get_rank()}: {t.tolist()} from {torch.__name__}", flush=True)
        dist.destroy_process_group()
    """))
    env = dict(os.environ, PYTHONPATH=str(ROOT), HYDRA_LAUNCHER="fork", HYDRA_IFACE="lo")
    env.pop("PORTAGRAD_DEVICE", None)
    proc = subprocess.run([sys.executable, "-m", "portagrad.compat", "-m", "torch.distributed.run",
                           "--nproc-per-node", "2", "--device-type", "cpu", str(script)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    for r in range(2):
        assert f"rank {r}: [3.0, 3.0] from torch" in proc.stdout, out
