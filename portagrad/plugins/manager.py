"""The plugin manager: registers built-in and third-party backends through one route.

Built-ins are registered with the same ``register`` call a third-party plugin goes through, then the
entry points of group ``portagrad.backends`` are loaded *one by one*: a plugin that fails to import or
whose hook raises is recorded (``python -m portagrad info`` shows it) and only raises when a user asks
for its device type. A failure is any ``Exception`` or ``SystemExit`` (a vendor library calling
``sys.exit`` must not end the user's process); ``KeyboardInterrupt`` still propagates.

Names. A plugin has two names: its *entry-point name* (the key in ``[project.entry-points.
"portagrad.backends"]``, which is the name the manager registers it under, and the one ``info``
lists under "plugins") and, for each backend it provides, the ``BackendSpec.name`` its hook returns
(shown as the backend's name). They are usually equal (``opencl = ...`` providing
``BackendSpec(name="opencl")``), but need not be, and neither need equal the device type.
``PORTAGRAD_DISABLE_PLUGINS=a,b`` accepts either: an entry-point name blocks the whole plugin
before it is imported (use it for a plugin whose import is broken); a ``BackendSpec.name`` drops
that one backend after the plugin's hook ran (its loader never runs). A name that matches neither
is reported with a ``RuntimeWarning`` naming it and the known names. Asking for a device type
whose backend was blocked says so.

Who serves a device type (see :class:`portagrad.plugins.BackendSpec`):

- ``cpu`` is reserved for the built-in numpy backend. A third-party plugin's spec for ``cpu`` is
  refused whatever its priority, so a broken or hostile plugin can never take the host device away
  (with ``numpy`` blocked there is no ``cpu`` at all, rather than a third-party one);
- any other device type goes to the spec with the highest ``priority``; on a tie the one registered
  first keeps it (built-ins register before entry points).

Refused and losing specs are recorded in ``PluginState.shadowed`` with the reason, and listed by
``python -m portagrad info``.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import threading
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from ..backends.interface import DEFAULTED_METHODS, REQUIRED_METHODS, Backend
from . import ENTRY_POINT_GROUP, BackendSpec, hookspecs

__all__ = [
    "PluginState", "BackendUnavailableError", "BackendValidationError", "get_state", "get_backend",
    "device_types", "validate_backend", "missing_methods", "reset", "on_reset",
]

_BUILTINS = ("numpy", "opencl")
_BUILTIN_TYPES = {"numpy": "cpu", "opencl": "opencl"}  # built-in plugin -> its device type
_RESERVED = {"cpu": "numpy"}  # device type -> the only (built-in) plugin that may serve it
_PLUGIN_ERRORS = (Exception, SystemExit)  # a plugin's failure; KeyboardInterrupt propagates


class BackendUnavailableError(RuntimeError):
    """A device type was asked for whose backend is missing, blocked, or failed to load."""


class BackendValidationError(TypeError):
    """A backend object lacks required methods of the contract.

    ``missing`` lists them; ``backend`` is the incomplete object (the conformance kit reports
    from it)."""

    def __init__(self, message: str, backend: Any = None, missing: list[str] | None = None) -> None:
        super().__init__(message)
        self.backend = backend
        self.missing = list(missing or ())


@dataclass
class PluginState:
    """What the manager found: registered plugins, failures, blocked names and backend specs."""

    pm: pluggy.PluginManager
    loaded: dict[str, str] = field(default_factory=dict)  # plugin name -> origin
    failed: dict[str, str] = field(default_factory=dict)  # plugin name -> error text
    # names from PORTAGRAD_DISABLE_PLUGINS that blocked something (entry-point or spec names)
    blocked: list[str] = field(default_factory=list)
    # device type -> the blocked name that would have served it, where known (built-ins and
    # blocked specs; a plugin blocked by entry-point name is never imported, so its types are not)
    blocked_types: dict[str, str] = field(default_factory=dict)
    specs: dict[str, BackendSpec] = field(default_factory=dict)  # device type -> winning spec
    spec_plugin: dict[str, str] = field(default_factory=dict)  # device type -> plugin name
    backends: dict[str, Any] = field(default_factory=dict)  # device type -> backend object
    backend_errors: dict[str, str] = field(default_factory=dict)  # device type -> load error
    # (plugin name, device type, why it does not serve it): refused or lower-priority specs
    shadowed: list[tuple[str, str, str]] = field(default_factory=list)


_state: PluginState | None = None
_lock = threading.RLock()
_reset_callbacks: list[Callable[[], None]] = []


def _blocklist() -> list[str]:
    raw = os.environ.get("PORTAGRAD_DISABLE_PLUGINS", "")
    return [name.strip() for name in raw.split(",") if name.strip()]


def _error_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _collect_specs(state: PluginState, blocked: list[str]) -> set[str]:
    """Gather the specs of all registered plugins and pick who serves each device type; returns
    the spec names seen (blocked or not)."""
    # Call each implementation separately so that one raising hook cannot hide the others
    # (pluggy lists them in registration order: built-ins first).
    claims: list[tuple[str, BackendSpec]] = []
    seen: set[str] = set()
    for impl in state.pm.hook.portagrad_backends.get_hookimpls():
        name = impl.plugin_name
        try:
            specs: Any = impl.function()  # whatever the plugin returns: checked below
            mine = []
            for spec in specs or ():
                if not isinstance(spec, BackendSpec):
                    raise TypeError(f"portagrad_backends() must return BackendSpec objects, got "
                                    f"{type(spec).__name__}")
                dt = spec.device_type
                if not isinstance(dt, str) or not dt or not dt.replace("_", "").isalnum():
                    raise ValueError(f"BackendSpec {spec.name!r}: device_type must be a device "
                                     f"type name such as 'mydev', got {dt!r}")
                if not isinstance(spec.priority, int):  # compared below, outside this try
                    raise TypeError(f"BackendSpec {spec.name!r}: priority must be an int, got "
                                    f"{type(spec.priority).__name__}")
                mine.append((name, spec))
        except _PLUGIN_ERRORS as exc:  # a broken plugin is reported, never fatal
            state.failed[name] = _error_text(exc)
            state.loaded.pop(name, None)
            continue
        for plugin_name, spec in mine:  # all of a plugin's specs or none
            seen.add(spec.name)
            if spec.name in blocked:  # blocked by its BackendSpec.name: the loader never runs
                if spec.name not in state.blocked:
                    state.blocked.append(spec.name)
                state.blocked_types.setdefault(spec.device_type, spec.name)
                continue
            claims.append((plugin_name, spec))
    contenders = []
    for name, spec in claims:
        owner = _RESERVED.get(spec.device_type)
        if owner is not None and not (name == owner and state.loaded.get(name) == "built-in"):
            state.shadowed.append((name, spec.device_type, _reserved_text(spec.device_type)))
            continue
        contenders.append((name, spec))
        current = state.specs.get(spec.device_type)
        if current is None or spec.priority > current.priority:  # a tie: the first one keeps it
            state.specs[spec.device_type] = spec
            state.spec_plugin[spec.device_type] = name
    for name, spec in contenders:
        best = state.specs[spec.device_type]
        if best is not spec:
            state.shadowed.append((name, spec.device_type,
                                   f"its {spec.device_type!r} backend is shadowed by plugin "
                                   f"{state.spec_plugin[spec.device_type]!r} "
                                   f"(priority {best.priority} against {spec.priority}; on a tie "
                                   f"the first registered wins)"))
    return seen


def _reserved_text(device_type: str) -> str:
    return (f"its {device_type!r} backend is refused: {device_type!r} is reserved for the built-in "
            f"{_RESERVED[device_type]} backend (a third-party plugin cannot replace it)")


def _build() -> PluginState:
    pm = pluggy.PluginManager("portagrad")
    pm.add_hookspecs(hookspecs)
    state = PluginState(pm=pm)
    blocked = _blocklist()
    for name in _BUILTINS:
        if name in blocked:
            state.blocked.append(name)
            state.blocked_types[_BUILTIN_TYPES[name]] = name
            continue
        module = importlib.import_module(f"portagrad.backends.{name}.plugin")
        pm.register(module, name=name)
        state.loaded[name] = "built-in"
    entry_points: Iterable[importlib.metadata.EntryPoint]
    try:
        entry_points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # pragma: no cover - broken metadata in site-packages
        entry_points = ()
        state.failed["<entry points>"] = _error_text(exc)
    known = set(_BUILTINS)
    for ep in entry_points:
        known.add(ep.name)
        if ep.name in state.loaded or ep.name in state.failed:
            continue  # built-ins are declared as entry points too; register once
        if ep.name in blocked:
            if ep.name not in state.blocked:
                state.blocked.append(ep.name)
            continue
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
            dist = getattr(ep, "dist", None)
            state.loaded[ep.name] = f"{ep.value}" + (f" ({dist.name} {dist.version})" if dist else "")
        except _PLUGIN_ERRORS as exc:  # SystemExit included: sys.exit in a vendor import
            state.failed[ep.name] = _error_text(exc)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        state.failed[getattr(exc, "plugin_name", "?")] = _error_text(exc)
    known |= _collect_specs(state, blocked)
    unknown = [name for name in blocked if name not in known]
    if unknown:
        warnings.warn(
            f"PORTAGRAD_DISABLE_PLUGINS names no installed plugin or backend: "
            f"{', '.join(map(repr, unknown))} (known names: {', '.join(sorted(known))})",
            RuntimeWarning, stacklevel=3)
    return state


def get_state() -> PluginState:
    """The manager's state, built on first use."""
    global _state
    if _state is None:
        with _lock:
            if _state is None:
                _state = _build()
    return _state


def reset() -> None:
    """Forget everything (tests use this after changing the environment or installed plugins)."""
    global _state
    with _lock:
        _state = None
    for callback in _reset_callbacks:
        callback()


def on_reset(callback: Callable[[], None]) -> None:
    """Call ``callback()`` after every :func:`reset` (layers above drop what they cached from the
    manager, such as resolved devices)."""
    _reset_callbacks.append(callback)


def device_types() -> list[str]:
    """Device types with a registered backend spec (loaded or not yet loaded)."""
    return sorted(get_state().specs)


def missing_methods(backend: Any) -> list[str]:
    """What ``backend`` lacks of the contract: the small core (``REQUIRED_METHODS``) absent, not
    callable, or inherited unimplemented from :class:`~portagrad.backends.interface.Backend`;
    a method of ``DEFAULTED_METHODS`` only when absent altogether (an object that does not
    subclass ``Backend`` has no defaults to inherit); and ``device_type``."""
    missing = []
    for meth in REQUIRED_METHODS:
        impl = getattr(type(backend), meth, None)
        if impl is None or not callable(impl) or impl is getattr(Backend, meth, None):
            missing.append(meth)
    for meth in DEFAULTED_METHODS:
        if not callable(getattr(type(backend), meth, None)):
            missing.append(meth)
    if not getattr(backend, "device_type", ""):
        missing.append("device_type")
    return missing


def validate_backend(backend: Any, name: str = "?") -> None:
    """Raise :class:`BackendValidationError` listing every required method ``backend`` lacks
    (see :func:`missing_methods`)."""
    missing = missing_methods(backend)
    if missing:
        raise BackendValidationError(
            f"backend {name!r} ({type(backend).__qualname__}) does not implement the required "
            f"method(s): {', '.join(missing)}", backend, missing)


def get_backend(device_type: str) -> Any:
    """The backend object for ``device_type``, loaded and validated on first use."""
    state = get_state()
    backend = state.backends.get(device_type)
    if backend is not None:
        return backend
    with _lock:
        backend = state.backends.get(device_type)
        if backend is not None:
            return backend
        spec = state.specs.get(device_type)
        if spec is None:
            why = ""
            blocker = state.blocked_types.get(device_type)
            if blocker is None and device_type in state.blocked:
                blocker = device_type  # an entry point named after its device type
            unseen = [n for n in state.blocked if n not in state.blocked_types.values()]
            if blocker is not None:
                why = f" (its plugin {blocker!r} is blocked by PORTAGRAD_DISABLE_PLUGINS)"
            elif device_type in state.failed:
                why = f" (its plugin failed to load: {state.failed[device_type]})"
            elif state.failed or unseen:
                # a plugin that was never imported (blocked) or failed before its hook ran may
                # have been the one serving this device type: name them
                maybe = [f"{n!r} (blocked by PORTAGRAD_DISABLE_PLUGINS)" for n in unseen]
                maybe += [f"{n!r} (failed: {err})" for n, err in state.failed.items()]
                why = f" (it may belong to a plugin that did not load: {'; '.join(maybe)})"
            refused = [f"plugin {p!r}: {w}" for p, t, w in state.shadowed if t == device_type]
            if refused:
                why += f" ({'; '.join(refused)})"
            raise BackendUnavailableError(
                f"no backend for device type {device_type!r}{why}; available device types: "
                f"{', '.join(sorted(state.specs)) or 'none'}")
        if device_type in state.backend_errors:
            raise BackendUnavailableError(
                f"the {device_type!r} backend failed to load: {state.backend_errors[device_type]}")
        try:
            backend = spec.loader()
            validate_backend(backend, spec.name)
        except _PLUGIN_ERRORS as exc:
            state.backend_errors[device_type] = _error_text(exc)
            raise BackendUnavailableError(
                f"the {device_type!r} backend (plugin {state.spec_plugin.get(device_type)!r}) "
                f"failed to load: {_error_text(exc)}") from exc
        state.backends[device_type] = backend
        return backend
