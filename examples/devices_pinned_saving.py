"""Devices, pinned memory, non-blocking copies and saving state dicts."""
import os
import tempfile

import portagrad as pg
from portagrad import nn

device = pg.device("opencl:0" if pg.opencl.is_available() else "cpu")
model = nn.Linear(2, 2)
model.to(device)
batch = pg.randn(64, 2)
try:
    batch = batch.pin_memory()  # page-locked host memory: faster, asynchronous copies
except RuntimeError as exc:     # no accelerator backend can pin (as PyTorch without CUDA)
    print("no pinned memory:", exc)
batch = batch.to(device, non_blocking=True)
out = model(batch).detach().cpu().numpy()
print(device, out.shape)

path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
pg.save(model.state_dict(), path)
model.load_state_dict(pg.load(path))
cpu_copy = pg.load(path, map_location="cpu")  # loaded where you want it
print({k: (tuple(v.shape), str(v.device)) for k, v in cpu_copy.items()})

# the whole model is pickle: allowed only as an explicit, unsafe opt-in when loading
whole = os.path.join(os.path.dirname(path), "whole.pt")
pg.save(model, whole)
try:
    pg.load(whole)
except pg.serialization.LoadError as exc:
    print("refused by default:", str(exc).split(".")[0])
restored = pg.load(whole, weights_only=False)  # only for files you trust
print(type(restored).__name__, restored.weight.device)
