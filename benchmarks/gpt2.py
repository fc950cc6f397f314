"""A GPT-2-small-shaped decoder with a static KV cache, written once for both frameworks.

Not a benchmark itself: ``benchmarks/generate.py`` and ``tests/test_generate_benchmark.py`` use
it. As in :mod:`benchmarks.model_zoo`, :func:`gpt2` takes the framework module (``portagrad`` or
``torch``) and returns an ``nn.Module`` of that framework; weights go from one to the other with
:func:`benchmarks.model_zoo.copy_state`.

The model (defaults of :class:`GPT2Config`: GPT-2 small's shape): learned token and position
embeddings, ``layers`` pre-LayerNorm blocks (causal self-attention through
``F.scaled_dot_product_attention``, a GELU MLP of width ``4 * d_model``), a final LayerNorm and
an output head UNTIED from the token embedding (its own ``nn.Linear``, no bias): 124M parameters
plus the head's 38.6M. The work per token is GPT-2 small's (a tied head does the same product),
but with random weights a tied head makes the model repeat its input token whatever came before,
and the token checks would then say little; each framework's default initialisation keeps the
attention's contribution large enough that the next token depends on the whole context. No
dropout (inference only).

The cache (:class:`StaticKVCache`) is preallocated, ``[B, H, T_max, D]`` per layer for keys and
values. ``prefill`` runs the prompt with ``is_causal=True`` and writes its keys and values into
the first positions; ``decode`` takes one token per sequence and its position as a one-element
integer TENSOR, writes the new key and value at that position with ``index_copy_`` and attends
over the whole cache with a boolean mask ``arange(T_max) <= pos``. Every tensor of a decode step
therefore has the same shape at every position, and the position is data, not a Python number:
the step launches the same kernels with the same arguments each time, which is what a captured
step (``pg.compile(step, mode="reduce-overhead")``) needs to be replayed.
"""
from __future__ import annotations

import time
from typing import Any

__all__ = ["GPT2Config", "StaticKVCache", "gpt2", "make_step", "greedy_generate",
           "greedy_no_cache"]


class GPT2Config:
    """Sizes of the decoder (defaults: GPT-2 small)."""

    def __init__(self, vocab: int = 50257, ctx: int = 1024, d_model: int = 768, heads: int = 12,
                 layers: int = 12) -> None:
        if min(vocab, ctx, d_model, heads, layers) < 1:
            raise ValueError("GPT2Config: every size must be >= 1")
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by heads ({heads})")
        self.vocab, self.ctx, self.d_model = vocab, ctx, d_model
        self.heads, self.layers = heads, layers


class StaticKVCache:
    """Preallocated keys and values, ``[batch, heads, max_len, d_model // heads]`` per layer.

    ``positions`` is ``arange(max_len)`` as a ``(1, max_len)`` row on the cache's device, kept so
    a decode step builds its mask without making a new index each call."""

    def __init__(self, lib: Any, cfg: GPT2Config, batch: int, max_len: int, device: Any = "cpu",
                 dtype: Any = None) -> None:
        if not 1 <= max_len <= cfg.ctx:
            raise ValueError(f"max_len must be in [1, {cfg.ctx}], got {max_len}")
        shape = (batch, cfg.heads, max_len, cfg.d_model // cfg.heads)
        dtype = dtype if dtype is not None else lib.float32
        self.max_len = max_len
        self.k = [lib.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.layers)]
        self.v = [lib.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.layers)]
        self.positions = lib.arange(max_len, device=device).view(1, max_len)


def gpt2(lib: Any, cfg: GPT2Config | None = None) -> Any:
    """Build the decoder with ``lib.nn``. ``forward(idx)`` returns ``(B, T, vocab)`` logits
    without a cache; ``prefill(idx, cache)`` and ``decode(tok, pos, cache)`` use one and return
    the logits of the last position, ``(B, vocab)``."""
    cfg = cfg or GPT2Config()
    nn = lib.nn
    F = nn.functional
    C, H = cfg.d_model, cfg.heads
    D = C // H

    class Attention(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(C, 3 * C)
            self.proj = nn.Linear(C, C)

        def split_heads(self, x: Any) -> tuple[Any, ...]:
            B, T, _ = x.shape
            return tuple(t.view(B, T, H, D).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))

        def merge_heads(self, y: Any) -> Any:
            B, _, T, _ = y.shape
            return self.proj(y.transpose(1, 2).reshape(B, T, C))

        def forward(self, x: Any, cache: StaticKVCache | None = None, layer: int = 0) -> Any:
            q, k, v = self.split_heads(x)
            if cache is not None:  # prefill: the prompt's keys and values go first in the cache
                T = x.shape[1]
                cache.k[layer][:, :, :T].copy_(k)
                cache.v[layer][:, :, :T].copy_(v)
            return self.merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True))

        def decode(self, x: Any, pos: Any, mask: Any, cache: StaticKVCache, layer: int) -> Any:
            q, k, v = self.split_heads(x)
            kc, vc = cache.k[layer], cache.v[layer]
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
            # the whole cache, the positions after ``pos`` masked out: static shapes
            return self.merge_heads(F.scaled_dot_product_attention(q, kc, vc, attn_mask=mask))

    class Block(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(C)
            self.attn = Attention()
            self.ln2 = nn.LayerNorm(C)
            self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

        def forward(self, x: Any, cache: StaticKVCache | None = None, layer: int = 0) -> Any:
            x = x + self.attn(self.ln1(x), cache, layer)
            return x + self.mlp(self.ln2(x))

        def decode(self, x: Any, pos: Any, mask: Any, cache: StaticKVCache, layer: int) -> Any:
            x = x + self.attn.decode(self.ln1(x), pos, mask, cache, layer)
            return x + self.mlp(self.ln2(x))

    class GPT2(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.cfg = cfg
            self.wte = nn.Embedding(cfg.vocab, C)
            self.wpe = nn.Embedding(cfg.ctx, C)
            self.blocks = nn.ModuleList([Block() for _ in range(cfg.layers)])
            self.ln_f = nn.LayerNorm(C)
            self.head = nn.Linear(C, cfg.vocab, bias=False)  # untied: see the module docstring

        def _embed(self, idx: Any) -> Any:
            T = idx.shape[1]
            if T > cfg.ctx:
                raise ValueError(f"sequence length {T} exceeds the context {cfg.ctx}")
            return self.wte(idx) + self.wpe(lib.arange(T, device=idx.device))

        def forward(self, idx: Any) -> Any:
            x = self._embed(idx)
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln_f(x))

        def prefill(self, idx: Any, cache: StaticKVCache) -> Any:
            """Logits ``(B, vocab)`` of the prompt's last position; its keys and values are
            written into ``cache``."""
            if idx.shape[1] > cache.max_len:
                raise ValueError(f"prompt of {idx.shape[1]} tokens exceeds the cache's "
                                 f"{cache.max_len}")
            x = self._embed(idx)
            for i, blk in enumerate(self.blocks):
                x = blk(x, cache, i)
            return self.head(self.ln_f(x[:, -1]))

        def decode(self, tok: Any, pos: Any, cache: StaticKVCache) -> Any:
            """Logits ``(B, vocab)`` after token ``tok`` ``(B, 1)`` at position ``pos`` (a
            one-element integer tensor), its key and value written into ``cache``."""
            x = self.wte(tok) + self.wpe(pos)
            mask = cache.positions <= pos  # (1, max_len): (query, key), broadcast over B and H
            for i, blk in enumerate(self.blocks):
                x = blk.decode(x, pos, mask, cache, i)
            return self.head(self.ln_f(x[:, -1]))

    return GPT2()


def make_step(model: Any, cache: StaticKVCache) -> Any:
    """The greedy decode step ``step(tok (B, 1), pos (1,)) -> next tokens (B, 1)``."""
    def step(tok: Any, pos: Any) -> Any:
        return model.decode(tok, pos, cache).argmax(-1, keepdim=True)
    return step


def greedy_generate(lib: Any, model: Any, prompt: Any, new: int, cache: StaticKVCache,
                    step: Any = None) -> tuple[Any, float, float]:
    """Greedy decoding of ``new`` tokens after ``prompt`` ``(B, T)`` with ``cache``: the first
    from the prefill, the others from ``new - 1`` calls of ``step(tok, pos)`` (default:
    :func:`make_step`, eager). Returns ``(tokens (B, new) on the host, prefill seconds, decode
    seconds)``; each phase ends with a host read of its tokens, so the times include the
    device's work. Call it under ``no_grad`` / ``inference_mode``."""
    if new < 1:
        raise ValueError(f"new must be >= 1, got {new}")
    T = prompt.shape[1]
    if T + new - 1 > cache.max_len:
        raise ValueError(f"prompt {T} + new {new} - 1 exceeds the cache's {cache.max_len}")
    if step is None:
        step = make_step(model, cache)
    t0 = time.perf_counter()
    tok = model.prefill(prompt, cache).argmax(-1, keepdim=True)
    first = tok.cpu()
    t1 = time.perf_counter()
    out = [tok]
    for i in range(new - 1):
        tok = step(tok, lib.tensor([T + i], device=prompt.device))
        out.append(tok)
    tokens = lib.cat(out, 1).cpu() if new > 1 else first
    return tokens, t1 - t0, time.perf_counter() - t1


def greedy_no_cache(lib: Any, model: Any, prompt: Any, new: int) -> Any:
    """Greedy decoding recomputing the whole sequence for every token (what the cache must
    reproduce): ``(B, new)`` tokens."""
    seq = prompt
    for _ in range(new):
        nxt = model(seq)[:, -1].argmax(-1, keepdim=True)
        seq = lib.cat([seq, nxt], 1)
    return seq[:, prompt.shape[1]:]
