"""Python source for a :class:`~portagrad.fx.Graph`: the ``forward`` a ``GraphModule`` runs.

The text follows PyTorch's: one line per node, operators written as operators (``add = x + y``),
the namespace's functions as ``torch.exp(...)`` (the generated code's globals bind ``torch`` to
the portagrad package), and each value released (``x = None``) after its last use so that
intermediate tensors are freed as early as in the graph.
"""
from __future__ import annotations

import builtins
import keyword
import math
import operator
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._dtype import dtype as _dtype_type
from .._device import device as _device_type
from ._namespaces import namespace_name
from .node import Node

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["PythonCode", "python_code", "is_identifier"]

_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
           operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
           operator.xor: "^", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
           operator.le: "<=", operator.gt: ">", operator.ge: ">="}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not "}

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_identifier(s: str) -> bool:
    """Whether ``s`` can be written as a Python name."""
    return bool(_IDENT.match(s)) and not keyword.iskeyword(s)


@dataclass
class PythonCode:
    """``Graph.python_code``'s result: the source of ``forward`` and the globals it needs."""

    src: str
    globals: dict[str, Any]


class _Globals:
    """The names the generated code reads, each bound to its object."""

    def __init__(self, taken: set[str]) -> None:
        # node names are locals of forward: a global must not share one
        self.taken = taken
        self.values: dict[str, Any] = {"inf": math.inf, "nan": math.nan, "NoneType": type(None),
                                       "device": _device_type}

    def add(self, name_hint: str, obj: Any) -> str:
        for k, v in self.values.items():
            if v is obj:
                return k
        base = re.sub(r"[^A-Za-z0-9_]", "_", name_hint) or "_global"
        if base[0].isdigit():
            base = "_" + base
        name, i = base, 0
        while name in self.values or name in self.taken or keyword.iskeyword(name) or hasattr(builtins, name):
            i += 1
            name = f"{base}_{i}"
        self.values[name] = obj
        return name


def _function_expr(fn: Any, g: _Globals) -> str:
    qual = namespace_name(fn)
    if qual is not None:
        return qual  # "torch" is always bound (python_code)
    fname = getattr(fn, "__name__", "")
    if fname and getattr(builtins, fname, None) is fn:
        return str(fname)
    if fname and getattr(operator, fname, None) is fn:
        g.values["operator"] = operator
        return f"operator.{fname}"
    return g.add(getattr(fn, "__name__", "_fn"), fn)


def _arg_expr(a: Any, g: _Globals) -> str:
    if isinstance(a, Node):
        return a.name
    if isinstance(a, tuple):
        inner = ", ".join(_arg_expr(e, g) for e in a)
        if hasattr(a, "_fields"):  # a named tuple is rebuilt by its class
            return f"{g.add(type(a).__name__, type(a))}({inner})"
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_arg_expr(e, g) for e in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_arg_expr(v, g)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({_arg_expr(a.start, g)}, {_arg_expr(a.stop, g)}, {_arg_expr(a.step, g)})"
    if a is None or isinstance(a, (bool, int, str, complex)) or a is Ellipsis:
        return repr(a)
    if isinstance(a, float):
        return repr(a)  # inf and nan are bound in the globals
    if isinstance(a, _dtype_type):
        return "torch." + str(a).rsplit(".", 1)[-1]
    if isinstance(a, _device_type):
        return repr(a)
    if isinstance(a, type) or callable(a):
        return g.add(getattr(a, "__name__", "_fn"), a)
    # any other constant travels as a global of the code, by identity
    return g.add("_" + type(a).__name__.lower(), a)


def _call_args(args: tuple[Any, ...], kwargs: dict[str, Any], g: _Globals) -> str:
    parts = [_arg_expr(a, g) for a in args]
    parts += [f"{k} = {_arg_expr(v, g)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _attr_path(root: str, target: str) -> str:
    expr = root
    for part in target.split("."):
        expr = f"{expr}.{part}" if is_identifier(part) else f'getattr({expr}, "{part}")'
    return expr


def _node_expr(n: Node, root: str, g: _Globals) -> str:
    if n.op == "get_attr":
        return _attr_path(root, n.target)
    if n.op == "call_module":
        return f"{_attr_path(root, n.target)}({_call_args(n.args, n.kwargs, g)})"
    if n.op == "call_method":
        recv, *rest = n.args
        return f"{_arg_expr(recv, g)}.{n.target}({_call_args(tuple(rest), n.kwargs, g)})"
    # call_function
    fn, args = n.target, n.args
    if not n.kwargs:
        if fn in _BINARY and len(args) == 2:
            return f"{_arg_expr(args[0], g)} {_BINARY[fn]} {_arg_expr(args[1], g)}"
        if fn in _UNARY and len(args) == 1:
            return f"{_UNARY[fn]}{_arg_expr(args[0], g)}"
        if fn is operator.getitem and len(args) == 2:
            return f"{_arg_expr(args[0], g)}[{_arg_expr(args[1], g)}]"
        if fn is builtins.getattr and len(args) == 2 and isinstance(args[1], str) and \
                is_identifier(args[1]):
            return f"{_arg_expr(args[0], g)}.{args[1]}"
    return f"{_function_expr(fn, g)}({_call_args(args, n.kwargs, g)})"


def python_code(graph: Graph, root_module: str = "self") -> PythonCode:
    """The source of ``def forward(self, <placeholders>)`` computing ``graph``."""
    nodes = list(graph.nodes)
    g = _Globals({n.name for n in nodes})
    g.values["torch"] = sys.modules["portagrad"]
    # the last node reading each value: after it, the value is released
    last_use: dict[Node, Node] = {}
    for n in nodes:
        for inp in n.all_input_nodes:
            last_use[inp] = n
    release: dict[Node, list[Node]] = {}
    for v, user in last_use.items():
        release.setdefault(user, []).append(v)
    params: list[str] = []
    body: list[str] = []
    for n in nodes:
        if n.op == "placeholder":
            name = n.target
            if name.startswith("*"):
                params.append(name[:name.count("*")] + n.name)
            elif n.args:
                params.append(f"{n.name} = {_arg_expr(n.args[0], g)}")
            else:
                params.append(n.name)
            continue
        if n.op == "output":
            body.append(f"return {_arg_expr(n.args[0], g)}")
            continue
        line = f"{n.name} = {_node_expr(n, root_module, g)}"
        freed = [v.name for v in release.get(n, []) if v.op != "output"]
        if not n.users:
            freed.append(n.name)
        if freed:
            line += ";  " + " = ".join(freed) + " = None"
        body.append(line)
    if not body:
        body.append("pass")
    src = (f"\n\n\ndef forward({', '.join([root_module] + params)}):\n" +
           "".join(f"    {line}\n" for line in body) + "    ")
    return PythonCode(src=src, globals=g.values)
