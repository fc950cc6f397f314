"""The default process group and its siblings: ``init_process_group``, ``new_group``, ranks."""
from __future__ import annotations

import datetime
import logging
import os
from typing import Any

from ._group import (ProcessGroup, default_timeout, install_abort_on_error,
                     uninstall_abort_on_error)
from ._mpi import is_available as _mpi_available, mpi

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "is_mpi_available", "is_gloo_available", "is_nccl_available", "get_rank",
           "get_world_size", "get_backend", "new_group", "GroupMember", "group", "Backend",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "resolve",
           "check_backend"]

_log = logging.getLogger("portagrad.distributed")


class Backend(str):
    """Backend names (``torch.distributed.Backend``); ``"mpi"`` is the one portagrad has."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name}")
        return super().__new__(cls, name.lower())


class _NonMember:
    def __repr__(self) -> str:
        return "<non-group-member>"


class GroupMember:
    """``GroupMember.WORLD`` is the default group once initialised;
    ``NON_GROUP_MEMBER`` is what ``new_group`` returns on ranks outside the new group."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER: Any = _NonMember()


class group:  # lower case: torch.distributed.group
    """``group.WORLD``: the default group."""

    WORLD: ProcessGroup | None = None


_groups: list[ProcessGroup] = []


def is_available() -> bool:
    """Whether distributed training can be used here (mpi4py and an MPI library are installed)."""
    return _mpi_available()


def is_mpi_available() -> bool:
    return _mpi_available()


def is_gloo_available() -> bool:
    return False


def is_nccl_available() -> bool:
    return False


def is_initialized() -> bool:
    """Whether ``init_process_group`` has been called (and not destroyed)."""
    return GroupMember.WORLD is not None


def _world() -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return GroupMember.WORLD


def _env_int(name: str) -> int | None:
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {v!r}") from None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Join the job's default process group (``torch.distributed.init_process_group``).

    Every backend name a PyTorch script passes (``"gloo"``, ``"nccl"``, ``"mpi"``, per-device
    strings such as ``"cpu:gloo,cuda:nccl"``) and every ``init_method`` (``"env://"``,
    ``"tcp://host:port"``, ``"file://path"``) runs on the MPI engine; a name other than ``"mpi"``
    or a rendezvous other than ``"env://"`` is said once in a log line. Rank and world size come
    from MPI (start the program with ``mpiexec -n N`` or
    ``python -m portagrad.distributed.run``). ``rank``/``world_size`` and torchrun-style ``RANK``/
    ``WORLD_SIZE`` environment variables are accepted when they agree with MPI. ``timeout``
    (default 30 minutes) bounds every wait for a peer; see ``docs/distributed.md`` for faults."""
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    check_backend(backend)
    _check_init_method(init_method)
    if store is not None:
        raise ValueError("store is not supported: MPI starts and connects the ranks, and "
                         "portagrad has no key-value store to give the program (drop store= and "
                         "start the ranks with mpiexec or python -m portagrad.distributed.run)")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout!r}")
    # (bounded: under mpiexec, MPI_Init waits for every rank, forever if one failed before here)
    MPI = mpi(init_timeout=(timeout or default_timeout).total_seconds())
    comm = MPI.COMM_WORLD
    mrank, msize = comm.Get_rank(), comm.Get_size()
    for what, given, actual in (("rank", rank, mrank), ("world_size", world_size, msize),
                                ("RANK", _env_int("RANK"), mrank),
                                ("WORLD_SIZE", _env_int("WORLD_SIZE"), msize)):
        if given is not None and given != -1 and given != actual:
            raise ValueError(f"{what}={given} disagrees with MPI, which started this process as "
                             f"rank {mrank} of {msize}")
    pg = ProcessGroup(comm, list(range(msize)), timeout or default_timeout, mrank)
    if device_id is not None:
        pg.bound_device_id = device_id
    GroupMember.WORLD = group.WORLD = pg
    _groups.append(pg)
    if msize > 1:
        install_abort_on_error(mrank)


# The backends of PyTorch's registry (and the "undefined" default); each runs on MPI here.
_KNOWN_BACKENDS = ("mpi", "gloo", "nccl", "ucc", "xccl", "undefined")
_said: set[str] = set()  # what has been logged once


def _say_once(key: str, msg: str) -> None:
    if key not in _said:
        _said.add(key)
        _log.warning(msg)


def check_backend(backend: Any) -> None:
    """Accept a PyTorch backend name (or ``"device:name,..."`` list), which the MPI engine runs
    (logged once when it is not ``"mpi"``); ``ValueError`` for a name PyTorch does not know."""
    if backend is None:
        return
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string (such as 'gloo', 'nccl' or 'mpi'), got "
                        f"{type(backend).__name__}")
    text = backend.lower().strip()
    names = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:
            device, _, part = part.partition(":")
            if not device.strip() or not part.strip():
                raise ValueError(f"Invalid backend string {backend!r}: expected 'name' or "
                                 f"'device:name,device:name'")
        names.append(part.strip())
    for name in names:
        if name not in _KNOWN_BACKENDS:
            raise ValueError(f"Invalid backend: {backend!r}; portagrad.distributed runs the "
                             f"backends {', '.join(_KNOWN_BACKENDS[:-1])} (all on MPI)")
    if any(n not in ("mpi", "undefined") for n in names):
        _say_once("backend", f"portagrad.distributed: backend {backend!r} runs on the MPI engine "
                             f"(collectives through MPI, tensors of every device staged as needed)")


def _check_init_method(init_method: Any) -> None:
    """``None``, ``"env://"``, ``"tcp://..."`` or ``"file://..."``: MPI has already connected the
    ranks, so a rendezvous address is not needed (logged once)."""
    if init_method is None or init_method == "env://":
        return
    if not isinstance(init_method, str):
        raise TypeError(f"init_method must be a URL string, got {type(init_method).__name__}")
    scheme = init_method.partition("://")[0] if "://" in init_method else ""
    if scheme not in ("tcp", "file", "env"):
        raise ValueError(f"init_method {init_method!r} is not supported: expected 'env://', "
                         f"'tcp://host:port' or 'file://path' (MPI connects the ranks)")
    _say_once("init_method", f"portagrad.distributed: init_method {init_method!r} is not used: "
                             f"MPI has already connected the ranks")


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Release ``group`` (default: every group, and the default group)."""
    if group is None or group is GroupMember.WORLD:
        for pg in reversed(_groups):
            pg.shutdown()
        _groups.clear()
        GroupMember.WORLD = globals()["group"].WORLD = None
        uninstall_abort_on_error()
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group in _groups:
        group.shutdown()
        _groups.remove(group)


def new_group(ranks: list[int] | None = None, timeout: datetime.timedelta | None = None,
              backend: str | None = None, pg_options: Any = None, use_local_synchronization: bool
              = False, group_desc: str | None = None, device_id: Any = None) -> Any:
    """A group of the given global ``ranks`` (all ranks if ``None``). Every rank of the default
    group must call it, in the same order; ranks outside get ``GroupMember.NON_GROUP_MEMBER``."""
    world = _world()
    check_backend(backend)
    n = world.size()
    members = list(range(n)) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(members)) != len(members):
        raise ValueError(f"ranks must be distinct, got {ranks}")
    for r in members:
        if not 0 <= r < n:
            raise ValueError(f"The new group's rank should be within the world_size set by "
                             f"init_process_group, got rank {r} (world size {n})")
    MPI = mpi()
    me = world.rank()
    inside = me in members
    # a collective over the world communicator: every rank takes part
    comm = world._comm.Split(0 if inside else MPI.UNDEFINED, members.index(me) if inside else 0)
    if not inside:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, members, timeout or world._timeout, me)
    _groups.append(pg)
    return pg


def resolve(group: Any) -> ProcessGroup | None:
    """The group to run on (``None``: the default), or ``None`` when this rank is not in it."""
    if group is None:
        return _world()
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup from new_group(), got {group!r}")
    return group


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (default: the default group), ``-1`` outside it."""
    pg = resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: Any = None) -> int:
    """The number of ranks in ``group`` (``-1`` on a rank outside it)."""
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group: Any = None) -> str:
    resolve(group)
    return Backend.MPI


def get_process_group_ranks(group: Any) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("Group is not registered on this rank")
    return list(pg._ranks)


def get_global_rank(group: Any, group_rank: int) -> int:
    """The global rank of ``group_rank`` of ``group``."""
    pg = resolve(group)
    if pg is None or not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return pg._ranks[group_rank]


def get_group_rank(group: Any, global_rank: int) -> int:
    """The rank in ``group`` of the process of ``global_rank``."""
    pg = resolve(group)
    if pg is None or global_rank not in pg._global:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return pg._global[global_rank]
