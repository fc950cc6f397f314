"""Distributed data-parallel training on MPI (``torch.distributed``).

Start a program on N processes with ``mpiexec -n N python script.py`` or
``python -m portagrad.distributed.run --nproc-per-node N script.py``; each calls
:func:`init_process_group` and then uses the collectives below, or wraps its model in
:class:`portagrad.nn.parallel.DistributedDataParallel`. MPI comes from mpi4py
(``pip install 'portagrad[mpi]'``); see ``docs/distributed.md``.
"""
from __future__ import annotations

from ._collectives import (all_gather, all_gather_into_tensor, all_reduce, barrier, broadcast,
                           gather, irecv, isend, monitored_barrier, recv, reduce,
                           reduce_scatter_tensor, scatter, send)
from ._group import DistBackendError, DistError, ProcessGroup, Work
from ._reduce_op import ReduceOp
from ._world import (Backend, GroupMember, destroy_process_group, get_backend, get_global_rank,
                     get_group_rank, get_process_group_ranks, get_rank, get_world_size, group,
                     init_process_group, is_available, is_gloo_available, is_initialized,
                     is_mpi_available, is_nccl_available, new_group)

__all__ = [
    "init_process_group", "destroy_process_group", "is_available", "is_initialized",
    "is_mpi_available", "is_gloo_available", "is_nccl_available", "get_rank", "get_world_size",
    "get_backend", "new_group", "get_process_group_ranks", "get_global_rank", "get_group_rank",
    "Backend", "GroupMember", "group", "ProcessGroup", "Work", "ReduceOp", "DistError",
    "DistBackendError", "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor", "reduce_scatter_tensor", "gather", "scatter", "barrier",
    "monitored_barrier", "send", "recv", "isend", "irecv",
]
