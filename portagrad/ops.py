"""``torch.ops``: operators by namespace, ``torch.ops.<namespace>.<name>(...)``.

The operators here are those defined from Python with :mod:`portagrad.library`
(``custom_op``, ``Library.define`` + ``impl``); PyTorch's built-in namespaces (``aten``,
``prims``) are not provided, and :func:`load_library` cannot load compiled extensions (``.so``
files built against PyTorch's C++ API), so it raises.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExtensionLoadError", "OpOverloadPacket", "load_library", "loaded_libraries"]


@dataclass
class _OpEntry:
    qualname: str
    schema: str | None = None
    impls: dict[str, Callable[..., Any]] = field(default_factory=dict)
    fake: Callable[..., Any] | None = None
    autograd: tuple[Callable[..., Any], Callable[..., Any] | None] | None = None


#: qualified name ("ns::name") -> its definition and implementations
_REGISTRY: dict[str, _OpEntry] = {}

loaded_libraries: set[str] = set()


class OpOverloadPacket:
    """A defined operator: calling it runs its implementation (``CompositeImplicitAutograd``,
    ``CompositeExplicitAutograd`` or a device key's: devices are not told apart here)."""

    def __init__(self, entry: _OpEntry) -> None:
        self._entry = entry
        self.__name__ = entry.qualname.split("::")[1]
        self._qualified_op_name = entry.qualname

    @property
    def default(self) -> OpOverloadPacket:
        """The overload without a name (the operator itself here)."""
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        impls = self._entry.impls
        if not impls:
            raise NotImplementedError(f"{self._entry.qualname}: the operator is defined but has "
                                      "no implementation (register one with "
                                      "torch.library.impl)")
        for key in ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "", "CPU"):
            if key in impls:
                return impls[key](*args, **kwargs)
        return next(iter(impls.values()))(*args, **kwargs)

    def __repr__(self) -> str:
        return f"torch.ops.{self._entry.qualname.replace('::', '.')}"


class _OpNamespace:
    """``torch.ops.<ns>``: its operators as attributes."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, op: str) -> OpOverloadPacket:
        if op.startswith("__"):
            raise AttributeError(op)
        entry = _REGISTRY.get(f"{self.name}::{op}")
        if entry is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op}' "
                                 "(only operators defined with torch.library exist in "
                                 "portagrad)")
        return OpOverloadPacket(entry)


def __getattr__(name: str) -> _OpNamespace:
    if name.startswith("__"):
        raise AttributeError(name)
    return _OpNamespace(name)


class ExtensionLoadError(OSError, NotImplementedError):
    """A compiled PyTorch extension cannot be loaded. An ``OSError``, what PyTorch raises for a
    library it cannot load (so ``except OSError`` fallbacks, torchvision's among them, work),
    and a ``NotImplementedError``, which is why."""


def load_library(path: str | os.PathLike[str]) -> None:
    """``torch.ops.load_library``: compiled extensions link against PyTorch's C++ library, which
    portagrad is not, so this raises :class:`ExtensionLoadError` naming the file."""
    raise ExtensionLoadError(f"Could not load this library: {os.fspath(path)} (compiled PyTorch "
                             "extensions, C++/CUDA .so files, cannot be loaded by portagrad; "
                             "define the operator in Python with torch.library.custom_op)")
