"""``torch.fx``'s names, for code that declares things for FX at import.

FX traces a module's Python code into a graph by running it on proxies; portagrad has no FX
tracer. What libraries do at import works: :func:`wrap` (declaring a function a leaf of future
traces) returns what it is given, as in PyTorch, and :class:`Tracer` can be subclassed (as
torchvision's feature extraction does). Everything that would trace or build a graph,
:func:`symbolic_trace`, ``Tracer.trace``, and constructing a :class:`Graph`, :class:`GraphModule`,
:class:`Node`, :class:`Proxy` or :class:`Interpreter`, raises ``NotImplementedError``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..nn.modules.container import Sequential
from ..nn.modules.module import Module

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "Proxy", "Tracer", "Transformer",
           "symbolic_trace", "wrap"]

F = TypeVar("F", bound=Callable[..., Any])

_WHY = "portagrad has no FX tracer (torch.fx graphs cannot be built)"


def wrap(fn_or_name: Any) -> Any:
    """Declare a function (or the name of a module-level function) a leaf for symbolic tracing;
    returns its argument. There is no tracer here to use the declaration."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise NotImplementedError(f"Unsupported type for global function! {type(fn_or_name)}")
    return fn_or_name


def symbolic_trace(root: Any, concrete_args: dict[str, Any] | None = None) -> Any:
    """``torch.fx.symbolic_trace``: raises ``NotImplementedError`` (no FX tracer)."""
    raise NotImplementedError(f"torch.fx.symbolic_trace: {_WHY}")


class _Unavailable:
    """A class of the FX graph machinery: importable and subclassable, not constructible."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"torch.fx.{type(self).__name__}: {_WHY}")


class Tracer:
    """``torch.fx.Tracer``: subclassable (its hooks ``is_leaf_module``, ``call_module`` ...
    may be overridden at import); :meth:`trace` raises ``NotImplementedError``."""

    def __init__(self, autowrap_modules: tuple[Any, ...] = (), autowrap_functions: tuple[
            Callable[..., Any], ...] = (), param_shapes_constant: bool = False) -> None:
        self.autowrap_modules = autowrap_modules
        self.autowrap_functions = autowrap_functions
        self.param_shapes_constant = param_shapes_constant

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """PyTorch's rule: modules of ``torch.nn`` (here ``portagrad.nn``) other than
        ``Sequential`` are leaves."""
        mod = type(m).__module__
        return ((mod.startswith("torch.nn") or mod.startswith("portagrad.nn"))
                and not isinstance(m, Sequential))

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError(f"torch.fx.Tracer.trace: {_WHY}")


class Graph(_Unavailable):
    """``torch.fx.Graph`` (not constructible here)."""


class Node(_Unavailable):
    """``torch.fx.Node`` (not constructible here)."""


class Proxy(_Unavailable):
    """``torch.fx.Proxy`` (not constructible here)."""


class Interpreter(_Unavailable):
    """``torch.fx.Interpreter`` (not constructible here)."""


class Transformer(Interpreter):
    """``torch.fx.Transformer`` (not constructible here)."""


class GraphModule(Module):
    """``torch.fx.GraphModule``: an ``nn.Module`` subclass for ``isinstance`` checks; building
    one needs a graph, so construction raises ``NotImplementedError``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"torch.fx.GraphModule: {_WHY}")
