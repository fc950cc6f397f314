"""``pg.mps``: the answers ``torch.mps`` gives without the Metal (MPS) backend.

portagrad has no MPS backend: :func:`is_available` is ``False``, :func:`device_count` is 0, seeding
is a no-op, and what needs the device raises ``RuntimeError`` as PyTorch does.
"""
from __future__ import annotations

from typing import NoReturn

__all__ = ["is_available", "is_built", "device_count", "manual_seed", "synchronize", "empty_cache",
           "current_allocated_memory", "driver_allocated_memory", "seed"]


def _no_mps(call: str) -> NoReturn:
    raise RuntimeError(f"Cannot execute {call} without MPS backend. (portagrad has no MPS "
                       f"backend: use pg.accelerator for device-agnostic code)")


def is_available() -> bool:
    """``False``: there is no MPS backend."""
    return False


def is_built() -> bool:
    """``False``: there is no MPS backend."""
    return False


def device_count() -> int:
    """``0``."""
    return 0


def manual_seed(seed: int) -> None:
    """No-op without MPS, as PyTorch."""


def seed() -> None:
    """Raises: there is no MPS generator."""
    _no_mps("getDefaultGenerator()")


def synchronize() -> None:
    """Raises: there is no MPS device."""
    _no_mps("deviceSynchronize()")


def empty_cache() -> None:
    """Raises: there is no MPS allocator."""
    _no_mps("emptyCache()")


def current_allocated_memory() -> int:
    """Raises: there is no MPS allocator."""
    _no_mps("getCurrentAllocatedMemory()")


def driver_allocated_memory() -> int:
    """Raises: there is no MPS allocator."""
    _no_mps("getDriverAllocatedMemory()")
