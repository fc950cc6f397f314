"""``nn.parallel``: ``DataParallel`` and its building blocks (scatter, replicate, gather)."""
from .data_parallel import DataParallel, data_parallel, gather, replicate, scatter
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "data_parallel", "scatter", "replicate", "gather", "DistributedDataParallel"]
