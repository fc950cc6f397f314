"""``torch.fx.Graph``: the nodes of a traced program, in order, with builders, editing
(insertion points, erasing, dead-code elimination), checks (``lint``) and printing."""
from __future__ import annotations

import builtins
import inspect
import keyword
import re
from collections.abc import Callable, Iterator
from typing import Any

from .codegen import PythonCode, python_code
from .node import (Argument, Node, Target, _format_arg, _qualified_name, _snake_case,
                   map_aggregate, map_arg)

__all__ = ["Graph"]

_EMPTY = inspect.Signature.empty


class _NodeRef:
    """A node argument in a pickled graph: the index of the node it names."""

    def __init__(self, index: int) -> None:
        self.index = index


class _NodeList:
    """``graph.nodes``: iterable (forwards and ``reversed``), sized; iterating survives erasing
    the current node."""

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        cur = root._prev if self._reverse else root._next
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = cur._prev if self._reverse else cur._next

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, not self._reverse))

    def __getitem__(self, i: int) -> Node:
        return list(self)[i]

    def __repr__(self) -> str:
        return repr(list(self))


class _Namespace:
    """Unique Python names for nodes, in PyTorch's style: ``add``, ``add_1``, ...; builtins and
    keywords are never used bare (``sum`` becomes ``sum_1``)."""

    _SUFFIX = re.compile(r"(.*)_(\d+)$")

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._count: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = "_" + candidate
        m = self._SUFFIX.match(candidate)
        base, num = (m.group(1), int(m.group(2))) if m else (candidate, None)
        name = candidate
        if num is None:
            num = self._count.get(base, 0)
        while name in self._used or self._illegal(name):
            num += 1
            name = f"{base}_{num}"
        self._used.add(name)
        self._count[base] = max(self._count.get(base, 0), num)
        return name

    @staticmethod
    def _illegal(name: str) -> bool:
        return keyword.iskeyword(name) or hasattr(builtins, name) or name in (
            "torch", "operator", "inf", "nan", "NoneType", "device", "self")

    def release(self, name: str) -> None:
        self._used.discard(name)


class _InsertPoint:
    def __init__(self, graph: Graph, where: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig = graph._insert
        graph._insert = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self.graph._insert = self.orig


class Graph:
    """A program as a list of :class:`Node`: placeholders (the inputs), operations, one
    ``output``. Build it with :meth:`placeholder`, :meth:`call_function`, :meth:`call_method`,
    :meth:`call_module`, :meth:`get_attr`, :meth:`output` (each inserts at the current insertion
    point, the end unless :meth:`inserting_before` / :meth:`inserting_after` say otherwise)."""

    def __init__(self, owning_module: Any = None, tracer_cls: type | None = None,
                 tracer_extras: dict[str, Any] | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._namespace = _Namespace()
        self._insert: Callable[[Node], None] = self._root.prepend
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order (a live view)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target | None = None) -> list[Node]:
        """The nodes of kind ``op`` (and ``target``, if given)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ------------------------------------------------------------ building
    def create_node(self, op: str, target: Target, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Make a node and insert it at the insertion point; ``name`` is a hint made unique."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise TypeError(f"Graph.create_node: args must be a tuple, not {type(args).__name__}")
        if not isinstance(kwargs, dict):
            raise TypeError("Graph.create_node: kwargs must be a dict, "
                            f"not {type(kwargs).__name__}")
        if op == "call_function":
            # a namespace stand-in (installed while tracing) records the function itself
            target = getattr(target, "__fx_original__", target)
        candidate = name if name is not None else self._target_to_str(op, target)
        node = Node(self, self._namespace.create_name(candidate), op, target, args, kwargs,
                    type_expr)
        self._insert(node)
        self._len += 1
        return node

    @staticmethod
    def _target_to_str(op: str, target: Target) -> str:
        if op == "output":
            return "output"
        if callable(target) and not isinstance(target, str):
            return _snake_case(getattr(target, "__name__", type(target).__name__))
        return _snake_case(str(target).lstrip("*").replace(".", "_"))

    def placeholder(self, name: str, type_expr: Any = None,
                    default_value: Any = _EMPTY) -> Node:
        """An input of the program, named ``name`` (with a default value if given)."""
        args = () if default_value is _EMPTY else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Read the attribute ``qualified_name`` (``"layer.weight"``) of the owning module."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, type_expr: Any = None) -> Node:
        """Call the submodule ``module_name`` of the owning module."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, type_expr: Any = None) -> Node:
        """Call method ``method_name`` of ``args[0]`` with the other arguments."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable[..., Any],
                      args: tuple[Argument, ...] | None = None,
                      kwargs: dict[str, Argument] | None = None, type_expr: Any = None) -> Node:
        """Call the free function ``the_function``."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """Return ``result`` from the program."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x
                  ) -> Node:
        """Copy ``node`` (of any graph) into this one, its node arguments mapped by
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        new.meta = dict(node.meta)
        return new

    def graph_copy(self, g: Graph, val_map: dict[Node, Node],
                   return_output_node: bool = False) -> Any:
        """Copy every node of ``g`` but its output into this graph, filling ``val_map`` (old
        node -> new node); returns the value ``g`` outputs, in this graph's nodes."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                out = map_arg(node.args[0], lambda n: val_map[n])
                return (out, node) if return_output_node else out
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __getstate__(self) -> dict[str, Any]:
        # the nodes as a flat list (the default would recurse along the node links); a node
        # argument is stored as the index of that node
        nodes = list(self.nodes)
        index = {n: i for i, n in enumerate(nodes)}
        specs = [(n.name, n.op, n.target, map_arg(n.args, lambda a: _NodeRef(index[a])),
                  map_arg(n.kwargs, lambda a: _NodeRef(index[a])), n.type, n.meta)
                 for n in nodes]
        return {"nodes": specs, "tracer_cls": self._tracer_cls}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(tracer_cls=state["tracer_cls"])  # type: ignore[misc]
        made: list[Node] = []

        def resolve(a: Any) -> Any:
            return made[a.index] if isinstance(a, _NodeRef) else a

        for name, op, target, args, kwargs, type_expr, meta in state["nodes"]:
            node = self.create_node(op, target, map_aggregate(args, resolve),
                                    map_aggregate(kwargs, resolve), name, type_expr)
            node.meta = meta
            made.append(node)

    def __deepcopy__(self, memo: dict[int, Any]) -> Graph:
        # node by node (the default would recurse along the node links, one frame per node)
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            g.output(out[0], out[1].type)
        memo[id(self)] = g
        return g

    # ------------------------------------------------------------ editing
    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Context manager: new nodes go just before ``n`` (default: the start)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise ValueError("Graph.inserting_before: node is not in this graph")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Context manager: new nodes go just after ``n`` (default: the end). As in PyTorch,
        each goes right after ``n``, so several made in one block end up in reverse order; to
        insert a sequence in order, use :meth:`inserting_before` the node that follows."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise ValueError("Graph.inserting_after: node is not in this graph")
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node nothing uses; ``RuntimeError`` if it still has users."""
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            raise RuntimeError(f"Node {to_erase} is already erased")
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        # drop its own uses, so its inputs may become dead in turn (its arguments keep their
        # shape, with None where a node was, as in PyTorch)
        to_erase._update_args_kwargs(map_arg(to_erase.args, lambda n: None),
                                     map_arg(to_erase.kwargs, lambda n: None))

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase every node whose value nothing uses and that has no side effect
        (:meth:`Node.is_impure`); returns whether anything changed."""
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph's invariants: ops are known, names unique, each argument is defined
        before it is used and belongs to this graph, use lists match, one output comes last,
        and (with an owning module) targets of get_attr / call_module exist."""
        seen: set[Node] = set()
        names: set[str] = set()
        nodes = list(self.nodes)
        for i, node in enumerate(nodes):
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            for arg in node.all_input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to "
                                       "this Graph, but was used as an argument!")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       "has been defined! Please check that Nodes in the graph "
                                       "are topologically ordered")
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' is missing from the users of '{arg}'")
            if node.op == "output" and i != len(nodes) - 1:
                raise RuntimeError("Graph.lint: the output node must be the last node")
            seen.add(node)
        if self.owning_module is not None:
            for node in nodes:
                if node.op in ("get_attr", "call_module"):
                    obj = self.owning_module
                    for part in node.target.split("."):
                        if not hasattr(obj, part):
                            raise RuntimeError(f"Node {node} target {node.target} references "
                                               f"nonexistent attribute {part} of {obj}")
                        obj = getattr(obj, part)

    # ------------------------------------------------------------ code and text
    def python_code(self, root_module: str = "self") -> PythonCode:
        """The ``forward`` computing this graph: ``.src`` and the ``.globals`` it reads."""
        return python_code(self, root_module)

    def __str__(self) -> str:
        lines = ["graph():"] + ["    " + n.format_node() for n in self.nodes]
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table (opcode, name, target, args, kwargs). Like PyTorch this
        uses the ``tabulate`` library, and says how to install it when it is missing."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found on "
                  "this machine. Run `pip install tabulate` to install the library.")
            raise
        rows = [[n.op, n.name, _qualified_name(n.target) if n.op == "call_function"
                 else n.target, _format_arg(n.args).replace("%", ""),
                 _format_arg(n.kwargs).replace("%", "")] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))
