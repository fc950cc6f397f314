"""timm's ``create_model`` for a ResNet-18 and a ViT: forward, backward, an SGD step, forward
again (random weights, no download)."""
import json

import timm
import torch

torch.manual_seed(0)
result = {}
for name, kwargs in [("resnet18", {}), ("vit_tiny_patch16_224", {"img_size": 32, "patch_size": 8})]:
    model = timm.create_model(name, pretrained=False, num_classes=5, **kwargs)
    x = torch.randn(2, 3, 32, 32)
    out = model(x)
    loss = torch.nn.functional.cross_entropy(out, torch.tensor([1, 3]))
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    model.eval()
    with torch.no_grad():
        after = model(x)
    result[name] = {"out": out.tolist(), "loss": loss.item(), "after": after.tolist()}
print("RESULT", json.dumps(result))
