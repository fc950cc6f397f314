"""``Variable``: PyTorch's deprecated tensor wrapper, kept for old scripts.

Since tensors carry autograd state themselves, ``Variable(t, requires_grad=True)`` returns a new
tensor sharing ``t``'s data (``t.detach().requires_grad_(True)``), and every tensor is an
instance of ``Variable``, as in PyTorch.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any

__all__ = ["Variable", "variable"]


def _tensor_type() -> type:
    # autograd sits below the tensor module, which imports it: look the class up when a check
    # runs (by then the package is loaded) instead of importing it here
    return sys.modules["portagrad._tensor"].Tensor  # type: ignore[no-any-return]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, _tensor_type())


class Variable(metaclass=_VariableMeta):
    """Deprecated: ``Variable(data, requires_grad=False)`` returns ``data.detach()`` with
    ``requires_grad`` set (a tensor sharing ``data``'s memory); ``Variable()`` an empty tensor.
    ``volatile`` has no effect (use ``no_grad``)."""

    def __new__(cls, data: Any = None, requires_grad: bool = False,  # type: ignore[misc]
                volatile: bool = False) -> Any:
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "portagrad.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            data = sys.modules["portagrad"].empty(0)
        if not isinstance(data, _tensor_type()):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        tensor: Any = data
        return tensor.detach().requires_grad_(bool(requires_grad))


def variable(*args: Any, **kwargs: Any) -> Any:
    """Removed in PyTorch: raises, pointing to ``tensor``."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use portagrad.tensor(...) "
                       "instead")
