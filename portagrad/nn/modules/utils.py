"""``torch.nn.modules.utils``: the argument helpers layers and libraries import from here.

``_pair(3)`` is ``(3, 3)``; an iterable is turned into a tuple as it is (``_pair([1, 2])`` is
``(1, 2)``, no length check, as in PyTorch).
"""
from __future__ import annotations

import collections.abc
from collections.abc import Callable
from itertools import repeat
from typing import Any

__all__ = ["consume_prefix_in_state_dict_if_present", "_ntuple", "_single", "_pair", "_triple",
           "_quadruple", "_reverse_repeat_tuple"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple[Any, ...]]:
    """A parser giving ``tuple(x)`` for an iterable ``x``, else ``x`` repeated ``n`` times."""
    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    """``t`` reversed with each element repeated ``n`` times: conv padding as ``F.pad`` takes
    it."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` (and of its ``_metadata``) in place: a
    ``DataParallel``/``DistributedDataParallel`` state dict (``"module."``) for a plain model."""
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata):
            # '' is the wrapper itself; 'module' (the prefix without its dot) the wrapped model
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix):]] = metadata.pop(key)
