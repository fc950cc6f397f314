"""``torch.distributed.optim.ZeroRedundancyOptimizer``: optimizer state sharded over the ranks
(ZeRO stage 1, Rajbhandari et al. 2020). Each rank owns a subset of the parameters, keeps the
optimizer state of those only and steps them only; after the step each owner broadcasts its
updated parameters, so every rank again holds the whole model. With gradients averaged by DDP
the parameters are those of the plain (unsharded) optimizer, for a 1/world_size share of its
state memory per rank.

The partition is PyTorch's: over all parameter groups in order, the parameters of each group
sorted by size (largest first) each go to the rank with the fewest elements so far (lowest rank
on ties), so the same model is split the same way as by PyTorch's."""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..._tensor import Tensor
from ...optim.optimizer import Optimizer
from .. import _staging as _st
from .._group import ProcessGroup
from .._object_collectives import gather_object
from .._world import resolve

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap ``optimizer_class`` (e.g. ``optim.Adam``) so that each rank of ``process_group``
    (default: the world) keeps and steps the state of its shard of ``params`` only.

    ``defaults`` are ``optimizer_class``'s keyword arguments. ``step()`` steps this rank's shard
    and broadcasts every shard from its owner (call it on every rank). ``consolidate_state_dict
    (to)`` gathers the shards' states on rank ``to`` of the group, whose ``state_dict()`` is then
    that of the unsharded optimizer; ``load_state_dict`` takes such a dict on every rank, each
    keeping its shard's part. ``parameters_as_bucket_view`` is accepted: the broadcast always
    packs an owner's parameters into one buffer per dtype. ``overlap_with_ddp=True`` (stepping
    inside DDP's communication hook) is not supported."""

    def __init__(self, params: Iterable[Any], optimizer_class: type[Optimizer],
                 process_group: Any = None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults: Any) -> None:
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer(overlap_with_ddp=True) is not "
                                      "supported by portagrad: step after backward instead")
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError(f"optimizer_class must be an Optimizer subclass, got "
                            f"{optimizer_class!r}")
        group = resolve(process_group)
        if group is None:
            raise ValueError("ZeroRedundancyOptimizer needs a process group this rank belongs to")
        self.process_group: ProcessGroup = group
        self.world_size = group.size()
        self.rank = group.rank()
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._optim_constructor = optimizer_class
        self._optim_defaults = defaults
        self._partition: list[list[dict[str, Any]]] = []
        self._all_state_dicts: list[dict[str, Any]] | None = None
        self.initialized = False
        super().__init__(params, defaults)
        self._partition_parameters()
        self.optim: Optimizer = optimizer_class(self._partition[self.rank], **defaults)
        self.initialized = True
        self._sync_param_groups(self.optim.param_groups, self.param_groups)

    # ---------------------------------------------------------------- partition
    def _partition_parameters(self) -> list[list[dict[str, Any]]]:
        """Per rank, its param groups (one per group of this optimizer, perhaps empty)."""
        if not self._partition:
            self._partition = [[] for _ in range(self.world_size)]
            sizes = [0] * self.world_size
            for group in self.param_groups:
                per_rank: list[list[Tensor]] = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    r = sizes.index(min(sizes))
                    per_rank[r].append(p)
                    sizes[r] += p.numel()
                for r in range(self.world_size):
                    g = {k: v for k, v in group.items() if k != "params"}
                    g["params"] = per_rank[r]
                    self._partition[r].append(g)
        return self._partition

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group (on every rank): its parameters are partitioned as the first ones were."""
        super().add_param_group(param_group)
        if self.initialized:
            self._partition = []
            self._partition_parameters()
            self.optim.add_param_group(self._partition[self.rank][-1])
            self._sync_param_groups(self.optim.param_groups, self.param_groups)

    @staticmethod
    def _sync_param_groups(src: list[dict[str, Any]], dst: list[dict[str, Any]]) -> None:
        """Copy the hyper-parameters (not the parameters) of ``src``'s groups into ``dst``'s."""
        for s, d in zip(src, dst):
            for k, v in s.items():
                if k not in ("params", "param_names"):
                    d[k] = v

    def _owner(self) -> dict[int, int]:
        return {id(p): r for r, groups in enumerate(self._partition)
                for g in groups for p in g["params"]}

    # --------------------------------------------------------------------- step
    def step(self, closure: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        """Step this rank's shard with the wrapped optimizer, then broadcast every shard from its
        owner. Returns the closure's loss, if any."""
        # an LR scheduler edits this optimizer's groups: the wrapped one must see it
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(closure=closure, **kwargs) if closure is not None \
            else self.optim.step(**kwargs)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        self._broadcast_shards()
        return loss

    def _broadcast_shards(self) -> None:
        group = self.process_group
        if self.world_size == 1:
            return
        for r in range(self.world_size):
            mine = [p for g in self._partition[r] for p in g["params"]]
            by_dtype: dict[Any, list[Tensor]] = {}
            for p in mine:
                by_dtype.setdefault(p.dtype, []).append(p)
            for dtype, ps in by_dtype.items():
                n = sum(p.numel() for p in ps)
                buf = np.concatenate([_st.read(p.detach()) for p in ps]) if r == self.rank \
                    else np.empty(n, dtype.numpy)

                def body(b: np.ndarray = buf, root: int = r) -> None:
                    group._comm.Bcast(_st.wire(b), root)  # 16-bit floats as their bits

                group.run("ZeroRedundancyOptimizer broadcast", body, None, False)
                if r != self.rank:
                    off = 0
                    for p in ps:
                        k = p.numel()
                        _st.write_back(p.detach(), buf[off:off + k], give=False)
                        off += k

    # --------------------------------------------------------------- state dict
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's shard state on group rank ``to`` (call on every rank)."""
        if not 0 <= to < self.world_size:
            raise ValueError(f"to={to} is not a rank of the group (size {self.world_size})")
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        gathered: list[Any] | None = [None] * self.world_size if self.rank == to else None
        gather_object(self.optim.state_dict(), gathered, group=self.process_group, group_dst=to)
        self._all_state_dicts = gathered

    def state_dict(self) -> dict[str, Any]:
        """The unsharded optimizer's state dict (on the rank ``consolidate_state_dict`` gathered
        to): ``state`` keyed by the parameters' positions across all groups."""
        if self._all_state_dicts is None:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please "
                               "call `consolidate_state_dict(to)` on all ranks beforehand and "
                               "make sure that `to` is this rank")
        index = {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}
        full = super().state_dict()
        state: dict[int, Any] = {}
        for r, local in enumerate(self._all_state_dicts):
            local_params = [p for g in self._partition[r] for p in g["params"]]
            for k, v in local["state"].items():
                state[index[id(local_params[int(k)])]] = v
        full["state"] = dict(sorted(state.items()))
        return full

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load an unsharded state dict (from :meth:`state_dict`, or a plain optimizer's of the
        same parameters); each rank keeps its shard's state."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        index = {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}
        state = {int(k): v for k, v in state_dict["state"].items()}
        local_state: dict[int, Any] = {}
        local_groups = []
        n = 0
        for saved, local in zip(groups, self._partition[self.rank]):
            g = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            g["params"] = list(range(n, n + len(local["params"])))
            for j, p in enumerate(local["params"]):
                if index[id(p)] in state:
                    local_state[n + j] = state[index[id(p)]]
            n += len(local["params"])
            local_groups.append(g)
        self.optim.load_state_dict({"state": local_state, "param_groups": local_groups})
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
