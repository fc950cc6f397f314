"""TensorBoard logging (``torch.utils.tensorboard``): :class:`SummaryWriter`.

Events are written by the ``tensorboard`` package's own event-file writer and protocol buffers
(``pip install tensorboard``); this module only turns tensors and numbers into those records.
"""
from __future__ import annotations

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]
