"""Typed errors with PyTorch-like messages."""
from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["OutOfMemoryError", "DeviceMismatchError", "ShapeError", "DTypeError",
           "raise_device_mismatch", "UnsupportedOpError", "LinAlgError", "AcceleratorError",
           "FatalError"]


class OutOfMemoryError(RuntimeError):
    """A device could not satisfy an allocation (``torch.OutOfMemoryError``). The message names the
    device and the sizes; after ``empty_cache()`` work can go on."""


class AcceleratorError(RuntimeError):
    """``torch.AcceleratorError``: an error raised while executing on an accelerator (a kernel
    that faulted). Nothing in portagrad raises it yet (device failures surface as the backend's
    own errors); it is here so that code catching it loads and runs."""


class FatalError(Exception):
    """``torch.FatalError``: an unrecoverable internal error (PyTorch's C++ ``FatalError``, not a
    ``RuntimeError``). Nothing in portagrad raises it; named for code that catches it."""


class DeviceMismatchError(RuntimeError):
    """Operands of one op live on different devices."""


def raise_device_mismatch(a: Any, b: Any, op: str = "") -> NoReturn:
    """Raise :class:`DeviceMismatchError` with PyTorch's text for operands on devices ``a`` and
    ``b`` (naming ``op`` when given). The one source of this message: callers compare devices
    themselves, as cheaply as their path needs, and call this on a mismatch."""
    raise DeviceMismatchError(
        f"Expected all tensors to be on the same device, but found at least two devices, {a} and "
        f"{b}!" + (f" (when checking arguments for {op})" if op else ""))


class ShapeError(RuntimeError):
    """Shapes do not fit (broadcasting, matmul, views). A ``RuntimeError`` as in PyTorch."""


class LinAlgError(RuntimeError):
    """A linear-algebra routine met a matrix it cannot handle: singular for ``inv``/``solve``, not
    positive-definite for ``cholesky`` (``torch.linalg.LinAlgError``, a ``RuntimeError``)."""


class DTypeError(TypeError):
    """A dtype is not supported by an op or a device."""


class UnsupportedOpError(NotImplementedError):
    """A backend was asked for an op (or an optional feature) it does not know.

    Raised by a backend's string-dispatched primitives (``unary``, ``binary``) for an op name
    outside the contract, and by the core for an optional group of methods (events) a backend
    lacks. A ``NotImplementedError`` (hence a ``RuntimeError``) whose message names the op and the
    backend; ``op`` and ``backend`` hold them for programs.
    """

    def __init__(self, op: str, backend: str, detail: str = "") -> None:
        self.op = op
        self.backend = backend
        super().__init__(detail or f"the {backend!r} backend does not implement op {op!r}")
