"""``torch.backends.cudnn``: cuDNN's flags, as PyTorch answers on a machine without CUDA.

portagrad has no cuDNN backend, so :func:`is_available` is False and :func:`version` is None. The
flags are kept (and type-checked as PyTorch does) so that scripts which set them run unchanged;
they change nothing in portagrad, which has no autotuning and no TF32 paths.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from ._flags import install_flags

__all__ = ["is_available", "version", "is_acceptable", "flags", "enabled", "benchmark",
           "deterministic", "allow_tf32", "benchmark_limit"]

# Declared for type checkers; the values live behind the properties install_flags adds.
enabled: bool
benchmark: bool
deterministic: bool
allow_tf32: bool
benchmark_limit: int | None = None  # PyTorch answers None when cuDNN is not available


def is_available() -> bool:
    """Whether cuDNN can be used: never in portagrad."""
    return False


def version() -> int | None:
    """The cuDNN version: None, as PyTorch answers when cuDNN is not available."""
    return None


def is_acceptable(tensor: Any) -> bool:
    """Whether cuDNN would run an op on ``tensor``: never in portagrad."""
    return False


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True) -> Iterator[None]:
    """Set the flags inside a ``with`` block and restore them after, as ``torch.backends.cudnn.flags``."""
    mod: Any = sys.modules[__name__]  # the module object, whose properties validate the values
    saved = (mod.enabled, mod.benchmark, mod.deterministic, mod.allow_tf32)
    mod.enabled, mod.benchmark, mod.deterministic, mod.allow_tf32 = (
        enabled, benchmark, deterministic, allow_tf32)
    try:
        yield
    finally:
        mod.enabled, mod.benchmark, mod.deterministic, mod.allow_tf32 = saved


install_flags(__name__, {
    "enabled": (True, "set_enabled_cudnn"),
    "benchmark": (False, "set_benchmark_cudnn"),
    "deterministic": (False, "set_deterministic_cudnn"),
    "allow_tf32": (True, "set_allow_tf32_cudnn"),
})
