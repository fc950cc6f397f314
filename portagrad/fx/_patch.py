"""Attribute patches that hold only while a trace runs, undone in reverse order after it."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .proxy import Proxy

__all__ = ["Patcher", "TracedFunction", "find_proxy", "traced_function"]


def find_proxy(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Proxy | None:
    """The first proxy inside the (nested) arguments, or None."""
    stack: list[Any] = [args, kwargs]
    while stack:
        a = stack.pop()
        if isinstance(a, Proxy):
            return a
        if isinstance(a, (tuple, list)):
            stack.extend(reversed(a))
        elif isinstance(a, dict):
            stack.extend(reversed(list(a.values())))
        elif isinstance(a, slice):
            stack.extend((a.step, a.stop, a.start))
    return None


class TracedFunction:
    """``orig``, except that a call with a proxy among its arguments records a
    ``call_function`` node of ``orig`` instead of running it.

    It stands in for ``orig`` in a namespace while a trace (or a ``Transformer``) runs, so code
    running then that compares a node's target with the namespace's function
    (``node.target == torch.add``, or a dict lookup) must still match: it compares and hashes
    equal to ``orig`` (an ``is`` test cannot be made to)."""

    def __init__(self, orig: Callable[..., Any]) -> None:
        orig = getattr(orig, "__fx_original__", orig)  # never a stand-in for a stand-in
        self.__fx_original__ = orig
        functools.update_wrapper(self, orig)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        p = find_proxy(args, kwargs)
        if p is None:
            return self.__fx_original__(*args, **kwargs)
        return p.tracer.create_proxy("call_function", self.__fx_original__, args, kwargs)

    def __eq__(self, other: object) -> bool:
        return getattr(other, "__fx_original__", other) is self.__fx_original__

    def __hash__(self) -> int:
        return hash(self.__fx_original__)

    def __repr__(self) -> str:
        return repr(self.__fx_original__)


def traced_function(orig: Callable[..., Any]) -> TracedFunction:
    """The stand-in of ``orig`` while tracing (:class:`TracedFunction`)."""
    return TracedFunction(orig)


class Patcher:
    """Context manager collecting ``setattr`` / dict patches; leaving undoes them all."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def __enter__(self) -> Patcher:
        return self

    def __exit__(self, *exc: object) -> None:
        while self._undo:
            self._undo.pop()()

    def patch_attr(self, obj: Any, name: str, value: Any) -> None:
        """Set ``obj.name = value`` until the patcher exits."""
        missing = name not in vars(obj)
        old = vars(obj).get(name)
        setattr(obj, name, value)
        if missing:
            self._undo.append(lambda: delattr(obj, name))
        else:
            self._undo.append(lambda: setattr(obj, name, old))

    def patch_dict(self, d: dict[str, Any], name: str, value: Any) -> None:
        """Set ``d[name] = value`` until the patcher exits."""
        missing = name not in d
        old = d.get(name)
        d[name] = value

        def undo() -> None:
            if missing:
                d.pop(name, None)
            else:
                d[name] = old
        self._undo.append(undo)
