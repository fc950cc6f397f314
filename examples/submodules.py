"""Submodules by attribute or add_module; parameters by name; freezing."""
import portagrad as pg
from portagrad import nn, optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module("conv1", nn.Conv2d(3, 16, 5, padding=2))
        self.conv2 = nn.Conv2d(16, 20, 5)

    def forward(self, x):
        return self.conv2(pg.relu(self.conv1(x)))


net = Net()
for name, param in net.named_parameters():
    if param.requires_grad:
        print(name, tuple(param.data.shape))

# freeze conv1: its parameters get no gradient and the optimizer only sees conv2's
for p in net.conv1.parameters():
    p.requires_grad = False
optimizer = optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.01, momentum=0.9)
net.train()
out = net(pg.randn(2, 3, 12, 12))
out.mean().backward()
optimizer.step()
assert net.conv1.weight.grad is None and net.conv2.weight.grad is not None
net.eval()
with pg.no_grad():
    print("eval output", tuple(net(pg.randn(1, 3, 12, 12)).shape))
