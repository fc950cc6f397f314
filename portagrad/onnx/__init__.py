"""``pg.onnx``: importable, so scripts that ``import torch.onnx`` at the top load; exporting is not
implemented (it needs graph tracing of a model into ONNX operators, which portagrad lacks)."""
from __future__ import annotations

from typing import Any

__all__ = ["export", "is_in_onnx_export"]


def export(model: Any, args: Any = (), f: Any = None, *a: Any, **kwargs: Any) -> Any:
    """Not implemented: raises ``NotImplementedError`` naming what is missing."""
    raise NotImplementedError(
        "pg.onnx.export is not implemented: portagrad has no tracer that records a model as a "
        "graph of ONNX operators. Save the weights with pg.save(model.state_dict(), path) instead.")


def is_in_onnx_export() -> bool:
    """``False``: no export is ever running."""
    return False
