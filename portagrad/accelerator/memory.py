"""Memory statistics of the current accelerator (``torch.accelerator.memory``).

The statistics come from the backend's ``memory_stats(index)`` (bytes in live buffers, bytes held
including the allocator's cache, the peak of the former) under PyTorch's flat key names. Without
an accelerator, as in PyTorch, the queries answer empty or zero and ``empty_cache`` does nothing.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ._select import device_index_of, module, require

__all__ = ["empty_cache", "empty_host_cache", "get_memory_info", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats"]

# backend key -> PyTorch's flat key
_KEYS = {"allocated": "allocated_bytes.all.current", "peak_allocated": "allocated_bytes.all.peak",
         "reserved": "reserved_bytes.all.current", "peak_reserved": "reserved_bytes.all.peak",
         "num_allocs": "num_device_alloc"}


def empty_cache() -> None:
    """Give the accelerator's cached, unused memory back to the device (no-op without one)."""
    mod = module()
    if mod is not None:
        mod.empty_cache()


def empty_host_cache() -> None:
    """Release cached pinned host memory. Pinned buffers here are freed with their tensors (there
    is no host cache), so this has nothing to do."""


def memory_stats(device_index: Any = None, /) -> OrderedDict[str, Any]:
    """The allocator's statistics for a device of the accelerator, under PyTorch's key names
    (``allocated_bytes.all.current``, ``allocated_bytes.all.peak``,
    ``reserved_bytes.all.current`` ...); empty without an accelerator."""
    mod = module()
    if mod is None:
        return OrderedDict()
    raw = mod._backend().memory_stats(device_index_of(device_index, optional=True))
    return OrderedDict(sorted((_KEYS[k], int(v)) for k, v in raw.items() if k in _KEYS))


def memory_allocated(device_index: Any = None, /) -> int:
    """Bytes held by live tensors on the device."""
    return memory_stats(device_index).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device_index: Any = None, /) -> int:
    """Peak of :func:`memory_allocated` since the start or the last
    :func:`reset_peak_memory_stats`."""
    return memory_stats(device_index).get("allocated_bytes.all.peak", 0)


def memory_reserved(device_index: Any = None, /) -> int:
    """Bytes held by the allocator on the device, its cache included."""
    return memory_stats(device_index).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device_index: Any = None, /) -> int:
    """Peak of :func:`memory_reserved`; ``NotImplementedError`` when the backend does not track it
    (rather than a made-up figure)."""
    stats = memory_stats(device_index)
    if stats and "reserved_bytes.all.peak" not in stats:
        raise NotImplementedError(
            f"max_memory_reserved: the {require().device_type!r} backend does not track the peak "
            f"of reserved memory (its memory_stats() has no 'peak_reserved')")
    return stats.get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device_index: Any = None, /) -> None:
    """Restart the peak statistics from the current values."""
    mod = require()
    mod._backend().reset_peak_memory_stats(device_index_of(device_index, optional=True))


def reset_accumulated_memory_stats(device_index: Any = None, /) -> None:
    """Reset the accumulated counters; ``NotImplementedError``: the backend contract has no such
    reset (its counters only grow)."""
    require()
    raise NotImplementedError("reset_accumulated_memory_stats: the backend contract has no reset "
                              "of accumulated counters")


def get_memory_info(device_index: Any = None, /) -> tuple[int, int]:
    """``(free, total)`` bytes of the device. OpenCL cannot report memory used by other
    processes, so ``free`` is the total less what this process's allocator holds."""
    mod = require()
    index = device_index_of(device_index, optional=True)
    backend = mod._backend()
    total = int(backend.get_device_properties(index).total_memory)
    reserved = int(backend.memory_stats(index).get("reserved", 0))
    return max(0, total - reserved), total
