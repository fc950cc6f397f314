"""Train a small CNN on the bundled handwritten digits -- the demo as a readable script.

    python examples/train_digits.py [--device cpu] [--epochs 12]
"""
import argparse
import time

import portagrad as pg
from portagrad import nn, optim
from portagrad.demo import load_digits
from portagrad.utils.data import DataLoader, TensorDataset, random_split

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="opencl:0" if pg.opencl.is_available() else "cpu")
parser.add_argument("--epochs", type=int, default=12)
parser.add_argument("--checkpoint", default="digits-cnn.safetensors")
args = parser.parse_args()

device = pg.device(args.device)
pg.manual_seed(0)

# data: 1797 8x8 images, pixel values 0..16 -> [0, 1]; an 80/20 split with a fixed generator
images, labels = load_digits()
x = (images / 16.0).unsqueeze(1).to(device)
y = labels.to(device)
train_set, test_set = random_split(TensorDataset(x, y), [0.8, 0.2],
                                   generator=pg.Generator().manual_seed(0))
train_loader = DataLoader(train_set, batch_size=32, shuffle=True,
                          generator=pg.Generator().manual_seed(0))
test_loader = DataLoader(test_set, batch_size=512)

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16 x 4 x 4
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 2 x 2
    nn.Flatten(), nn.Linear(128, 10),
).to(device)
optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
loss_fn = nn.CrossEntropyLoss()


def evaluate(net):
    net.eval()
    correct = 0
    with pg.no_grad():
        for xb, yb in test_loader:
            correct += (net(xb).argmax(dim=1) == yb).sum().item()
    net.train()
    return correct / len(test_set)


start = time.perf_counter()
for epoch in range(1, args.epochs + 1):
    total = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(yb)
    scheduler.step()
    print(f"epoch {epoch:2d}: loss {total / len(train_set):.4f}  test acc {evaluate(model):.2%}")

# save a checkpoint and load it into a fresh model and optimizer
pg.save({"epoch": args.epochs, "model": model.state_dict(),
         "optimizer": optimizer.state_dict()}, args.checkpoint)
checkpoint = pg.load(args.checkpoint)
restored = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(128, 10),
).to(device)
restored.load_state_dict(checkpoint["model"])
optim.SGD(restored.parameters(), lr=0.05, momentum=0.9).load_state_dict(checkpoint["optimizer"])
print(f"re-loaded model: test acc {evaluate(restored):.2%}")
print(f"device {device}, {time.perf_counter() - start:.1f} s")
