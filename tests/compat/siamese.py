"""Siamese network (in the style of the PyTorch ``siamese_network`` example): do two synthetic
images show the same class? Trained with ``BCELoss`` on a sigmoid output."""
import argparse

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((2, 2)),
        )
        self.fc = nn.Sequential(nn.Linear(8 * 2 * 2 * 2, 16), nn.ReLU(inplace=True), nn.Linear(16, 1))
        self.sigmoid = nn.Sigmoid()
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        return self.cnn(x).view(x.size(0), -1)

    def forward(self, input1, input2):
        output = torch.cat((self.forward_once(input1), self.forward_once(input2)), 1)
        return self.sigmoid(self.fc(output))


class PairDataset(Dataset):
    def __init__(self, n, generator):
        self.protos = torch.randn(4, 1, 8, 8, generator=generator)
        self.a = torch.randint(0, 4, (n,), generator=generator)
        same = torch.rand(n, generator=generator) < 0.5
        other = torch.randint(0, 4, (n,), generator=generator)
        self.b = torch.where(same, self.a, other)
        self.noise = 0.3 * torch.randn(n, 2, 1, 8, 8, generator=generator)

    def __len__(self):
        return len(self.a)

    def __getitem__(self, i):
        x1 = self.protos[self.a[i]] + self.noise[i, 0]
        x2 = self.protos[self.b[i]] + self.noise[i, 1]
        return x1, x2, (self.a[i] == self.b[i]).float()


def main():
    parser = argparse.ArgumentParser(description="Siamese network with BCELoss")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    loader = DataLoader(PairDataset(256, g), batch_size=args.batch_size, shuffle=True)
    model = SiameseNetwork()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=2, gamma=0.7)
    criterion = nn.BCELoss()
    for epoch in range(1, args.epochs + 1):
        model.train()
        total = 0.0
        for images_1, images_2, targets in loader:
            optimizer.zero_grad()
            outputs = model(images_1, images_2).squeeze()
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(targets)
        scheduler.step()
        print(f"Train Epoch: {epoch} loss: {total / len(loader.dataset):.6f}")


if __name__ == "__main__":
    main()
