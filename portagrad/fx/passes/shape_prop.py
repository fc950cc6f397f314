"""``torch.fx.passes.shape_prop``: run a graph on example inputs and record, on each node whose
value is a tensor, its shape, dtype and layout (``node.meta['tensor_meta']``)."""
from __future__ import annotations

from typing import Any, NamedTuple

from ..._memory_format import contiguous_format
from ..._tensor import Tensor
from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What :class:`ShapeProp` records about a tensor value."""

    shape: tuple[int, ...]
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def _extract(t: Tensor) -> TensorMetadata:
    shape = tuple(t.shape)
    stride = tuple(t.stride())
    # contiguous row-major is the only memory format a portagrad tensor reports here
    fmt = contiguous_format if t.is_contiguous() else None
    return TensorMetadata(shape, t.dtype, bool(t.requires_grad), stride, fmt, False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` runs ``gm`` and stores, for each node, the
    :class:`TensorMetadata` of its value (or a nested structure of them) in
    ``node.meta['tensor_meta']`` and the value's type in ``node.type``."""

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found = False

        def meta(v: Any) -> Any:
            nonlocal found
            if isinstance(v, Tensor):
                found = True
                return _extract(v)
            return v

        m = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = m
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the module on ``args`` (recording as it goes); returns its result."""
        return super().run(*args)
