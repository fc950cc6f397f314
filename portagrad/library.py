"""``torch.library``: operators defined from Python, callable as ``torch.ops.<ns>.<name>``.

:func:`custom_op` turns a Python function into an operator (``mylib::scale``): calling the result
(or ``pg.ops.mylib.scale``) runs the function; :meth:`CustomOpDef.register_autograd` gives it a
backward (``setup_context`` saves what ``backward`` needs, as in PyTorch). The lower-level
:class:`Library` (``define`` a schema, ``impl`` an implementation), :func:`define` and
:func:`impl` register the same way. portagrad has no fake (meta) tensors, so
:func:`register_fake` records the fake implementation without ever running it; it is there so
that libraries registering one at import load. Dispatch keys are accepted; every implementation
runs whatever the device.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._ops.custom import CustomOpFunction
from .autograd.grad_mode import is_grad_enabled
from .ops import _REGISTRY, OpOverloadPacket, _OpEntry

__all__ = ["CustomOpDef", "Library", "custom_op", "define", "impl", "register_autograd",
           "register_fake"]

_KINDS = ("DEF", "IMPL", "FRAGMENT")


def _split(qualname: str) -> tuple[str, str]:
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator "
                         "name should look something like ns::foo")
    ns, name = qualname.split("::")
    if not ns or not name.isidentifier():
        raise ValueError(f"invalid operator name {qualname!r}")
    return ns, name


def _entry(qualname: str, *, create: bool) -> _OpEntry:
    _split(qualname)
    entry = _REGISTRY.get(qualname)
    if entry is None:
        if not create:
            raise RuntimeError(f"operator {qualname} does not exist (define it first)")
        entry = _REGISTRY[qualname] = _OpEntry(qualname)
    return entry


class CustomOpDef(OpOverloadPacket):
    """What :func:`custom_op` returns: the operator, callable like the function it wraps."""

    def __init__(self, entry: _OpEntry, fn: Callable[..., Any]) -> None:
        super().__init__(entry)
        self._fn = fn
        self._sig = inspect.signature(fn)
        entry.impls["CompositeExplicitAutograd"] = self._run

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        auto = self._entry.autograd
        if auto is None or not is_grad_enabled():
            return self._fn(*args, **kwargs)
        bound = self._sig.bind(*args, **kwargs)
        bound.apply_defaults()
        backward, setup = auto
        return CustomOpFunction.apply(self._fn, setup, backward, *bound.args)

    def register_fake(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Record ``fn`` as the fake implementation (never run: there are no fake tensors)."""
        self._entry.fake = fn
        return fn

    def register_autograd(self, backward: Callable[..., Any], /, *,
                          setup_context: Callable[..., Any] | None = None) -> None:
        """Give the operator a backward: ``setup_context(ctx, inputs, output)`` runs after the
        forward, ``backward(ctx, *grads)`` returns one gradient (or ``None``) per input."""
        register_autograd(self, backward, setup_context=setup_context)

    def register_kernel(self, device_types: str | Sequence[str] | None,
                        fn: Callable[..., Any] | None = None, /) -> Any:
        """An implementation for some device types; devices are not told apart here, so it
        becomes the implementation."""
        def inner(f: Callable[..., Any]) -> Callable[..., Any]:
            self._fn = f
            return f
        return inner if fn is None else inner(fn)


def custom_op(name: str, fn: Callable[..., Any] | None = None, /, *,
              mutates_args: str | Iterable[str], device_types: Any = None,
              schema: str | None = None, tags: Any = None) -> Any:
    """Make ``fn`` the operator ``name`` (``"ns::op"``); usable as a decorator.
    ``mutates_args`` names the arguments ``fn`` writes to (``()`` for none, or ``"unknown"``),
    as PyTorch requires."""
    if mutates_args != "unknown" and (isinstance(mutates_args, str)
                                      or not isinstance(mutates_args, Iterable)):
        raise ValueError(f"mutates_args must be 'unknown' or an iterable of argument names, got "
                         f"{mutates_args!r}")

    def inner(f: Callable[..., Any]) -> CustomOpDef:
        entry = _entry(name, create=True)
        if entry.impls:
            raise RuntimeError(f"custom_op: {name} is already defined")
        entry.schema = schema
        return CustomOpDef(entry, f)
    return inner if fn is None else inner(fn)


def _qualname(op: Any) -> str:
    if isinstance(op, OpOverloadPacket):
        return op._qualified_op_name
    if isinstance(op, str):
        return op
    raise TypeError(f"expected an operator or its qualified name ('ns::op'), got "
                    f"{type(op).__name__}")


def register_fake(op: Any, func: Callable[..., Any] | None = None, /, *, lib: Any = None,
                  _stacklevel: int = 1) -> Any:
    """Record the fake (shape-only) implementation of ``op``; never run here (no fake tensors).
    Usable as a decorator."""
    entry = _entry(_qualname(op), create=True)

    def inner(f: Callable[..., Any]) -> Callable[..., Any]:
        entry.fake = f
        return f
    return inner if func is None else inner(func)


def register_autograd(op: Any, backward: Callable[..., Any], /, *,
                      setup_context: Callable[..., Any] | None = None, lib: Any = None) -> None:
    """Give operator ``op`` a backward (see :meth:`CustomOpDef.register_autograd`); only
    operators made with :func:`custom_op` are differentiable this way here."""
    if isinstance(op, CustomOpDef):
        entry = op._entry
    else:
        qual = _qualname(op)
        found = _REGISTRY.get(qual)
        # named by its string: the operator custom_op made under that name
        made = found.impls.get("CompositeExplicitAutograd") if found is not None else None
        if found is None or not isinstance(getattr(made, "__self__", None), CustomOpDef):
            raise NotImplementedError(f"register_autograd({qual}): only operators made with "
                                      "torch.library.custom_op take a backward in portagrad")
        entry = found
    if not callable(backward):
        raise TypeError("register_autograd: backward must be callable")
    entry.autograd = (backward, setup_context)


class Library:
    """``torch.library.Library(ns, kind)``: ``kind`` is ``"DEF"`` (a new namespace),
    ``"IMPL"`` (implementations for an existing one) or ``"FRAGMENT"``."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in _KINDS:
            raise ValueError("Unsupported kind: ", kind)
        if not isinstance(ns, str) or not ns.isidentifier():
            raise ValueError(f"invalid namespace {ns!r}")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defined: list[str] = []

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        """Declare operator ``name(args) -> returns`` in this namespace; returns its name."""
        name = schema.split("(", 1)[0].strip().split(".")[0]
        if "(" not in schema or not name.isidentifier():
            raise RuntimeError(f"define: could not parse the schema {schema!r}")
        qual = f"{self.ns}::{name}"
        if qual in _REGISTRY and _REGISTRY[qual].schema is not None:
            raise RuntimeError(f"define: {qual} is already defined")
        _entry(qual, create=True).schema = schema
        self._defined.append(qual)
        return name

    def impl(self, op_name: Any, fn: Callable[..., Any], dispatch_key: str = "", *,
             with_keyset: bool = False) -> None:
        """Register ``fn`` as ``op_name``'s implementation for ``dispatch_key``."""
        if isinstance(op_name, OpOverloadPacket):
            op_name = op_name._qualified_op_name
        qual = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        _entry(qual, create=self.kind != "IMPL").impls[dispatch_key or self.dispatch_key] = fn

    def _destroy(self) -> None:
        for qual in self._defined:
            _REGISTRY.pop(qual, None)
        self._defined.clear()


def define(qualname: str, schema: str, *, lib: Library | None = None, tags: Any = ()) -> None:
    """Declare operator ``qualname`` (``"ns::op"``) with ``schema`` (``"(Tensor x) -> Tensor"``)."""
    ns, name = _split(qualname)
    (lib or Library(ns, "FRAGMENT")).define(name + schema, tags=tags)


def impl(qualname: str, types: str | Sequence[str], func: Callable[..., Any] | None = None, *,
         lib: Library | None = None) -> Any:
    """Register an implementation of ``qualname`` for device ``types`` ("cpu", "default" ...);
    usable as a decorator."""
    _split(qualname)

    def inner(f: Callable[..., Any]) -> Callable[..., Any]:
        _entry(qualname, create=False).impls["CompositeExplicitAutograd"] = f
        return f
    return inner if func is None else inner(func)
