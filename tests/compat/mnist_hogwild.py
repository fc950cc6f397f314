"""Hogwild training (in the style of the PyTorch ``mnist_hogwild`` example): several processes
update one model whose parameters live in shared memory (``share_memory()``)."""
import argparse

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x.flatten(1)))), dim=1)


def make_dataset(seed, n=256):
    g = torch.Generator().manual_seed(seed)
    protos = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))
    target = torch.randint(0, 4, (n,), generator=g)
    return TensorDataset(protos[target] + 0.7 * torch.randn(n, 64, generator=g), target)


def train(rank, args, model):
    torch.manual_seed(args.seed + rank)
    loader = DataLoader(make_dataset(args.seed + rank), batch_size=args.batch_size, shuffle=True)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    model.train()
    for epoch in range(1, args.epochs + 1):
        for data, target in loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
        print(f"{rank}\tTrain Epoch: {epoch}\tlast batch Loss: {loss.item():.6f}", flush=True)


def test(args, model):
    model.eval()
    data, target = make_dataset(12345).tensors
    with torch.no_grad():
        test_loss = F.nll_loss(model(data), target).item()
    print(f"Test set: Average loss: {test_loss:.4f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description="Hogwild training with shared parameters")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--num-processes", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    mp.set_start_method("spawn", force=True)
    model = Net()
    # gradients are allocated lazily, so they are not shared
    model.share_memory()
    test(args, model)
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
        assert p.exitcode == 0, f"worker exited with {p.exitcode}"
    test(args, model)


if __name__ == "__main__":
    main()
