"""Module objects whose attributes are typed flags, as PyTorch's ``torch.backends.*`` modules.

PyTorch's flag modules (``torch.backends.cudnn`` ...) are modules whose class has properties, so
that ``cudnn.benchmark = "yes"`` is refused with a ``RuntimeError`` instead of being stored. The
flag modules here do the same: :func:`install_flags` swaps the module's class for a subclass with
one property per flag.
"""
from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["install_flags", "check_bool"]


def check_bool(setter: str, value: Any) -> bool:
    """``value`` if it is a bool, else PyTorch's ``RuntimeError`` naming the setter."""
    if not isinstance(value, bool):
        raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")
    return value


def _flag(name: str, setter: str) -> property:
    def get(self: types.ModuleType) -> bool:
        return bool(self.__dict__["_flags"][name])

    def put(self: types.ModuleType, value: Any) -> None:
        self.__dict__["_flags"][name] = check_bool(setter, value)

    return property(get, put, doc=f"The ``{name}`` flag (a bool).")


def install_flags(module_name: str, flags: dict[str, tuple[bool, str]]) -> None:
    """Give module ``module_name`` the bool properties ``flags``: ``name -> (default, setter)``.

    ``setter`` is the name PyTorch's error message gives (``set_benchmark_cudnn``).
    """
    mod = sys.modules[module_name]
    props = {name: _flag(name, setter) for name, (_, setter) in flags.items()}
    cls = type(f"{module_name.rpartition('.')[2].capitalize()}Module", (types.ModuleType,), props)
    mod.__dict__["_flags"] = {name: default for name, (default, _) in flags.items()}
    mod.__class__ = cls
