"""Devices through the public API: parsing, defaults, selection, cross-device rules, memory."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import portagrad as pg


def test_device_parsing() -> None:
    d = pg.device("opencl:1")
    assert (d.type, d.index) == ("opencl", 1) and str(d) == "opencl:1"
    assert pg.device("opencl", 2) == pg.device("opencl:2")
    assert pg.device("cpu").index is None and repr(pg.device("cpu")) == "device(type='cpu')"
    assert pg.device("cpu") == "cpu"
    with pytest.raises(RuntimeError, match="Invalid device string"):
        pg.device("opencl:x")
    with pytest.raises(RuntimeError, match="must not be negative"):
        pg.device("opencl", -1)
    with pytest.raises(TypeError):
        pg.device(3.5)


def test_default_device_context_and_setter(device: str) -> None:
    assert pg.zeros(1).device == pg.device("cpu")
    with pg.device(device):
        assert pg.ones(2).device == pg.device(device)
        assert pg.tensor([1.0]).device == pg.device(device)
        with pg.device("cpu"):
            assert pg.randn(2).device == pg.device("cpu")
    assert pg.zeros(1).device == pg.device("cpu")
    pg.set_default_device(device)
    try:
        assert pg.arange(3).device == pg.device(device)
    finally:
        pg.set_default_device(None)
    assert pg.zeros(1).device == pg.device("cpu")


def test_to_and_copy_roundtrip(device: str) -> None:
    x = pg.arange(6, dtype=pg.float32).reshape(2, 3)
    y = x.to(device)
    assert y.device == pg.device(device) and y.dtype is pg.float32
    z = y.to(pg.float64)
    assert z.dtype is pg.float64 and z.device == y.device
    np.testing.assert_array_equal(z.cpu().numpy(), x.numpy())
    back = pg.zeros(2, 3)
    back.copy_(y.t().t())
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert x.to("cpu") is x and y.to(device) is y
    assert y.to(device, copy=True) is not y


def test_numpy_requires_host(device: str) -> None:
    y = pg.ones(2, device=device)
    if pg.device(device).type == "cpu":
        arr = y.numpy()
        arr[0] = 5
        assert y[0].item() == 5  # shares memory on the CPU, like PyTorch
    else:
        with pytest.raises(TypeError, match="Tensor.cpu()"):
            y.numpy()
        np.testing.assert_array_equal(y.cpu().numpy(), [1, 1])


def test_cross_device_error_names_both(opencl_devices: list[str]) -> None:
    a = pg.ones(3, device=opencl_devices[0])
    b = pg.ones(3)
    with pytest.raises(RuntimeError, match=r"same device.*opencl:0 and cpu"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        pg.matmul(a.reshape(1, 3), b.reshape(3, 1))
    # a zero-dim cpu tensor may meet any device, as in PyTorch
    assert (a * pg.tensor(2.0)).device == a.device


def test_multi_device(opencl_devices: list[str]) -> None:
    if len(opencl_devices) < 2:
        pytest.skip("needs two OpenCL devices (POCL_DEVICES='pthread pthread')")
    d0, d1 = opencl_devices[:2]
    x = pg.randn(5, 4, device=d0)
    y = x.to(d1)
    assert y.device == pg.device(d1)
    np.testing.assert_array_equal(x.cpu().numpy(), y.cpu().numpy())
    with pytest.raises(RuntimeError, match=f"{d0} and {d1}"):
        x + y
    z = pg.zeros(5, 4, device=d1)
    z.copy_(x)  # copy_ crosses devices
    np.testing.assert_array_equal(z.cpu().numpy(), x.cpu().numpy())
    with pg.opencl.device(1):
        assert pg.opencl.current_device() == 1
        assert pg.ones(1).device == pg.device(d1)
        assert pg.ones(1, device="opencl").device == pg.device(d1)
    assert pg.opencl.current_device() == 0
    pg.opencl.set_device(1)
    try:
        assert pg.ones(1, device="opencl").device == pg.device(d1)
    finally:
        pg.opencl.set_device(0)
    assert pg.opencl.get_device_name(1)
    assert pg.opencl.get_device_properties(0).total_memory > 0
    with pytest.raises(RuntimeError, match="Invalid device opencl:7"):
        pg.zeros(1, device="opencl:7")


def test_pinned_and_non_blocking(opencl_devices: list[str]) -> None:
    x = pg.randn(256, 256)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.device == pg.device("cpu")
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    f = pg.empty(10, pin_memory=True)
    assert f.is_pinned()
    y = p.to(opencl_devices[0], non_blocking=True)
    z = (y * 2).cpu()  # queue order keeps the result right; reading synchronises
    np.testing.assert_array_equal(z.numpy(), x.numpy() * 2)
    pg.opencl.synchronize()
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        pg.empty(2, device=opencl_devices[0], pin_memory=True)


def test_pin_memory_for_a_device_uses_its_backend(opencl_devices: list[str]) -> None:
    """``pin_memory(device)`` pins with that device type's backend (it used to ignore the
    argument and pin with the first backend that could, opencl, so another backend's
    non-blocking path never saw its own pinned memory); by default, the accelerator's.

    In a fresh process: registering a backend and resetting the plugin manager afterwards would
    replace the OpenCL backend objects that this process's other tests still hold tensors of."""
    script = textwrap.dedent(f"""
        import numpy as np
        import portagrad as pg
        from planted_backends import CleanFull
        from portagrad.testing.plugin import _register

        be = CleanFull()
        _register(be, "test_devices")  # highest priority: the accelerator
        x = pg.arange(6.0)[1:5]
        p = x.pin_memory("planted")
        assert p.is_pinned() and be.is_pinned(p._storage.buffer)
        assert p.pin_memory("planted") is p and p.pin_memory() is p
        np.testing.assert_array_equal(p.to("planted:0", non_blocking=True).cpu().numpy(),
                                      [1.0, 2.0, 3.0, 4.0])
        q = p.pin_memory({opencl_devices[0]!r})  # pinned, but not by opencl: pinned again
        assert q is not p and q.is_pinned() and not be.is_pinned(q._storage.buffer)
        assert be.is_pinned(x.pin_memory()._storage.buffer)
        try:
            x.pin_memory("cpu")
        except RuntimeError as exc:
            assert "cannot pin memory for the cpu device" in str(exc)
        else:
            raise AssertionError("pin_memory('cpu') did not raise")
        print("ok")
    """)
    root = Path(__file__).resolve().parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(root.parent)]))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=300)  # a hang detector
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_out_of_memory_and_recovery(opencl_devices: list[str]) -> None:
    dev = opencl_devices[0]
    total = pg.opencl.get_device_properties(0).total_memory
    with pytest.raises(pg.OutOfMemoryError, match="opencl") as info:
        pg.empty(total // 4 * 3, device=dev)  # float32: 3x the device memory
    assert isinstance(info.value, RuntimeError)
    pg.opencl.empty_cache()
    assert pg.ones(1000, device=dev).sum().item() == 1000


def test_memory_stays_flat_in_training_loop(opencl_devices: list[str]) -> None:
    dev = opencl_devices[0]
    pg.manual_seed(0)
    w = pg.randn(64, 32, device=dev, requires_grad=True)
    x = pg.randn(128, 64, device=dev)

    def step() -> None:
        loss = (x @ w).relu().pow(2).mean()
        loss.backward()
        with pg.no_grad():
            w.sub_(w.grad * 0.01)
        w.grad = None

    for _ in range(3):
        step()
    before = pg.opencl.memory_allocated(0)
    for _ in range(20):
        step()
    assert pg.opencl.memory_allocated(0) == before
    assert pg.opencl.max_memory_allocated(0) >= before
    pg.opencl.reset_peak_memory_stats(0)
    assert pg.opencl.max_memory_allocated(0) == pg.opencl.memory_allocated(0)
    assert pg.opencl.memory_reserved(0) >= pg.opencl.memory_allocated(0)


def test_events_time_work(opencl_devices: list[str]) -> None:
    start, end = pg.opencl.Event(enable_timing=True), pg.opencl.Event(enable_timing=True)
    x = pg.randn(256, 256, device=opencl_devices[0])
    start.record()
    y = x @ x
    end.record()
    assert start.elapsed_time(end) >= 0.0
    assert end.query()
    with pytest.raises(RuntimeError, match="enable_timing"):
        pg.opencl.Event().elapsed_time(end)
    del y


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[1]), full.get("PYTHONPATH", "")])
    full.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full, timeout=120)


def test_env_default_device_and_visibility() -> None:
    import portagrad as pg_mod

    if pg_mod.opencl.device_count() < 2:
        pytest.skip("needs two OpenCL devices (POCL_DEVICES='pthread pthread')")
    r = _run("""
        import portagrad as pg
        print(pg.zeros(1).device, pg.opencl.device_count())
    """, PORTAGRAD_DEVICE="opencl:1", POCL_DEVICES="pthread pthread")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["opencl:1", "2"]
    r = _run("""
        import portagrad as pg
        print(pg.opencl.device_count())
        try:
            pg.zeros(1, device="opencl:1")
        except RuntimeError as exc:
            print("ERR", exc)
    """, PORTAGRAD_VISIBLE_DEVICES="opencl:1", POCL_DEVICES="pthread pthread")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "1" and "PORTAGRAD_VISIBLE_DEVICES" in lines[1]


def test_opencl_unavailable_is_explicit() -> None:
    r = _run("""
        import portagrad as pg
        print(pg.opencl.is_available(), pg.opencl.device_count())
        try:
            pg.zeros(1, device="opencl:0")
        except RuntimeError as exc:
            print("ERR", exc)
    """, PORTAGRAD_DISABLE_PLUGINS="opencl")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "False 0"
    assert "blocked by PORTAGRAD_DISABLE_PLUGINS" in r.stdout
