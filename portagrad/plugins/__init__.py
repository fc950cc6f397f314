"""Plugin discovery: pluggy hookspecs, the ``hookimpl`` marker and the plugin manager.

A third-party backend package writes::

    # mypackage/plugin.py
    from portagrad.plugins import BackendSpec, hookimpl

    @hookimpl
    def portagrad_backends():
        return [BackendSpec(name="mybackend", device_type="mydev", loader=make_backend)]

and declares it in its ``pyproject.toml``::

    [project.entry-points."portagrad.backends"]
    mybackend = "mypackage.plugin"
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import pluggy

__all__ = ["hookimpl", "BackendSpec", "ENTRY_POINT_GROUP"]

hookimpl = pluggy.HookimplMarker("portagrad")
ENTRY_POINT_GROUP = "portagrad.backends"


@dataclass
class BackendSpec:
    """Describes one backend a plugin provides.

    ``device_type`` is the string users write (``"opencl"``); ``loader`` builds the backend object
    on first use; among several plugins serving one device type the highest ``priority`` wins;
    ``best_device_rank`` orders device types for ``python -m portagrad demo``'s "best available
    device" (higher is preferred; ``cpu`` is 0).
    """

    name: str
    device_type: str
    loader: Callable[[], Any]
    priority: int = 0
    best_device_rank: int = 0
