"""Typed errors with PyTorch-like messages."""
from __future__ import annotations

__all__ = ["OutOfMemoryError", "DeviceMismatchError", "ShapeError", "DTypeError"]


class OutOfMemoryError(RuntimeError):
    """A device could not satisfy an allocation (``torch.OutOfMemoryError``). The message names the
    device and the sizes; after ``empty_cache()`` work can go on."""


class DeviceMismatchError(RuntimeError):
    """Operands of one op live on different devices."""


class ShapeError(RuntimeError):
    """Shapes do not fit (broadcasting, matmul, views). A ``RuntimeError`` as in PyTorch."""


class DTypeError(TypeError):
    """A dtype is not supported by an op or a device."""
