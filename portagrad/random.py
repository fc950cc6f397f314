"""``torch.random``: the default generator's seed and state, and :func:`fork_rng`.

portagrad has one default :class:`~portagrad.Generator`, shared by every device (a Philox stream
that gives the same numbers on the CPU and on OpenCL devices), so forking it saves and restores
that one state whatever ``devices`` lists.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from ._random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed,
                      seed, set_rng_state)
from ._toplevel_random import thread_safe_generator

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state", "thread_safe_generator"]


@contextlib.contextmanager
def fork_rng(devices: Iterable[Any] | None = None, enabled: bool = True,
             _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cuda") -> Iterator[None]:
    """Inside the block, draw from the default generator freely; on leaving, its state is what
    it was on entering (``enabled=False``: nothing is saved or restored)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
