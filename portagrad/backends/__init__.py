"""Array backends: the contract (:mod:`.interface`) and the built-in numpy and OpenCL backends."""
from . import mps
from .interface import Backend, DeviceProperties, View
from . import cuda as cuda, cudnn as cudnn, opt_einsum as opt_einsum  # torch.backends flags

__all__ = ["Backend", "DeviceProperties", "View", "mps"]
