"""The pytest plugin of the backend conformance kit.

A backend author runs the kit against their installed backend::

    pytest -p portagrad.testing.plugin --pyargs portagrad.testing.conformance \\
        --portagrad-backend mydev

``--portagrad-backend`` names the device type under test (default: ``PORTAGRAD_CONFORMANCE_BACKEND``
or ``cpu``). The fixtures below give the backend object, its device index, and the numpy reference
backend every result is compared with.
"""
from __future__ import annotations

import os
from typing import Any

import pytest

from portagrad.backends.numpy import NumpyBackend
from portagrad.plugins.manager import get_backend

__all__ = ["pytest_addoption", "conformance_backend", "conformance_device", "reference_backend"]


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
def conformance_backend(request: pytest.FixtureRequest) -> Any:
    """The backend object under test (loading failures fail the run: they are what we check)."""
    return get_backend(_device_type(request.config))


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
