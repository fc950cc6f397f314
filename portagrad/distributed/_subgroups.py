"""Many groups at once: ``new_subgroups``, ``new_subgroups_by_enumeration``, ``split_group``."""
from __future__ import annotations

import datetime
from typing import Any

from ._group import ProcessGroup
from ._mpi import mpi
from ._world import _groups, _world, check_backend, get_process_group_ranks, new_group

__all__ = ["new_subgroups", "new_subgroups_by_enumeration", "split_group"]


def new_subgroups_by_enumeration(ranks_per_subgroup_list: list[list[int]],
                                 timeout: datetime.timedelta | None = None,
                                 backend: str | None = None, pg_options: Any = None,
                                 group_desc: str | None = None) -> tuple[Any, list[Any]]:
    """One group per list of global ranks (every rank calls it with the same lists); returns
    ``(the group of this rank or None, every group)``, as ``torch.distributed``. A rank may appear
    in one list only."""
    if ranks_per_subgroup_list is None or len(ranks_per_subgroup_list) == 0:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    seen: dict[int, int] = {}
    for i, ranks in enumerate(ranks_per_subgroup_list):
        for r in ranks:
            if r in seen:
                raise ValueError(f"Rank {r} has appeared in both subgroup "
                                 f"{list(ranks_per_subgroup_list[seen[r]])} and {list(ranks)}")
            seen[r] = i
    me = _world().rank()
    cur: Any = None
    subgroups = []
    for ranks in ranks_per_subgroup_list:
        sub = new_group(ranks=list(ranks), timeout=timeout, backend=backend, pg_options=pg_options)
        subgroups.append(sub)
        if me in ranks:
            cur = sub
    return cur, subgroups


def new_subgroups(group_size: int | None = None, group: Any = None,
                  timeout: datetime.timedelta | None = None, backend: str | None = None,
                  pg_options: Any = None, group_desc: str | None = None
                  ) -> tuple[Any, list[Any]]:
    """Split ``group`` (default: all ranks) into consecutive groups of ``group_size`` ranks;
    returns ``(the group of this rank, every group)``."""
    if group_size is None:
        raise ValueError("Default group size only takes effect when CUDA is available. If your "
                         "subgroup using a backend that does not depend on CUDA, please pass in "
                         "'group_size' correctly.")
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    ranks = get_process_group_ranks(group if group is not None else _world())
    world_size = len(ranks)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by "
                         f"'group_size={group_size}'")
    per = [ranks[i:i + group_size] for i in range(0, world_size, group_size)]
    return new_subgroups_by_enumeration(per, timeout=timeout, backend=backend,
                                        pg_options=pg_options, group_desc=group_desc)


def split_group(parent_pg: ProcessGroup | None = None, split_ranks: list | None = None,
                timeout: datetime.timedelta | None = None, pg_options: Any = None,
                group_desc: str | None = None, backend: str | None = None
                ) -> ProcessGroup | None:
    """Split ``parent_pg`` (default: the default group) into disjoint groups of its *group*
    ranks, ``split_ranks`` being a list of lists; every rank of the parent calls it (and only
    they). Returns this rank's group, or ``None`` if it is in none of the lists."""
    if split_ranks is None or len(split_ranks) == 0:
        raise ValueError("split_ranks cannot be None or empty")
    check_backend(backend)
    parent = parent_pg if parent_pg is not None else _world()
    if not isinstance(parent, ProcessGroup) or parent not in _groups:
        raise ValueError(f"Group {parent_pg} is not registered")
    n = parent.size()
    color = None
    seen: set[int] = set()
    for i, ranks in enumerate(split_ranks):
        for r in ranks:
            if not 0 <= int(r) < n:
                raise ValueError(f"split_ranks names group rank {r}, but the parent group has "
                                 f"{n} ranks")
            if r in seen:
                raise ValueError(f"rank {r} appears in more than one split of split_ranks")
            seen.add(r)
        if parent.rank() in ranks:
            color = i
    MPI = mpi()
    mine = [] if color is None else sorted(int(r) for r in split_ranks[color])
    key = mine.index(parent.rank()) if color is not None else 0
    comm = parent._comm.Split(MPI.UNDEFINED if color is None else color, key)  # collective
    if color is None:
        return None
    pg = ProcessGroup(comm, [parent._ranks[r] for r in mine],
                      timeout if timeout is not None else parent._timeout, parent._global_rank)
    _groups.append(pg)
    return pg
