"""``torch.types``: the type aliases annotations in libraries import (``Number``, ``Device``,
``_size`` ...), over portagrad's classes (``_dtype`` is :class:`portagrad.dtype`, ``_device``
:class:`portagrad.device`, as in PyTorch)."""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import IO

from ._device import device as _device
from ._dtype import dtype as _dtype
from ._storage import Size
from ._tensor import Tensor

__all__ = ["Number", "Device", "FileLike", "_device", "_dtype", "_size", "_TensorOrTensors"]

_TensorOrTensors = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors = Tensor | Sequence[Tensor | None]
_size = Size | list[int] | tuple[int, ...]
_int = int
_float = float
_bool = bool
_complex = complex
_str = str
Number = int | float | bool
_Number = (int, float, bool)
FileLike = str | os.PathLike[str] | IO[bytes]
Device = _device | str | int | None
