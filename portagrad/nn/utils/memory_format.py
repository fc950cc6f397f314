"""``torch.nn.utils.convert_conv2d_weight_memory_format`` and ``..._conv3d_...``.

Every portagrad tensor is stored contiguously in row-major order, so there is no channels-last
weight layout to switch to. The conversions therefore validate their arguments exactly where
PyTorch's would fail (at each convolution of the matching rank in the module tree) and hand the
module back unchanged."""
from __future__ import annotations

from typing import TypeVar

from ..._memory_format import (channels_last, channels_last_3d, memory_format as _memory_format,
                               preserve_format)
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

_M = TypeVar("_M", bound=Module)

# the weight rank each channels-last format needs
_REQUIRED_RANK = {channels_last: ("channels_last", 4), channels_last_3d: ("channels_last_3d", 5)}


def _validate(memory_format: object, weight_rank: int) -> None:
    """Raise as PyTorch's weight conversion of a rank-``weight_rank`` weight would."""
    if not isinstance(memory_format, _memory_format):
        raise TypeError("clone(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(memory_format).__name__}")
    if memory_format is preserve_format:
        raise RuntimeError("Unsupported memory formatPreserve")
    required = _REQUIRED_RANK.get(memory_format)
    if required is not None and required[1] != weight_rank:
        raise RuntimeError(f"required rank {required[1]} tensor to use {required[0]} format")


def _walk(module: Module, memory_format: object, convs: tuple[type, ...], rank: int) -> None:
    if not isinstance(module, Module):
        raise AttributeError(f"'{type(module).__name__}' object has no attribute 'children'")
    stack = [module]
    while stack:
        current = stack.pop()
        if isinstance(current, convs):
            _validate(memory_format, rank)
        stack.extend(reversed(list(current.children())))


def convert_conv2d_weight_memory_format(module: _M, memory_format: _memory_format) -> _M:
    """Convert the weights of every ``Conv2d`` / ``ConvTranspose2d`` in ``module`` to
    ``memory_format``. In portagrad (contiguous storage only) this checks the arguments and
    changes nothing. Returns ``module``."""
    _walk(module, memory_format, (Conv2d, ConvTranspose2d), 4)
    return module


def convert_conv3d_weight_memory_format(module: _M, memory_format: _memory_format) -> _M:
    """Like :func:`convert_conv2d_weight_memory_format`, for ``Conv3d`` / ``ConvTranspose3d``
    (rank-5 weights). Returns ``module``."""
    _walk(module, memory_format, (Conv3d, ConvTranspose3d), 5)
    return module
