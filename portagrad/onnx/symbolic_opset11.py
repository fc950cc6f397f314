"""``torch.onnx.symbolic_opset11``: the ONNX opset 11 translations an exporter calls while it
builds a graph. There is no exporter in portagrad, so no graph exists to build: each name is a
function that raises ``NotImplementedError`` saying so (libraries only refer to them inside their
own symbolic functions, which run during an export).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

__all__: list[str] = []


def __getattr__(name: str) -> Callable[..., NoReturn]:
    if name.startswith("__"):
        raise AttributeError(name)

    def symbolic(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"torch.onnx.symbolic_opset11.{name}: portagrad has no ONNX "
                                  "exporter, so there is no graph to add the operator to")
    symbolic.__name__ = name
    return symbolic
