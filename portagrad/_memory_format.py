"""Memory formats (``pg.preserve_format``, ``pg.contiguous_format``), as PyTorch's.

Tensors made by factories here are always dense and row-major, which is what both of these ask
for (``preserve_format`` keeps a dense input's layout in PyTorch; here the values are the same and
the result is contiguous). ``channels_last`` exists as a name, but factories refuse it: other
layouts are not implemented.
"""
from __future__ import annotations

from typing import Any

__all__ = ["memory_format", "preserve_format", "contiguous_format", "channels_last",
           "channels_last_3d", "check_memory_format"]


class memory_format:
    """A memory format singleton (compare with ``is``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"portagrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")  # named so scripts load; factories refuse it
channels_last_3d = memory_format("channels_last_3d")


def check_memory_format(fmt: Any, fn: str) -> None:
    """Accept ``None`` and the two formats factories produce; refuse anything else clearly."""
    if fmt is None or fmt is preserve_format or fmt is contiguous_format:
        return
    if isinstance(fmt, memory_format):
        raise NotImplementedError(f"{fn}(): memory_format={fmt} is not implemented (tensors are "
                                  f"dense row-major: use preserve_format or contiguous_format)")
    raise TypeError(f"{fn}(): argument 'memory_format' must be a memory_format, not "
                    f"{type(fmt).__name__}")
