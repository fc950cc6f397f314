"""``torch.torch_version.TorchVersion``: a version string that compares as a version.

``torch.__version__ >= "2.1"`` is written as if it were a string, yet must compare as a PEP 440
version ("2.13.0" is newer than "2.2", which plain string order denies), and against tuples
(``>= (2, 1)``). :class:`TorchVersion` is a ``str`` doing both, as PyTorch's; strings that are
not versions compare as strings.
"""
from __future__ import annotations

import operator
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["TorchVersion"]

_PEP440 = re.compile(r"v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|alpha|beta|c)[-_.]?(\d*))?"
                     r"(?:[-_.]?post[-_.]?(\d+))?(?:[-_.]?dev[-_.]?(\d*))?"
                     r"(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?", re.IGNORECASE)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}


def _key(text: str) -> tuple[Any, ...]:
    """A sort key with PEP 440's order (dev < pre-release < release < post; a local label sorts
    after the same version without one); ``ValueError`` for what is not a version."""
    m = _PEP440.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"Invalid version: {text!r}")
    release, pre, pre_n, post, dev, local = m.groups()
    nums = [int(p) for p in release.split(".")]
    while len(nums) > 1 and nums[-1] == 0:
        nums.pop()  # 2.13 == 2.13.0
    # final releases sort after pre-releases; a bare .devN (no pre) sorts before everything
    pre_key = (_PRE[pre.lower()], int(pre_n or 0)) if pre else ((-1, 0) if dev is not None
                                                                 and post is None else (3, 0))
    post_key = int(post) if post is not None else -1
    dev_key = int(dev or 0) if dev is not None else float("inf")
    local_key = tuple((0, int(s)) if s.isdigit() else (-1, s.lower())
                      for s in re.split(r"[-_.]", local)) if local else ()
    return (tuple(nums), pre_key, post_key, dev_key, local_key)


class TorchVersion(str):
    """A ``str`` that compares with strings, tuples (``(2, 1)`` is "2.1") and version objects
    as versions (PEP 440), falling back to string order where one side is not a version."""

    __slots__ = ()

    def _other_key(self, other: Any) -> tuple[Any, ...]:
        if isinstance(other, str):
            return _key(other)
        if isinstance(other, Iterable):
            return _key(".".join(str(p) for p in other))
        if hasattr(other, "release"):  # a packaging Version prints as its canonical form
            return _key(str(other))
        raise ValueError(f"not a version: {other!r}")

    def _cmp(self, other: Any, op: str) -> bool:
        try:
            a, b = _key(self), self._other_key(other)
        except ValueError:  # not a version: compare as the plain strings (or fail as they do)
            return bool(getattr(operator, op.strip("_"))(str(self), other))
        return bool(getattr(operator, op.strip("_"))(a, b))

    def __lt__(self, other: Any) -> bool:
        return self._cmp(other, "__lt__")

    def __le__(self, other: Any) -> bool:
        return self._cmp(other, "__le__")

    def __gt__(self, other: Any) -> bool:
        return self._cmp(other, "__gt__")

    def __ge__(self, other: Any) -> bool:
        return self._cmp(other, "__ge__")

    def __eq__(self, other: object) -> bool:
        return self._cmp(other, "__eq__")

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__
