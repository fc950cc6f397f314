"""Shared machinery of the case tables that pin PyTorch's behaviour (tests/test_torch_*.py).

Each table maps a name to ``(case, want)``: ``case`` computes something with a library (portagrad
or torch) on a device; ``want`` is the literal answer (``(values, dtype name)``, a list, or
:class:`Raises`). The literal answers make the tables meaningful where torch is not installed (CI);
where it is, the same cases run on torch to confirm that the answers are PyTorch's.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import pytest

try:
    import torch
    import torch.nn.functional as torchF
except ImportError:  # optional: the literal answers still hold the cases
    torch = None
    torchF = None

__all__ = ["Raises", "raises_text", "outcome", "same", "check", "torch", "torchF"]


class Raises:
    """The expected error: its class and a regular expression its message matches."""

    def __init__(self, exc: type, match: str) -> None:
        self.exc, self.match = exc, match


def raises_text(exc: type, fragment: str) -> Raises:
    """:class:`Raises` for a message that contains ``fragment`` literally."""
    return Raises(exc, re.escape(fragment))


def outcome(r: Any) -> Any:
    """A result as comparable plain data: a list as it is, a tensor as (values, dtype name)."""
    if isinstance(r, list):
        return r
    return r.tolist(), str(r.dtype).rsplit(".", 1)[-1]


def same(got: Any, want: Any) -> bool:
    """Equal values of the same Python types, NaN equal to NaN."""
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, (list, tuple)):
        return (isinstance(got, (list, tuple)) and len(got) == len(want)
                and all(same(g, w) for g, w in zip(got, want)))
    return bool(got == want) and type(got) is type(want)


def check(case: Callable[..., Any], want: Any, *args: Any) -> None:
    """Run ``case(*args)`` and compare with ``want`` (an answer or :class:`Raises`). An error may
    come from the call or from the first read of its result: a device that checks indices late
    (OpenCL, as CUDA) raises there."""
    if isinstance(want, Raises):
        with pytest.raises(want.exc, match=want.match):
            r = case(*args)
            if hasattr(r, "tolist"):
                r.tolist()
        return
    got = outcome(case(*args))
    assert same(got, want), f"got {got}, expected {want}"
