"""``torch.nn.modules.instancenorm``: the instance-norm layers under PyTorch's module path (they
are defined beside batch norm, in :mod:`portagrad.nn.modules.batchnorm`)."""
from __future__ import annotations

from .batchnorm import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LazyInstanceNorm1d,
                        LazyInstanceNorm2d, LazyInstanceNorm3d, _InstanceNorm)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d", "_InstanceNorm"]
