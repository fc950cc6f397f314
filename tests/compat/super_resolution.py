"""Super-resolution with a sub-pixel convolution (``nn.PixelShuffle``), in the style of the PyTorch
``super_resolution`` example; low-resolution inputs are average-pooled synthetic images."""
import argparse

import torch
import torch.nn as nn
import torch.nn.init as init
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv4.weight)


def main():
    parser = argparse.ArgumentParser(description="PixelShuffle super-resolution")
    parser.add_argument("--upscale_factor", type=int, default=2)
    parser.add_argument("--batchSize", type=int, default=16)
    parser.add_argument("--nEpochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    device = torch.get_default_device()

    # smooth targets: sums of a few random low-frequency sinusoids on 16x16
    ys = torch.linspace(0, 3.14, 16).view(16, 1)
    xs = torch.linspace(0, 3.14, 16).view(1, 16)
    freq = torch.randint(1, 4, (64, 2)).float()
    phase = torch.rand(64, 1, 1) * 3.14
    target = torch.sin(freq[:, 0, None, None] * ys + phase) * torch.cos(freq[:, 1, None, None] * xs)
    target = target.unsqueeze(1)
    lowres = nn.functional.avg_pool2d(target, args.upscale_factor)
    loader = DataLoader(TensorDataset(lowres, target), batch_size=args.batchSize, shuffle=True)

    model = Net(upscale_factor=args.upscale_factor).to(device)
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.nEpochs + 1):
        epoch_loss = 0.0
        for input, tgt in loader:
            input, tgt = input.to(device), tgt.to(device)
            optimizer.zero_grad()
            loss = criterion(model(input), tgt)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()
        print(f"===> Epoch {epoch} Complete: Avg. Loss: {epoch_loss / len(loader):.6f}")


if __name__ == "__main__":
    main()
