"""``torch.overrides``: the ``__torch_function__`` protocol, detected but not dispatched.

In PyTorch an object whose type defines ``__torch_function__`` (a tensor-like, or a
``TorchFunctionMode`` entered as a context) takes over every ``torch.*`` call it takes part in.
portagrad's functions do not dispatch through that protocol. So the queries answer truthfully
(:func:`has_torch_function` is ``True`` when an argument other than a portagrad tensor defines
``__torch_function__``, :func:`is_tensor_like` as PyTorch), :class:`TorchFunctionMode` can be
subclassed at import, and what would hand a call over, :func:`handle_torch_function` and entering
a mode, raises ``NotImplementedError`` instead of silently not calling the override.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ._C import _disabled_torch_function_impl
from ._tensor import Tensor

__all__ = ["TorchFunctionMode", "handle_torch_function", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "is_tensor_like"]

_WHY = "portagrad does not dispatch calls through __torch_function__"


def _overrides(obj: Any) -> bool:
    # portagrad's Tensor defines no __torch_function__; a subclass or a foreign type may, and
    # the disabled implementation means "none", as in PyTorch
    impl = getattr(type(obj), "__torch_function__", None)
    return impl is not None and impl is not _disabled_torch_function_impl


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    """Whether an argument's type defines ``__torch_function__`` (a plain portagrad tensor does
    not count)."""
    return any(_overrides(a) for a in relevant_args)


def has_torch_function_unary(obj: Any) -> bool:
    """:func:`has_torch_function` for one argument."""
    return _overrides(obj)


def has_torch_function_variadic(*args: Any) -> bool:
    """:func:`has_torch_function` over the arguments."""
    return any(_overrides(a) for a in args)


def handle_torch_function(public_api: Callable[..., Any], relevant_args: Iterable[Any],
                          *args: Any, **kwargs: Any) -> Any:
    """Hand ``public_api``'s call to the arguments' ``__torch_function__``: not supported here,
    raises ``NotImplementedError``."""
    raise NotImplementedError(f"handle_torch_function({getattr(public_api, '__name__', '?')}): "
                              f"{_WHY}")


def is_tensor_like(inp: Any) -> bool:
    """Whether ``inp`` is a tensor or defines ``__torch_function__`` (as PyTorch)."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


class TorchFunctionMode:
    """``torch.overrides.TorchFunctionMode``: subclass and override ``__torch_function__``;
    entering one raises ``NotImplementedError``, since portagrad's calls would never reach it."""

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    def __enter__(self) -> TorchFunctionMode:
        raise NotImplementedError(f"{type(self).__name__}: {_WHY}, so a TorchFunctionMode "
                                  "would never be called")

    def __exit__(self, *exc: object) -> None:
        return None
