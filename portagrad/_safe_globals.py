"""The allow-list of the ``weights_only`` unpickler (``torch.serialization``'s safe globals).

A pickle names every class or function it needs as a *global* (module and qualified name); the
unpickler looks each up through ``find_class`` before it can build or call anything. The
restricted unpickler here resolves only globals on the allow-list: a few built-in containers,
portagrad's tensors, parameters, dtypes and devices, and what the caller adds with
:func:`add_safe_globals` or, for a block of code, :class:`safe_globals`. Any other global is
refused before it is imported, so a pickle cannot reach ``os.system`` or ``eval``.
"""
from __future__ import annotations

import collections
import pickle
import threading
from collections.abc import Callable, Iterable
from typing import Any

from . import _dtype, _layout
from ._device import device
from ._storage import Size
from ._tensor import Tensor

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals",
           "WeightsUnpickler", "Refused", "global_name"]

_lock = threading.Lock()
_user_globals: list[Any] = []  # callables, or (callable, "module.qualname") pairs


class Refused(pickle.UnpicklingError):
    """A global not on the allow-list (turned into ``WeightsOnlyError`` by ``load``)."""


def global_name(obj: Any) -> str:
    """``module.qualname`` of a class or function, as a pickle names it."""
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _default_globals() -> dict[str, Any]:
    """The globals every ``weights_only`` load may build: plain containers and portagrad's own
    value types (PyTorch allows its tensor and container types likewise)."""
    out: dict[str, Any] = {}
    obj: Any
    for obj in (set, frozenset, slice, range, complex, bytearray, bytes, dict, list, tuple, int,
                float, bool, str):
        out[f"builtins.{obj.__name__}"] = obj
    for obj in (collections.OrderedDict, collections.defaultdict, collections.Counter, Size,
                device, Tensor):
        out[global_name(obj)] = obj
    for dt in vars(_dtype).values():  # a dtype pickles as its module-level name
        if isinstance(dt, _dtype.dtype):
            out[f"portagrad._dtype.{dt.name}"] = dt
    for lay in (_layout.strided, _layout.sparse_coo):  # constants, pickled by name as dtypes
        out[f"portagrad._layout.{lay.name}"] = lay
    # protocol 2 (torch.save's, and save's default) pickles bytes as _codecs.encode(str,
    # "latin1"); PyTorch allows _codecs.encode for that. Only a stand-in for that one form is
    # allowed here: another codec could do more than copy characters to bytes
    out["_codecs.encode"] = _latin1_encode
    return out


def _latin1_encode(obj: Any, encoding: Any = "utf-8", errors: Any = "strict") -> bytes:
    """``_codecs.encode(text, "latin1")``, as a protocol-2 pickle writes ``bytes``."""
    if type(obj) is not str or encoding not in ("latin1", "latin-1") or errors != "strict":
        raise Refused(f"_codecs.encode is allowed only as encode(str, 'latin1') (the form "
                      f"pickle writes bytes in), got encode({type(obj).__name__}, {encoding!r})")
    return obj.encode("latin1")


_DEFAULT_NAMES = {
    # classes from layers above this module, allowed by name and imported on first use
    "portagrad.nn.parameter.Parameter", "portagrad.nn.parameter._rebuild_parameter",
    "portagrad.autograd.function._HookDict",
}


def _entries() -> dict[str, Any]:
    with _lock:
        user = list(_user_globals)
    out: dict[str, Any] = {}
    for g in user:
        if isinstance(g, tuple):
            obj, name = g
            out[name] = obj
        else:
            out[global_name(g)] = g
    return out


def add_safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> None:
    """Allow ``weights_only`` loads to build these classes or call these functions.

    Each entry is a class or function, or ``(obj, "module.qualname")`` to allow it under the
    name it was pickled as (for example after it moved)."""
    for g in safe_globals:
        if isinstance(g, tuple):
            if len(g) != 2 or not isinstance(g[1], str):
                raise ValueError("a safe global given as a tuple must be (object, "
                                 "'module.qualname')")
        elif not callable(g):
            raise TypeError(f"safe globals must be classes or functions, got {g!r}")
    with _lock:
        _user_globals.extend(safe_globals)


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """The globals added with :func:`add_safe_globals` (not the built-in defaults)."""
    with _lock:
        return list(_user_globals)


def clear_safe_globals() -> None:
    """Forget every global added with :func:`add_safe_globals`."""
    with _lock:
        _user_globals.clear()


class safe_globals:
    """Context manager allowing ``safe_globals`` for ``weights_only`` loads inside its block::

        with pg.serialization.safe_globals([MyNet, pg.nn.Linear]):
            model = pg.load("model.pt")
    """

    def __init__(self, safe_globals: list[Callable | tuple[Callable, str]]) -> None:
        self.safe_globals = list(safe_globals)
        self._saved: list[Any] = []

    def __enter__(self) -> None:
        with _lock:
            self._saved = list(_user_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _user_globals[:] = self._saved


_DEFAULTS: dict[str, Any] | None = None


def _lookup_default(name: str) -> Any:
    global _DEFAULTS
    if _DEFAULTS is None:
        _DEFAULTS = _default_globals()
    return _DEFAULTS.get(name, _MISSING)


_MISSING = object()


def is_allowed(module: str, name: str) -> bool:
    """Whether the global ``module.name`` may be built by a ``weights_only`` load."""
    full = f"{_fix(module)}.{name}"
    return (_lookup_default(full) is not _MISSING or full in _DEFAULT_NAMES
            or full in _entries())


def _fix(module: str) -> str:
    # protocol 2 pickles name Python 2's module for builtins
    return "builtins" if module == "__builtin__" else module


class WeightsUnpickler(pickle.Unpickler):
    """An unpickler that resolves only allow-listed globals (raises :class:`Refused`)."""

    def find_class(self, module: str, name: str) -> Any:
        full = f"{_fix(module)}.{name}"
        obj = _lookup_default(full)
        if obj is not _MISSING:
            return obj
        user = _entries()
        if full in user:
            return user[full]
        if full in _DEFAULT_NAMES:
            return super().find_class(module, name)  # portagrad's own module, by fixed name
        raise Refused(
            f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
            f"`pg.serialization.add_safe_globals([{full}])` or the "
            f"`pg.serialization.safe_globals([{full}])` context manager to allowlist this global "
            f"if you trust this class/function.")


def allowed_names(extra: Iterable[str] = ()) -> set[str]:
    """Every name currently allowed (defaults and user additions)."""
    if _DEFAULTS is None:
        _lookup_default("")
    assert _DEFAULTS is not None
    return set(_DEFAULTS) | _DEFAULT_NAMES | set(_entries()) | set(extra)

