"""The op layer: user-facing functions with broadcasting, promotion and autograd.

Each module groups one family; every differentiable op is a ``Function`` whose backward is written
with operators and ``Tensor`` methods (``-g * a / (b * b)``, ``g.sum(dim)``). The modules import
each other only downwards, in this order (bottom first): ``_common``, ``_gather`` (the two
recorded indexing primitives), ``shape``, ``_advanced``, ``indexing``, ``conversion``,
``elementwise``, ``reduction``, then ``joining`` and ``linalg``; a module calls into one above it
through ``Tensor`` methods.
"""
from . import conversion, elementwise, indexing, joining, linalg, reduction, shape

__all__ = ["conversion", "elementwise", "indexing", "joining", "linalg", "reduction", "shape"]
