"""``torch.PyTorchFileReader``: the records of a PyTorch zip checkpoint by name.

A ``.pt`` file written by ``torch.save`` is a zip archive whose members sit under one top-level
folder (``archive/data.pkl``, ``archive/data/0``, ...); the reader names records without that
folder, as PyTorch's does. Libraries (Lightning's lazy loader) read records with it and unpickle
``data.pkl`` themselves; loading a checkpoint safely is :func:`portagrad.load`'s job.
"""
from __future__ import annotations

import zipfile
from typing import IO, Any

__all__ = ["PyTorchFileReader"]


class PyTorchFileReader:
    """Open a PyTorch zip checkpoint (a path or a binary file object) to read its records."""

    def __init__(self, file: str | IO[bytes] | Any) -> None:
        try:
            self._zip = zipfile.ZipFile(file if isinstance(file, str) or hasattr(file, "read")
                                        else str(file))
        except zipfile.BadZipFile as e:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {e}") from None
        names = self._zip.namelist()
        if not names:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: no records")
        self._prefix = names[0].split("/", 1)[0] + "/" if "/" in names[0] else ""
        self._names = {n[len(self._prefix):]: n for n in names if n.startswith(self._prefix)}

    def has_record(self, name: str) -> bool:
        """Whether the archive holds record ``name`` (``"data.pkl"``, ``"data/0"``...)."""
        return name in self._names

    def get_record(self, name: str) -> bytes:
        """The bytes of record ``name``."""
        if name not in self._names:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found")
        return self._zip.read(self._names[name])

    def get_all_records(self) -> list[str]:
        """Every record's name."""
        return list(self._names)

    def get_record_offset(self, name: str) -> int:
        """Where record ``name``'s bytes start in the file."""
        if name not in self._names:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found")
        info = self._zip.getinfo(self._names[name])
        return info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)

    def serialization_id(self) -> str:
        """The id torch.save wrote (record ``.data/serialization_id``), or ``""``."""
        key = ".data/serialization_id"
        return self.get_record(key).decode() if key in self._names else ""
