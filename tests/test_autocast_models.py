"""One autocast training step of the benchmark models (``benchmarks/model_zoo.py``: ResNet-18
CIFAR and the GPT-style decoder) against PyTorch's CPU autocast in bfloat16.

Both frameworks start from the same weights (PyTorch's state_dict copied into portagrad) and take
the same batch: forward and loss under ``autocast(dtype=bfloat16)``, backward, one SGD step
(momentum and weight decay) outside the region. The tolerance is derived, not picked: PyTorch's
own autocast step is also taken in float32, and portagrad's loss and weight updates must lie
within a small multiple of the distance between PyTorch's bfloat16 and float32 results (two
runs that round the same computation to 8 bits at different places differ by about as much as
either differs from float32). The other device types run PyTorch's GPU lists (layer_norm,
softmax in float32, ...), which sit between the CPU policy and float32, so the same bound holds.
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.errors import DTypeError

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed
from benchmarks.model_zoo import GPTConfig, copy_state, gpt, resnet18
from benchmarks.models import main as bench_main

#: ours within this multiple of PyTorch's bfloat16-vs-float32 distance
MULTIPLE = 3.0
_CFG = GPTConfig(vocab=64, seq=16, d_model=64, heads=4, layers=2, dropout=0.0)


def _resnet_batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 3, 32, 32)).astype(np.float32), np.array([1, 7])


def _gpt_batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.integers(0, _CFG.vocab, (2, _CFG.seq)), rng.integers(0, _CFG.vocab, (2, _CFG.seq))


# name -> (build(lib), batch(), vocab (a language model's logits are flattened) or None)
_MODELS = {
    "resnet18": (lambda lib: resnet18(lib), _resnet_batch, None),
    "gpt": (lambda lib: gpt(lib, _CFG), _gpt_batch, _CFG.vocab),
}


@pytest.fixture(autouse=True)
def _skip_where_bfloat16_is_declined(device: str) -> None:
    try:
        (pg.zeros(1, dtype=pg.bfloat16, device=device) + 1).cpu()
    except DTypeError:
        pytest.skip(f"{device} declines bfloat16 (DTypeError)")


def _step(lib: Any, model: Any, x: Any, y: Any, vocab: int | None, region: Any
          ) -> tuple[float, dict[str, np.ndarray]]:
    """One training step; the loss and the state afterwards (weights and BatchNorm buffers)."""
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    model.train()
    opt.zero_grad()
    with region:
        out = model(x)
        if vocab is not None:
            out, y = out.reshape(-1, vocab), y.reshape(-1)
        loss = lib.nn.functional.cross_entropy(out, y)
    assert str(loss.dtype).endswith("float32")  # losses run in float32 under both policies
    loss.backward()
    for p in model.parameters():  # the gradients reach the float32 weights in float32
        assert str(p.grad.dtype).endswith("float32")
    opt.step()
    state = {k: v.detach().cpu().double().numpy()
             for k, v in model.state_dict().items() if v.dtype.is_floating_point}
    return float(loss.item()), state


@pytest.mark.parametrize("name", list(_MODELS))
def test_autocast_step_matches_torch(device: str, name: str) -> None:
    torch = pytest.importorskip("torch")
    build, batch, vocab = _MODELS[name]
    xs, ys = batch()
    torch.manual_seed(0)
    reference = build(torch)
    initial = {k: v.detach().double().numpy().copy() for k, v in reference.state_dict().items()
               if v.dtype.is_floating_point}
    tx, ty = torch.tensor(xs), torch.tensor(ys)
    loss32, state32 = _step(torch, copy.deepcopy(reference), tx, ty, vocab,
                            torch.autocast("cpu", enabled=False))
    loss16, state16 = _step(torch, copy.deepcopy(reference), tx, ty, vocab,
                            torch.autocast("cpu", dtype=torch.bfloat16))
    model = build(pg).to(device)
    copy_state(reference, model, pg, device)
    ours_loss, ours = _step(pg, model, pg.tensor(xs, device=device), pg.tensor(ys, device=device),
                            vocab, pg.autocast(device.split(":")[0], dtype=pg.bfloat16))
    # the loss: within MULTIPLE x PyTorch's own bfloat16 error (floored at one bfloat16 ulp of it)
    loss_tol = MULTIPLE * max(abs(loss16 - loss32), 2.0 ** -8 * abs(loss32))
    assert abs(ours_loss - loss16) <= loss_tol, (ours_loss, loss16, loss32)
    # the step: each tensor's update (new - initial) in the norm, against PyTorch's bfloat16 one
    # (a tensor PyTorch moves identically in both precisions, such as a BatchNorm step count,
    # must match to float32 rounding)
    for key, start in initial.items():
        ref16, ref32, got = state16[key] - start, state32[key] - start, ours[key] - start
        err16 = np.linalg.norm(ref16 - ref32)
        scale = max(np.linalg.norm(ref16), np.linalg.norm(start), 1e-30)
        tol = MULTIPLE * err16 + 1e-6 * scale
        assert np.linalg.norm(got - ref16) <= tol, (key, np.linalg.norm(got - ref16), err16)


def test_gpt_autocast_step_near_float32(device: str) -> None:
    """Without PyTorch: the bfloat16 step's loss is within bfloat16 rounding of the float32 step's
    (logits rounded to 8 bits move a cross-entropy of ~4 by a few 1e-3 at most; two bfloat16
    epsilons of it bound that), and every weight moves in the same direction as in float32."""
    build, batch, vocab = _MODELS["gpt"]
    xs, ys = batch()
    pg.manual_seed(0)
    source = build(pg)
    results = []
    for region in (pg.autocast("cpu", enabled=False),
                   pg.autocast(device.split(":")[0], dtype=pg.bfloat16)):
        model = build(pg).to(device)
        copy_state(source, model, pg, device)
        results.append(_step(pg, model, pg.tensor(xs, device=device),
                             pg.tensor(ys, device=device), vocab, region))
    initial = {k: v.detach().double().numpy() for k, v in source.state_dict().items()}
    (loss32, state32), (loss16, state16) = results
    assert abs(loss16 - loss32) <= 2 * 2.0 ** -7 * abs(loss32)
    for key, start in initial.items():
        d32, d16 = (state32[key] - start).ravel(), (state16[key] - start).ravel()
        # cosine of the two updates: bfloat16 noise tilts them by a few degrees at most
        assert d16 @ d32 >= 0.95 * np.linalg.norm(d16) * np.linalg.norm(d32), key


@pytest.mark.parametrize("norm", ["batch_norm", "group_norm"])
def test_norms_keep_a_16bit_input_type(device: str, norm: str) -> None:
    """A bfloat16 activation with float32 weight and bias (a BatchNorm after an autocast
    convolution) comes out bfloat16, as PyTorch's mixed-type norms, computed in float32 and
    rounded once; the running statistics stay float32 and get the float32 statistics."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 3, 3)).astype(np.float32) * 3 + 1
    xb = pg.tensor(x, device=device).bfloat16()
    x32 = xb.float()  # the same values in float32
    w = pg.tensor(rng.standard_normal(4).astype(np.float32), device=device)
    b = pg.tensor(rng.standard_normal(4).astype(np.float32), device=device)
    F = pg.nn.functional
    if norm == "batch_norm":
        stats = [pg.zeros(4, device=device), pg.ones(4, device=device)]
        ref_stats = [pg.zeros(4, device=device), pg.ones(4, device=device)]
        got = F.batch_norm(xb, *stats, w, b, training=True)
        want = F.batch_norm(x32, *ref_stats, w, b, training=True)
        for s, r in zip(stats, ref_stats):
            assert s.dtype == pg.float32
            np.testing.assert_allclose(s.cpu().numpy(), r.cpu().numpy(), rtol=1e-6, atol=1e-6)
    else:
        got, want = F.group_norm(xb, 2, w, b), F.group_norm(x32, 2, w, b)
    assert got.dtype == pg.bfloat16
    # rounded once: exactly the float32 result rounded to bfloat16
    np.testing.assert_array_equal(got.float().cpu().numpy(), want.bfloat16().float().cpu().numpy())
    # gradients: bfloat16 for the input, float32 for the parameters, each the float32 one (of the
    # same values) rounded once; also composed (create_graph), the same values
    # (bfloat16 values: a bfloat16 output's incoming gradient is rounded to bfloat16)
    g = pg.tensor(rng.standard_normal(x.shape).astype(np.float32), device=device).bfloat16().float()

    def grads(inp: Any, create_graph: bool) -> list[np.ndarray]:
        xi, wi, bi = (t.detach().requires_grad_() for t in (inp, w, b))
        out = F.batch_norm(xi, None, None, wi, bi, training=True) if norm == "batch_norm" \
            else F.group_norm(xi, 2, wi, bi)
        res = pg.autograd.grad((out.float() * g).sum(), (xi, wi, bi), create_graph=create_graph)
        assert [r.dtype for r in res] == [inp.dtype, pg.float32, pg.float32]
        return [r.detach().float().cpu().numpy() for r in res]

    want_g = grads(x32, False)
    want_g[0] = pg.tensor(want_g[0]).bfloat16().float().numpy()
    for create_graph in (False, True):
        for got_g, ref_g in zip(grads(xb, create_graph), want_g):
            np.testing.assert_allclose(got_g, ref_g, rtol=2.0 ** -7, atol=1e-5)


def test_benchmark_amp_table(device: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.models --amp``: one row per library and device with the step time,
    the step's peak memory and the memory held after forward, without and with autocast, all
    measured (positive, the forward's within the peak)."""
    bench_main(["--amp", "--model", "gpt", "--device", device, "--steps", "1", "--warmup", "0",
                "--batch", "1"])
    out = capsys.readouterr().out
    assert "GPT 4x256, seq 128, batch 1" in out and "autocast bfloat16" in out, out
    rows = [ln.split() for ln in out.splitlines() if ln.strip().startswith("portagrad ")]
    assert [r[1] for r in rows] == [device], out
    # fp32, amp, ratio for each of ms/step, step peak MiB, MiB held after forward
    ms32, ms16, _, peak32, peak16, _, fwd32, fwd16, _ = (float(v) for v in rows[0][2:11])
    assert min(ms32, ms16, peak32, peak16, fwd32, fwd16) > 0, out
    assert fwd32 <= peak32 and fwd16 <= peak16, out


@pytest.mark.parametrize("log", [False, True])
def test_bfloat16_softmax_backward_from_the_rounded_result(device: str, log: bool) -> None:
    """A bfloat16 (log-)softmax (attention under CPU autocast) is the float32 one rounded once,
    and its gradient is computed in float32 from the bfloat16 result, the tensor it keeps for
    backward, as PyTorch's kernels (so the saved activation is 16-bit)."""
    rng = np.random.default_rng(6)
    x = pg.tensor(rng.standard_normal((3, 7)).astype(np.float32) * 4, device=device).bfloat16()
    g = pg.tensor(rng.standard_normal((3, 7)).astype(np.float32), device=device).bfloat16()
    F = pg.nn.functional
    fn = F.log_softmax if log else F.softmax
    want = fn(x.float(), 1).bfloat16()
    for create_graph in (False, True):
        xi = x.detach().requires_grad_()
        y = fn(xi, 1)
        assert y.dtype == pg.bfloat16
        np.testing.assert_array_equal(y.detach().float().cpu().numpy(), want.float().cpu().numpy())
        (gx,) = pg.autograd.grad(y, xi, g, create_graph=create_graph)
        assert gx.dtype == pg.bfloat16
        y32, g32 = want.float(), g.float()  # the float32 formula on the rounded result
        ref = g32 - y32.exp() * g32.sum(1, keepdim=True) if log \
            else y32 * (g32 - (g32 * y32).sum(1, keepdim=True))
        np.testing.assert_allclose(gx.detach().float().cpu().numpy(), ref.bfloat16().float().cpu().numpy(),
                                   rtol=2.0 ** -7, atol=1e-6)
    if device == "cpu":
        torch = pytest.importorskip("torch")
        tx = torch.tensor(x.float().numpy()).bfloat16().requires_grad_()
        ty = (torch.log_softmax if log else torch.softmax)(tx, 1)
        ty.backward(torch.tensor(g.float().numpy()).bfloat16())
        # (PyTorch's bfloat16 log_softmax rounds an intermediate: one ulp apart at most)
        np.testing.assert_allclose(ty.detach().float().numpy(), want.float().numpy(),
                                   rtol=2.0 ** -7, atol=0)
        np.testing.assert_allclose(tx.grad.float().numpy(), ref.bfloat16().float().numpy(),
                                   rtol=2.0 ** -7, atol=1e-6)
