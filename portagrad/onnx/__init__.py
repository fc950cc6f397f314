"""``pg.onnx``: importable, so scripts that ``import torch.onnx`` at the top load; exporting is not
implemented (it needs graph tracing of a model into ONNX operators, which portagrad lacks).

What libraries do with it at import works: the enums (``TensorProtoDataType``, ``TrainingMode``,
``OperatorExportTypes``), :func:`register_custom_op_symbolic` (recorded in
:data:`CUSTOM_OP_SYMBOLICS`, as an exporter would read them), ``symbolic_helper.parse_args`` and
the ``symbolic_opset*`` modules, whose functions exist to build ONNX graphs during an export and
raise if called.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from . import symbolic_helper, symbolic_opset9, symbolic_opset11, symbolic_opset16

__all__ = ["export", "is_in_onnx_export", "register_custom_op_symbolic",
           "unregister_custom_op_symbolic", "CUSTOM_OP_SYMBOLICS", "TensorProtoDataType",
           "TrainingMode", "OperatorExportTypes", "symbolic_helper", "symbolic_opset9",
           "symbolic_opset11", "symbolic_opset16"]

#: ``"ns::op"`` -> {opset version: symbolic function}, as registered
CUSTOM_OP_SYMBOLICS: dict[str, dict[int, Callable[..., Any]]] = {}


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn: Callable[..., Any],
                                opset_version: int) -> None:
    """Record ``symbolic_fn`` as the ONNX translation of operator ``symbolic_name``
    (``"ns::op"``) from ``opset_version`` on."""
    if not isinstance(symbolic_name, str) or symbolic_name.count("::") != 1:
        raise ValueError(f"Failed to register operator {symbolic_name}. The symbolic name must "
                         "match the format domain::name, and should start with a letter and "
                         "contain only alphanumerical characters")
    if not callable(symbolic_fn):
        raise TypeError("register_custom_op_symbolic: symbolic_fn must be callable")
    CUSTOM_OP_SYMBOLICS.setdefault(symbolic_name, {})[int(opset_version)] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int) -> None:
    """Forget the translation registered for ``symbolic_name`` at ``opset_version``."""
    CUSTOM_OP_SYMBOLICS.get(symbolic_name, {}).pop(int(opset_version), None)


class TensorProtoDataType(enum.IntEnum):
    """ONNX's element types (``onnx.TensorProto``)."""

    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16


class TrainingMode(enum.IntEnum):
    """How an export treats train/eval-dependent modules."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """How an export translates operators."""

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def export(model: Any, args: Any = (), f: Any = None, *a: Any, **kwargs: Any) -> Any:
    """Not implemented: raises ``NotImplementedError`` naming what is missing."""
    raise NotImplementedError(
        "pg.onnx.export is not implemented: portagrad has no tracer that records a model as a "
        "graph of ONNX operators. Save the weights with pg.save(model.state_dict(), path) instead.")


def is_in_onnx_export() -> bool:
    """``False``: no export is ever running."""
    return False
