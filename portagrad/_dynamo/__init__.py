"""``torch._dynamo``: the names libraries use from PyTorch's graph capturer, for an eager library.

portagrad captures no Python frames (:func:`portagrad.compile` returns the model to run eagerly),
so code never runs "while compiling": :func:`is_compiling` is ``False``, the decorators that steer
the capturer (:func:`disable`, :func:`allow_in_graph`, :func:`assume_constant_result`) return
what they decorate, the shape hints (:func:`mark_dynamic` ...) change nothing, and :func:`reset`
has no caches to clear. :mod:`config` holds the settings with PyTorch's defaults and
:class:`eval_frame.OptimizedModule` is the wrapper class (see there why ``compile`` does not
return one).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .._compile import list_backends
from .._tensor import Tensor
from . import config, eval_frame, exc, utils
from .eval_frame import OptimizedModule

__all__ = ["OptimizedModule", "allow_in_graph", "assume_constant_result", "config", "disable",
           "eval_frame", "exc", "is_compiling", "list_backends", "mark_dynamic", "mark_static",
           "mark_static_address", "maybe_mark_dynamic", "reset", "utils"]

F = TypeVar("F", bound=Callable[..., Any])


def is_compiling() -> bool:
    """``False``: no code runs under a graph capturer in portagrad."""
    return False


def disable(fn: Any = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Exclude ``fn`` from compilation: it runs eagerly, as everything does here, so ``fn`` is
    returned itself. Usable as ``disable(fn)``, ``@disable`` and ``@disable(recursive=False)``."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    if not callable(fn):
        raise TypeError(f"disable(): expected a callable, got {type(fn).__name__}")
    return fn


def allow_in_graph(fn: F) -> F:
    """Let the capturer put ``fn`` into a graph as one call; eagerly, ``fn`` itself."""
    if not callable(fn) and not isinstance(fn, (list, tuple)):
        raise TypeError("allow_in_graph expects a callable")
    return fn


def assume_constant_result(fn: F) -> F:
    """Let the capturer treat ``fn``'s result as constant; eagerly, ``fn`` itself."""
    return fn


def _check_tensor(t: Any, fn: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}(): expected a Tensor, got {type(t).__name__}")


def mark_dynamic(t: Tensor, index: int | list[int], *, min: int | None = None,
                 max: int | None = None, **kwargs: Any) -> None:
    """Hint that dimension ``index`` of ``t`` varies between calls; nothing is specialised on
    shapes here, so nothing changes."""
    _check_tensor(t, "mark_dynamic")


def maybe_mark_dynamic(t: Tensor, index: int | list[int]) -> None:
    """As :func:`mark_dynamic`, a hint that changes nothing here."""
    _check_tensor(t, "maybe_mark_dynamic")


def mark_static(t: Any, index: int | list[int] | None = None) -> None:
    """Hint that a dimension (or a module) is static; changes nothing here."""


def mark_static_address(t: Any, guard: bool = True) -> None:
    """Hint that ``t``'s memory stays where it is between calls (for captured graphs); nothing
    is specialised on addresses here, so nothing changes."""
    _check_tensor(t, "mark_static_address")


def reset() -> None:
    """Clear the capturer's caches and compiled code: portagrad keeps none."""
