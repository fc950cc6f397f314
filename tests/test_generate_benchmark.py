"""The language-model inference benchmark's code path (``benchmarks/gpt2.py``,
``benchmarks/generate.py``) on a tiny decoder: decoding with the static KV cache gives the tokens
(and logits) of recomputing the whole sequence, the captured decode step gives eager's tokens and
is really replayed, and the benchmark's own checks refuse mismatched tokens."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import portagrad as pg

# ``benchmarks`` is not installed with the package: reach it from the repository root (appended,
# so ``portagrad`` still resolves to the installed package under tox)
sys.path.append(str(Path(__file__).resolve().parents[1]))
from benchmarks.generate import Mismatch, Row, _check, _print, run_config
from benchmarks.gpt2 import (GPT2Config, StaticKVCache, gpt2, greedy_generate, greedy_no_cache,
                             make_step)

CFG = GPT2Config(vocab=100, ctx=32, d_model=64, heads=4, layers=2)
B, T, NEW = 2, 8, 4


def _model(device: str, seed: int = 0) -> Any:
    pg.manual_seed(seed)
    return gpt2(pg, CFG).eval().to(device)


def _prompt(device: str, seed: int = 0) -> Any:
    return pg.tensor(np.random.default_rng(seed).integers(0, CFG.vocab, (B, T)), device=device)


def test_kv_cache_decoding_equals_recomputing(device: str) -> None:
    """Greedy tokens with the cache equal those of rerunning the whole sequence each token, and
    each decode step's logits are the full forward's at that position."""
    model, x = _model(device), _prompt(device)
    with pg.no_grad():
        want = greedy_no_cache(pg, model, x, NEW).cpu().numpy()
        cache = StaticKVCache(pg, CFG, B, T + NEW, device)
        got, t_prefill, t_decode = greedy_generate(pg, model, x, NEW, cache)
        np.testing.assert_array_equal(got.numpy(), want)
        assert t_prefill > 0 and t_decode > 0
        # the logits, not only their argmax: the last decode step against the full forward
        seq = pg.cat([x, pg.tensor(want, device=device)], 1)
        full = model(seq).cpu().numpy()
        pos = T + NEW - 2
        last = model.decode(seq[:, pos:pos + 1], pg.tensor([pos], device=device), cache)
        np.testing.assert_allclose(last.cpu().numpy(), full[:, pos], rtol=1e-4, atol=1e-4)
    # the checks above say something only if the context decides the tokens
    assert len(np.unique(want)) > 2, want


def test_kv_cache_that_forgets_the_prompt_is_caught(device: str) -> None:
    """A cache whose prompt keys are lost gives other logits than recomputing: the comparison
    above can fail."""
    model, x = _model(device), _prompt(device)
    with pg.no_grad():
        cache = StaticKVCache(pg, CFG, B, T + 1, device)
        model.prefill(x, cache)
        for k in cache.k:
            k.zero_()
        tok = x[:, -1:]
        bad = model.decode(tok, pg.tensor([T], device=device), cache).cpu().numpy()
        full = model(pg.cat([x, tok], 1))[:, -1].cpu().numpy()
    assert np.abs(bad - full).max() > 1e-3


def test_captured_decode_step_equals_eager_and_replays(device: str) -> None:
    """``pg.compile(step, mode="reduce-overhead")`` on the decode step: the same tokens as the
    eager step, generation after generation, and the later steps are replays."""
    model, x = _model(device), _prompt(device)
    new = 6
    with pg.no_grad():
        eager, _, _ = greedy_generate(pg, model, x, new, StaticKVCache(pg, CFG, B, T + new, device))
        cache = StaticKVCache(pg, CFG, B, T + new, device)
        step = pg.compile(make_step(model, cache), mode="reduce-overhead")
        for _ in range(2):
            got, _, _ = greedy_generate(pg, model, x, new, cache, step)
            np.testing.assert_array_equal(got.numpy(), eager.numpy())
    # one warm-up and two recorded calls, then replays only
    assert step.stats == {"captured": True, "calls": 2 * (new - 1),
                          "replays": 2 * (new - 1) - 3, "fallbacks": 0, "last_fallback": None}


def test_run_config_without_torch(device: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The benchmark's rows for one configuration, portagrad only: eager and captured, timed,
    the captured row's tokens checked against eager's, and the table printed."""
    rows = run_config([device], "float32", B, CFG, T, NEW, 2, None)
    assert [r.who for r in rows] == [f"portagrad {device}", f"portagrad {device} captured"]
    for r in rows:
        assert len(r.prefill) == len(r.decode) == 2 and min(r.prefill + r.decode) > 0
    assert "6/9 steps replayed" in rows[1].note and "fell back" not in rows[1].note
    _print(rows, B, T, NEW)
    out = capsys.readouterr().out
    assert len([ln for ln in out.splitlines() if "ms/token" in ln]) == 2, out


def test_run_config_bfloat16(device: str) -> None:
    """bfloat16: the captured step still gives eager's tokens (checked inside run_config)."""
    try:
        pg.zeros(1, device=device, dtype=pg.bfloat16) + 1
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines bfloat16 (DTypeError)")
    rows = run_config([device], "bfloat16", B, CFG, T, NEW, 1, None)
    assert "fell back" not in rows[1].note


def test_run_config_equals_torch(device: str) -> None:
    """With PyTorch: same weights, float32 greedy tokens equal (run_config raises otherwise)."""
    torch = pytest.importorskip("torch")
    rows = run_config([device], "float32", B, CFG, T, NEW, 1, torch)
    assert rows[0].who == "torch cpu"
    assert all(r.note.startswith("tokens = torch cpu's: 100%") for r in rows[1:]), \
        [r.note for r in rows]


def test_check_refuses_mismatched_tokens() -> None:
    """The benchmark's token check: captured differing from eager, or float32 differing from
    PyTorch, raises; bfloat16 differing from PyTorch is reported as a fraction."""
    rows = [Row(w, lambda: None) for w in ("torch cpu", "portagrad cpu",
                                           "portagrad cpu captured")]
    a = np.array([[1, 2, 3, 4]])
    b = np.array([[1, 2, 3, 5]])
    _check(rows, rows[0], {"torch cpu": a, "portagrad cpu": a, "portagrad cpu captured": a},
           "float32")
    with pytest.raises(Mismatch, match="captured step's tokens differ from eager"):
        _check(rows, rows[0], {"torch cpu": a, "portagrad cpu": a,
                               "portagrad cpu captured": b}, "float32")
    with pytest.raises(Mismatch, match="float32 greedy tokens differ from PyTorch"):
        _check(rows, rows[0], {"torch cpu": b, "portagrad cpu": a,
                               "portagrad cpu captured": a}, "float32")
    _check(rows, rows[0], {"torch cpu": b, "portagrad cpu": a, "portagrad cpu captured": a},
           "bfloat16")
    assert rows[1].note == "tokens = torch cpu's: 75%"
