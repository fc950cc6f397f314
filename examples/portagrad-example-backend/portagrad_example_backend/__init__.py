"""An example third-party portagrad backend (device type ``example``)."""
from .backend import ExampleBackend

__all__ = ["ExampleBackend"]
