"""``pg.accelerator`` (the device-agnostic API), ``pg.cuda`` / ``pg.mps`` as PyTorch answers
without them, ``pg.onnx`` and ``cuda`` devices."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from collections import OrderedDict
from pathlib import Path
from types import SimpleNamespace

import pytest

import portagrad as pg
from portagrad.accelerator import _select
from portagrad.plugins import BackendSpec

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), full.get("PYTHONPATH", "")])
    full.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full, timeout=120, cwd=ROOT)


def _cpu_only(code: str) -> list[str]:
    r = _run(code, PORTAGRAD_DISABLE_PLUGINS="opencl")
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_accelerator_on_each_backend(device: str) -> None:
    if device == "cpu":  # only cpu: PyTorch's answers on a build without accelerators
        out = _cpu_only("""
            import portagrad as pg
            A = pg.accelerator
            print(A.is_available(), A.current_accelerator(), A.current_accelerator(True),
                  A.device_count(), A.memory_allocated(), dict(A.memory_stats()))
            A.empty_cache()
            for f in (A.current_device_index, A.synchronize, lambda: A.set_device_index(0),
                      A.current_stream, lambda: A.set_stream(pg.Stream("cpu"))):
                try:
                    f()
                except RuntimeError as exc:
                    print("ERR", exc)
        """)
        assert out[0] == "False None None 0 0 {}"
        assert out[1:] == ["ERR Cannot access accelerator device when none is available."] * 5
        return
    dev = pg.device(device)
    acc = pg.accelerator.current_accelerator()
    assert acc == pg.device(dev.type) and acc.index is None
    assert pg.accelerator.current_accelerator(check_available=True) == acc
    assert pg.accelerator.is_available()
    assert pg.accelerator.device_count() == getattr(pg, dev.type).device_count() >= 1
    assert pg.accelerator.current_device_index() == 0
    x = pg.ones(1000, device=pg.accelerator.current_accelerator())
    assert x.device == pg.device(dev.type, 0)
    pg.accelerator.synchronize()
    pg.accelerator.synchronize(0)
    pg.accelerator.synchronize(device)
    assert pg.accelerator.memory_allocated() >= 4000
    assert pg.accelerator.memory.memory_allocated(0) == pg.accelerator.memory_allocated(device)
    stats = pg.accelerator.memory_stats()
    assert isinstance(stats, OrderedDict) and list(stats) == sorted(stats)
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"] >= 4000
    assert pg.accelerator.max_memory_allocated() >= 4000
    assert pg.accelerator.memory_reserved() >= pg.accelerator.memory_allocated()
    free, total = pg.accelerator.get_memory_info()
    assert 0 <= free <= total and total > 0
    pg.accelerator.reset_peak_memory_stats()
    pg.accelerator.empty_cache()
    caps = pg.accelerator.get_device_capability()
    assert {pg.float32, pg.int64, pg.bool} <= caps["supported_dtypes"]
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        pg.accelerator.synchronize("cpu")
    with pytest.raises(ValueError, match="with a specified index"):
        pg.accelerator.set_device_index(dev.type)
    s = pg.accelerator.current_stream()
    assert isinstance(s, pg.Stream) and s == pg.Stream(dev) and s.device_index == dev.index
    assert pg.accelerator.current_stream(dev.index) == s
    pg.accelerator.set_stream(s)
    assert pg.accelerator.current_device_index() == dev.index
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        pg.accelerator.current_stream("cpu")
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        pg.accelerator.set_stream(pg.Stream("cpu"))
    with pytest.raises(TypeError, match="must be torch.Stream"):
        pg.accelerator.set_stream(0)
    with pytest.raises(NotImplementedError, match="graph"):
        pg.accelerator.Graph()


def test_device_index_switches_and_restores(opencl_devices: list[str]) -> None:
    if len(opencl_devices) < 2:
        pytest.skip("needs two OpenCL devices (POCL_DEVICES='pthread pthread')")
    A = pg.accelerator
    with A.device_index(1):
        assert A.current_device_index() == 1
        assert pg.zeros(1, device=A.current_accelerator()).device == pg.device("opencl:1")
    assert A.current_device_index() == 0
    with A.device_index(None):
        assert A.current_device_index() == 0
    A.set_device_index("opencl:1")
    try:
        assert A.current_device_index() == 1
        with pytest.warns(FutureWarning, match="current_device_index"):
            assert A.current_device_idx() == 1
        A.set_device_index(-1)  # negative: a no-op, as PyTorch
        assert A.current_device_index() == 1
    finally:
        with pytest.warns(FutureWarning, match="set_device_index"):
            A.set_device_idx(0)
    assert A.current_device_index() == 0
    with pytest.raises(RuntimeError, match="Invalid device opencl:7"):
        A.set_device_index(7)


def test_accelerator_follows_plugin_priority(monkeypatch: pytest.MonkeyPatch) -> None:
    def spec(dt: str, priority: int) -> BackendSpec:
        return BackendSpec(name=dt, device_type=dt, loader=lambda: None, priority=priority)

    specs = {"cpu": spec("cpu", 100), "opencl": spec("opencl", 0), "mydev": spec("mydev", 5),
             "other": spec("other", 5), "empty": spec("empty", 50)}
    monkeypatch.setattr(pg._device, "get_state", lambda: SimpleNamespace(specs=specs))
    monkeypatch.setattr(pg.accelerator._device_module.DeviceModule, "is_available",
                        lambda self: self.device_type != "empty")
    # highest priority with a device wins ("empty" has none); "mydev" ties "other" and came first
    assert _select.accelerator_type() == "mydev"
    assert pg._device.accelerator_types() == ["empty", "mydev", "other", "opencl"]
    assert pg._device.as_device(1) == pg.device("empty", 1)  # device=<int>: the best type's
    monkeypatch.setattr(pg.accelerator._device_module.DeviceModule, "is_available", lambda self: False)
    assert _select.accelerator_type() is None
    assert pg.accelerator.current_accelerator() is None


def test_cuda_answers_as_without_cuda() -> None:
    c = pg.cuda
    assert c.is_available() is False and c.device_count() == 0 and c.is_initialized() is False
    assert c.is_bf16_supported() is False and c.is_bf16_supported(including_emulation=False) is False
    assert c.get_arch_list() == [] and c.get_rng_state_all() == []
    assert c.manual_seed(1) is None and c.manual_seed_all(1) is None and c.empty_cache() is None
    assert c.seed() is None and c.seed_all() is None
    assert c.memory_allocated() == c.max_memory_allocated() == c.memory_reserved() == 0
    assert c.max_memory_reserved() == 0 and c.memory_stats() == OrderedDict()
    for call in (c.synchronize, c.current_device, c.get_device_name, c.init, c.initial_seed,
                 c.get_rng_state, c.mem_get_info, c.ipc_collect, c.current_stream,
                 lambda: c.set_device(0), lambda: c.get_device_properties(0),
                 lambda: c.get_device_capability()):
        with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled"):
            call()
    with pytest.raises(RuntimeError, match="compiled without CUDA"):
        with c.device(0):
            pass
    with pytest.raises(RuntimeError, match="requires CUDA"):
        c.Event()


def test_cuda_amp_is_disabled_as_without_cuda() -> None:
    with pytest.warns(UserWarning, match="Disabling autocast"):
        ac = pg.cuda.amp.autocast()
    with ac:
        y = pg.ones(2) * 3
    assert y.tolist() == [3.0, 3.0]
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = pg.cuda.amp.GradScaler()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pg.cuda.amp.GradScaler(enabled=False).is_enabled() is False
    w = pg.nn.Parameter(pg.tensor([1.0, 2.0]))
    opt = pg.optim.SGD([w], lr=0.5)
    loss = (w * w).sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert w.detach().tolist() == [0.0, 0.0]  # the optimizer stepped: w - 0.5 * 2w
    assert scaler.state_dict() == {} and not scaler.is_enabled()

    @pg.cuda.amp.custom_fwd(cast_inputs=pg.float16)
    def fwd(x: int) -> int:
        return x + 1

    assert fwd(1) == 2 and pg.cuda.amp.custom_bwd(fwd) is fwd


def test_cuda_and_mps_devices_raise_torchs_error(device: str) -> None:
    x = pg.ones(2, device=device)
    for make in (lambda: pg.zeros(2, device="cuda"), lambda: x.cuda(), lambda: x.to("cuda:0"),
                 lambda: pg.tensor([1.0], device=pg.device("cuda", 1))):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled") as info:
            make()
        assert isinstance(info.value, RuntimeError) and "'cuda" in str(info.value)
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        pg.nn.Linear(2, 2).to(device).cuda()
    with pytest.raises(RuntimeError, match="MPS") as info:
        x.to("mps")
    assert isinstance(info.value, AssertionError)


def test_mps_answers_as_without_mps() -> None:
    assert pg.mps.is_available() is False and pg.mps.is_built() is False
    assert pg.backends.mps.is_available() is False and pg.backends.mps.is_built() is False
    assert pg.mps.device_count() == 0 and pg.mps.manual_seed(0) is None
    for call in (pg.mps.synchronize, pg.mps.empty_cache, pg.mps.current_allocated_memory):
        with pytest.raises(RuntimeError, match="without MPS backend"):
            call()


def test_onnx_imports_and_export_says_what_is_missing() -> None:
    import portagrad.onnx

    assert portagrad.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="pg.onnx.export is not implemented"):
        pg.onnx.export(pg.nn.Linear(2, 2), (pg.ones(1, 2),), "model.onnx")


CUDA_PLUGIN = '''
from portagrad.plugins import BackendSpec, hookimpl

def _load():
    from portagrad.backends.numpy import NumpyBackend

    class FakeCuda(NumpyBackend):
        device_type = "cuda"

        def host_array(self, src):
            return None

    return FakeCuda()

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="fakecuda", device_type="cuda", loader=_load, priority=10)]
'''


def test_a_plugin_serving_cuda_is_the_accelerator_and_answers_pg_cuda(tmp_path: Path) -> None:
    mod = "pg_test_fakecuda"
    (tmp_path / f"{mod}.py").write_text(CUDA_PLUGIN)
    info = tmp_path / f"{mod}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {mod}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[portagrad.backends]\nfakecuda = {mod}\n")
    r = _run("""
        import portagrad as pg
        print(pg.cuda.is_available(), pg.cuda.device_count(), pg.cuda.current_device())
        print(pg.accelerator.current_accelerator(), pg.zeros(2, device="cuda").device,
              pg.ones(1).cuda().device, pg.zeros(1, device=0).device)
        pg.cuda.synchronize()
    """, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    assert r.returncode == 0, r.stderr
    # priority 10 beats the built-in opencl (0): the plugin's type is the accelerator
    assert r.stdout.splitlines() == ["True 1 0", "cuda cuda:0 cuda:0 cuda:0"]
