"""Hook specifications: the whole contract between portagrad and its plugins, and nothing else."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from . import BackendSpec

__all__ = ["hookspec", "portagrad_backends"]

hookspec = pluggy.HookspecMarker("portagrad")


@hookspec
def portagrad_backends() -> list[BackendSpec]:  # type: ignore[empty-body]  # a spec: never run
    """Return the backends this plugin provides, as :class:`portagrad.plugins.BackendSpec` s.

    Called once, when the plugin manager starts. Keep it cheap: return specs whose ``loader``
    imports the heavy machinery (pyopencl, a vendor SDK) only when the backend is first used.

    A plugin is a module (or object) with this hook implemented, named by an entry point::

        [project.entry-points."portagrad.backends"]
        mybackend = "mypackage.plugin"
    """
