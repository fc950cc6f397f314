"""The pytest plugin of the backend conformance kit.

A backend author runs the kit against their installed backend::

    pytest -p portagrad.testing.plugin --pyargs portagrad.testing.conformance \\
        --portagrad-backend mydev

``--portagrad-backend`` names the device type under test (default: ``PORTAGRAD_CONFORMANCE_BACKEND``
or ``cpu``). The fixtures below give the backend object, its device index, and the numpy reference
backend every result is compared with.

A backend object can also be checked without installing a plugin::

    pytest -p portagrad.testing.plugin --pyargs portagrad.testing.conformance \\
        --portagrad-backend-object mypackage.mymodule:make_backend

``--portagrad-backend-object`` names ``module:attribute`` (or ``path/to/file.py:attribute``); the
attribute is a backend class or a factory called with no arguments, or a backend object. The object
is registered with the plugin manager under its ``device_type`` (highest priority, for this test
session only), so the tests that go through the public API (``pg.randn(device="mydev:0")``) use it
too. Its ``device_type`` must not be ``cpu`` (reserved for the built-in numpy backend): a subclass of
the numpy backend under test sets its own. This option overrides ``--portagrad-backend``.

A backend that lacks required methods of the contract, or fails to load at all, is reported by
ONE failing test, ``test_contract_is_complete``, naming what is missing (or the load error); every
other test is skipped with that reason rather than erroring on its own. Tests of an optional method
(``conv2d``, ``pin_memory``, the events...) skip when the backend does not have it.

Tests of a dtype the backend declines (its ``from_host``/``to_host`` raise
:class:`~portagrad.errors.DTypeError`, or float64 on a device without fp64) skip too; the terminal
summary lists the declined dtypes with the reason, so a skipped dtype is never mistaken for a
checked one.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from portagrad.backends.numpy import NumpyBackend
from portagrad.plugins import BackendSpec, hookimpl
from portagrad.plugins.manager import (BackendUnavailableError, BackendValidationError,
                                       get_backend, get_state, reset)

__all__ = ["pytest_addoption", "pytest_configure", "pytest_unconfigure", "pytest_terminal_summary",
           "conformance_backend", "conformance_device", "reference_backend", "conformance_contract",
           "conformance_origin", "load_object"]

_OBJECT_KEY = pytest.StashKey[Any]()
_REF_KEY = pytest.StashKey[str]()
_BACKEND_KEY = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("portagrad", "portagrad backend conformance kit")
    group.addoption("--portagrad-backend", default=None,
                    help="device type of the backend to check (e.g. opencl, mydev)")
    group.addoption("--portagrad-backend-object", default=None, metavar="MODULE:ATTR",
                    help="check this backend object (a class, factory or instance named as "
                         "module:attribute or file.py:attribute) without installing a plugin")


def load_object(ref: str) -> Any:
    """The backend object named by ``module:attribute`` or ``path/to/file.py:attribute``: the
    attribute itself, or what it returns when it is a class or function."""
    target, sep, attr = ref.rpartition(":")
    if not sep or not target or not attr:
        raise pytest.UsageError(f"--portagrad-backend-object expects module:attribute, got {ref!r}")
    if target.endswith(".py"):
        path = Path(target).resolve()
        if not path.is_file():
            raise pytest.UsageError(f"--portagrad-backend-object: no file {str(path)!r}")
        name = f"_portagrad_conformance_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look their module up
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise pytest.UsageError(f"--portagrad-backend-object: {target!r} has no attribute "
                                f"{attr!r}") from None
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "unary")):
        return obj()  # a backend class or a factory
    return obj


class _ObjectPlugin:
    """A plugin serving one backend object (what an entry point would provide)."""

    def __init__(self, spec: BackendSpec) -> None:
        self.spec = spec

    @hookimpl
    def portagrad_backends(self) -> list[BackendSpec]:
        return [self.spec]


def _register(backend: Any, origin: str) -> str:
    device_type = getattr(backend, "device_type", "")
    if not isinstance(device_type, str) or not device_type or device_type == "cpu":
        raise pytest.UsageError(
            f"--portagrad-backend-object {origin}: the backend's device_type must name its own "
            f"device type (not 'cpu', which the built-in numpy backend keeps), got {device_type!r}")
    state = get_state()
    name = f"conformance-{device_type}"
    spec = BackendSpec(name=name, device_type=device_type, loader=lambda: backend,
                       priority=1 << 30)
    plugin = _ObjectPlugin(spec)
    state.pm.register(plugin, name=name)
    # what the manager's discovery would have recorded for an installed plugin
    state.loaded[name] = f"--portagrad-backend-object {origin}"
    state.specs[device_type] = spec
    state.spec_plugin[device_type] = name
    state.backends.pop(device_type, None)
    state.backend_errors.pop(device_type, None)
    return device_type


def pytest_configure(config: pytest.Config) -> None:
    # IEEE results (NaN, inf) are what the edge cases compute on purpose: numpy's warnings about
    # them, from the reference backend or the reference values, are noise here
    for msg in ("invalid value encountered", "divide by zero encountered", "overflow encountered"):
        config.addinivalue_line("filterwarnings", f"ignore:{msg}:RuntimeWarning")
    ref = config.getoption("--portagrad-backend-object", None)
    if ref:
        backend = load_object(ref)
        config.stash[_OBJECT_KEY] = _register(backend, ref)
        config.stash[_REF_KEY] = ref


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(_OBJECT_KEY, None) is not None:
        reset()  # forget the registered object: the next session rediscovers the plugins


def _device_type(config: pytest.Config) -> str:
    registered = config.stash.get(_OBJECT_KEY, None)
    if registered is not None:
        return str(registered)
    return (config.getoption("--portagrad-backend")
            or os.environ.get("PORTAGRAD_CONFORMANCE_BACKEND") or "cpu")


def pytest_report_header(config: pytest.Config) -> str:
    return f"portagrad conformance kit: backend under test = {_device_type(config)!r}"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Which dtypes the backend under test stores and which it declines (their tests skipped)."""
    backend = config.stash.get(_BACKEND_KEY, None)
    if backend is None:  # no kit test ran, or the backend did not load
        return
    from .conformance._util import declined_dtypes, supported_dtypes

    write = terminalreporter.write_line
    terminalreporter.section("portagrad conformance kit: dtypes")
    try:
        stored, declined = supported_dtypes(backend), declined_dtypes(backend)
    except Exception as exc:  # the probe itself failed: the tests report it
        write(f"could not probe the dtypes of {_device_type(config)!r}: {exc!r}")
        return
    write(f"backend {_device_type(config)!r} stores: {', '.join(d.name for d in stored)}")
    if declined:
        write("declines (every test of these dtypes skipped):")
        for name, why in declined:
            write(f"  {name}: {why}")
    else:
        write("declines no dtype")


@pytest.fixture(scope="session")
def conformance_contract(request: pytest.FixtureRequest) -> tuple[Any, str | None]:
    """``(backend, problem)``: the backend object under test (``None`` if it did not load) and,
    when it is incomplete or failed to load, the message saying so (``None`` when all is well).
    Only ``test_contract_is_complete`` fails on the problem; the other tests skip."""
    device_type = _device_type(request.config)
    try:
        backend = get_backend(device_type)
    except BackendUnavailableError as exc:
        cause = exc.__cause__
        if isinstance(cause, BackendValidationError) and cause.backend is not None:
            return cause.backend, (f"backend {device_type!r} lacks required method(s) of the "
                                   f"contract: {', '.join(cause.missing)}")
        return None, f"backend {device_type!r} failed to load: {exc}"
    request.config.stash[_BACKEND_KEY] = backend
    return backend, None


@pytest.fixture(scope="session")
def conformance_origin(request: pytest.FixtureRequest) -> tuple[str, str]:
    """How a fresh process builds the backend under test: ``("object", "module:attr")`` for
    ``--portagrad-backend-object``, else ``("type", device_type)`` (through the plugins)."""
    ref = request.config.stash.get(_REF_KEY, None)
    if ref is not None:
        target, _, attr = ref.rpartition(":")
        if target.endswith(".py"):  # the other process may run elsewhere: an absolute path
            ref = f"{Path(target).resolve()}:{attr}"
        return "object", ref
    return "type", _device_type(request.config)


@pytest.fixture(scope="session")
def conformance_backend(conformance_contract: tuple[Any, str | None]) -> Any:
    """The backend object under test; skips (with the reason) when it is incomplete or did not
    load, which ``test_contract_is_complete`` reports as the one failure."""
    backend, problem = conformance_contract
    if problem is not None:
        pytest.skip(f"{problem} (reported by test_contract_is_complete)")
    return backend


@pytest.fixture(scope="session")
def conformance_device(request: pytest.FixtureRequest, conformance_backend: Any) -> str:
    """The device string of the first device of the backend under test."""
    device_type = _device_type(request.config)
    if conformance_backend.device_count() < 1:
        pytest.fail(f"backend {device_type!r} reports no devices")
    return device_type if device_type == "cpu" else f"{device_type}:0"


@pytest.fixture(scope="session")
def reference_backend() -> Any:
    """The numpy backend: the reference every primitive is compared with."""
    return NumpyBackend()
