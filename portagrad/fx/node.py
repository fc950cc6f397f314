"""``torch.fx.Node``: one operation of a :class:`~portagrad.fx.Graph`, and the helpers that walk
the nested arguments (tuples, lists, dicts, slices) a node's ``args`` and ``kwargs`` hold."""
from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._namespaces import namespace_name

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["Node", "Target", "Argument", "map_arg", "map_aggregate"]

Target = Any  # a callable (call_function), a method name or a qualified attribute name (str)
Argument = Any  # a Node, a base value, or tuples / lists / dicts / slices of them

#: The node kinds, as PyTorch names them.
OPCODES = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output",
           "root")


def map_aggregate(a: Argument, fn: Callable[[Any], Any]) -> Argument:
    """Apply ``fn`` to every leaf of the nested structure ``a``, keeping its containers
    (tuples, named tuples, lists, dicts and slices)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        # a named tuple is rebuilt from fields, a plain tuple from the sequence
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every :class:`Node` inside the nested structure ``a``."""
    if not callable(fn):
        raise TypeError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _snake_case(s: str) -> str:
    # "MyModule" -> "my_module", as PyTorch derives node names from class names
    chars = []
    for i, c in enumerate(s):
        if c.isupper() and i > 0 and (s[i - 1].islower() or s[i - 1].isdigit()):
            chars.append("_")
        chars.append(c.lower())
    return "".join(chars)


def _qualified_name(fn: Any) -> str:
    """How a function target is written in the graph's text and code: ``torch.exp`` for the
    namespace's functions (see :mod:`.codegen`), ``operator.add``, ``module.name`` otherwise."""
    name = namespace_name(fn)
    if name is not None:
        return name
    fname = getattr(fn, "__name__", "")
    if fname and getattr(operator, fname, None) is fn:
        return f"operator.{fname}"
    if fname and getattr(builtins, fname, None) is fn:
        return f"builtins.{fname}"
    mod = getattr(fn, "__module__", None) or "<unknown>"
    return f"{mod}.{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"


def _format_arg(a: Any) -> str:
    if isinstance(a, Node):
        return "%" + a.name
    if isinstance(a, tuple):
        inner = ", ".join(_format_arg(e) for e in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_format_arg(e) for e in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in a.items()) + "}"
    return str(a)


class Node:
    """One operation of a graph: ``op`` (one of ``placeholder``, ``get_attr``,
    ``call_function``, ``call_method``, ``call_module``, ``output``), its ``target``, its
    ``args`` and ``kwargs`` (which may hold other nodes), and the nodes that use it
    (``users``). Nodes are made by a :class:`Graph`'s builders, not directly."""

    def __init__(self, graph: Graph, name: str, op: str, target: Target,
                 args: tuple[Argument, ...], kwargs: dict[str, Argument],
                 return_type: Any = None) -> None:
        if op not in OPCODES:
            raise ValueError(f"Node: unknown op {op!r} (one of {', '.join(OPCODES[:-1])})")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr") and \
                not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        #: nodes this one reads, in order, each once
        self._input_nodes: dict[Node, None] = {}
        #: nodes reading this one (a dict used as an ordered set)
        self.users: dict[Node, None] = {}
        self.type = return_type
        self.meta: dict[str, Any] = {}
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        self._args: tuple[Argument, ...] = ()
        self._kwargs: dict[str, Argument] = {}
        self._update_args_kwargs(args, kwargs)

    # ------------------------------------------------------------ neighbours
    @property
    def next(self) -> Node:
        """The node after this one in the graph."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one in the graph."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move ``x`` to just before this node."""
        if x is self:
            raise RuntimeError("Node.prepend: cannot prepend a node to itself")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x: Node) -> None:
        """Move ``x`` to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        # the node keeps its own links, so an iteration standing on it can still move on
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # ------------------------------------------------------------ arguments and uses
    @property
    def args(self) -> tuple[Argument, ...]:
        """The positional arguments; assigning updates the use lists."""
        return self._args

    @args.setter
    def args(self, a: tuple[Argument, ...]) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict[str, Argument]:
        """The keyword arguments; assigning updates the use lists."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict[str, Argument]) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes this one reads, in order of first appearance."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, args: tuple[Argument, ...], kwargs: dict[str, Argument]) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}

        def collect(n: Node) -> Node:
            if n.graph is not self.graph:
                raise RuntimeError(f"Node {self.name} takes {n.name} from another graph")
            self._input_nodes.setdefault(n)
            return n

        self._args = tuple(map_arg(tuple(args), collect))
        self._kwargs = dict(map_arg(dict(kwargs), collect))
        for n in self._input_nodes:
            n.users.setdefault(self)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Replace positional argument ``idx``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Replace (or add) keyword argument ``key``."""
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Make this node read ``new_input`` wherever it read ``old_input``."""
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node (for which ``delete_user_cb`` is true) read
        ``replace_with`` instead; returns the users changed."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for u in changed:
            u.replace_input_with(self, replace_with)
        return changed

    def is_impure(self) -> bool:
        """Whether removing this node could change behaviour even if nothing uses its value:
        placeholders, outputs, and calls to functions that are known to have side effects."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _SIDE_EFFECTS
        if self.op == "call_method":
            # in-place tensor methods (add_, copy_ ...) mutate their receiver
            return isinstance(self.target, str) and self.target.endswith("_") and \
                not self.target.endswith("__")
        return False

    # ------------------------------------------------------------ text
    def format_node(self, placeholder_names: list[str] | None = None,
                    maybe_return_typename: list[str] | None = None) -> str:
        """The node as a line of :meth:`Graph.__str__`."""
        if self.op == "placeholder":
            default = ""
            if self.args:
                default = f"(default={self.args[0]})"
            return (f"%{self.name} : [num_users={len(self.users)}] = "
                    f"placeholder[target={self.target}]{default}")
        if self.op == "get_attr":
            return (f"%{self.name} : [num_users={len(self.users)}] = "
                    f"get_attr[target={self.target}]")
        if self.op == "output":
            return f"return {_format_arg(self.args[0]).replace('%', '')}"
        target = _qualified_name(self.target) if self.op == "call_function" else self.target
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target}]"
                f"(args = {_format_arg(self._args)}, kwargs = {_format_arg(self._kwargs)})")

    def __repr__(self) -> str:
        return self.name


# functions whose calls dead-code elimination keeps even when their value is unused
_SIDE_EFFECTS: set[Any] = {builtins.print, operator.setitem, operator.iadd, operator.isub,
                           operator.imul, operator.itruediv}

