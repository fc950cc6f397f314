"""The built-in numpy backend (device type ``cpu``)."""
from .backend import NumpyBackend

__all__ = ["NumpyBackend"]
