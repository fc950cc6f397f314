"""``nn.Module``: the base class of layers, with parameters, buffers, submodules, hooks and
``state_dict`` (the semantics, names and error messages of ``torch.nn.Module``)."""
from __future__ import annotations

import itertools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ... import _creation, _device, _dtype
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.function import Function, RemovableHandle, _HookDict
from ..parameter import Buffer, Parameter, UninitializedTensorMixin

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
           "register_module_buffer_registration_hook",
           "register_module_parameter_registration_hook",
           "register_module_module_registration_hook"]

_global_forward_pre_hooks: _HookDict = _HookDict()
_global_forward_hooks: _HookDict = _HookDict()
# ids of the global forward hooks registered with_kwargs / always_call
_global_forward_hooks_with_kwargs: dict[int, bool] = {}
_global_forward_hooks_always_called: dict[int, bool] = {}
_global_backward_hooks: _HookDict = _HookDict()
_global_backward_pre_hooks: _HookDict = _HookDict()
_global_buffer_registration_hooks: _HookDict = _HookDict()
_global_parameter_registration_hooks: _HookDict = _HookDict()
_global_module_registration_hooks: _HookDict = _HookDict()

# the state_dict key (after the module's prefix) of what ``get_extra_state`` returns
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A forward pre-hook run for every module (``torch.nn.modules.module``)."""
    h = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[h.id] = hook
    return h


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """A forward hook run for every module (before the module's own), with the options of
    :meth:`Module.register_forward_hook`."""
    h = _add_hook(_global_forward_hooks, hook, False,
                  (_global_forward_hooks_with_kwargs, _global_forward_hooks_always_called))
    if with_kwargs:
        _global_forward_hooks_with_kwargs[h.id] = True
    if always_call:
        _global_forward_hooks_always_called[h.id] = True
    return h


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A full backward hook ``hook(module, grad_input, grad_output)`` run for every module,
    before the module's own."""
    return _add_hook(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A backward pre-hook ``hook(module, grad_output)`` run for every module, before the
    module's own."""
    return _add_hook(_global_backward_pre_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, name, buffer)`` whenever a buffer is registered on any module; a returned
    tensor is registered instead."""
    return _add_hook(_global_buffer_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, name, param)`` whenever a (non-``None``) parameter is registered on any
    module; a returned parameter is registered instead."""
    return _add_hook(_global_parameter_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, name, submodule)`` whenever a submodule is registered on any module; a
    returned module is registered instead."""
    return _add_hook(_global_module_registration_hooks, hook)


def _run_registration_hooks(hooks: _HookDict, module: Module, name: str, value: Any) -> Any:
    """``value`` after the global registration ``hooks`` (each may return a replacement)."""
    for hook in list(hooks.values()):
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find and the keys it did not use."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(type(obj), "__module__", "")
    name = type(obj).__qualname__
    return name if module in ("builtins", "", None) else f"{module}.{name}"


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * num_spaces + line for line in lines)


def _add_hook(hooks: _HookDict, hook: Any, prepend: bool = False,
              extra: tuple[dict, ...] = ()) -> RemovableHandle:
    h = _ModuleHandle(hooks, extra)
    hooks[h.id] = hook
    if prepend:
        hooks.move_to_end(h.id, last=False)
    return h


class _ModuleHandle(RemovableHandle):
    """A removable handle that also clears the hook's entries in side tables (kwargs flags)."""

    def __init__(self, hooks: _HookDict, extra: tuple[dict, ...] = ()) -> None:
        super().__init__(hooks)
        self._extra = extra

    def remove(self) -> None:
        super().remove()
        for d in self._extra:
            d.pop(self.id, None)


class _LoadPreHook:
    """A ``load_state_dict`` pre-hook as stored: called ``fn(module, *args)`` when registered
    with its module (which it holds weakly, so that registering does not keep the module alive),
    else ``fn(*args)``. Copying or pickling it carries the module itself instead of the weak
    reference."""

    def __init__(self, fn: Callable[..., Any], module: Module | None = None) -> None:
        self.fn = fn
        self._owner = None if module is None else weakref.ref(module)

    def __call__(self, *args: Any) -> Any:
        if self._owner is None:
            return self.fn(*args)
        module = self._owner()
        if module is None:
            raise RuntimeError("a load_state_dict pre-hook was called after its module was "
                               "garbage-collected")
        return self.fn(module, *args)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_LoadPreHook, (self.fn, None if self._owner is None else self._owner()))


# ------------------------------------------------------------------ full backward hooks
class _BackwardHookFunction(Function):
    """Identity on the module's input or output tensors; its backward calls the module's hooks."""

    _backward_name = "BackwardHookFunctionBackward"

    @staticmethod
    def forward(ctx: Any, callback: Any, *tensors: Tensor) -> Any:
        ctx.callback = callback
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        res = ctx.callback(grads)
        return (None,) + tuple(res)


class _BackwardHook:
    """One forward call's state for full backward (pre-)hooks, as ``torch.utils.hooks.BackwardHook``:
    identity nodes around the inputs and outputs catch ``grad_output`` and ``grad_input``."""

    def __init__(self, module: Module, hooks: list, pre_hooks: list) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_outputs = -1
        self.output_index: list[int] = []
        self.n_inputs = -1
        self.input_index: list[int] | None = None

    @staticmethod
    def _pack(index: list[int], values: tuple, n: int) -> tuple:
        out: list[Any] = [None] * n
        for i, v in zip(index, values):
            out[i] = v
        return tuple(out)

    @staticmethod
    def _unpack(index: list[int], values: tuple) -> tuple:
        return tuple(values[i] for i in index)

    def _wrap(self, args: Any, callback: Callable[[tuple], tuple]) -> tuple[Any, list[int] | None]:
        is_tuple = isinstance(args, tuple)
        items = args if is_tuple else (args,)
        index = [i for i, a in enumerate(items) if isinstance(a, Tensor)]
        tensors = [items[i] for i in index]
        if not (grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new = _BackwardHookFunction.apply(callback, *tensors)
        if not isinstance(new, tuple):
            new = (new,)
        out = list(items)
        for i, t in zip(index, new):
            out[i] = t
        return (tuple(out) if is_tuple else out[0]), index

    def _run_hooks(self, grad_inputs: tuple) -> tuple | None:
        res = None
        for hook in self.hooks:
            r = hook(self.module, grad_inputs if res is None else res, self.grad_outputs)
            if r is not None:
                r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                if len(r) != len(grad_inputs):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                       f"{len(r)}, but expected {len(grad_inputs)}")
                res = r
        return res

    def setup_input_hook(self, args: tuple) -> tuple:
        def cb(grads: tuple) -> tuple:
            # no hooks, or outputs whose tensors were not caught (a dict, say): PyTorch then
            # does not call the hooks
            if not self.hooks or self.grad_outputs is None:
                return grads
            packed = self._pack(self.input_index or [], grads, self.n_inputs)
            res = self._run_hooks(packed)
            if res is None:
                return grads
            return self._unpack(self.input_index or [], res)

        self.n_inputs = len(args)
        new, self.input_index = self._wrap(args, cb)
        return new

    def setup_output_hook(self, result: Any) -> Any:
        def cb(grads: tuple) -> tuple:
            n = self.n_outputs
            self.grad_outputs = self._pack(self.output_index, grads, n)
            for hook in self.pre_hooks:
                r = hook(self.module, self.grad_outputs)
                if r is not None:
                    r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                    if len(r) != len(self.grad_outputs):
                        raise RuntimeError(f"Backward pre hook returned an invalid number of "
                                           f"grad_output, got {len(r)}, but expected "
                                           f"{len(self.grad_outputs)}")
                    self.grad_outputs = r
            if self.input_index is None and self.hooks:
                # no input requires grad: the hooks run now, with grad_input all None
                self._run_hooks((None,) * max(self.n_inputs, 0))
            return self._unpack(self.output_index, self.grad_outputs)

        self.n_outputs = len(result) if isinstance(result, tuple) else 1
        new, index = self._wrap(result, cb)
        self.output_index = index or []
        return new


# ------------------------------------------------------------------ Module
class Module:
    """Base class of all neural-network modules (``torch.nn.Module``).

    Assigning a :class:`Parameter`, a ``Module`` or a registered buffer name to an attribute
    registers it; ``named_parameters``, ``state_dict``, ``to`` ... walk the tree of submodules."""

    training: bool
    # set in __init__ through object.__setattr__ (bypassing registration), declared here for checkers
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _non_persistent_buffers_set: set[str]
    _modules: dict[str, Module | None]
    _version: int = 1
    call_super_init: bool = False
    dump_patches: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_backward_pre_hooks", _HookDict())
        setattr_(self, "_backward_hooks", _HookDict())
        setattr_(self, "_forward_hooks", _HookDict())
        setattr_(self, "_forward_hooks_with_kwargs", {})
        setattr_(self, "_forward_hooks_always_called", {})
        setattr_(self, "_forward_pre_hooks", _HookDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", {})
        setattr_(self, "_state_dict_hooks", _HookDict())
        setattr_(self, "_state_dict_pre_hooks", _HookDict())
        setattr_(self, "_load_state_dict_pre_hooks", _HookDict())
        setattr_(self, "_load_state_dict_post_hooks", _HookDict())
        setattr_(self, "_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward: Callable[..., Any]

    def _forward_unimplemented(self, *input: Any) -> None:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    forward = _forward_unimplemented

    # ------------------------------------------------------------ registration
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. BatchNorm's running mean);
        ``persistent=False`` keeps it out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            f"(torch Tensor or None required)")
        tensor = _run_registration_hooks(_global_buffer_registration_hooks, self, name, tensor)
        # the ``persistent`` argument wins over a ``Buffer``'s own flag (PyTorch's rule; only
        # assigning a Buffer to an attribute uses its flag)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (``None`` registers the name without a value, like ``bias=False``)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            f"(torch.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                             f"must be created explicitly. To express '{name}' as a function of "
                             f"another Tensor, compute the value in the forward() method.")
        else:
            self._parameters[name] = _run_registration_hooks(
                _global_parameter_registration_hooks, self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as the attribute ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = _run_registration_hooks(_global_module_registration_hooks, self,
                                                      name, module)

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path ``target`` (``""`` is ``self``)."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target`` (its parent must exist; ``strict``: the
        attribute must exist too). What is there already must be a module."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    # ------------------------------------------------------------ attribute protocol
    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                return p[name]
        if "_buffers" in d:
            b = d["_buffers"]
            if name in b:
                return b[name]
        if "_modules" in d:
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        def remove_from(*dicts_or_sets: Any) -> None:
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                f"(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                modules[name] = _run_registration_hooks(_global_module_registration_hooks, self,
                                                        name, value)
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    f"(torch.nn.Module or None expected)")
                modules[name] = _run_registration_hooks(_global_module_registration_hooks, self,
                                                        name, value)
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        f"(torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.__dict__.get("persistent", True)
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    if buffers is None:
                        raise AttributeError("cannot assign buffer before Module.__init__() call")
                    # a plain attribute of that name stays, so register_buffer refuses it (PyTorch's
                    # KeyError "attribute 'x' already exists")
                    remove_from(self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = (list(dir(type(self))) + list(self.__dict__) + list(self._parameters) +
                list(self._modules) + list(self._buffers))
        return sorted(k for k in set(keys) if not k[:1].isdigit())

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for k, default in (("_forward_hooks_with_kwargs", {}), ("_forward_hooks_always_called", {}),
                           ("_forward_pre_hooks_with_kwargs", {}), ("_state_dict_hooks", _HookDict()),
                           ("_state_dict_pre_hooks", _HookDict()),
                           ("_load_state_dict_pre_hooks", _HookDict()),
                           ("_load_state_dict_post_hooks", _HookDict()),
                           ("_non_persistent_buffers_set", set()),
                           ("_backward_pre_hooks", _HookDict()), ("_backward_hooks", _HookDict())):
            if k not in self.__dict__:
                self.__dict__[k] = default

    # ------------------------------------------------------------ iteration
    def _named_members(self, get_members: Callable[[Module], Any], prefix: str = "",
                       recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        memo: set[int] = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse
                   else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and of its submodules when ``recurse``)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs; a shared parameter is listed once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        memo: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for this module (name ``prefix``) and all submodules.

        ``memo`` is the set of modules already seen (PyTorch's: it holds the modules themselves,
        so a caller may pre-fill it to skip some, and sees it filled afterwards)."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    # ------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``Dropout`` drops, ``BatchNorm`` uses batch statistics)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """``Module.compile``: :func:`portagrad.compile` of this module with the same arguments
        (checked the same way, the same errors); as there, a module keeps running eagerly, so
        its results and autograd graph are unchanged. Returns None, as PyTorch's."""
        from ..._compile import compile as compile_  # (portagrad's top level imports nn)
        compile_(self, *args, **kwargs)

    def eval(self) -> Module:
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to ``None`` by default)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    # ------------------------------------------------------------ conversion
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with grad_mode.no_grad():
                new = fn(param)
            if new is not param:
                # the Parameter object is kept (PyTorch's ``param.data = fn(param)``)
                param.data = new
            if param.grad is not None:
                with grad_mode.no_grad():
                    g = fn(param.grad)
                if g is not param.grad:
                    param._grad = g
        for key, buf in self._buffers.items():
            if isinstance(buf, UninitializedTensorMixin):
                buf.data = fn(buf)  # a lazy module's placeholder stays one (on the new device)
            elif buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and on ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move parameters and buffers to a device and/or cast floating ones to a dtype, in place.

        ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``; the parameters stay
        the same ``Parameter`` objects."""
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        non_blocking = kwargs.pop("non_blocking", False)
        kwargs.pop("memory_format", None)
        kwargs.pop("copy", None)
        if kwargs:
            got = ", ".join(f"{k}={type(v).__name__}" for k, v in kwargs.items())
            raise TypeError(
                f"to() received an invalid combination of arguments - got ({got}, ), but expected "
                "one of:\n"
                " * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = "
                "False, bool copy = False, *, torch.memory_format memory_format = None)\n"
                " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
                "torch.memory_format memory_format = None)\n"
                " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
                "torch.memory_format memory_format = None)\n")
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, bool):
                non_blocking = a
            elif isinstance(a, (str, int, _device.device)):
                device = a
            elif a is None:
                continue
            else:
                raise TypeError(f"to() received an invalid combination of arguments - got "
                                f"({type(a).__name__})")
        if dtype is not None:
            dtype = _dtype.as_dtype(dtype)
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                                f"got desired dtype={dtype}")
            if dtype.is_complex:
                warnings.warn(
                    "Complex modules are a new feature under active development whose design may "
                    "change, and some modules might not work as expected when using complex "
                    "tensors as parameters or buffers. Please file an issue at "
                    "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml if a "
                    "complex module does not work as expected.", stacklevel=2)
        if device is not None:
            device = _device.as_device(device)

        def convert(t: Tensor) -> Tensor:
            # floating and complex tensors take the dtype (complex -> real warns in the cast, as
            # PyTorch's); integer and bool ones only move
            cast = dtype is not None and (t.is_floating_point() or t.is_complex())
            return t.to(device, dtype if cast else None, non_blocking=non_blocking)

        return self._apply(convert)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Replace every parameter and buffer by an uninitialised tensor of the same shape and
        dtype on ``device`` (PyTorch's way to materialise a module built on the ``meta``
        device); parameters stay the same ``Parameter`` objects."""
        return self._apply(lambda t: _creation.empty_like(t, device=device), recurse=recurse)

    def cpu(self) -> Module:
        return self._apply(lambda t: t.cpu())

    def opencl(self, device: Any = None) -> Module:
        """Move to an OpenCL device (``opencl:device``, the current one when ``None``)."""
        dev = "opencl" if device is None else (device if isinstance(device, str) and ":" in device
                                                else f"opencl:{int(device)}")
        return self._apply(lambda t: t.to(dev))

    def cuda(self, device: Any = None) -> Module:
        """Move to a CUDA device: without a ``cuda`` backend, the error PyTorch raises without
        CUDA (an ``AssertionError``)."""
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type: Any) -> Module:
        """Cast parameters and buffers to a dtype or a legacy type (``pg.DoubleTensor``)."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> Module:
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Module:
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        """Cast floating parameters and buffers to ``bfloat16``."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def share_memory(self) -> Module:
        return self._apply(lambda t: t.share_memory_())

    # ------------------------------------------------------------ hooks
    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)``) before ``forward``; a returned
        value replaces the arguments."""
        h = _add_hook(self._forward_pre_hooks, hook, prepend, (self._forward_pre_hooks_with_kwargs,))
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        return h

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` after ``forward``; a returned value replaces the output."""
        h = _add_hook(self._forward_hooks, hook, prepend,
                      (self._forward_hooks_with_kwargs, self._forward_hooks_always_called))
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            self._forward_hooks_always_called[h.id] = True
        return h

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False
                                    ) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` once the gradients w.r.t. the module's inputs
        are computed (tuples; a returned tuple replaces ``grad_input``)."""
        self._check_backward_hook_kind(True)
        return _add_hook(self._backward_hooks, hook, prepend)

    def _check_backward_hook_kind(self, full: bool) -> None:
        """Record whether this module's backward hooks are full or legacy ones: PyTorch refuses
        a mix of the two on one module."""
        kind = self.__dict__.get("_is_full_backward_hook")
        if kind is not None and kind != full:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on "
                               "a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", full)

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False
                                        ) -> RemovableHandle:
        """``hook(module, grad_output)`` when the gradients w.r.t. the outputs are known; a returned
        tuple replaces ``grad_output``."""
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Deprecated in PyTorch; here called as :meth:`register_full_backward_hook`'s hooks are
        (it cannot be mixed with those on one module, as in PyTorch)."""
        self._check_backward_hook_kind(False)
        return _add_hook(self._backward_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module."""
        return _add_hook(self._state_dict_pre_hooks, hook)

    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """The old, private form of :meth:`register_state_dict_post_hook`: a value ``hook``
        returns replaces the ``state_dict`` (only honoured on the root module, as PyTorch)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook "
                               "that was previously registered via register_state_dict_post_hook")
        return _add_hook(self._state_dict_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` after ``state_dict`` saved this
        module and its submodules; it may change ``state_dict`` in place and must return
        ``None``."""
        # the flag tells state_dict to check the return value (PyTorch marks the hook the same)
        hook._from_public_api = True  # type: ignore[attr-defined]
        return _add_hook(self._state_dict_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook: Callable[..., Any],
                                           with_module: bool = False) -> RemovableHandle:
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before this module loads its entries (``module`` first when
        ``with_module``); see :meth:`register_load_state_dict_pre_hook`."""
        return _add_hook(self._load_state_dict_pre_hooks,
                         _LoadPreHook(hook, self if with_module else None))

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before ``load_state_dict`` loads this module's entries
        (it may edit ``state_dict``, which is ``load_state_dict``'s own copy)."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` after ``load_state_dict`` loaded this module and
        its submodules; it may edit ``incompatible_keys``' lists in place and must return
        ``None``."""
        return _add_hook(self._load_state_dict_post_hooks, hook)

    # ------------------------------------------------------------ call
    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        forward = self.forward
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or
                self._backward_pre_hooks or _global_forward_hooks or _global_forward_pre_hooks or
                _global_backward_hooks or _global_backward_pre_hooks):
            return forward(*args, **kwargs)
        result = None
        called: set[int] = set()  # the forward hooks already run (always_call ones run once)
        try:
            for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                                 list(self._forward_pre_hooks.items())):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if not (isinstance(res, tuple) and len(res) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of "
                                               f"(new_args, new_kwargs), but got {res}.")
                        args, kwargs = res
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw_hook = None
            full_hooks = list(_global_backward_hooks.values()) + list(self._backward_hooks.values())
            pre_hooks = (list(_global_backward_pre_hooks.values()) +
                         list(self._backward_pre_hooks.values()))
            if full_hooks or pre_hooks:
                bw_hook = _BackwardHook(self, full_hooks, pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = forward(*args, **kwargs)
            for hook_id, hook in self._forward_hook_items():
                called.add(hook_id)
                if self._forward_hook_takes_kwargs(hook_id):
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            self._run_always_called_hooks(called, args, kwargs, result)
            raise

    def _forward_hook_items(self) -> list[tuple[int, Any]]:
        """The forward hooks to run, the global ones first."""
        return list(_global_forward_hooks.items()) + list(self._forward_hooks.items())

    def _forward_hook_takes_kwargs(self, hook_id: int) -> bool:
        return hook_id in self._forward_hooks_with_kwargs or \
            hook_id in _global_forward_hooks_with_kwargs

    def _run_always_called_hooks(self, called: set[int], args: tuple, kwargs: dict,
                                 result: Any) -> None:
        """After an error in the forward pass (pre-hooks, ``forward`` or a forward hook): run the
        ``always_call`` forward hooks not yet run, with the output so far (``None`` if
        ``forward`` did not return); their own errors only warn, the first error propagates."""
        for hook_id, hook in self._forward_hook_items():
            if hook_id in called or not (hook_id in self._forward_hooks_always_called or
                                         hook_id in _global_forward_hooks_always_called):
                continue
            try:
                if self._forward_hook_takes_kwargs(hook_id):
                    hook(self, args, kwargs, result)
                else:
                    hook(self, args, result)
            except Exception as e:
                kind = "global module" if hook_id in _global_forward_hooks else "module"
                warnings.warn(f"{kind} forward hook with ``always_call=True`` raised an exception "
                              f"that was silenced as another error was raised in forward: {e}",
                              stacklevel=3)

    __call__: Callable[..., Any] = _call_impl

    # ------------------------------------------------------------ state dict
    def get_extra_state(self) -> Any:
        """The extra (non-tensor) state a module stores in its ``state_dict`` under
        ``prefix + "_extra_state"``: override it together with :meth:`set_extra_state`. Only an
        override is called; this base method is never reached."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug.")

    def set_extra_state(self, state: Any) -> None:
        """Restore what :meth:`get_extra_state` returned, from a loaded ``state_dict``."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug.")

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        # extra state only where a class overrides get_extra_state (PyTorch's test)
        if getattr(self.__class__, "get_extra_state", Module.get_extra_state) \
                is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict[str, Tensor]:
        """An ordered dict of parameters and persistent buffers by dotted name (detached tensors
        sharing storage with the module's, unless ``keep_vars``), and the extra state of
        modules that define :meth:`get_extra_state`."""
        if args:  # the deprecated positional form (destination, prefix, keep_vars)
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                " for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self.__dict__.get("_state_dict_pre_hooks", {}).values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if res is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif res is not None:
                destination = res
        return destination

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        """Load this module's own parameters, buffers and extra state from ``state_dict`` (not
        its submodules'), reporting into the lists; the load_state_dict pre-hooks run first."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        assign = local_metadata.get("assign_to_params_buffers", False)
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent_buffers.items()) if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor'
                                  f' or Tensor-like object from checkpoint but received '
                                  f'{type(input_param)}')
                continue
            is_param_lazy = isinstance(param, UninitializedTensorMixin)
            # backward compatibility (PyTorch 0.3 checkpoints): a (1,) tensor loads into a 0-d one
            if (not is_param_lazy and len(param.shape) == 0 and len(input_param.shape) == 1
                    and input_param.shape[0] == 1):
                input_param = input_param[0]
            if not is_param_lazy and tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{input_param.shape} from checkpoint, the shape in current "
                                  f"model is {param.shape}.")
                continue
            try:
                with grad_mode.no_grad():
                    if assign:
                        # the tensor itself is assigned, but a parameter keeps the module's
                        # requires_grad (PyTorch's rule for assign=True)
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param,
                                                        requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:  # reported like PyTorch
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in '
                                  f"the model are {param.shape} and whose dimensions in the "
                                  f"checkpoint are {input_param.shape}, an exception occurred : "
                                  f"{ex.args}.")
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(self.__class__, "set_extra_state", Module.set_extra_state) \
                is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    # a dotted name must reach a submodule; a plain one a parameter or buffer
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False
                        ) -> _IncompatibleKeys:
        """Copy parameters and buffers (and extra state) from ``state_dict`` (across devices and
        dtypes); with ``assign`` the module takes the tensors themselves (parameters keep the
        module's ``requires_grad``).

        With ``strict`` missing or unexpected keys raise ``RuntimeError``; the return value
        lists them either way (``missing_keys``, ``unexpected_keys``)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        # a copy, which _load_from_state_dict and the pre-hooks may modify
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata  # type: ignore[attr-defined]

        def load(module: Module, local_state_dict: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            # unexpected keys are always collected (strict=True here) and reported per strict
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    # each child sees only its own entries (as PyTorch)
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items()
                                        if k.startswith(child_prefix)}
                    # bound while load(self) below runs; `del load` after it only breaks the
                    # closure's reference cycle (ruff reads the del as making the name undefined)
                    load(child, child_state_dict, child_prefix)  # noqa: F821
            # the post-hooks may edit the key lists in place (the strict check sees the edits)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.")

        load(self, state_dict)
        del load
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ------------------------------------------------------------ repr
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """Extra text inside this module's ``repr`` (override in layers)."""
        return ""

    def __repr__(self) -> str:
        extra_lines: list[str] = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str

    def _replicate_for_data_parallel(self) -> Module:
        replica = self.__new__(type(self))
        replica.__dict__ = self.__dict__.copy()
        replica._parameters = dict(self._parameters)
        replica._buffers = dict(self._buffers)
        replica._modules = dict(self._modules)
        return replica

