"""nn.DataParallel over the available devices, with a subclass forwarding attribute access to the
wrapped module."""
import portagrad as pg
from portagrad import nn


class MyDataParallel(nn.DataParallel):
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.label = "my net"

    def forward(self, x):
        return self.fc(x)


n = pg.opencl.device_count() if pg.opencl.is_available() else 0
devices = [f"opencl:{i}" for i in range(n)] or None
net = Net().to(devices[0] if devices else "cpu")
model = MyDataParallel(net, device_ids=devices) if devices else MyDataParallel(net)
out = model(pg.randn(8, 4, device=devices[0] if devices else "cpu"))
out.sum().backward()
print("output", tuple(out.shape), "on", out.device, "| forwarded attribute:", model.label)
assert model.label == "my net" and net.fc.weight.grad is not None
