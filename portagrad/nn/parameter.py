"""``nn.Parameter`` and ``nn.Buffer``: tensors that a :class:`~portagrad.nn.Module` registers."""
from __future__ import annotations

from typing import Any, SupportsIndex

from .. import _creation
from .._tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it to a Module attribute registers it.

    Shares storage with ``data``; ``requires_grad`` is True by default (``torch.nn.Parameter``)."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = _creation.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        if requires_grad and not (data.is_floating_point() or data.is_complex()):
            # PyTorch's Parameter message (capitalised, unlike requires_grad_'s)
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        p = cls._from_tensor(data.detach())
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo: dict) -> Parameter:
        """A new ``Parameter`` with a copy of the data and the same ``requires_grad``; as
        PyTorch's, neither the ``grad`` nor attributes set on the parameter are copied."""
        if type(self) is not Parameter:  # subclasses (lazy placeholders) copy as tensors do
            return super().__deepcopy__(memo)  # type: ignore[return-value]
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` is true for the tensors ``Buffer(...)`` made (marked
    ``_is_buffer``): like PyTorch's, those are plain tensors, not ``Buffer`` instances."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and \
                getattr(instance, "__dict__", {}).get("_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that, assigned to a Module attribute, is registered as a buffer
    (``torch.nn.Buffer``); ``persistent=False`` keeps it out of ``state_dict``.

    ``Buffer(data)`` returns a plain :class:`Tensor` sharing ``data``'s storage (and keeping its
    ``requires_grad``), marked so that ``isinstance(t, Buffer)`` holds, as PyTorch's."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Buffer:
        if data is None:
            data = _creation.empty(0)
        b = Tensor._from_tensor(data.detach())
        if data.requires_grad:
            b.requires_grad_(True)
        b.__dict__["persistent"] = persistent
        b.__dict__["_is_buffer"] = True
        return b  # type: ignore[return-value]  # a marked plain Tensor (see _BufferMeta)

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        pass


class UninitializedTensorMixin:
    """A placeholder whose shape is not known yet (lazy modules): no data until
    :meth:`materialize` gives it a shape and makes it a plain ``cls_to_become``."""

    cls_to_become: type = Tensor

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Allocate (uninitialised) data of ``shape`` and become a ``cls_to_become``."""
        t: Any = self
        if isinstance(shape, int):
            shape = (shape,)
        data = _creation.empty(tuple(shape), device=device or t.device, dtype=dtype or t.dtype)
        t.data = data
        t.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This "
                           "error usually happens in `load_state_dict` when trying to load an "
                           "uninitialized parameter into an initialized one. Call `forward` to "
                           "initialize the parameters before accessing their attributes.")

    def share_memory_(self) -> Any:
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__  # over Parameter's and Tensor's own __str__

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        t: Any = self
        return (self.__class__, (t.requires_grad,))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A :class:`Parameter` of a lazy module before its first forward call."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None
                ) -> UninitializedParameter:
        p = Parameter.__new__(cls, _creation.empty(0, device=device, dtype=dtype), requires_grad)
        return p  # type: ignore[return-value]

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy module before its first forward call."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> UninitializedBuffer:
        b = cls._from_tensor(_creation.empty(0, device=device, dtype=dtype))
        if requires_grad:
            b.requires_grad_(True)
        return b  # type: ignore[return-value]

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        pass
