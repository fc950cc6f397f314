"""``pg.save``/``pg.load`` (filled in by the serialization work)."""
from __future__ import annotations

__all__ = ["save", "load"]


def save(obj, f):  # pragma: no cover - replaced
    raise NotImplementedError("pg.save is not implemented yet")


def load(f, map_location=None, weights_only=True):  # pragma: no cover - replaced
    raise NotImplementedError("pg.load is not implemented yet")
