"""Write ``torch-checkpoint.pt``, the PyTorch file ``tests/test_torch_checkpoint.py`` reads.

Run with PyTorch installed (the file in the repository was written by torch 2.13.0)::

    python tests/data/make_torch_checkpoint.py

Every value is a formula the test repeats, so the test needs no torch.
"""
import collections
from pathlib import Path

import torch


def checkpoint() -> dict:
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 4
    obj = collections.OrderedDict()
    obj["base"] = base
    obj["row_view"] = base[1]  # shares base's storage, at an offset
    obj["col_view"] = base[:, 2]  # a strided view
    obj["t"] = base.t()
    obj["f64"] = torch.tensor([0.1, -2.5e300, float("inf")], dtype=torch.float64)
    obj["f16"] = torch.tensor([0.5, -1.25, 65504.0], dtype=torch.float16)
    obj["bf16"] = torch.tensor([1.5, -2.25, 3.0e38], dtype=torch.bfloat16)
    obj["i64"] = torch.tensor([2 ** 62 + 1, -2 ** 63, 7])
    obj["i32"] = torch.tensor([-5, 2 ** 31 - 1], dtype=torch.int32)
    obj["i16"] = torch.tensor([-300, 12], dtype=torch.int16)
    obj["i8"] = torch.tensor([-128, 127], dtype=torch.int8)
    obj["u8"] = torch.tensor([0, 200, 255], dtype=torch.uint8)
    obj["b"] = torch.tensor([True, False, True])
    obj["zero_d"] = torch.tensor(3.5)
    obj["empty"] = torch.empty(0, 3)
    obj["param"] = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    obj["frozen"] = torch.nn.Parameter(torch.tensor([3.0]), requires_grad=False)
    obj["grad"] = torch.tensor([4.0], requires_grad=True)
    obj["optim"] = {"state": {0: {"step": torch.tensor(3.0),
                                  "exp_avg": torch.tensor([0.25, 0.5])}},
                    "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), "params": [0]}]}
    obj["meta"] = {"dtype": torch.float16, "device": torch.device("cpu"),
                   "size": torch.Size([2, 3]), "epoch": 7, "name": "run", "none": None}
    return obj


if __name__ == "__main__":
    torch.save(checkpoint(), Path(__file__).with_name("torch-checkpoint.pt"))
