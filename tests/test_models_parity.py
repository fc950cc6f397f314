"""The benchmark models (ResNet-18 CIFAR, GPT-style decoder) train like PyTorch on every backend.

The parity tests build both models from the one definition in ``benchmarks/model_zoo.py``, copy
the PyTorch weights into portagrad and compare the loss, every gradient and the weights after one
optimizer step. In float32 the ResNet keeps its full depth (BasicBlocks [2, 2, 2, 2]) at reduced
widths; the full-size ResNet-18 is compared in float64 (see that test for why). The torch-free
tests check that a few steps on a fixed batch reduce the loss.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import portagrad as pg

# ``benchmarks`` is not installed with the package: reach it from the repository root. Appended,
# not prepended, so ``portagrad`` still resolves to the installed package under tox.
sys.path.append(str(Path(__file__).resolve().parents[1]))
from benchmarks.model_zoo import GPTConfig, copy_state, gpt, resnet18
from benchmarks.models import main as bench_main

_WIDTHS = (8, 16, 16, 32)
_CFG = GPTConfig(vocab=64, seq=16, d_model=32, heads=4, layers=2, dropout=0.0)


def _resnet_batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 3, 32, 32)).astype(np.float32), np.array([1, 7])


def _gpt_batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.integers(0, _CFG.vocab, (2, _CFG.seq)), rng.integers(0, _CFG.vocab, (2, _CFG.seq))


def _step(lib: Any, model: Any, opt: Any, x: Any, y: Any, vocab: int | None) -> Any:
    opt.zero_grad()
    out = model(x)
    if vocab is not None:  # language model: one class per token
        out, y = out.reshape(-1, vocab), y.reshape(-1)
    loss = lib.nn.functional.cross_entropy(out, y)
    loss.backward()
    opt.step()
    return loss


def _sgd(lib: Any, m: Any) -> Any:
    return lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)


def _adamw(lib: Any, m: Any) -> Any:
    return lib.optim.AdamW(m.parameters(), lr=1e-3)


_CASES = {
    "resnet18": (lambda lib: resnet18(lib, widths=_WIDTHS), _resnet_batch, _sgd, None),
    "gpt": (lambda lib: gpt(lib, _CFG), _gpt_batch, _adamw, _CFG.vocab),
}


@pytest.mark.parametrize("name", list(_CASES))
def test_one_step_matches_torch(name: str, device: str) -> None:
    torch = pytest.importorskip("torch")
    build, batch, make_opt, vocab = _CASES[name]
    torch.manual_seed(0)
    tm = build(torch)
    pm = build(pg).to(device)
    copy_state(tm, pm, pg, device)
    x, y = batch()
    t_loss = _step(torch, tm, make_opt(torch, tm), torch.from_numpy(x), torch.from_numpy(y), vocab)
    p_loss = _step(pg, pm, make_opt(pg, pm), pg.tensor(x, device=device),
                   pg.tensor(y, device=device), vocab)
    np.testing.assert_allclose(p_loss.item(), t_loss.item(), rtol=1e-5)
    t_params = dict(tm.named_parameters())
    p_params = dict(pm.named_parameters())
    assert list(t_params) == list(p_params)
    for key, tp in t_params.items():
        pp = p_params[key]
        g = tp.grad.numpy()
        # gradients: float32 sums in a different order, so scale the tolerance by the largest entry
        np.testing.assert_allclose(pp.grad.cpu().numpy(), g, rtol=1e-3,
                                   atol=1e-4 * float(np.abs(g).max() + 1e-6), err_msg=key)
        # weights after the step: Adam normalises each entry, so a gradient at float32 rounding
        # level still moves its weight by up to lr; allow a few percent of lr (1e-3) there
        np.testing.assert_allclose(pp.detach().cpu().numpy(), tp.detach().numpy(), rtol=1e-4,
                                   atol=5e-5, err_msg=key)
    # BatchNorm running statistics follow the same momentum update
    for key, tb in tm.named_buffers():
        np.testing.assert_allclose(dict(pm.named_buffers())[key].cpu().numpy(), tb.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=key)


def test_full_resnet18_step_matches_torch_float64(device: str) -> None:
    # Full widths in float64: in float32 a ReLU input within rounding of 0 can take the other side
    # of the kink on another backend, and BatchNorm's backward spreads that one element's
    # gradient over its channel, so full-size float32 gradients differ by percents legitimately.
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = resnet18(torch).double()
    pm = resnet18(pg).to(device).to(pg.float64)
    copy_state(tm, pm, pg, device)
    x, y = _resnet_batch()
    x = x.astype(np.float64)
    t_loss = _step(torch, tm, _sgd(torch, tm), torch.from_numpy(x), torch.from_numpy(y), None)
    p_loss = _step(pg, pm, _sgd(pg, pm), pg.tensor(x, device=device), pg.tensor(y, device=device),
                   None)
    np.testing.assert_allclose(p_loss.item(), t_loss.item(), rtol=1e-12)
    p_params = dict(pm.named_parameters())
    for key, tp in tm.named_parameters():
        g = tp.grad.numpy()
        np.testing.assert_allclose(p_params[key].grad.cpu().numpy(), g, rtol=1e-9,
                                   atol=1e-11 * float(np.abs(g).max() + 1e-12), err_msg=key)
        np.testing.assert_allclose(p_params[key].detach().cpu().numpy(), tp.detach().numpy(),
                                   rtol=1e-9, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("name", list(_CASES))
def test_loss_falls_on_fixed_batch(name: str, device: str) -> None:
    build, batch, make_opt, vocab = _CASES[name]
    pg.manual_seed(0)
    model = build(pg).to(device)
    opt = make_opt(pg, model)
    xs, ys = batch()
    x, y = pg.tensor(xs, device=device), pg.tensor(ys, device=device)
    losses = [_step(pg, model, opt, x, y, vocab).item() for _ in range(3)]
    assert all(np.isfinite(losses)), losses
    assert losses[2] < losses[1] < losses[0], losses


def test_gpt_rejects_too_long_sequence() -> None:
    model = gpt(pg, _CFG)
    with pytest.raises(ValueError, match="sequence length 17"):
        model(pg.zeros(1, 17, dtype=pg.long))


def test_gpt_config_checks_heads() -> None:
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(d_model=30, heads=4)


def test_benchmark_script_runs(device: str, capsys: pytest.CaptureFixture[str]) -> None:
    bench_main(["--device", device, "--steps", "1", "--warmup", "0", "--batch", "1",
                "--interleave", "1"])
    out = capsys.readouterr().out
    for label in ("ResNet-18 (CIFAR), batch 1", "GPT 4x256, seq 128, batch 1"):
        assert label in out
    rows = [ln for ln in out.splitlines() if ln.strip().startswith(f"portagrad {device}")]
    # per model: the sequential row (with peak memory), then the interleaved ones (wall clock,
    # then process CPU time)
    assert len(rows) == 6 and all("ms/step" in r for r in rows), out
    assert sum("peak" in r for r in rows) == 2 and out.count("interleaved, 1 rounds") == 4, out
    assert out.count("median process CPU ms/step") == 2, out


def test_benchmark_script_rejects_bad_steps() -> None:
    with pytest.raises(SystemExit):
        bench_main(["--steps", "0"])
