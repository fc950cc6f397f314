"""Device-agnostic training with the ``torch.accelerator`` device pick: a small MLP regressor."""
import argparse

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser(description="accelerator-agnostic MLP")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    device = (torch.accelerator.current_accelerator() if torch.accelerator.is_available()
              else torch.device("cpu"))
    print(f"Using {device} device")

    x = torch.linspace(-2, 2, 128, device=device).unsqueeze(1)
    y = torch.sin(2 * x) + 0.1 * torch.randn(x.shape, device=device)
    model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
    assert next(model.parameters()).device.type == device.type
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()
    for step in range(args.steps):
        pred = model(x)
        loss = loss_fn(pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step:3d} loss: {loss.item():>7f}")
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()


if __name__ == "__main__":
    main()
