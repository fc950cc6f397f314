"""minGPT-ddp's GPT (pytorch/examples, distributed/minGPT-ddp/mingpt/model.py), written after the
published one: an embedding stem with a learned position embedding, blocks of
``nn.MultiheadAttention`` with a causal mask and a GELU MLP, GPT-2 initialisation (scaled for the
residual projections), and AdamW with weight decay on the Linear weights and the attention's
input projection only. Unedited (it is device-agnostic)."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class GPTConfig:
    model_type: str = "gpt2"
    n_layer: int = None
    n_head: int = None
    n_embd: int = None
    vocab_size: int = 50257
    block_size: int = 1024
    embd_pdrop: float = 0.1
    resid_pdrop: float = 0.1
    attn_pdrop: float = 0.1


@dataclass
class OptimizerConfig:
    learning_rate: float = 3e-4
    weight_decay: float = 0.1


class MultiheadAttentionLayer(nn.Module):
    """Masked multi-head self-attention, then a projection."""

    def __init__(self, config, device="cpu", dtype=torch.float32):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.resid_drop = nn.Dropout(config.resid_pdrop)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, device=device, dtype=dtype)
        self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))
        self.attn = torch.nn.MultiheadAttention(embed_dim=config.n_embd, num_heads=config.n_head,
                                                dropout=config.attn_pdrop, batch_first=True,
                                                device=device, dtype=dtype)

    def forward(self, x):
        _, seq_size, _ = x.size()
        y = self.attn(x, x, x, attn_mask=self.mask[0, 0, :seq_size, :seq_size])[0]
        return self.resid_drop(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.attn = MultiheadAttentionLayer(config)
        self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd), nn.GELU(),
                                 nn.Linear(4 * config.n_embd, config.n_embd),
                                 nn.Dropout(config.resid_pdrop))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class EmbeddingStem(nn.Module):
    def __init__(self, config: GPTConfig, device="cpu", dtype=torch.float32):
        super().__init__()
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd, device=device, dtype=dtype)
        self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd,
                                                device=device, dtype=dtype))
        self.drop = nn.Dropout(config.embd_pdrop)
        self.block_size = config.block_size

    def forward(self, idx):
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        return self.drop(self.tok_emb(idx) + self.pos_emb[:, :t, :])


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.block_size = config.block_size
        self.emb_stem = EmbeddingStem(config)
        self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                p.data.normal_(mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        n_params = sum(p.numel() for p in self.blocks.parameters())
        print("number of parameters: %.2fM" % (n_params / 1e6,))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, idx, targets=None):
        x = self.ln_f(self.blocks(self.emb_stem(idx)))
        logits = self.head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        return logits, loss


def create_optimizer(model: torch.nn.Module, opt_config: OptimizerConfig):
    """AdamW with weight decay on Linear weights and the attention's input projection; none on
    biases, LayerNorm and Embedding weights and the position embedding."""
    decay, no_decay = set(), set()
    for mn, m in model.named_modules():
        for pn, p in m.named_parameters():
            fpn = "%s.%s" % (mn, pn) if mn else pn
            if pn.endswith("bias"):
                no_decay.add(fpn)
            elif pn.endswith("weight") and isinstance(m, (torch.nn.Linear,)):
                decay.add(fpn)
            elif pn.endswith("in_proj_weight"):
                decay.add(fpn)
            elif pn.endswith("weight") and isinstance(m, (torch.nn.LayerNorm, torch.nn.Embedding)):
                no_decay.add(fpn)
            elif pn.endswith("pos_emb"):
                no_decay.add(fpn)
    param_dict = dict(model.named_parameters())
    assert not decay & no_decay
    assert not param_dict.keys() - (decay | no_decay), param_dict.keys() - (decay | no_decay)
    groups = [{"params": [param_dict[pn] for pn in sorted(decay)],
               "weight_decay": opt_config.weight_decay},
              {"params": [param_dict[pn] for pn in sorted(no_decay)], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=opt_config.learning_rate, betas=(0.9, 0.95))
