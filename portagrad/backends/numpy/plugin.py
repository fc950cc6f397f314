"""Plugin module of the numpy backend: registered like any third-party backend."""
from __future__ import annotations

from ...plugins import BackendSpec, hookimpl

__all__ = ["portagrad_backends"]


def _load():
    from .backend import NumpyBackend

    return NumpyBackend()


@hookimpl
def portagrad_backends() -> list[BackendSpec]:
    """The ``cpu`` device type, served by numpy."""
    return [BackendSpec(name="numpy", device_type="cpu", priority=0, loader=_load)]
