"""Array backends: the contract (:mod:`.interface`) and the built-in numpy and OpenCL backends.

``cuda``, ``cudnn``, ``mkldnn``, ``mps`` and ``opt_einsum`` are PyTorch's ``torch.backends`` flag modules,
which live in :mod:`portagrad.backend_flags` and are re-exported here under PyTorch's names.
"""
from ..backend_flags import (cuda as cuda, cudnn as cudnn, mkldnn as mkldnn, mps as mps,
                             opt_einsum as opt_einsum)
from .interface import Backend, DeviceProperties, View

__all__ = ["Backend", "DeviceProperties", "View", "cuda", "cudnn", "mkldnn", "mps",
           "opt_einsum"]
