"""Array backends: the contract (:mod:`.interface`) and the built-in numpy and OpenCL backends."""
from . import mps
from .interface import Backend, DeviceProperties, View

__all__ = ["Backend", "DeviceProperties", "View", "mps"]
