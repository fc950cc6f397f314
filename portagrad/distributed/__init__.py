"""Distributed data-parallel training on MPI (``torch.distributed``).

Start a program on N processes with ``mpiexec -n N python script.py`` or
``python -m portagrad.distributed.run --nproc-per-node N script.py`` (torchrun's flags); each
calls :func:`init_process_group` -- with any backend name a PyTorch script passes (``"gloo"``,
``"nccl"``...), all run on MPI -- and then uses the collectives below, or wraps its model in
:class:`portagrad.nn.parallel.DistributedDataParallel`. MPI comes from mpi4py
(``pip install 'portagrad[mpi]'``); see ``docs/distributed.md``.
"""
from __future__ import annotations

from . import elastic
from ._collectives import irecv, isend, monitored_barrier, recv, send
from ._collectives_more import (P2POp, all_gather, all_gather_coalesced, all_gather_into_tensor,
                                all_reduce, all_reduce_coalesced, all_to_all, all_to_all_single,
                                barrier, batch_isend_irecv, broadcast, gather, reduce,
                                reduce_scatter, reduce_scatter_tensor, scatter)
from ._group import DistBackendError, DistError, ProcessGroup, Work
from ._launch_env import get_default_backend_for_device, get_node_local_rank, is_torchelastic_launched
from ._object_collectives import (all_gather_object, broadcast_object_list, gather_object,
                                  recv_object_list, scatter_object_list, send_object_list)
from ._reduce_op import ReduceOp, _make_nccl_premul_sum
from ._subgroups import new_subgroups, new_subgroups_by_enumeration, split_group
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
    "all_to_all", "all_to_all_single", "reduce_scatter", "all_reduce_coalesced",
    "all_gather_coalesced", "P2POp", "batch_isend_irecv", "broadcast_object_list",
    "all_gather_object", "gather_object", "scatter_object_list", "send_object_list",
    "recv_object_list", "new_subgroups", "new_subgroups_by_enumeration", "split_group",
    "get_default_backend_for_device", "is_torchelastic_launched", "get_node_local_rank",
    "elastic", "_make_nccl_premul_sum",
]
