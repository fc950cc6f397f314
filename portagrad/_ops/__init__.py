"""The op layer: user-facing functions with broadcasting, promotion and autograd.

Each module groups one family; every differentiable op is a ``Function`` whose backward is written
with other ops from here.
"""
from . import conversion, elementwise, indexing, joining, linalg, reduction, shape

__all__ = ["conversion", "elementwise", "indexing", "joining", "linalg", "reduction", "shape"]
