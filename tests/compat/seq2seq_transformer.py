"""Sequence-to-sequence ``nn.Transformer`` (encoder-decoder), in the style of the PyTorch
translation tutorial, learning to reverse short token sequences; a few steps run under
``torch.profiler`` and the evaluation checks determinism with ``torch.testing.assert_close``."""
import argparse
import math

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function

PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size, dropout, maxlen=64):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding.unsqueeze(-2))

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])


class Seq2SeqTransformer(nn.Module):
    def __init__(self, num_layers, emb_size, nhead, vocab_size, dim_feedforward, dropout):
        super().__init__()
        self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead,
                                          num_encoder_layers=num_layers,
                                          num_decoder_layers=num_layers,
                                          dim_feedforward=dim_feedforward, dropout=dropout)
        self.generator = nn.Linear(emb_size, vocab_size)
        self.src_tok_emb = nn.Embedding(vocab_size, emb_size)
        self.tgt_tok_emb = nn.Embedding(vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)
        self.emb_size = emb_size

    def forward(self, src, trg, tgt_mask, src_padding_mask, tgt_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src) * math.sqrt(self.emb_size))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg) * math.sqrt(self.emb_size))
        outs = self.transformer(src_emb, tgt_emb, None, tgt_mask, None, src_padding_mask,
                                tgt_padding_mask, src_padding_mask)
        return self.generator(outs)


def make_batch(batch_size, length, vocab_size):
    body = torch.randint(3, vocab_size, (length, batch_size))
    bos = torch.full((1, batch_size), BOS_IDX)
    eos = torch.full((1, batch_size), EOS_IDX)
    src = torch.cat([bos, body, eos])
    tgt = torch.cat([bos, body.flip(0), eos])
    return src, tgt


def create_masks(src, tgt):
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[0])
    return tgt_mask, (src == PAD_IDX).transpose(0, 1), (tgt == PAD_IDX).transpose(0, 1)


def main():
    parser = argparse.ArgumentParser(description="nn.Transformer sequence reversal")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile-steps", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    vocab_size = 10
    model = Seq2SeqTransformer(1, 16, 2, vocab_size, 32, args.dropout)
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003, betas=(0.9, 0.98), eps=1e-9)

    def train_step(src, tgt):
        tgt_input = tgt[:-1, :]
        tgt_mask, src_pad, tgt_pad = create_masks(src, tgt_input)
        logits = model(src, tgt_input, tgt_mask, src_pad, tgt_pad)
        optimizer.zero_grad()
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:, :].reshape(-1))
        loss.backward()
        optimizer.step()
        return loss.item()

    model.train()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.profile_steps):
            with record_function("train_step"):
                train_step(*make_batch(16, 6, vocab_size))
    names = {evt.key for evt in prof.key_averages()}
    assert "train_step" in names, "profiler lost the record_function range"

    for step in range(args.steps):
        loss = train_step(*make_batch(16, 6, vocab_size))
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:3d} train loss: {loss:.4f}")

    model.eval()
    src, tgt = make_batch(4, 6, vocab_size)
    tgt_mask, src_pad, tgt_pad = create_masks(src, tgt[:-1])
    with torch.no_grad():
        a = model(src, tgt[:-1], tgt_mask, src_pad, tgt_pad)
        b = model(src, tgt[:-1], tgt_mask, src_pad, tgt_pad)
    torch.testing.assert_close(a, b)
    print("eval is deterministic")


if __name__ == "__main__":
    main()
