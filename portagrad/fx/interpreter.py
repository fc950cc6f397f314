"""``torch.fx.Interpreter`` (run a graph node by node, each kind of node a method to override)
and ``torch.fx.Transformer`` (run it on proxies to build a new, transformed graph)."""
from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from ..nn.modules.module import Module
from ._namespaces import namespace_functions, namespace_name
from ._patch import Patcher, traced_function
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_arg
from .proxy import Proxy
from .tracer import Tracer

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs ``module``'s graph (or ``graph``) node by node: :meth:`run` calls :meth:`run_node`,
    which calls the method named by the node's op (:meth:`placeholder`, :meth:`get_attr`,
    :meth:`call_function`, :meth:`call_method`, :meth:`call_module`, :meth:`output`) with
    the node's target and its arguments' values. Override those to change what runs. Values are
    dropped after their last use unless ``garbage_collect_values`` is false."""

    def __init__(self, module: Module, garbage_collect_values: bool = True,
                 graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        if graph is None:
            graph = module.graph  # type: ignore[assignment]
            if not isinstance(graph, Graph):
                raise TypeError("Interpreter: module has no graph; pass graph=")
        self.graph = graph
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        if garbage_collect_values:
            last: dict[Node, Node] = {}
            for node in self.graph.nodes:
                for inp in node.all_input_nodes:
                    last[inp] = node
            for v, user in last.items():
                self.user_to_last_uses.setdefault(user, []).append(v)
        self.args_iter: Iterator[Any] = iter(())

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None,
            enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args``; returns what its output node returns."""
        self.env = dict(initial_env) if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue  # given in initial_env
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                # say which node failed (Python 3.11+ shows notes under the traceback)
                if hasattr(e, "add_note") and not getattr(e, "_fx_noted", False):
                    e.add_note(f"While executing {node.format_node()}")
                    e._fx_noted = True  # type: ignore[attr-defined]
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, []):
                    self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node) -> Any:
        """The value of node ``n``: its arguments fetched, then its op's method called."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ------------------------------------------------------------ one method per op
    def placeholder(self, target: Target, args: tuple[Argument, ...],
                    kwargs: dict[str, Any]) -> Any:
        """The next input (or the placeholder's default once inputs run out)."""
        if isinstance(target, str) and target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               "was not passed in!") from si

    def get_attr(self, target: Target, args: tuple[Argument, ...],
                 kwargs: dict[str, Any]) -> Any:
        """The module's attribute ``target``."""
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple[Argument, ...],
                      kwargs: dict[str, Any]) -> Any:
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple[Argument, ...],
                    kwargs: dict[str, Any]) -> Any:
        """``args[0].<target>(*args[1:], **kwargs)``."""
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: Target, args: tuple[Argument, ...],
                    kwargs: dict[str, Any]) -> Any:
        """The submodule ``target`` called on the arguments."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """The graph's result."""
        return args[0]

    # ------------------------------------------------------------ helpers
    def fetch_attr(self, target: str) -> Any:
        """The attribute at qualified name ``target`` of the module."""
        obj: Any = self.module
        for i, part in enumerate(target.split(".")):
            if not hasattr(obj, part):
                raise RuntimeError("Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, part)
        return obj

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``n``'s arguments with every node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Any:
        """``args`` with every node replaced by its value (computed earlier in :meth:`run`)."""
        def load(a: Node) -> Any:
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[a]
        return map_arg(args, load)


class _TransformerTracer(Tracer):
    """The tracer of a :class:`Transformer`: records into its new graph; every module call is
    one node."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """An :class:`Interpreter` that runs the graph on proxies, so that :meth:`transform`
    returns a new :class:`GraphModule` of what the (overridden) methods did. Inside the
    methods, namespace functions called on proxies (``torch.relu(x)``) are recorded."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module
        self.tracer._index_root()

    def placeholder(self, target: Target, args: tuple[Argument, ...],
                    kwargs: dict[str, Any]) -> Proxy:
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: Target, args: tuple[Argument, ...],
                 kwargs: dict[str, Any]) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Target, args: tuple[Argument, ...],
                      kwargs: dict[str, Any]) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: Target, args: tuple[Argument, ...],
                    kwargs: dict[str, Any]) -> Any:
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target: Target, args: tuple[Argument, ...],
                    kwargs: dict[str, Any]) -> Any:
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the transformation; returns the new module."""
        namespace_name(None)
        with Patcher() as patcher:
            for mod, attr, fn in namespace_functions():
                patcher.patch_attr(mod, attr, traced_function(fn))
            result = super().run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(self.tracer.create_arg(result))
        return GraphModule(self.module, self.new_graph)

