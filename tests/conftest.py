"""Test configuration: the one ``device`` fixture every backend-dependent test goes through.

Devices come from ``--device`` (repeatable) or ``PORTAGRAD_TEST_DEVICES`` (comma-separated); by
default every backend's first device (``cpu`` and ``opencl:0`` when OpenCL is available). A device
that was asked for explicitly but is unavailable fails the run instead of being skipped, so CI can
never pass silently without the OpenCL backend.

Modules marked ``backend_independent`` (plugin discovery, the conformance kit's planted bugs, the
type check, the example scripts) test the same thing whatever backend the run is about; with
``PORTAGRAD_TEST_BACKEND_INDEPENDENT=elsewhere`` (tox's environments for the Array API backend)
they are deselected, and the header says how many and why.
"""
from __future__ import annotations

import os
import sys
from typing import Any

os.environ.setdefault("POCL_DEVICES", "pthread pthread")  # two PoCL devices for multi-device tests
# OpenCL GEMM tiles and convolution paths chosen by size, not timed: results then depend neither on
# the machine's load nor on a tuning cache left by an earlier run (the tuner's own tests time)
os.environ.setdefault("PORTAGRAD_OPENCL_GEMM_TUNE", "0")

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--device", action="append", default=None,
                     help="device(s) to run device-parametrized tests on (e.g. cpu, opencl:0)")


def _available_default() -> list[str]:
    import portagrad as pg

    devices = ["cpu"]
    if pg.opencl.is_available():
        devices.append("opencl:0")
    return devices


def _selected(config: pytest.Config) -> tuple[list[str], bool]:
    opt = config.getoption("--device")
    env = os.environ.get("PORTAGRAD_TEST_DEVICES")
    if opt:
        return [d for item in opt for d in item.split(",") if d], True
    if env:
        return [d.strip() for d in env.split(",") if d.strip()], True
    return _available_default(), False


BACKEND_INDEPENDENT_ENV = "PORTAGRAD_TEST_BACKEND_INDEPENDENT"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "backend_independent: the test does not depend on the backend the run tests "
                   f"({BACKEND_INDEPENDENT_ENV}=elsewhere deselects it)")
    value = os.environ.get(BACKEND_INDEPENDENT_ENV, "")
    if value not in ("", "elsewhere"):
        raise pytest.UsageError(f"{BACKEND_INDEPENDENT_ENV} must be unset or 'elsewhere', "
                                f"got {value!r}")
    devices, explicit = _selected(config)
    config._pg_devices = devices  # type: ignore[attr-defined]
    if explicit:
        import portagrad as pg

        for d in devices:
            try:
                pg.zeros(1, device=d)
            except Exception as exc:  # an explicitly requested device must exist
                raise pytest.UsageError(f"requested test device {d!r} is unavailable: {exc}") from exc


def pytest_report_header(config: pytest.Config) -> str:
    import portagrad as pg

    lines = [f"portagrad test devices: {', '.join(config._pg_devices)}"]  # type: ignore[attr-defined]
    for d in config._pg_devices:  # type: ignore[attr-defined]
        dev = pg.device(d)
        if dev.type != "cpu":
            mod = getattr(pg, dev.type)
            lines.append(f"  {d}: {mod.get_device_name(dev.index or 0)}")
    return "\n".join(lines)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(BACKEND_INDEPENDENT_ENV) != "elsewhere":
        return
    keep = [it for it in items if it.get_closest_marker("backend_independent") is None]
    gone = [it for it in items if it.get_closest_marker("backend_independent") is not None]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = keep
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"{len(gone)} backend-independent tests deselected "
                                f"({BACKEND_INDEPENDENT_ENV}=elsewhere): the numpy and opencl "
                                "environments run them")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" in metafunc.fixturenames:
        devices = metafunc.config._pg_devices  # type: ignore[attr-defined]
        metafunc.parametrize("device", devices, ids=[d.replace(":", "") for d in devices])


@pytest.fixture
def opencl_devices() -> list[str]:
    """All OpenCL devices, for multi-device tests; skips with the reason when there is none."""
    import portagrad as pg

    n = pg.opencl.device_count()
    if n == 0:
        try:
            pg.zeros(1, device="opencl:0")
            why = "no OpenCL device"
        except Exception as exc:  # say why: not installed here (tox's opencl env runs these)
            why = str(exc)
        pytest.skip(f"OpenCL unavailable in this environment: {why}")
    return [f"opencl:{i}" for i in range(n)]


def torch_shim_conflict(device: str) -> str | None:
    """Why ``device`` cannot run under ``python -m portagrad.compat``, or None.

    There ``import torch`` gives portagrad, so a plugin device that computes with the real
    PyTorch (the Array API backend with ``PORTAGRAD_XP_NAMESPACE=torch``) cannot load in that
    process; it raises an ImportError saying so, and the compat runs skip it with this reason."""
    if device.split(":")[0] == "xp" and \
            os.environ.get("PORTAGRAD_XP_NAMESPACE", "").split(".")[0] == "torch":
        return ("the xp device computes with PyTorch here, which portagrad.compat replaces by "
                "portagrad in its process")
    return None


@pytest.fixture
def torch_shim_ok(device: str) -> None:
    """Skips, with the reason, a device that cannot run under portagrad.compat."""
    why = torch_shim_conflict(device)
    if why:
        pytest.skip(why)


@pytest.fixture(autouse=True)
def _no_deferred_error_left() -> Any:
    """A test that leaves an OpenCL device's deferred check failing (an out-of-range target it
    never read back) fails itself, instead of the next test reading that device."""
    yield
    devices = sys.modules.get("portagrad.backends.opencl.devices")
    if devices is None:
        return
    for dev in list(devices._LIVE):
        if dev.checks:
            try:
                dev.run_checks()
            except Exception as exc:
                pytest.fail(f"the test left a deferred check's error unread on {dev.label}: "
                            f"{type(exc).__name__}: {exc}")
