"""torchvision: ``resnet18`` and ``mobilenet_v3_small`` (forward, backward, an SGD step), v1 and
v2 transforms on PIL images, ``FakeData`` through a DataLoader, and a compiled op (``nms``),
which needs torchvision's C++ library."""
import json

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision import transforms as T
from torchvision.transforms import v2

torch.manual_seed(0)
result = {}
x = torch.randn(2, 3, 64, 64)
for name in ("resnet18", "mobilenet_v3_small"):
    model = getattr(torchvision.models, name)(num_classes=3)
    model.eval()  # mobilenet's classifier dropout off: the outputs compare exactly
    out = model(x)
    loss = torch.nn.functional.cross_entropy(out, torch.tensor([0, 2]))
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    with torch.no_grad():
        after = model(x)
    result[name] = {"out": out.tolist(), "after": after.tolist()}

pixels = (np.arange(40 * 50 * 3) % 251).astype(np.uint8).reshape(40, 50, 3)
image = Image.fromarray(pixels)
v1 = T.Compose([T.Resize(24), T.CenterCrop(20), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)])
a = v1(image)
v2_pipeline = v2.Compose([v2.ToImage(), v2.Resize((24, 30), antialias=True),
                          v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5] * 3, [0.5] * 3)])
b = v2_pipeline(image)
result["v1"] = {"shape": list(a.shape), "sum": a.sum().item(), "corner": a[:, :2, :2].tolist()}
result["v2"] = {"shape": list(b.shape), "sum": b.sum().item(), "corner": b[:, :2, :2].tolist()}

data = torchvision.datasets.FakeData(size=6, image_size=(3, 16, 16), num_classes=3,
                                     transform=T.ToTensor())
batches = [(imgs.shape, labels.shape) for imgs, labels in torch.utils.data.DataLoader(data, batch_size=4)]
result["fakedata"] = [[list(s) for s in b] for b in batches]
try:
    torchvision.ops.nms(torch.rand(3, 4), torch.rand(3), 0.5)
    result["nms"] = "ran"
except Exception as e:  # the message is what is compared
    result["nms"] = f"{type(e).__name__}: {e}"
print("RESULT", json.dumps(result))
