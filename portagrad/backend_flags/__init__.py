"""PyTorch's ``torch.backends`` flag modules: ``cpu``, ``cuda``, ``cudnn``, ``mkldnn``, ``mps``,
``opt_einsum``.

They answer as PyTorch does on a machine without those libraries, and refuse values PyTorch
refuses. ``portagrad.backends`` (the array-backend plugins) re-exports them, so that
``pg.backends.cudnn.benchmark`` works as ``torch.backends.cudnn.benchmark`` does; under
``python -m portagrad.compat``, ``torch.backends`` is this package.
"""
from . import (cpu as cpu, cuda as cuda, cudnn as cudnn, mkldnn as mkldnn, mps as mps,
               opt_einsum as opt_einsum)

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "opt_einsum"]
