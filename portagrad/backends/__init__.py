"""Array backends: the contract (:mod:`.interface`) and the built-in numpy and OpenCL backends.

Also PyTorch's ``torch.backends`` flag modules (:mod:`.cudnn`, :mod:`.cuda`, :mod:`.mps`,
:mod:`.opt_einsum`), answering as PyTorch does on a machine without CUDA or MPS.
"""
from . import cuda, cudnn, mps, opt_einsum  # PyTorch's torch.backends flag modules
from .interface import Backend, DeviceProperties, View

__all__ = ["Backend", "DeviceProperties", "View", "cuda", "cudnn", "mps", "opt_einsum"]
