"""``torch.jit``'s interface on an eager library: nothing is compiled, everything runs as Python.

TorchScript compiles a module or function into a graph that computes what the Python code
computes. portagrad has no TorchScript compiler, so the entry points keep the Python object and
run it eagerly: :func:`script` returns its argument, :func:`trace` runs the example inputs once
(as PyTorch's tracer does, so wrong inputs fail here too) and returns the function or module.
The first such call warns once per process that nothing was compiled. The decorators that only
steer the compiler (:func:`ignore`, :func:`unused`, :func:`export`, :func:`interface`,
:func:`_overload_method` ...) return what they decorate, which is what they do in PyTorch's eager
mode. :func:`is_scripting` and :func:`is_tracing` are ``False``: no code ever runs under the
compiler. Saving and loading TorchScript archives (:func:`save`, :func:`load`) raise
``NotImplementedError``.
"""
# no `from __future__ import annotations`: that name is the submodule torch.jit.annotations here
import builtins
import types
import typing
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from ..futures import Future
from ..nn.modules.module import Module
from . import annotations

__all__ = ["Attribute", "Final", "Future", "ScriptFunction", "ScriptModule", "annotate",
           "annotations", "export", "fork", "ignore", "interface", "is_scripting", "is_tracing",
           "isinstance",
           "load", "save", "script", "script_if_tracing", "script_method", "trace",
           "trace_module", "unused", "wait", "_overload", "_overload_method"]

F = TypeVar("F", bound=Callable[..., Any])

Final = typing.Final

_warned = False


def _warn_not_compiled(entry: str) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    warnings.warn(f"portagrad.jit.{entry}: portagrad has no TorchScript compiler; the module or "
                  "function is returned as it is and runs eagerly (results are the same, nothing "
                  "is compiled). This warning is shown once.", UserWarning, stacklevel=3)


def _deprecated(name: str, instead: str = "switch to `torch.compile` or `torch.export`") -> None:
    # PyTorch 2.13 deprecates TorchScript's entry points with these warnings; so does portagrad
    warnings.warn(f"`torch.jit.{name}` is deprecated. Please {instead}.", DeprecationWarning,
                  stacklevel=3)


def is_scripting() -> bool:
    """``False``: code never runs under the TorchScript compiler in portagrad."""
    return False


def is_tracing() -> bool:
    """``False``: :func:`trace` runs its inputs eagerly, not under a recording tracer."""
    return False


def _refine(obj: Any, target: Any) -> bool:
    origin, args = typing.get_origin(target), typing.get_args(target)
    if target is Any:
        return True
    if origin is None:
        return builtins.isinstance(obj, target)
    if origin is typing.Union or (origin is types.UnionType):
        return any(_refine(obj, a) for a in args)
    if origin is list:
        return builtins.isinstance(obj, list) and all(_refine(x, args[0]) for x in obj)
    if origin is dict:
        return builtins.isinstance(obj, dict) and all(
            _refine(k, args[0]) and _refine(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        if not builtins.isinstance(obj, tuple):
            return False
        # element by element, as PyTorch: Tuple[int, ...] matches only a 2-tuple here too
        return len(obj) == len(args) and all(_refine(x, a) for x, a in zip(obj, args))
    return builtins.isinstance(obj, origin)


def isinstance(obj: Any, target_type: Any) -> bool:
    """``torch.jit.isinstance``: ``isinstance`` that also checks the elements of parametrized
    containers (``List[int]``, ``Dict[str, Tensor]``, ``Tuple[int, str]``, ``Optional[T]``),
    as TorchScript refines them. (This module's own code calls ``builtins.isinstance``.)"""
    return _refine(obj, target_type)


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """``torch.jit.script``: returns ``obj`` (a module, function or class) itself, to run
    eagerly; warns once that nothing is compiled."""
    _deprecated("script")
    if not callable(obj):
        raise RuntimeError(f"Type '{type(obj).__name__}' cannot be compiled since it is not a "
                           "module, function or class")
    _warn_not_compiled("script")
    return obj


def _as_tuple(inputs: Any) -> tuple[Any, ...]:
    return inputs if builtins.isinstance(inputs, tuple) else (inputs,)


def trace(func: Callable[..., Any], example_inputs: Any = None, optimize: Any = None,
          check_trace: bool = True, check_inputs: Any = None, check_tolerance: float = 1e-5,
          strict: bool = True, _force_outplace: bool = False, _module_class: Any = None,
          _compilation_unit: Any = None, example_kwarg_inputs: dict[str, Any] | None = None,
          _store_inputs: bool = True) -> Any:
    """``torch.jit.trace``: runs ``func`` once on the example inputs (a tuple, a single value, or
    ``example_kwarg_inputs``), as PyTorch's tracer does, and returns ``func`` itself to run
    eagerly; warns once that nothing is compiled."""
    _deprecated("trace")
    if not callable(func):
        raise TypeError(f"trace(): func must be a module or a function, got "
                        f"{type(func).__name__}")
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be provided to trace")
    _warn_not_compiled("trace")
    if example_kwarg_inputs is not None:
        if not builtins.isinstance(example_kwarg_inputs, dict):
            raise RuntimeError("example_kwarg_inputs must be a dict")
        func(**example_kwarg_inputs)
    else:
        func(*_as_tuple(example_inputs))
    return func


def trace_module(mod: Module, inputs: dict[str, Any], optimize: Any = None,
                 check_trace: bool = True, check_inputs: Any = None,
                 check_tolerance: float = 1e-5, strict: bool = True,
                 _force_outplace: bool = False, _module_class: Any = None,
                 _compilation_unit: Any = None, example_inputs_is_kwarg: bool = False,
                 _store_inputs: bool = True) -> Module:
    """``torch.jit.trace_module``: runs each method named in ``inputs`` once on its example
    inputs and returns ``mod`` itself; warns once that nothing is compiled."""
    if not builtins.isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not builtins.isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    _warn_not_compiled("trace_module")
    for name, args in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg:
            method(**args)
        else:
            method(*_as_tuple(args))
    return mod


def script_if_tracing(fn: F) -> F:
    """``torch.jit.script_if_tracing``: ``fn`` itself (nothing is ever traced)."""
    return fn


# the private name torchvision decorates with (PyTorch's script_if_tracing is an alias of it)
_script_if_tracing = script_if_tracing


def script_method(fn: F) -> F:
    """``torch.jit.script_method`` (for :class:`ScriptModule` subclasses): ``fn`` itself."""
    return fn


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``torch.jit.ignore``: the compiler leaves the function to Python; eagerly that is the
    function itself. Usable as ``@ignore`` and ``@ignore(drop=...)``."""
    if callable(drop):
        return drop
    if not builtins.isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got "
                           f"{drop}")
    return lambda fn: fn


def unused(fn: F) -> F:
    """``torch.jit.unused``: the compiler replaces the function by a raise; eagerly it runs."""
    return fn


def export(fn: F) -> F:
    """``torch.jit.export``: marks a method for compilation; eagerly the method itself."""
    return fn


def interface(obj: F) -> F:
    """``torch.jit.interface``: declares a TorchScript interface type; eagerly the class
    itself (a class is required, as in PyTorch)."""
    _deprecated("interface", "use `torch.compile` instead")
    if not builtins.isinstance(obj, type):
        raise RuntimeError("interface must be applied to a class")
    return obj


def _overload(func: F) -> F:
    """``torch.jit._overload``: declares a typed overload for the compiler; eagerly the
    function."""
    return func


def _overload_method(func: F) -> F:
    """``torch.jit._overload_method``: as :func:`_overload`, for methods."""
    return func


def annotate(the_type: Any, the_value: Any) -> Any:
    """``torch.jit.annotate``: a type hint for the compiler; returns ``the_value``."""
    return the_value


class Attribute(NamedTuple):
    """``torch.jit.Attribute(value, type)``: eagerly, a plain (value, type) pair."""

    value: Any
    type: Any


class ScriptModule(Module):
    """``torch.jit.ScriptModule``: the base of old-style TorchScript modules (subclassed with
    :func:`script_method` methods), which run as ordinary modules here. :func:`script` returns
    modules unchanged, so no module becomes an instance of this class by being scripted."""


class ScriptFunction:
    """``torch.jit.ScriptFunction``: the type of compiled functions. portagrad compiles none, so
    there are no instances; ``builtins.isinstance(f, ScriptFunction)`` is ``False`` for every function."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("ScriptFunction: No constructor defined! (portagrad compiles nothing, "
                        "so there are no compiled functions)")


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """``torch.jit.fork``: in eager mode, runs ``func(*args, **kwargs)`` now and returns a
    completed :class:`~portagrad.futures.Future` (an exception propagates here, as in
    PyTorch)."""
    _deprecated("fork", "use `torch.compile` instead")
    fut: Future[Any] = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future: Future[Any]) -> Any:
    """``torch.jit.wait``: the value of a future from :func:`fork`."""
    _deprecated("wait", "use `torch.compile` instead")
    if not builtins.isinstance(future, Future):
        raise TypeError(f"wait(): expected a Future, got {type(future).__name__}")
    return future.wait()


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """``torch.jit.save`` writes a TorchScript archive, which needs compiled code: raises."""
    raise NotImplementedError("portagrad.jit.save: TorchScript archives are not supported "
                              "(portagrad compiles nothing); save the state_dict with "
                              "portagrad.save instead")


def load(f: Any, map_location: Any = None, _extra_files: Any = None,
         _restore_shapes: bool = False) -> Any:
    """``torch.jit.load`` reads a TorchScript archive, which holds compiled code: raises."""
    raise NotImplementedError("portagrad.jit.load: TorchScript archives (torch.jit.save files) "
                              "are not supported; load a state_dict saved with torch.save "
                              "through portagrad.load instead")
