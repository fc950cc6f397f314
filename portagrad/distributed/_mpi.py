"""The one place mpi4py is imported: lazily, so ``portagrad.distributed`` imports without it."""
from __future__ import annotations

import importlib.util
from typing import Any

__all__ = ["is_available", "mpi"]

_MPI: Any = None


def is_available() -> bool:
    """Whether mpi4py (and so an MPI library) can be imported."""
    return _MPI is not None or importlib.util.find_spec("mpi4py") is not None


def mpi() -> Any:
    """``mpi4py.MPI`` (importing it initialises MPI, with ``MPI_THREAD_MULTIPLE``: the
    communication thread of :class:`~portagrad.distributed.ProcessGroup` calls MPI too)."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py

            mpi4py.rc.thread_level = "multiple"
            from mpi4py import MPI
        except ImportError as exc:
            raise RuntimeError("portagrad.distributed needs mpi4py and an MPI library: "
                               "pip install 'portagrad[mpi]'") from exc
        _MPI = MPI
    return _MPI
