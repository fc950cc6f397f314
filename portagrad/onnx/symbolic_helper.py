"""``torch.onnx.symbolic_helper``: :func:`parse_args`, the decorator ONNX symbolic functions are
declared with."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["parse_args"]

_KINDS = frozenset("vifbsntl")


def parse_args(*arg_descriptors: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare how an exporter should read a symbolic function's arguments (``"v"`` a value,
    ``"i"`` an int, ``"f"`` a float, ``"b"`` a bool, ``"s"`` a string, ``"is"``/``"fs"`` lists,
    ``"t"`` a tensor, ``"none"``); returns the function unchanged, since there is no exporter
    here to call it."""
    for d in arg_descriptors:
        if not isinstance(d, str) or not (d == "none" or set(d) <= _KINDS):
            raise ValueError(f"parse_args: unknown argument descriptor {d!r}")

    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn._arg_descriptors = arg_descriptors  # type: ignore[attr-defined]
        return fn
    return decorator
