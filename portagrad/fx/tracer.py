"""``torch.fx.Tracer`` and ``symbolic_trace``: run a module's ``forward`` (or a function) on
:class:`~portagrad.fx.Proxy` inputs and record what it does as a :class:`~portagrad.fx.Graph`.

PyTorch routes calls such as ``torch.exp(proxy)`` to the tracer through ``__torch_function__``.
portagrad's functions have no such hook, and adding a check to every call would cost every op
outside tracing too. Instead, while a trace runs (and only then), the function namespaces
(``torch``, ``torch.nn.functional``, ``torch.special``, ``torch.linalg``, ``torch.fft``: here
portagrad's), ``Module.__call__`` and ``Module.__getattr__``, the functions declared with
:func:`wrap`, and the ``math`` functions and namespace functions imported by name into the traced
code's module are replaced by versions that record a node when a proxy is among their arguments
(the way PyTorch's tracer patches ``math`` and wrapped functions). Everything is restored when the
trace ends, by normal return or by an error.
"""
from __future__ import annotations

import builtins
import inspect
import math
import types
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..nn.modules.container import Sequential
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ._namespaces import namespace_functions, namespace_name
from ._patch import Patcher, traced_function
from .graph import Graph
from .node import _SIDE_EFFECTS
from .proxy import TracerBase

__all__ = ["Tracer", "PH", "wrap"]

#: (module globals, name) of each function declared with :func:`wrap`
_WRAPPED: list[tuple[dict[str, Any], str]] = []


class _PH:
    """``torch.fx.PH``: in ``concrete_args``, an input that stays a placeholder."""

    def __repr__(self) -> str:
        return "PH"


PH = _PH()


def wrap(fn_or_name: Any) -> Any:
    """Declare a module-level function (or its name) a leaf of symbolic tracing: a call with a
    proxy argument is recorded as one ``call_function`` node instead of being traced through.
    Call at the top level of the module defining (or importing) the function; returns its
    argument."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or "
                           "string name")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    if name == "<lambda>":
        raise RuntimeError("wrap(): a lambda has no module-level name to patch")
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _WRAPPED.append((caller.f_globals, name))
    return fn_or_name


def _assert_concrete(value: Any, expected: Any, name: str) -> None:
    """The check a trace with ``concrete_args`` leaves in the graph: the input must still be
    the value the trace specialized it to."""
    if value is not expected and not (type(value) is type(expected) and value == expected):
        raise AssertionError(f"{name} has been specialized to have value {expected} but got "
                             "another value")


_SIDE_EFFECTS.add(_assert_concrete)


class Tracer(TracerBase):
    """Records a program into a :class:`Graph` (:meth:`trace`). Subclass and override
    :meth:`is_leaf_module` (which modules are called as one node), :meth:`call_module`,
    :meth:`create_proxy`, :meth:`create_arg` or :meth:`getattr` to change what is recorded."""

    def __init__(self, autowrap_modules: tuple[types.ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable[..., Any], ...] = (),
                 param_shapes_constant: bool = False) -> None:
        self.autowrap_modules = autowrap_modules
        self.autowrap_functions = autowrap_functions
        self.param_shapes_constant = param_shapes_constant
        self._autowrap_ids = {id(v) for m in autowrap_modules for v in vars(m).values()
                              if callable(v) and not isinstance(v, type)}
        self._autowrap_ids |= {id(f) for f in autowrap_functions}
        self.root: Module = Module()
        self.graph = Graph()
        self.proxy_buffer_attributes = True
        self._module_paths: dict[int, str] = {}
        self._param_paths: dict[int, str] = {}
        self._buffer_paths: dict[int, str] = {}
        self._tensor_paths: dict[int, str] = {}

    # ------------------------------------------------------------ hooks
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """PyTorch's rule: modules of ``torch.nn`` (here ``portagrad.nn``) other than
        ``Sequential`` are leaves."""
        mod = type(m).__module__
        return ((mod.startswith("torch.nn") or mod.startswith("portagrad.nn"))
                and not isinstance(m, Sequential))

    def path_of_module(self, mod: Module) -> str:
        """The qualified name of submodule ``mod`` in the traced root."""
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Module, forward: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """A submodule call while tracing: one ``call_module`` node for a leaf, else its
        ``forward`` traced through."""
        qualname = self.path_of_module(m)
        if not self.is_leaf_module(m, qualname):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", qualname, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """A module attribute read while tracing: parameters (and buffers) of the root become
        ``get_attr`` nodes, read once per name; anything else is returned as it is."""
        path = None
        if isinstance(attr_val, Parameter):
            path = self._param_paths.get(id(attr_val))
        elif self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            path = self._buffer_paths.get(id(attr_val))
        if path is None:
            return attr_val
        if path not in parameter_proxy_cache:
            parameter_proxy_cache[path] = self.create_proxy("get_attr", path, (), {})
        return parameter_proxy_cache[path]

    def create_arg(self, a: Any) -> Any:
        """As :meth:`TracerBase.create_arg`, and: parameters, buffers and tensor attributes of
        the root become ``get_attr`` nodes (another tensor is stored on the root as
        ``_tensor_constant<i>``); submodules become ``get_attr`` of their path."""
        if isinstance(a, Parameter):
            path = self._param_paths.get(id(a))
            if path is None:
                raise NameError("parameter is not a member of this module")
            return self.create_node("get_attr", path, (), {})
        if isinstance(a, Tensor):
            path = self._buffer_paths.get(id(a)) or self._tensor_paths.get(id(a))
            if path is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                path = f"_tensor_constant{i}"
                setattr(self.root, path, a)
                self._tensor_paths[id(a)] = path
            return self.create_node("get_attr", path, (), {})
        if isinstance(a, Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        return super().create_arg(a)

    # ------------------------------------------------------------ tracing
    def trace(self, root: Module | Callable[..., Any],
              concrete_args: dict[str, Any] | None = None) -> Graph:
        """Run ``root`` (a module's ``forward``, or a function) on proxies; returns the
        graph. ``concrete_args`` fixes inputs to values (specializing the trace), except
        those given as :data:`PH`."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            self_arg: tuple[Any, ...] = (root,)
        elif callable(root):
            self.root = Module()
            fn = root
            self_arg = ()
        else:
            raise TypeError(f"symbolic_trace: expected a Module or a function, got "
                            f"{type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self._index_root()
        args = self._root_args(fn, bool(self_arg), concrete_args or {})
        namespace_name(None)  # build the name table before the namespaces are patched
        with Patcher() as patcher:
            self._patch(patcher, getattr(fn, "__globals__", {}))
            result = fn(*self_arg, *args)
        ret = getattr(fn, "__annotations__", {}).get("return")
        self.create_node("output", "output", (self.create_arg(result),), {},
                         type_expr=None if isinstance(ret, str) else ret)
        return self.graph

    def _index_root(self) -> None:
        root = self.root
        self._module_paths = {}
        self._param_paths = {}
        self._buffer_paths = {}
        self._tensor_paths = {}
        for name, m in root.named_modules():
            self._module_paths.setdefault(id(m), name)
            for attr, v in vars(m).items():
                if isinstance(v, Tensor) and not attr.startswith("__"):
                    self._tensor_paths.setdefault(id(v), f"{name}.{attr}" if name else attr)
        for name, p in root.named_parameters():
            self._param_paths.setdefault(id(p), name)
        for name, b in root.named_buffers():
            self._buffer_paths.setdefault(id(b), name)

    def _root_args(self, fn: Callable[..., Any], skip_self: bool,
                   concrete_args: dict[str, Any]) -> list[Any]:
        params = list(inspect.signature(fn).parameters.values())
        if skip_self:
            params = params[1:]
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise TypeError(f"concrete_args names no input of the traced function: "
                            f"{sorted(unknown)}")
        args: list[Any] = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
                raise NotImplementedError(
                    f"symbolic_trace: input '{p.name}' is *args, **kwargs or keyword-only; give "
                    "the traced function plain positional inputs (or fix it with concrete_args)")
            default = p.default
            if p.name in concrete_args and concrete_args[p.name] is not PH:
                value = concrete_args[p.name]
                node = self.graph.placeholder(p.name, default_value=default)
                # the input is kept in the signature, and checked against the value the trace
                # specialized to
                self.graph.call_function(_assert_concrete, (node, value, p.name))
                args.append(value)
            else:
                args.append(self.proxy(self.graph.placeholder(p.name, default_value=default)))
        return args

    def _patch(self, patcher: Patcher, fn_globals: dict[str, Any]) -> None:
        tracer = self
        cache: dict[str, Any] = {}
        orig_getattr = Module.__getattr__

        def module_getattr(mod: Module, attr: str) -> Any:
            return tracer.getattr(attr, orig_getattr(mod, attr), cache)

        def module_call(mod: Module, *args: Any, **kwargs: Any) -> Any:
            return tracer.call_module(mod, mod.forward, args, kwargs)

        patcher.patch_attr(Module, "__getattr__", module_getattr)
        patcher.patch_attr(Module, "__call__", module_call)
        space_ids = set()
        for mod, attr, fn in namespace_functions():
            space_ids.add(id(fn))
            patcher.patch_attr(mod, attr, traced_function(fn))
        # names imported into the traced code's module: `from math import sqrt`,
        # `from torch import exp`
        for name, v in list(fn_globals.items()):
            if id(v) in self._autowrap_ids or id(v) in space_ids:
                patcher.patch_dict(fn_globals, name, traced_function(v))
        for g, name in _WRAPPED:
            orig = g.get(name, getattr(builtins, name, None))
            if orig is not None:
                patcher.patch_dict(g, name, traced_function(orig))

