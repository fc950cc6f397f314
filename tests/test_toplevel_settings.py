"""Top-level runtime settings (threads, determinism, matmul precision, anomaly), ``pg.compile``,
``autograd.Variable``, ``pg.amp`` (GradScaler, autocast) and the deprecated ``nn.init`` aliases."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import portagrad as pg
from portagrad import _settings

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def restore_settings() -> Iterator[None]:
    saved = dict(_settings._state)
    matmul = pg.backends.mkldnn.matmul.fp32_precision  # set_float32_matmul_precision sets it
    yield
    _settings._state.update(saved)
    pg.backends.mkldnn.matmul.fp32_precision = matmul


def test_num_threads_limits_the_blas_pool() -> None:
    # in a subprocess: the limit is process-wide
    code = textwrap.dedent("""
        import portagrad as pg
        from threadpoolctl import threadpool_info
        before = pg.get_num_threads()
        assert before >= 1
        pg.set_num_threads(1)
        assert pg.get_num_threads() == 1
        assert all(p["num_threads"] == 1 for p in threadpool_info()
                   if p["user_api"] in ("blas", "openmp")), threadpool_info()
        x = pg.randn(64, 64)
        assert (x @ x).shape == (64, 64)
        assert pg.get_num_interop_threads() >= 1
        pg.set_num_interop_threads(2)
        assert pg.get_num_interop_threads() == 2
        try:
            pg.set_num_interop_threads(3)
        except RuntimeError as exc:
            assert "cannot set number of interop threads" in str(exc)
        else:
            raise AssertionError("second set_num_interop_threads accepted")
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_num_threads_validation() -> None:
    with pytest.raises(RuntimeError, match="expects a positive integer"):
        pg.set_num_threads(0)
    with pytest.raises(RuntimeError, match="expects an int, but got float"):
        pg.set_num_threads(1.5)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="positive integer"):
        pg.set_num_interop_threads(-1)


def test_deterministic_flags(restore_settings: None) -> None:
    assert pg.are_deterministic_algorithms_enabled() is False
    pg.use_deterministic_algorithms(True)
    assert pg.are_deterministic_algorithms_enabled()
    assert not pg.is_deterministic_algorithms_warn_only_enabled()
    assert pg.get_deterministic_debug_mode() == 2
    pg.use_deterministic_algorithms(True, warn_only=True)
    assert pg.is_deterministic_algorithms_warn_only_enabled()
    assert pg.get_deterministic_debug_mode() == 1
    pg.set_deterministic_debug_mode("default")
    assert not pg.are_deterministic_algorithms_enabled()
    pg.set_deterministic_debug_mode(2)
    assert pg.get_deterministic_debug_mode() == 2
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        pg.set_deterministic_debug_mode("x")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 5"):
        pg.set_deterministic_debug_mode(5)
    with pytest.raises(TypeError, match="must be bool"):
        pg.use_deterministic_algorithms(1)  # type: ignore[arg-type]


def test_matmul_precision_and_warn_always(restore_settings: None) -> None:
    assert pg.get_float32_matmul_precision() == "highest"
    pg.set_float32_matmul_precision("medium")
    assert pg.get_float32_matmul_precision() == "medium"
    with pytest.warns(UserWarning, match="has no effect"):
        pg.set_float32_matmul_precision("fast")
    assert pg.get_float32_matmul_precision() == "medium"
    assert pg.is_warn_always_enabled() is False
    pg.set_warn_always(True)
    assert pg.is_warn_always_enabled() is True


def test_mkldnn_precision_flags(restore_settings: None) -> None:
    """``torch.backends.mkldnn``: oneDNN is not what runs portagrad's cpu kernels; the flags and
    the float32 precision per op family are kept and checked as PyTorch 2.13 checks them, and
    ``set_float32_matmul_precision`` sets the products' one as PyTorch's does."""
    mk = pg.backends.mkldnn
    assert mk is pg.backend_flags.mkldnn
    assert mk.is_available() is False and mk.enabled is True and mk.deterministic is False
    saved = (mk.fp32_precision, mk.conv.fp32_precision, mk.matmul.fp32_precision)
    try:
        assert saved == ("none", "none", "none") and not mk.conv_allows_reduced_fp32()  # defaults
        assert (mk.conv.backend, mk.conv.op, mk.rnn.op) == ("mkldnn", "conv", "rnn")
        for name, expected in (("medium", "bf16"), ("highest", "ieee"), ("high", "tf32")):
            pg.set_float32_matmul_precision(name)
            assert mk.matmul.fp32_precision == expected
        assert mk.conv.fp32_precision == "none" and not mk.conv_allows_reduced_fp32()
        mk.conv.fp32_precision = "tf32"
        assert mk.conv_allows_reduced_fp32()
        with pytest.raises(RuntimeError, match="^Unknown precision: TF32$"):
            mk.conv.fp32_precision = "TF32"
        with pytest.raises(RuntimeError, match="^Unknown precision: bogus$"):
            mk.fp32_precision = "bogus"
        with pytest.raises(TypeError):
            mk.conv.fp32_precision = 3
        assert mk.conv.fp32_precision == "tf32" and mk.fp32_precision == "none"
        with pytest.raises(RuntimeError, match="set_enabled_mkldnn expects a bool, but got int"):
            mk.enabled = 3
        with pytest.raises(RuntimeError, match="set_deterministic_mkldnn expects a bool"):
            mk.deterministic = 3
    finally:
        mk.fp32_precision, mk.conv.fp32_precision, mk.matmul.fp32_precision = saved


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy computing 0/0 and x/0
def test_anomaly_flags_are_detect_anomalys(device: str) -> None:
    assert not pg.is_anomaly_enabled()
    pg.set_anomaly_enabled(True, False)
    try:
        assert pg.is_anomaly_enabled() and pg.autograd.is_anomaly_enabled()
        assert not pg.is_anomaly_check_nan_enabled()
        pg.set_anomaly_enabled(True)
        x = pg.tensor([0.0], device=device, requires_grad=True)
        with pytest.raises(RuntimeError, match="returned nan values"), \
                pytest.warns(UserWarning, match="Error detected in DivBackward0"):
            (x * 0.0).div(x).sum().backward()  # 0/0 in backward
    finally:
        pg.set_anomaly_enabled(False)
    assert not pg.is_anomaly_enabled() and pg.is_anomaly_check_nan_enabled()


def test_compile_runs_eagerly(device: str) -> None:
    model = pg.nn.Linear(3, 2).to(device)
    assert pg.compile(model) is model
    assert pg.compile(model, mode="max-autotune", fullgraph=True, dynamic=False) is model

    @pg.compile
    def f(x: pg.Tensor) -> pg.Tensor:
        return x * 2

    @pg.compile(backend="eager", options={"x": 1})
    def g(x: pg.Tensor) -> pg.Tensor:
        return x + 1

    x = pg.ones(2, device=device)
    np.testing.assert_array_equal(f(x).numpy(force=True), [2.0, 2.0])
    np.testing.assert_array_equal(g(x).numpy(force=True), [2.0, 2.0])


def test_compile_validates_like_torch() -> None:
    with pytest.raises(RuntimeError, match="Unrecognized mode=foo"):
        pg.compile(lambda x: x, mode="foo")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        pg.compile(lambda x: x, mode="default", options={})
    with pytest.raises(RuntimeError, match="Invalid backend: 'nope'"):
        pg.compile(backend="nope")
    with pytest.raises(TypeError, match="callable"):
        pg.compile(3)  # type: ignore[arg-type]


def test_module_compile_in_place(device: str) -> None:
    """``model.compile(...)`` (PyTorch 2.2+): returns None, the module runs as before (its
    gradients included), and bad arguments raise pg.compile's errors."""
    model = pg.nn.Linear(3, 2).to(device)
    x = pg.ones(4, 3, device=device)
    want = model(x).numpy(force=True)
    assert model.compile() is None
    assert model.compile(mode="max-autotune", fullgraph=True) is None
    out = model(x)
    np.testing.assert_array_equal(out.numpy(force=True), want)
    out.sum().backward()
    np.testing.assert_array_equal(model.bias.grad.numpy(force=True), [4.0, 4.0])
    with pytest.raises(RuntimeError, match="Unrecognized mode=foo"):
        model.compile(mode="foo")
    with pytest.raises(RuntimeError, match="Invalid backend: 'nope'"):
        model.compile(backend="nope")


def test_variable_is_the_tensor(device: str) -> None:
    from portagrad.autograd import Variable

    x = pg.ones(2, device=device)
    v = Variable(x, requires_grad=True)
    assert isinstance(v, pg.Tensor) and v is not x and v.requires_grad and v.is_leaf
    assert not x.requires_grad
    v.data.add_(1.0)  # shares x's memory
    np.testing.assert_array_equal(x.numpy(force=True), [2.0, 2.0])
    assert isinstance(x, Variable) and not isinstance(3, Variable)
    y = pg.ones(2, requires_grad=True) * 2
    w = Variable(y)
    assert w.grad_fn is None and not w.requires_grad
    assert Variable().shape == (0,)
    with pytest.warns(UserWarning, match="volatile"):
        Variable(x, volatile=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        Variable(3)
    with pytest.raises(RuntimeError, match="deprecated"):
        pg.autograd.variable(x)


def test_init_deprecated_aliases() -> None:
    # the module itself: uninstalling the torch alias (test_compat) can leave the attribute
    # pg.nn.init bound to PyTorch's module in this process
    init = importlib.import_module("portagrad.nn.init")
    w = pg.empty(3, 3)
    with pytest.warns(FutureWarning, match=r"`nn.init.eye` is now deprecated"):
        assert init.eye(w) is w
    np.testing.assert_array_equal(w.numpy(), np.eye(3))
    k = pg.empty(2, 2, 3)
    with pytest.warns(FutureWarning, match=r"`nn.init.dirac` is now deprecated"):
        init.dirac(k)
    assert k.numpy()[0, 0, 1] == 1.0 and k.numpy().sum() == 2.0


def _train_step(scaler: pg.amp.GradScaler, device: str, poison: bool) -> tuple[pg.Tensor, float]:
    p = pg.nn.Parameter(pg.ones(2, device=device))
    opt = pg.optim.SGD([p], lr=0.1)
    loss = (p * pg.tensor([1.0, float("inf") if poison else 2.0], device=device)).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return p, scaler.get_scale()


def test_grad_scaler_scales_skips_and_adapts(device: str) -> None:
    scaler = pg.amp.GradScaler(device.split(":")[0], init_scale=8.0, growth_interval=2)
    assert scaler.is_enabled()
    loss = pg.tensor(1.5, device=device)
    assert scaler.scale(loss).item() == 12.0
    p, scale = _train_step(scaler, device, poison=False)
    # gradients were unscaled before the step: p - 0.1 * [1, 2]
    np.testing.assert_allclose(p.detach().numpy(force=True), [0.9, 0.8], rtol=1e-6)
    assert scale == 8.0
    _, scale = _train_step(scaler, device, poison=False)
    assert scale == 16.0  # grew after growth_interval clean steps
    p, scale = _train_step(scaler, device, poison=True)
    np.testing.assert_array_equal(p.detach().numpy(force=True), [1.0, 1.0])  # skipped
    assert scale == 8.0  # backed off
    state = scaler.state_dict()
    assert state["scale"] == 8.0 and state["_growth_tracker"] == 0
    other = pg.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.get_scale() == 8.0


def test_grad_scaler_errors_and_disabled() -> None:
    scaler = pg.amp.GradScaler("cpu")
    p = pg.nn.Parameter(pg.ones(1))
    opt = pg.optim.SGD([p], lr=0.1)
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure"):
        pg.amp.GradScaler("cpu").step(opt, closure=lambda: 0.0)
    with pytest.raises(AssertionError, match="_scale is None"):  # (before any scale(), torch's)
        pg.amp.GradScaler("cpu").update()
    fresh = pg.amp.GradScaler("cpu")
    fresh.scale(pg.ones(1))
    with pytest.raises(AssertionError, match="No inf checks"):
        fresh.update()
    with pytest.raises(AssertionError, match="1-element"):
        fresh.update(new_scale=pg.ones(2))
    with pytest.raises(AssertionError, match="requires_grad=False"):
        fresh.update(new_scale=pg.tensor(2.0, requires_grad=True))
    with pytest.warns(UserWarning, match="cuda is not available"):
        off = pg.amp.GradScaler()
    assert not off.is_enabled() and off.get_scale() == 1.0 and off.state_dict() == {}
    t = pg.ones(1)
    assert off.scale(t) is t


def test_grad_scaler_scales_a_half_loss_in_float32() -> None:
    """PyTorch multiplies by a 0-d float32 scale: a 0-d float16 loss comes out float32 (as a
    float16 number 5 * 65536 is inf, and every step would be skipped); the scale is a float32
    value. Figures are PyTorch 2.13's."""
    s = pg.amp.GradScaler("cpu")
    out = s.scale(pg.tensor(5.0).half())
    assert out.dtype is pg.float32 and out.item() == 327680.0
    assert s.scale(pg.ones(3).half()).dtype is pg.float16  # (a dimensioned half tensor stays)
    assert s.scale(pg.tensor(1.0).bfloat16()).dtype is pg.float32
    s = pg.amp.GradScaler("cpu", init_scale=0.1)
    assert s.get_scale() == 0.1  # (before the first scale())
    s.scale(pg.tensor(1.0))
    assert s.get_scale() == 0.10000000149011612 and s.state_dict()["scale"] == s.get_scale()


def test_autocast() -> None:
    assert pg.autocast is pg.amp.autocast
    with pg.autocast("cpu", enabled=False):
        assert (pg.ones(2, 2) @ pg.ones(2, 2)).dtype == pg.float32

    @pg.amp.autocast("cpu", enabled=False)
    def f() -> pg.Tensor:
        return pg.ones(1)

    assert f().dtype == pg.float32
    with pytest.warns(UserWarning, match="CUDA is not available"):
        with pg.autocast("cuda"):
            assert not pg.is_autocast_enabled("cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pg.autocast("cpu", dtype=pg.float64)  # unsupported dtype: warns and disables
    assert any("Disabling autocast" in str(w.message) for w in caught)
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        pg.autocast("foo")
    with pytest.raises(ValueError, match="device_type"):
        pg.autocast(0)  # type: ignore[arg-type]
    assert pg.amp.is_autocast_available("cpu") is True


def test_autocast_state_functions() -> None:
    assert pg.GradScaler is pg.amp.GradScaler
    assert pg.is_autocast_enabled() is False and pg.is_autocast_enabled("cpu") is False
    assert pg.is_autocast_cpu_enabled() is False
    assert pg.get_autocast_dtype("cpu") == pg.bfloat16
    assert pg.get_autocast_dtype("cuda") == pg.float16
    with pytest.warns(DeprecationWarning, match="get_autocast_dtype\\('cpu'\\)"):
        assert pg.get_autocast_cpu_dtype() == pg.bfloat16
    with pytest.warns(DeprecationWarning, match="get_autocast_dtype\\('cuda'\\)"):
        assert pg.get_autocast_gpu_dtype() == pg.float16
    pg.set_autocast_dtype("opencl", pg.bfloat16)
    assert pg.get_autocast_dtype("opencl") == pg.bfloat16
    pg.set_autocast_dtype("opencl", pg.float16)
    assert pg.is_autocast_cache_enabled()
    pg.set_autocast_cache_enabled(False)
    assert not pg.is_autocast_cache_enabled()
    pg.set_autocast_cache_enabled(True)
    pg.clear_autocast_cache()
    pg.set_autocast_enabled("cpu", False)
    assert pg.is_autocast_enabled("cpu") is False
    with pytest.raises(RuntimeError, match="device string: foo"):
        pg.get_autocast_dtype("foo")


def test_deprecated_autocast_setters() -> None:
    # the per-device setters PyTorch deprecated: they set the same state, and warn as it does
    with pytest.warns(DeprecationWarning, match="set_autocast_dtype\\('cpu', dtype\\)"):
        pg.set_autocast_cpu_dtype(pg.float16)
    assert pg.get_autocast_dtype("cpu") == pg.float16
    with pytest.warns(DeprecationWarning):
        pg.set_autocast_cpu_dtype(pg.bfloat16)
    with pytest.warns(DeprecationWarning, match="set_autocast_dtype\\('cuda', dtype\\)"):
        pg.set_autocast_gpu_dtype(pg.bfloat16)
    assert pg.get_autocast_dtype("cuda") == pg.bfloat16
    with pytest.warns(DeprecationWarning):
        pg.set_autocast_gpu_dtype(pg.float16)
    with pytest.warns(DeprecationWarning, match="set_autocast_enabled\\('cpu', enabled\\)"):
        pg.set_autocast_cpu_enabled(True)
    try:
        assert pg.is_autocast_enabled("cpu") is True
    finally:
        with pytest.warns(DeprecationWarning):
            pg.set_autocast_cpu_enabled(False)
    assert pg.is_autocast_enabled("cpu") is False
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="must be a bool"):
        pg.set_autocast_cpu_enabled(1)  # type: ignore[arg-type]


_TRAINING_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import torch.nn as nn
    from torch.autograd import Variable

    device = sys.argv[1]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.set_float32_matmul_precision("high")
    model = torch.compile(nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1)).to(device),
                          backend="eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device.split(":")[0], init_scale=1024.0)
    x = Variable(torch.randn(64, 3, device=device))
    y = torch.sin(x.sum(1, keepdim=True) * torch.pi / 4)
    for step in range(60):
        opt.zero_grad()
        with torch.autocast(device.split(":")[0], enabled=False):
            out = model(x)
            kl = torch.kl_div(torch.log_softmax(torch.cat([out, y], 1), 1),
                              torch.softmax(torch.cat([y, out], 1), 1), 1)
            loss = ((out - y) ** 2).mean() + 0.1 * kl
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if step in (0, 59):
            print("loss", loss.item())
    print("scale", scaler.get_scale())
""")


@pytest.mark.usefixtures("torch_shim_ok")
def test_a_torch_script_using_these_names_trains(device: str, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(_TRAINING_SCRIPT)
    proc = subprocess.run([sys.executable, "-m", "portagrad.compat", str(script), device],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    losses = [float(line.split()[1]) for line in proc.stdout.splitlines()
              if line.startswith("loss")]
    assert len(losses) == 2 and losses[1] < losses[0], proc.stdout
    assert "scale 1024.0" in proc.stdout  # no overflow: the scale stayed (growth needs 2000)


def test_the_script_matches_pytorch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(_TRAINING_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PORTAGRAD_COMPAT_SHARED_RNG": "7"}
    runs = [[sys.executable, "-m", "portagrad.compat", str(script), "cpu"],
            [sys.executable, str(ROOT / "tests" / "compat" / "_run_torch.py"), str(script),
             "cpu"]]
    outputs = []
    for cmd in runs:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr
        outputs.append([float(line.split()[1]) for line in proc.stdout.splitlines()
                        if line.startswith("loss")])
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-4)  # first and last loss
