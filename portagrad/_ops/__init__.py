"""The op layer: user-facing functions with broadcasting, promotion and autograd.

Each module groups one family; every differentiable op is a ``Function`` whose backward is written
with operators and ``Tensor`` methods (``-g * a / (b * b)``, ``g.sum(dim)``). The modules import
each other only downwards, in this order (bottom first): ``_common``, ``_gather`` (the two
recorded indexing primitives), ``shape``, ``_advanced``, ``indexing``, ``conversion``,
``elementwise``, ``reduction``, then ``joining`` and ``linalg``; a module calls into one above it
through ``Tensor`` methods.

Above those, and built only from them (no backend primitive of their own): ``special``,
``gammafn``, ``bits`` (more elementwise math), ``diagonal``, ``scan``, ``search``, ``stats``,
``segment`` (diagonals, prefix scans, searching, order statistics, reductions into slots),
``combine``, ``sequences``, ``decomp``, ``windows``, ``fills``, ``metadata`` (compositions, small
linear algebra, window functions, random fills, geometry) and ``sparse`` (the sparse COO layout).
``portagrad/__init__.py`` imports them and binds their ``Tensor`` methods.
"""
from . import conversion, elementwise, indexing, joining, linalg, reduction, shape

__all__ = ["conversion", "elementwise", "indexing", "joining", "linalg", "reduction", "shape"]
