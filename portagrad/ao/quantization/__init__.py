"""``torch.ao.quantization``: :class:`QuantStub` and :class:`DeQuantStub`, the markers quantizable
models (torchvision's) place around their float computation.

Until a model is prepared and converted (which needs PyTorch's quantized kernels, not implemented
here: ``prepare``, ``convert``, ``QConfig`` and the observers are absent, and naming them reports
so), both markers pass their input through, as in PyTorch.
"""
from __future__ import annotations

from typing import Any

from ...nn.modules.module import Module

__all__ = ["QuantStub", "DeQuantStub"]


class _FloatMarker(Module):
    """A marker that is the identity until a model is converted (which portagrad cannot do)."""

    def __init__(self, qconfig: Any = None) -> None:
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x: Any) -> Any:
        return x


class QuantStub(_FloatMarker):
    """Where a quantized model would quantize its input; in float mode, the identity."""


class DeQuantStub(_FloatMarker):
    """Where a quantized model would dequantize its output; in float mode, the identity."""
