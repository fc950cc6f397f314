"""einops: rearrange/reduce/repeat/einsum on tensors and its torch layers inside a module,
forward and backward."""
import json

import einops
import torch
from einops.layers.torch import Rearrange, Reduce

torch.manual_seed(0)
x = torch.randn(2, 3, 4, 6, requires_grad=True)
patches = einops.rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=3)
pooled = einops.reduce(x, "b c h w -> b c", "max")
tiled = einops.repeat(pooled, "b c -> b c k", k=2)
mixed = einops.einsum(patches, patches, "b n d, b m d -> b n m")
model = torch.nn.Sequential(Rearrange("b c h w -> b (c h w)"), torch.nn.Linear(72, 5),
                            Rearrange("b (g k) -> b g k", g=1), Reduce("b g k -> b k", "mean"))
out = model(x)
(out.sum() + mixed.sum() + tiled.sum()).backward()
print("RESULT", json.dumps({"patches_shape": list(patches.shape), "pooled": pooled.tolist(),
                            "mixed_trace": mixed.diagonal(dim1=1, dim2=2).sum().item(),
                            "out": out.tolist(), "grad_sum": x.grad.sum().item()}))
