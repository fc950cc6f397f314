"""transformers' BERT for sequence classification: forward with labels and an attention mask,
backward, an AdamW step, forward again (a small config, random weights)."""
import json

import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
config = BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=32,
                    intermediate_size=64, vocab_size=100, num_labels=3,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
model = BertForSequenceClassification(config)
ids = torch.randint(0, 100, (2, 12))
mask = torch.ones_like(ids)
mask[1, 9:] = 0
labels = torch.tensor([0, 2])

out = model(ids, attention_mask=mask, labels=labels)
out.loss.backward()
grad = model.bert.embeddings.word_embeddings.weight.grad.norm().item()
torch.optim.AdamW(model.parameters(), lr=1e-2).step()
after = model(ids, attention_mask=mask, labels=labels)
print("RESULT", json.dumps({"loss": out.loss.item(), "logits": out.logits.tolist(),
                            "embedding_grad_norm": grad, "loss_after_step": after.loss.item()}))
