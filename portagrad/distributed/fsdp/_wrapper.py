"""``FullyShardedDataParallel``: the older wrapper name over :func:`fully_shard`, for the common
arguments (``process_group``/``device_mesh``, ``auto_wrap_policy``, ``sharding_strategy=
FULL_SHARD``, ``device_id``). The parameters are those of ``fully_shard``: shards, not PyTorch's
flat parameters, so ``use_orig_params`` is always in effect."""
from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any

from ...nn.modules.module import Module
from .._world import resolve
from ..device_mesh import DeviceMesh
from ._fully_shard import fully_shard

__all__ = ["FullyShardedDataParallel", "ShardingStrategy", "ModuleWrapPolicy"]


class ShardingStrategy(enum.Enum):
    """``torch.distributed.fsdp.ShardingStrategy``; only ``FULL_SHARD`` is supported."""

    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class ModuleWrapPolicy:
    """Wrap every submodule that is an instance of one of ``module_classes``."""

    def __init__(self, module_classes: Iterable[type]) -> None:
        self._module_classes = tuple(module_classes)

    def __call__(self, module: Module, recurse: bool, nonwrapped_numel: int) -> bool:
        return recurse or isinstance(module, self._module_classes)


def _wraps(policy: Any, module: Module) -> bool:
    if isinstance(policy, (set, frozenset, list, tuple)):
        return isinstance(module, tuple(policy))
    numel = sum(p.numel() for p in module.parameters())
    return bool(policy(module=module, recurse=False, nonwrapped_numel=numel))


class FullyShardedDataParallel(Module):
    """Fully sharded data parallelism behind PyTorch's wrapper name: the submodules that
    ``auto_wrap_policy`` selects (a callable ``policy(module, recurse, nonwrapped_numel)``, a
    :class:`ModuleWrapPolicy`, or a set of module classes) become units first, then the wrapped
    module. ``state_dict()`` is the wrapped module's (parameter names without the wrapper's
    prefix; values are this rank's shards)."""

    def __init__(self, module: Module, process_group: Any = None,
                 sharding_strategy: ShardingStrategy | None = None, cpu_offload: Any = None,
                 auto_wrap_policy: Callable[..., bool] | Any = None,
                 backward_prefetch: Any = None, mixed_precision: Any = None,
                 ignored_modules: Any = None, param_init_fn: Any = None, device_id: Any = None,
                 sync_module_states: bool = False, forward_prefetch: bool = False,
                 limit_all_gathers: bool = True, use_orig_params: bool = False,
                 ignored_states: Any = None, device_mesh: DeviceMesh | None = None) -> None:
        super().__init__()
        if sharding_strategy not in (None, ShardingStrategy.FULL_SHARD):
            raise NotImplementedError(f"FullyShardedDataParallel(sharding_strategy="
                                      f"{sharding_strategy}) is not supported by portagrad: "
                                      f"only FULL_SHARD")
        for name, val in (("cpu_offload", cpu_offload), ("mixed_precision", mixed_precision),
                          ("ignored_modules", ignored_modules), ("param_init_fn", param_init_fn),
                          ("ignored_states", ignored_states), ("sync_module_states",
                                                               sync_module_states)):
            if val:
                raise NotImplementedError(f"FullyShardedDataParallel({name}=...) is not "
                                          f"supported by portagrad")
        if process_group is not None and device_mesh is not None:
            raise ValueError("pass process_group or device_mesh, not both")
        mesh = device_mesh
        if process_group is not None:
            group = resolve(process_group)
            if group is None:
                raise ValueError("FullyShardedDataParallel needs a process group this rank "
                                 "belongs to")
            mesh = group  # type: ignore[assignment]
        if device_id is not None:
            module.to(device_id)
        if auto_wrap_policy is not None:
            # innermost first, as PyTorch wraps them
            for sub in reversed([m for m in module.modules() if m is not module]):
                if _wraps(auto_wrap_policy, sub):
                    fully_shard(sub, mesh=mesh)
        self.module = fully_shard(module, mesh=mesh)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        return self.module.load_state_dict(state_dict, strict=strict, assign=assign)
