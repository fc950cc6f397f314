"""Real-size models, written once and built for either framework.

Each builder takes the framework module (``portagrad`` or ``torch``) and returns an
``nn.Module`` of that framework, so the same source defines the portagrad model and the PyTorch
reference. Weights are copied from one to the other with :func:`copy_state`.

- :func:`resnet18`: ResNet-18, CIFAR variant (3x3 stem with stride 1, no max-pool, BasicBlocks
  [2, 2, 2, 2] with widths 64-128-256-512, BatchNorm, adaptive average pool, linear head).
- :func:`gpt`: a GPT-style decoder (pre-LayerNorm blocks, causal self-attention written with
  ``nn.Linear`` + masked ``softmax``, GELU MLP, dropout). The output head is UNTIED from the token
  embedding (a separate ``nn.Linear``), which keeps the state_dict copy one-to-one.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["resnet18", "gpt", "copy_state", "GPTConfig"]


def resnet18(lib: Any, num_classes: int = 10, widths: tuple[int, ...] = (64, 128, 256, 512),
             blocks: tuple[int, ...] = (2, 2, 2, 2)) -> Any:
    """Build a CIFAR ResNet-18 (32x32 inputs) with ``lib.nn``; ``widths``/``blocks`` shrink it."""
    nn = lib.nn

    class BasicBlock(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            # projection shortcut when the shape changes, identity otherwise
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x: Any) -> Any:
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + self.shortcut(x))

    class ResNet(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, widths[0], 3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(widths[0])
            self.relu = nn.ReLU()
            layers = []
            cin = widths[0]
            for i, (w, n) in enumerate(zip(widths, blocks)):
                stride = 1 if i == 0 else 2
                seq = []
                for j in range(n):
                    seq.append(BasicBlock(cin, w, stride if j == 0 else 1))
                    cin = w
                layers.append(nn.Sequential(*seq))
            self.layers = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x: Any) -> Any:
            out = self.layers(self.relu(self.bn1(self.conv1(x))))
            return self.fc(lib.flatten(self.pool(out), 1))

    return ResNet()


class GPTConfig:
    """Sizes of the GPT-style model (defaults: the benchmark size)."""

    def __init__(self, vocab: int = 1024, seq: int = 128, d_model: int = 256, heads: int = 4,
                 layers: int = 4, dropout: float = 0.1) -> None:
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by heads ({heads})")
        self.vocab, self.seq, self.d_model = vocab, seq, d_model
        self.heads, self.layers, self.dropout = heads, layers, dropout


def gpt(lib: Any, cfg: GPTConfig | None = None) -> Any:
    """Build a GPT-style decoder with ``lib.nn``; ``forward(idx)`` returns ``(B, T, vocab)`` logits."""
    cfg = cfg or GPTConfig()
    nn = lib.nn
    F = nn.functional

    class CausalSelfAttention(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
            self.proj = nn.Linear(cfg.d_model, cfg.d_model)
            self.attn_drop = nn.Dropout(cfg.dropout)
            self.resid_drop = nn.Dropout(cfg.dropout)
            # True above the diagonal: the future positions a token may not attend to
            mask = lib.triu(lib.ones(cfg.seq, cfg.seq, dtype=lib.bool), diagonal=1)
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, x: Any) -> Any:
            B, T, C = x.shape
            h = cfg.heads
            q, k, v = self.qkv(x).split(C, dim=2)
            q = q.view(B, T, h, C // h).transpose(1, 2)
            k = k.view(B, T, h, C // h).transpose(1, 2)
            v = v.view(B, T, h, C // h).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // h))
            att = att.masked_fill(self.mask[:T, :T], float("-inf"))
            att = self.attn_drop(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            return self.resid_drop(self.proj(y))

    class Block(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(cfg.d_model)
            self.attn = CausalSelfAttention()
            self.ln2 = nn.LayerNorm(cfg.d_model)
            self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                     nn.Linear(4 * cfg.d_model, cfg.d_model),
                                     nn.Dropout(cfg.dropout))

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
            self.pos = nn.Embedding(cfg.seq, cfg.d_model)
            self.drop = nn.Dropout(cfg.dropout)
            self.blocks = nn.Sequential(*[Block() for _ in range(cfg.layers)])
            self.ln_f = nn.LayerNorm(cfg.d_model)
            self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)  # untied from self.tok

        def forward(self, idx: Any) -> Any:
            T = idx.shape[1]
            if T > cfg.seq:
                raise ValueError(f"sequence length {T} exceeds the model's {cfg.seq}")
            pos = lib.arange(T, device=idx.device)
            x = self.drop(self.tok(idx) + self.pos(pos))
            return self.head(self.ln_f(self.blocks(x)))

    return GPT()


def copy_state(src: Any, dst: Any, lib: Any, device: Any = "cpu") -> None:
    """Copy ``src``'s state_dict (any framework) into ``dst`` (a ``lib`` model) via numpy."""
    state = {k: lib.tensor(np.array(v.detach().cpu().numpy()), device=device)
             for k, v in src.state_dict().items()}
    dst.load_state_dict(state)
