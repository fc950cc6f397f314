"""``torch.onnx.symbolic_opset16``: the ONNX opset 16 translations an exporter calls while it
builds a graph. There is no exporter in portagrad, so no graph exists to build: each name is a
function that raises ``NotImplementedError`` saying so (libraries only refer to them inside their
own symbolic functions, which run during an export).
"""
from __future__ import annotations

from ._symbolic import missing_symbolics

__all__: list[str] = []

__getattr__ = missing_symbolics("torch.onnx.symbolic_opset16")
