"""``torch.fx``: symbolic tracing of modules and functions into graphs, and graphs back into
modules.

:func:`symbolic_trace` runs a module's ``forward`` (or a function) on :class:`Proxy` values and
records each operation as a :class:`Node` of a :class:`Graph` (``placeholder``, ``get_attr``,
``call_function``, ``call_method``, ``call_module``, ``output``); modules of ``portagrad.nn``
(``torch.nn`` under ``python -m portagrad.compat``) other than ``Sequential`` are called as one
node (:meth:`Tracer.is_leaf_module`), and functions declared with :func:`wrap` too. The result is
a :class:`GraphModule`: an ``nn.Module`` whose ``forward`` is Python generated from the graph
(:attr:`GraphModule.code`), which can be edited and :meth:`~GraphModule.recompile`-d.
:class:`Interpreter` runs a graph node by node, :class:`Transformer` rewrites one.

Differences from PyTorch: calls such as ``torch.exp(proxy)`` are recorded because the tracer
patches the ``torch`` / ``nn.functional`` / ``special`` / ``linalg`` / ``fft`` namespaces while a
trace runs (portagrad has no ``__torch_function__`` dispatch, and checking every call for proxies
would slow every op); a function imported by name into another module than the traced code's is
therefore not seen (declare it with :func:`wrap`), and a free-standing :class:`Proxy` used
outside a trace records operators, methods and attributes but not namespace calls. Generated
code names the portagrad namespace ``torch``, as PyTorch prints it. ``GraphModule.to_folder`` is
not provided.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..nn.modules.module import Module
from . import passes, subgraph_rewriter
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy, TraceError
from .subgraph_rewriter import replace_pattern
from .tracer import PH, Tracer, wrap

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "PH", "Proxy", "TraceError", "Tracer",
           "Transformer", "map_arg", "passes", "replace_pattern", "subgraph_rewriter",
           "symbolic_trace", "wrap"]


def symbolic_trace(root: Module | Callable[..., Any],
                   concrete_args: dict[str, Any] | None = None) -> GraphModule:
    """Trace ``root`` (a module or a function) into a :class:`GraphModule`.

    ``concrete_args`` fixes some inputs to values, specializing the trace (for example a flag
    that steers control flow); the generated ``forward`` checks that such an input still has
    that value. Control flow on traced values raises :class:`TraceError`.
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
