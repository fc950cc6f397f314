"""``fully_shard``: fully sharded data parallelism in PyTorch's current (FSDP2) form.

``fully_shard(module)`` makes ``module`` one *unit*: every parameter of its subtree that no inner
unit manages is replaced by a :class:`ShardedParameter` (this rank's dim-0 rows). Apply it to the
blocks first, then to the root, as with PyTorch. Then:

* a forward pre-hook all-gathers the unit's shards (one collective per dtype, of a flat buffer)
  through an autograd function and puts the whole tensors where the module looks for its
  parameters; a forward hook puts the shards back, so nothing but autograd holds the whole
  tensors after the forward;
* backward of that function reduce-scatters the whole parameters' gradients (averaged over the
  group, one collective per dtype) into the shards' ``.grad``;
* an optimizer made from ``model.parameters()`` after ``fully_shard`` sees only the shards, so it
  updates this rank's rows and keeps state (Adam's moments) for them only.

Differences from PyTorch, documented in ``docs/distributed.md``: the shards are plain parameters,
not ``DTensor``; backward does not re-gather: the whole tensors that the forward's operations saved
for backward stay alive until backward has used them (PyTorch frees and re-gathers them), so
``reshard_after_forward`` is accepted and changes nothing; no prefetching or mixed precision
policy; only 1-D meshes (no HSDP). Every rank must construct the same model with the same values
(PyTorch's ``fully_shard`` broadcasts nothing either).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from ... import _creation
from ..._ops.joining import cat
from ..._ops.nn.unshard import unshard
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...nn.modules.module import Module
from .._collectives_more import all_gather_into_tensor, reduce_scatter_tensor
from .._group import ProcessGroup
from .._reduce_op import ReduceOp
from .._world import resolve
from ..device_mesh import DeviceMesh
from ._param import ShardedParameter

__all__ = ["fully_shard", "FSDPModule"]


def _row_size(shape: tuple[int, ...]) -> int:
    return math.prod(shape[1:]) if shape else 1


class _Unit:
    """The state ``fully_shard`` attaches to one module: its managed parameters and group."""

    def __init__(self, module: Module, group: ProcessGroup, reshard_after_forward: bool) -> None:
        self.module = module
        self.group = group
        self.reshard_after_forward = reshard_after_forward
        self.sync = True  # set_requires_gradient_sync
        self.pending: list[Tensor | None] | None = None  # whole gradients kept while not syncing
        # (owning module, attribute name) of each managed parameter, and its shard
        self.slots: list[tuple[Module, str]] = []
        self.shards: list[ShardedParameter] = []
        self._slot_shard: list[int] = []  # slot -> index in shards (a tied weight: one shard)
        seen: dict[int, int] = {}
        for owner, name, p in list(_managed(module)):
            k = seen.get(id(p))
            if k is None:
                k = seen[id(p)] = len(self.shards)
                self.shards.append(ShardedParameter._shard(p, group, p.requires_grad))
            owner._parameters[name] = self.shards[k]
            self.slots.append((owner, name))
            self._slot_shard.append(k)
        self.unsharded = False

    @property
    def by_dtype(self) -> dict[Any, list[int]]:
        """The shards' indices by dtype, in order: one collective each. Computed per call, since
        ``module.to(dtype)`` may change the shards' dtype after sharding."""
        groups: dict[Any, list[int]] = {}
        for i, s in enumerate(self.shards):
            groups.setdefault(s.dtype, []).append(i)
        return groups

    # ------------------------------------------------------------ collectives
    def gather(self) -> list[Tensor]:
        """The whole parameters (one all-gather per dtype; no autograd)."""
        world = self.group.size()
        fulls: list[Tensor] = [None] * len(self.shards)  # type: ignore[list-item]
        for dtype, idx in self.by_dtype.items():
            send = cat([self.shards[i]._padded(self.shards[i].detach()).reshape(-1)
                        for i in idx])
            total = send.shape[0]
            out = _creation.empty(world * total, dtype=dtype, device=send.device)
            all_gather_into_tensor(out, send, group=self.group)
            table = out.reshape(world, total)
            off = 0
            for i in idx:
                s = self.shards[i]
                n = s.chunk_rows * _row_size(s.global_shape)
                rows = table[:, off:off + n].reshape(world * s.chunk_rows,
                                                     *s.global_shape[1:])
                fulls[i] = rows[:s.rows].reshape(s.global_shape)
                off += n
        return fulls

    def reduce(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        """Each shard's gradient: the group's average of the whole gradients' rows (one
        reduce-scatter per dtype). While gradient sync is off, the whole gradients are summed
        locally instead and reduced by the next synced backward."""
        if self.pending is not None:
            grads = [g if p is None else p if g is None else g + p
                     for g, p in zip(grads, self.pending)]
            self.pending = None
        if not self.sync:
            self.pending = [None if g is None else g.detach() for g in grads]
            return [None] * len(grads)
        world = self.group.size()
        out_grads: list[Tensor | None] = [None] * len(grads)
        for dtype, idx in self.by_dtype.items():
            cols = []
            for i in idx:
                s = self.shards[i]
                g = grads[i]
                if g is None:  # unused here, maybe used on another rank: reduce zeros
                    g = _creation.zeros(s.global_shape, dtype=dtype, device=s.device)
                g = g.reshape(s.rows, _row_size(s.global_shape))
                short = world * s.chunk_rows - s.rows
                if short:
                    g = cat([g, _creation.zeros((short, g.shape[1]), dtype=dtype,
                                                device=g.device)])
                cols.append(g.reshape(world, -1))
            send = cat(cols, dim=1).reshape(-1)
            out = _creation.empty(send.shape[0] // world, dtype=dtype, device=send.device)
            reduce_scatter_tensor(out, send, op=ReduceOp.AVG, group=self.group)
            off = 0
            for i in idx:
                s = self.shards[i]
                n = s.chunk_rows * _row_size(s.global_shape)
                mine = out[off:off + n].reshape(s.chunk_rows, *s.shape[1:])
                out_grads[i] = mine[:s.shape[0]] if s.requires_grad else None
                off += n
        return out_grads

    # ------------------------------------------------------------ hooks
    def install(self, fulls: list[Tensor]) -> None:
        for (owner, name), k in zip(self.slots, self._slot_shard):
            owner._parameters[name] = fulls[k]  # type: ignore[assignment]

    def restore(self) -> None:
        for (owner, name), k in zip(self.slots, self._slot_shard):
            owner._parameters[name] = self.shards[k]

    def pre_forward(self, module: Module, args: Any) -> None:
        if self.unsharded:  # FSDPModule.unshard(): the whole tensors are already in place
            return
        if grad_mode.is_grad_enabled() and any(s.requires_grad for s in self.shards):
            fulls = unshard(self.shards, self.gather, self.reduce)
        else:
            fulls = self.gather()
        self.install(fulls)

    def post_forward(self, module: Module, args: Any, output: Any) -> None:
        if not self.unsharded:
            self.restore()


def _managed(module: Module) -> Iterator[tuple[Module, str, Tensor]]:
    """(owner, name, parameter) for every parameter of ``module``'s subtree outside inner
    units."""
    stack = [module]
    while stack:
        m = stack.pop()
        for name, p in m._parameters.items():
            if p is not None:
                if isinstance(p, ShardedParameter):
                    raise ValueError(f"fully_shard: parameter {name!r} of {type(m).__name__} is "
                                     f"already sharded by another fully_shard call")
                yield m, name, p
        for child in reversed(list(m._modules.values())):
            if child is not None and "_fsdp_unit" not in child.__dict__:
                stack.append(child)


class FSDPModule:
    """The class ``fully_shard`` mixes into a module's class (``FSDPLinear`` for a ``Linear``),
    as PyTorch does, so that ``isinstance(m, FSDPModule)`` tells sharded modules apart."""

    _fsdp_unit: _Unit

    def unshard(self, async_op: bool = False) -> None:
        """Gather the whole parameters into the module until :meth:`reshard` (a collective; not
        differentiable, for inspection or inference)."""
        unit = self._fsdp_unit
        if not unit.unsharded:
            with grad_mode.no_grad():
                unit.install(unit.gather())
            unit.unsharded = True

    def reshard(self) -> None:
        """Put the shards back after :meth:`unshard`."""
        unit = self._fsdp_unit
        if unit.unsharded:
            unit.restore()
            unit.unsharded = False

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse: bool = True
                                  ) -> None:
        """Accepted for PyTorch compatibility; here the shards always go back after forward."""
        for m in _units(self, recurse):
            m._fsdp_unit.reshard_after_forward = bool(reshard_after_forward)

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse: bool = True
                                   ) -> None:
        """``False``: backward sums the whole gradients locally (gradient accumulation without
        communication); the next backward with sync on reduces the sum."""
        for m in _units(self, recurse):
            m._fsdp_unit.sync = bool(requires_gradient_sync)


def _units(module: Any, recurse: bool) -> list[Any]:
    if not recurse:
        return [module]
    return [m for m in module.modules() if isinstance(m, FSDPModule)]


_classes: dict[type, type] = {}


def _fsdp_class(cls: type) -> type:
    if issubclass(cls, FSDPModule):
        return cls
    if cls not in _classes:
        _classes[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    return _classes[cls]


def _group_of(mesh: Any) -> ProcessGroup:
    if mesh is None:
        group = resolve(None)
    elif isinstance(mesh, ProcessGroup):  # (FullyShardedDataParallel's process_group)
        group = mesh
    elif isinstance(mesh, DeviceMesh):
        if mesh.ndim != 1:
            raise NotImplementedError(f"fully_shard on a {mesh.ndim}-D mesh (HSDP) is not "
                                      f"supported by portagrad: pass a 1-D mesh")
        group = mesh.get_group()
    else:
        raise TypeError(f"fully_shard: mesh must be a DeviceMesh or None, got "
                        f"{type(mesh).__name__}")
    if group is None:
        raise ValueError("fully_shard needs a process group this rank belongs to "
                         "(call init_process_group first)")
    return group


def fully_shard(module: Any, *, mesh: DeviceMesh | None = None,
                reshard_after_forward: bool | int | None = None,
                shard_placement_fn: Any = None, mp_policy: Any = None, offload_policy: Any = None,
                ignored_params: Any = None) -> Any:
    """Shard ``module``'s parameters over ``mesh`` (default: every rank) on dim 0, as
    ``torch.distributed.fsdp.fully_shard`` (see the module doc). Returns ``module``, whose class
    now also derives from :class:`FSDPModule`. A list of modules makes one unit of them all is not
    supported: call it on each."""
    if not isinstance(module, Module):
        raise TypeError(f"fully_shard expects an nn.Module, got {type(module).__name__}")
    for name, val in (("shard_placement_fn", shard_placement_fn), ("ignored_params",
                      ignored_params)):
        if val:
            raise NotImplementedError(f"fully_shard({name}=...) is not supported by portagrad")
    for name, val in (("mp_policy", mp_policy), ("offload_policy", offload_policy)):
        if val is not None and any(v not in (None, True, False) for v in vars(val).values()):
            raise NotImplementedError(f"fully_shard({name}={val!r}) is not supported by "
                                      f"portagrad: only the default policy")
    if "_fsdp_unit" in module.__dict__:
        raise ValueError(f"fully_shard was already applied to this {type(module).__name__}")
    group = _group_of(mesh)
    unit = _Unit(module, group, True if reshard_after_forward is None
                 else bool(reshard_after_forward))
    module.__dict__["_fsdp_unit"] = unit
    module.__class__ = _fsdp_class(type(module))
    # prepend: run before the module's other pre-hooks, which may read the parameters
    module.register_forward_pre_hook(unit.pre_forward, prepend=True)
    module.register_forward_hook(unit.post_forward, always_call=True)
    return module
