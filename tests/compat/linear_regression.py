"""Polynomial regression (in the style of the PyTorch ``regression`` example)."""
import argparse

import torch
import torch.nn.functional as F

POLY_DEGREE = 4


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def get_batch(f, batch_size=32):
    random = torch.randn(batch_size)
    x = make_features(random)
    return x, f(x)


def main():
    parser = argparse.ArgumentParser(description="fit a degree-4 polynomial")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    w_target = torch.randn(POLY_DEGREE, 1) * 0.5
    b_target = torch.randn(1) * 5

    def f(x):
        return x.mm(w_target) + b_target.item()

    fc = torch.nn.Linear(w_target.size(0), 1)
    for step in range(1, args.steps + 1):
        batch_x, batch_y = get_batch(f)
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.01 * param.grad)
        if step == 1 or step % 50 == 0:
            print(f"step {step} loss {loss:.6f}")
    print(f"Loss: {loss:.6f} after {args.steps} batches")
    print("==> Learned bias:", round(fc.bias.item(), 3), " actual:", round(b_target.item(), 3))


if __name__ == "__main__":
    main()
