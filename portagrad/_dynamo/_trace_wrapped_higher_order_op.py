"""``torch._dynamo._trace_wrapped_higher_order_op``: the one name libraries import from it.

:class:`TransformGetItemToIndex` is, in PyTorch, a function mode that turns ``x[i]`` with a 0-d
tensor ``i`` into ``index_select`` so that the indexing can be batched under ``vmap``.
``portagrad.vmap`` calls the function once per batch element on real slices, where indexing with
a 0-d tensor already works, so the mode has nothing to rewrite: entering it changes nothing.
"""
from __future__ import annotations

from typing import Any

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex:
    """A context manager under which tensor indexing works inside ``vmap`` (always true here)."""

    def __enter__(self) -> TransformGetItemToIndex:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
