"""``torch._C.DispatchKey`` and ``DispatchKeySet``: the names of PyTorch's dispatcher keys, as
values libraries combine at import (torchvision builds the set of autocast keys).

portagrad has no dispatcher; these are plain values: a key set supports ``|``, ``has`` and
equality, and nothing routes through them.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable

__all__ = ["DispatchKey", "DispatchKeySet"]


class DispatchKey(enum.Enum):
    """The dispatcher keys libraries name."""

    Undefined = 0
    CPU = 1
    CUDA = 2
    XPU = 3
    MPS = 4
    Meta = 5
    PrivateUse1 = 6
    SparseCPU = 7
    SparseCUDA = 8
    BackendSelect = 9
    Python = 10
    Functionalize = 11
    ADInplaceOrView = 12
    AutogradOther = 13
    AutogradCPU = 14
    AutogradCUDA = 15
    AutogradXPU = 16
    AutogradMeta = 17
    AutogradPrivateUse1 = 18
    Autograd = 19
    AutocastCPU = 20
    AutocastCUDA = 21
    AutocastXPU = 22
    AutocastMPS = 23
    AutocastPrivateUse1 = 24
    CompositeImplicitAutograd = 25
    CompositeExplicitAutograd = 26
    CompositeExplicitAutogradNonFunctional = 27
    FuncTorchBatched = 28
    PythonTLSSnapshot = 29
    PythonDispatcher = 30


class DispatchKeySet:
    """A set of :class:`DispatchKey` values (``DispatchKeySet(key)``, ``a | b``, ``has``)."""

    def __init__(self, keys: DispatchKey | Iterable[DispatchKey] | None = None) -> None:
        if keys is None:
            self._keys: frozenset[DispatchKey] = frozenset()
        elif isinstance(keys, DispatchKey):
            self._keys = frozenset([keys])
        else:
            items = frozenset(keys)
            if not all(isinstance(k, DispatchKey) for k in items):
                raise TypeError("DispatchKeySet: expected DispatchKey values")
            self._keys = items

    def __or__(self, other: DispatchKeySet) -> DispatchKeySet:
        if not isinstance(other, DispatchKeySet):
            return NotImplemented
        return DispatchKeySet(self._keys | other._keys)

    def __sub__(self, other: DispatchKeySet) -> DispatchKeySet:
        if not isinstance(other, DispatchKeySet):
            return NotImplemented
        return DispatchKeySet(self._keys - other._keys)

    def __and__(self, other: DispatchKeySet) -> DispatchKeySet:
        if not isinstance(other, DispatchKeySet):
            return NotImplemented
        return DispatchKeySet(self._keys & other._keys)

    def has(self, key: DispatchKey) -> bool:
        """Whether ``key`` is in the set."""
        return key in self._keys

    def empty(self) -> bool:
        """Whether the set has no key."""
        return not self._keys

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DispatchKeySet) and self._keys == other._keys

    def __hash__(self) -> int:
        return hash(self._keys)

    def __repr__(self) -> str:
        names = ", ".join(sorted(k.name for k in self._keys))
        return f"DispatchKeySet({names})"
