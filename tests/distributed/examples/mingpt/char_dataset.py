"""minGPT-ddp's character dataset (pytorch/examples, distributed/minGPT-ddp/mingpt/
char_dataset.py), written after the published one: a text file read with fsspec, its characters
numbered, and each item a block of ``block_size`` characters with the next ones as targets.
Unedited apart from reading the file with ``open`` when fsspec is not installed."""
from dataclasses import dataclass

import torch
from torch.utils.data import Dataset


@dataclass
class DataConfig:
    path: str = None
    block_size: int = None
    train_split: float = None
    truncate: float = 1.0


def _read(path):
    try:
        import fsspec
    except ImportError:  # (an edit: the published script always uses fsspec)
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    return fsspec.open(path).open().read().decode("utf-8")


class CharDataset(Dataset):
    def __init__(self, data_cfg: DataConfig):
        data = _read(data_cfg.path)
        data = data[: int(len(data) * data_cfg.truncate)]
        chars = sorted(list(set(data)))
        data_size, vocab_size = len(data), len(chars)
        print("Data has %d characters, %d unique." % (data_size, vocab_size))
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}
        self.block_size = data_cfg.block_size
        self.vocab_size = vocab_size
        self.data = data

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        chunk = self.data[idx:idx + self.block_size + 1]
        dix = [self.stoi[s] for s in chunk]
        x = torch.tensor(dix[:-1], dtype=torch.long)
        y = torch.tensor(dix[1:], dtype=torch.long)
        return x, y
