"""``torch.fx.GraphModule``: an ``nn.Module`` whose ``forward`` is Python generated from a
:class:`~portagrad.fx.Graph`, owning the submodules and attributes the graph reads."""
from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any

from .._tensor import Tensor
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph import Graph

__all__ = ["GraphModule"]

_counter = itertools.count()


def _get_path(root: Any, target: str) -> Any:
    obj = root
    for part in target.split("."):
        if not hasattr(obj, part):
            raise AttributeError(f"Node target {target}: {type(obj).__name__} has no attribute "
                                 f"'{part}'")
        obj = getattr(obj, part)
    return obj


def _assign(to: Module, target: str, value: Any) -> None:
    """Put ``value`` at ``to.<target>``, making plain modules for missing intermediate parts;
    tensors that are not parameters become buffers (so ``state_dict`` carries them)."""
    *path, field = target.split(".")
    mod = to
    for part in path:
        nxt = getattr(mod, part, None)
        if nxt is None:
            nxt = Module()
            mod.add_module(part, nxt)
        mod = nxt
    if isinstance(value, Tensor) and not isinstance(value, Parameter) and \
            isinstance(mod, Module) and field not in vars(mod):
        mod.register_buffer(field, value)
    else:
        setattr(mod, field, value)


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Copy ``from_module.<target>`` to the same path of ``to_module`` (PyTorch's helper, which
    subclasses of GraphModule building their own graphs use)."""
    _assign(to_module, target, _get_path(from_module, target))


class GraphModule(Module):
    """``GraphModule(root, graph, class_name='GraphModule')``: a module computing ``graph``.

    ``root`` is a module (submodules and attributes that the graph's ``call_module`` and
    ``get_attr`` nodes name are taken from it, shared, not copied) or a dict from qualified names
    to those objects. :attr:`code` is the generated ``forward``; after editing :attr:`graph`,
    call :meth:`recompile`."""

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        # each instance gets its own class, so that recompile() can set forward on it (as in
        # PyTorch, where a module's class and not its instance holds forward)
        base = cls
        while base.__dict__.get("_fx_impl", False):
            base = base.__bases__[0]
        impl = type("GraphModuleImpl", (base,), {"_fx_impl": True, "__module__": base.__module__})
        return super().__new__(impl)

    def __init__(self, root: Module | dict[str, Any], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _assign(self, node.target, _get_path(root, node.target))
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    _assign(self, node.target, root[node.target])
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta: dict[str, Any] = {}
        self.graph = graph

    @property
    def graph(self) -> Graph:
        """The graph; assigning one recompiles ``forward``."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph must be a Graph, not {type(g).__name__}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated ``forward``."""
        return self._code

    def recompile(self) -> Any:
        """Regenerate ``forward`` from :attr:`graph` (after editing it)."""
        python = self._graph.python_code(root_module="self")
        self._code = python.src
        # a named source registered with linecache, so tracebacks through forward show the line
        filename = f"<eval_with_key>.{next(_counter)}"
        linecache.cache[filename] = (len(self._code), None, self._code.splitlines(True),
                                     filename)
        namespace = dict(python.globals)
        exec(compile(self._code, filename, "exec"), namespace)
        type(self).forward = namespace["forward"]
        return python

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at qualified name ``target``, making plain modules for missing
        parents; False if a parent on the path is not a module."""
        *path, field = target.split(".")
        mod: Module = self
        for part in path:
            nxt = getattr(mod, part, None)
            if nxt is None:
                nxt = Module()
                mod.add_module(part, nxt)
            if not isinstance(nxt, Module):
                return False
            mod = nxt
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False if there is none."""
        *path, field = target.split(".")
        mod: Any = self
        for part in path:
            mod = getattr(mod, part, None)
            if not isinstance(mod, Module):
                return False
        if not isinstance(getattr(mod, field, None), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule no ``call_module`` or ``get_attr`` node reaches (a used
        module keeps its parents)."""
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if node.op == "call_module":
                    # a called module uses everything inside it
                    sub = _get_path(self, node.target)
                    used.update(f"{node.target}.{n}" for n, _ in sub.named_modules() if n)
        for name, _ in sorted(self.named_modules(), key=lambda nm: -nm[0].count(".")):
            if name and name not in used:
                self.delete_submodule(name)

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The module as a class definition (its ``forward`` the generated code), printed
        unless ``print_output`` is false; returned."""
        name = type(self).__name__
        body = self._code.strip("\n").rstrip()
        lines = [f"class {name}(torch.nn.Module):"]
        lines += ["    " + ln if ln else ln for ln in body.splitlines()]
        out = "\n".join(lines) + "\n"
        if print_output:
            print(out)
        return out

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use "
                          "`graph_module.print_readable()`"])

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph, type(self).__name__)
        res.meta = dict(getattr(self, "meta", {}))
        return res

    def __deepcopy__(self, memo: dict[int, Any]) -> GraphModule:
        holder = Module()
        memo[id(self)] = holder
        state = {k: v for k, v in self.__dict__.items() if k != "_graph"}
        holder.__dict__ = copy.deepcopy(state, memo)
        new_graph = Graph()
        out = new_graph.graph_copy(self.graph, {}, return_output_node=True)
        if out is not None:
            new_graph.output(out[0], out[1].type)
        return GraphModule(holder, new_graph, type(self).__name__)

    def __reduce__(self) -> tuple[Any, ...]:
        # the class is made per instance and cannot be found by name: rebuild from the module's
        # state and the graph (forward is generated again)
        state = {k: v for k, v in self.__dict__.items() if k != "_graph"}
        return (_rebuild, (state, self._graph, type(self).__name__))

    def to_folder(self, folder: str, module_name: str = "FxModule") -> None:
        """Not provided: PyTorch writes the module's code and weights as an importable
        package; use ``state_dict`` with :attr:`code` instead."""
        raise NotImplementedError("GraphModule.to_folder is not implemented in portagrad")


def _rebuild(state: dict[str, Any], graph: Graph, class_name: str) -> GraphModule:
    """Unpickle a :class:`GraphModule`."""
    holder = Module()
    holder.__dict__.update(state)
    gm = GraphModule(holder, graph, class_name)
    gm.training = holder.training
    gm.meta = state.get("meta", {})
    return gm
