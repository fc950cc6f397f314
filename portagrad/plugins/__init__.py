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

Names: the entry-point name (``mybackend`` on the left above) names the *plugin* (``python -m
portagrad info`` lists plugins by it); ``BackendSpec.name`` names one *backend* the plugin provides;
``device_type`` is what users write. They may differ. ``PORTAGRAD_DISABLE_PLUGINS`` accepts an
entry-point name (the plugin is not even imported) or a ``BackendSpec.name`` (that backend is
dropped; its loader never runs); an unknown name warns.

A plugin that fails (an ``Exception`` or ``SystemExit`` at import, in its hook or in its loader) is
recorded and reported, never fatal. The device type ``cpu`` belongs to the built-in numpy backend:
a third-party spec for it is refused. Any other device type is served by the spec with the highest
``priority`` (on a tie, the first registered). ``python -m portagrad info`` lists refused and
shadowed specs with the reason.
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

    ``name`` names this backend (shown by ``python -m portagrad info`` when it differs from the
    plugin's entry-point name, and accepted by ``PORTAGRAD_DISABLE_PLUGINS`` to drop just this
    backend); it need not equal the entry-point name nor the device type.
    ``device_type`` is the string users write (``"opencl"``; letters, digits and ``_``);
    ``loader`` builds the backend object on first use; among several plugins serving one device
    type the highest ``priority`` (an int) wins, and on a tie the first registered (built-ins
    register first). ``cpu`` is the exception: it is reserved for the built-in numpy backend, and a
    third-party spec for ``cpu`` is refused whatever its priority, so a broken plugin can never
    take the host device away;
    ``best_device_rank`` orders device types for ``python -m portagrad demo``'s "best available
    device" (higher is preferred; ``cpu`` is 0).
    """

    name: str
    device_type: str
    loader: Callable[[], Any]
    priority: int = 0
    best_device_rank: int = 0
