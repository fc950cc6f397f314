"""Save and load (in the style of the PyTorch "Save and Load the Model" tutorial): train, save the
model and optimizer state with ``torch.save``, load them with ``torch.load(weights_only=True)``
into fresh objects, check the restored model agrees, and resume training."""
import argparse
import os
import tempfile

import torch
from torch import nn


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


def train(model, optimizer, x, y, steps, start):
    loss_fn = nn.CrossEntropyLoss()
    for step in range(start, start + steps):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss: {loss.item():.6f}")
    return loss.item()


def main():
    parser = argparse.ArgumentParser(description="checkpoint and resume")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    x = torch.randn(96, 4, 4)
    y = (x.flatten(1).sum(1) > 0).long() + (x[:, 0, 0] > 1).long()

    model = NeuralNetwork()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train(model, optimizer, x, y, args.steps, 0)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pth")
        torch.save({"epoch": args.steps, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict()}, path)
        torch.save(model.state_dict(), os.path.join(tmp, "model_weights.pth"))

        restored = NeuralNetwork()
        restored.load_state_dict(torch.load(os.path.join(tmp, "model_weights.pth"),
                                            weights_only=True))
        restored.eval()
        model.eval()
        with torch.no_grad():
            assert torch.equal(restored(x), model(x)), "restored model disagrees"

        checkpoint = torch.load(path, weights_only=True)
    resumed = NeuralNetwork()
    resumed_opt = torch.optim.SGD(resumed.parameters(), lr=0.1, momentum=0.9)
    resumed.load_state_dict(checkpoint["model_state_dict"])
    resumed_opt.load_state_dict(checkpoint["optimizer_state_dict"])
    resumed.train()
    print("resumed at step", checkpoint["epoch"])
    train(resumed, resumed_opt, x, y, args.steps, checkpoint["epoch"])


if __name__ == "__main__":
    main()
