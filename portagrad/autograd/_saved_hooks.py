"""The state of ``saved_tensors_hooks``: the pack/unpack pairs in force on this thread.

Kept apart from :mod:`~portagrad.autograd.graph` (the public context managers) so that
``Function.apply`` can consult it without importing the API layer. ``ACTIVE[0]`` counts the
hook contexts open on any thread: while it is zero (always, unless a program uses these hooks)
saving tensors costs one integer test more.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ACTIVE", "stack", "disabled_message", "pack_saved", "UNPACK"]

ACTIVE = [0]
_local = threading.local()

# a saved entry of a Function whose tensor went through a pack hook: (packed, UNPACK, is_output,
# nr, unpack); UNPACK in the version slot tells ``saved_tensors`` to call ``unpack(packed)``
UNPACK = object()


def stack() -> list[tuple[Callable[[Any], Any], Callable[[Any], Any]]]:
    """This thread's (pack, unpack) pairs, innermost last."""
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def disabled_message() -> list[str]:
    """This thread's messages of the open ``disable_saved_tensors_hooks`` blocks."""
    d = getattr(_local, "disabled", None)
    if d is None:
        d = _local.disabled = []
    return d


def pack_saved(saved: list[Any]) -> list[Any]:
    """``saved`` (a ctx's entries) with each tensor replaced by what the innermost pack hook
    returns for it, as PyTorch packs at save time."""
    s = stack()
    if not s:
        return saved
    pack, unpack = s[-1]
    out: list[Any] = []
    for entry in saved:
        if entry is None or entry[1] is UNPACK:
            out.append(entry)
            continue
        t, _version, is_output, nr = entry
        out.append((pack(t), UNPACK, is_output, nr, unpack))
    return out
