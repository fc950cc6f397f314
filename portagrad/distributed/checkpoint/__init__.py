"""Distributed checkpoints (``torch.distributed.checkpoint``): :func:`save` and :func:`load` of
sharded state dicts as safetensors files plus a JSON index, loadable on another world size;
``state_dict`` gathers or scatters a sharded model's state dict."""
from __future__ import annotations

from . import state_dict
from ._dcp import FileSystemReader, FileSystemWriter, load, save

__all__ = ["save", "load", "FileSystemWriter", "FileSystemReader", "state_dict"]
