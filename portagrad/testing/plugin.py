"""The pytest plugin of the backend conformance kit.

A backend author runs the kit against their installed backend::

    pytest -p portagrad.testing.plugin --pyargs portagrad.testing.conformance \\
        --portagrad-backend mydev

``--portagrad-backend`` names the device type under test (default: ``PORTAGRAD_CONFORMANCE_BACKEND``
or ``cpu``). The fixtures below give the backend object, its device index, and the numpy reference
backend every result is compared with.

A backend that lacks required methods of the contract, or fails to load at all, is reported by
ONE failing test, ``test_contract_is_complete``, naming what is missing (or the load error); every
other test is skipped with that reason rather than erroring on its own.
"""
from __future__ import annotations

import os
from typing import Any

import pytest

from portagrad.backends.numpy import NumpyBackend
from portagrad.plugins.manager import (BackendUnavailableError, BackendValidationError,
                                       get_backend)

__all__ = ["pytest_addoption", "conformance_backend", "conformance_device", "reference_backend",
           "conformance_contract"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("portagrad", "portagrad backend conformance kit")
    group.addoption("--portagrad-backend", default=None,
                    help="device type of the backend to check (e.g. opencl, mydev)")


def _device_type(config: pytest.Config) -> str:
    return (config.getoption("--portagrad-backend")
            or os.environ.get("PORTAGRAD_CONFORMANCE_BACKEND") or "cpu")


def pytest_report_header(config: pytest.Config) -> str:
    return f"portagrad conformance kit: backend under test = {_device_type(config)!r}"


@pytest.fixture(scope="session")
def conformance_contract(request: pytest.FixtureRequest) -> tuple[Any, str | None]:
    """``(backend, problem)``: the backend object under test (``None`` if it did not load) and,
    when it is incomplete or failed to load, the message saying so (``None`` when all is well).
    Only ``test_contract_is_complete`` fails on the problem; the other tests skip."""
    device_type = _device_type(request.config)
    try:
        return get_backend(device_type), None
    except BackendUnavailableError as exc:
        cause = exc.__cause__
        if isinstance(cause, BackendValidationError) and cause.backend is not None:
            return cause.backend, (f"backend {device_type!r} lacks required method(s) of the "
                                   f"contract: {', '.join(cause.missing)}")
        return None, f"backend {device_type!r} failed to load: {exc}"


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
