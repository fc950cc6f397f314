"""The plugin module named by the ``portagrad.backends`` entry point."""
from portagrad.plugins import BackendSpec, hookimpl

__all__ = ["portagrad_backends"]


def _load():
    # imported lazily: a heavy vendor SDK would be imported here, on first use only
    from .backend import ExampleBackend

    return ExampleBackend()


@hookimpl
def portagrad_backends():
    """Declare the ``example`` device type."""
    return [BackendSpec(name="example", device_type="example", loader=_load, priority=0,
                        best_device_rank=1)]
