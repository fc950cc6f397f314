"""Variational auto-encoder (in the style of the PyTorch ``vae`` example), on synthetic data."""
import argparse

import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F


class VAE(nn.Module):
    def __init__(self, d_in=64, d_hidden=32, d_latent=4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc21 = nn.Linear(d_hidden, d_latent)
        self.fc22 = nn.Linear(d_hidden, d_latent)
        self.fc3 = nn.Linear(d_latent, d_hidden)
        self.fc4 = nn.Linear(d_hidden, d_in)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def main():
    parser = argparse.ArgumentParser(description="VAE on synthetic 8x8 images")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--samples", type=int, default=256)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    # binary-ish 8x8 images: a few blob templates, thresholded after noise
    templates = (torch.rand(4, 1, 8, 8) > 0.5).float()
    idx = torch.randint(0, 4, (args.samples,))
    data = (templates[idx] + 0.3 * torch.rand(args.samples, 1, 8, 8)).clamp(0, 1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data),
                                         batch_size=args.batch_size, shuffle=True)

    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(1, args.epochs + 1):
        model.train()
        train_loss = 0.0
        for (x,) in loader:
            optimizer.zero_grad()
            recon, mu, logvar = model(x)
            loss = loss_function(recon, x, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        print(f"====> Epoch: {epoch} Average loss: {train_loss / len(loader.dataset):.4f}")
    with torch.no_grad():
        sample = model.decode(torch.randn(8, 4))
        print("sample shape", tuple(sample.shape))


if __name__ == "__main__":
    main()
