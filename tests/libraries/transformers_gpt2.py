"""transformers' GPT-2 as its README uses it: forward with labels, three AdamW steps, greedy
``generate`` (a small config, random weights; nothing is downloaded)."""
import json

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64,
                    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
model = GPT2LMHeadModel(config)
ids = torch.randint(0, 100, (2, 10))

out = model(ids, labels=ids)
logits = out.logits[0, :2, :4].tolist()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
losses = []
for _ in range(3):
    optimizer.zero_grad()
    loss = model(ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
model.eval()
tokens = model.generate(ids[:1, :4], max_new_tokens=6, do_sample=False,
                        pad_token_id=0).tolist()
print("RESULT", json.dumps({"logits": logits, "losses": losses, "tokens": tokens}))
