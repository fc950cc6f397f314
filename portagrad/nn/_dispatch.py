"""The helpers ``torch.nn.functional`` exports for code written against it: ``boolean_dispatch``
(one public function choosing between two implementations by a boolean argument, as
``max_pool2d`` does with ``return_indices``), ``assert_int_or_pair``, and the
``__torch_function__`` protocol checks re-exported from :mod:`portagrad.overrides`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..overrides import (handle_torch_function, has_torch_function, has_torch_function_unary,
                         has_torch_function_variadic)

__all__ = ["boolean_dispatch", "assert_int_or_pair", "boolean_dispatched",
           "handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic"]

#: the functions :func:`boolean_dispatch` made, with what they choose between (PyTorch keeps this
#: table for its script compiler; here it lets code introspect the choice)
boolean_dispatched: dict[Callable[..., Any], dict[str, Any]] = {}


def boolean_dispatch(arg_name: str, arg_index: int, default: bool,
                     if_true: Callable[..., Any], if_false: Callable[..., Any],
                     module_name: str | None, func_name: str | None) -> Callable[..., Any]:
    """A function that calls ``if_true`` or ``if_false`` with its arguments, by the value of the
    argument named ``arg_name`` (keyword) or at position ``arg_index``, ``default`` when
    neither is given. It takes the docstring of whichever of the two has one (both having one
    is a ``RuntimeError``)."""
    def fn(*args: Any, **kwargs: Any) -> Any:
        flag = default
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if if_true.__doc__ is not None and if_false.__doc__ is not None:
        raise RuntimeError("only one function can have a docstring")
    doc = if_true.__doc__ if if_true.__doc__ is not None else if_false.__doc__
    if doc is not None:
        # both branches document the public function
        if_true.__doc__ = if_false.__doc__ = doc
    fn.__doc__ = doc
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = fn.__qualname__ = func_name
    boolean_dispatched[fn] = {"if_true": if_true, "if_false": if_false, "index": arg_index,
                              "default": default, "arg_name": arg_name}
    return fn


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    """Raise ``AssertionError(message.format(arg_name))`` unless ``arg`` is an int or has two
    elements."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
