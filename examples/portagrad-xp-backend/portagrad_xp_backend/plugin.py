"""The plugin module named by the ``portagrad.backends`` entry point: declares device type ``xp``."""
from __future__ import annotations

from typing import Any

from portagrad.plugins import BackendSpec, hookimpl

__all__ = ["portagrad_backends"]


def _load() -> Any:
    # imported on first use: the array library (torch, jax...) can be heavy to import
    from .backend import XpBackend

    return XpBackend()


@hookimpl
def portagrad_backends() -> list[BackendSpec]:
    """Declare the ``xp`` device type (one device, ``xp:0``)."""
    return [BackendSpec(name="xp", device_type="xp", loader=_load, priority=0,
                        best_device_rank=0)]
