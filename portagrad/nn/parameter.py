"""``nn.Parameter`` and ``nn.Buffer``: tensors that a :class:`~portagrad.nn.Module` registers."""
from __future__ import annotations

from typing import Any, SupportsIndex

from .. import _creation
from .._tensor import Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it to a Module attribute registers it.

    Shares storage with ``data``; ``requires_grad`` is True by default (``torch.nn.Parameter``)."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = _creation.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        p = cls._from_tensor(data.detach())
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """A tensor that, assigned to a Module attribute, is registered as a buffer
    (``torch.nn.Buffer``); ``persistent=False`` keeps it out of ``state_dict``."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Buffer:
        if data is None:
            data = _creation.empty(0)
        b = cls._from_tensor(data.detach())
        b.__dict__["persistent"] = persistent
        return b

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        pass
