"""``torch.ao``: PyTorch's quantization namespace. portagrad does not quantize; what models build
in float mode exists (:mod:`portagrad.ao.quantization`'s stubs), every other name is absent and
reported by name."""
from __future__ import annotations

from . import quantization

__all__ = ["quantization"]
