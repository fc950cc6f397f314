"""``torch.fx.Proxy``: the stand-in value a symbolic trace runs the program on. Every operation
on a proxy (an operator, a method call, an attribute read, a call of a namespace function with
it as an argument) records a node in the tracer's graph and returns the proxy of that node."""
from __future__ import annotations

import dis
import inspect
import operator
from collections.abc import Iterator
from typing import Any

from .node import Node

__all__ = ["Proxy", "Attribute", "TraceError", "TracerBase", "GraphAppendingTracer"]


class TraceError(ValueError):
    """A program cannot be traced: a proxy was used where a concrete value is needed (as a
    condition of control flow, iterated where its length is unknown)."""


class Proxy:
    """The traced value of node ``node``; ``tracer`` records what is done with it (by default a
    tracer that appends to the node's graph)."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        # a method call (x.relu()) or an attribute (x.shape); the node is made on first use
        if k.startswith("_"):
            # protocol probes (copy, pickle, numpy) and portagrad's private duck-typing hooks
            # (getattr(x, "_sparse_mm", None)) must find nothing, not record a node
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        # `a, b = proxy` is traceable: the caller's next instruction says how many values
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None:
            for inst in dis.get_instructions(caller.f_code):
                # the instruction asking for the iterator: UNPACK_SEQUENCE knows the count
                if inst.offset == caller.f_lasti:
                    if inst.opname == "UNPACK_SEQUENCE":
                        return iter([operator.getitem(self, i) for i in range(inst.argval)])
                    break
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at module "
                           "scope")

    def __index__(self) -> int:
        raise TraceError("symbolically traced variables cannot be used as an index or size "
                         "(a concrete integer is needed here)")

    def keys(self) -> Any:
        return self.tracer.keys(self)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class Attribute(Proxy):
    """``proxy.name``: a method when called (a ``call_method`` node), else a ``getattr``
    node, made when the value is first used."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _binary(op: Any) -> tuple[Any, Any]:
    def fwd(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self, other), {})

    def rev(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (other, self), {})
    return fwd, rev


def _unary(op: Any) -> Any:
    def impl(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self,), {})
    return impl


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift",
              "rshift", "and_", "or_", "xor"):
    _op = getattr(operator, _name)
    _f, _r = _binary(_op)
    _dunder = _name.rstrip("_")
    setattr(Proxy, f"__{_dunder}__", _f)
    setattr(Proxy, f"__r{_dunder}__", _r)
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "getitem"):
    setattr(Proxy, f"__{_name}__", _binary(getattr(operator, _name))[0])
for _name in ("neg", "pos", "invert", "abs"):
    setattr(Proxy, f"__{_name}__", _unary(getattr(operator, _name)))
# comparisons record nodes, so proxies keep identity hashing
Proxy.__hash__ = object.__hash__  # type: ignore[method-assign]


class TracerBase:
    """What a :class:`Proxy` records into: ``graph``, and the hooks that turn a call on proxies
    into a node (:meth:`create_proxy`, :meth:`create_arg`) and that decide what happens when a
    proxy is asked for a concrete value (:meth:`to_bool`, :meth:`iter`, :meth:`keys`)."""

    graph: Any

    def create_node(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    name: str | None = None, type_expr: Any = None) -> Node:
        """Insert a node into the graph (a hook: tracers may annotate or redirect it)."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        """The proxy of ``node``."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple[Any, ...],
                     kwargs: dict[str, Any], name: str | None = None,
                     type_expr: Any = None) -> Proxy:
        """Record ``kind(target, *args, **kwargs)`` and return its proxy."""
        a = self.create_arg(args)
        k = self.create_arg(kwargs)
        if not isinstance(a, tuple) or not isinstance(k, dict):
            raise TypeError("create_proxy: args must be a tuple and kwargs a dict")
        return self.proxy(self.create_node(kind, target, a, k, name, type_expr))

    def create_arg(self, a: Any) -> Any:
        """An argument as the graph stores it: proxies become their nodes, containers (tuples,
        lists, dicts, slices) are rebuilt through this hook, other values stay as they are."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple):
            t = tuple(self.create_arg(e) for e in a)
            return type(a)(*t) if hasattr(a, "_fields") else t
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        return a

    def to_bool(self, obj: Proxy) -> bool:
        """``bool(proxy)``: a traced value cannot steer control flow."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator[Proxy]:
        """``iter(proxy)`` where the number of values is not known."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument. See the "
                         "torch.fx docs on pytorch.org for a more detailed explanation of what "
                         "types of control flow can be traced, and check out the Proxy docstring "
                         "for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Any:
        """``proxy.keys()`` (``**proxy``): recorded as a method call."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """The tracer of a free-standing :class:`Proxy`: appends each operation to ``graph``."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
