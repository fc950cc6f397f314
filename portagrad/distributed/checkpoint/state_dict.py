"""``torch.distributed.checkpoint.state_dict``: a sharded model's state dict, sharded (this rank's
rows, the default) or whole (``StateDictOptions(full_state_dict=True)``: gathered, a collective
every rank of the group calls), and loading either form back."""
from __future__ import annotations

import dataclasses
from typing import Any

from ..._tensor import Tensor
from ...autograd import grad_mode
from ...nn.modules.module import Module
from ..fsdp._param import ShardedParameter, shard_info

__all__ = ["StateDictOptions", "get_model_state_dict", "set_model_state_dict"]


@dataclasses.dataclass
class StateDictOptions:
    """What :func:`get_model_state_dict` returns (``torch``'s fields; ``full_state_dict`` and
    ``cpu_offload`` are used, ``strict`` by :func:`set_model_state_dict`)."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False


def get_model_state_dict(model: Module, *, submodules: Any = None,
                         options: StateDictOptions | None = None) -> dict[str, Any]:
    """``model.state_dict()``, its sharded parameters gathered whole when
    ``options.full_state_dict`` (every rank calls it; every rank gets the whole tensors)."""
    if submodules is not None:
        raise NotImplementedError("get_model_state_dict(submodules=...) is not supported by "
                                  "portagrad")
    opts = options or StateDictOptions()
    sd = model.state_dict(keep_vars=True)
    out: dict[str, Any] = {}
    with grad_mode.no_grad():
        for k, v in sd.items():
            if opts.ignore_frozen_params and isinstance(v, Tensor) and not v.requires_grad \
                    and k in dict(model.named_parameters()):
                continue
            if isinstance(v, ShardedParameter):
                v = v.full_tensor() if opts.full_state_dict else v.detach()
            elif isinstance(v, Tensor):
                v = v.detach()
            if opts.cpu_offload and isinstance(v, Tensor):
                info = shard_info(v)
                v = v.cpu()
                if info is not None:  # still this rank's rows: keep the placement for saving
                    v.__dict__["_shard_info"] = info
            out[k] = v
    return out


def set_model_state_dict(model: Module, model_state_dict: dict[str, Any], *,
                         options: StateDictOptions | None = None) -> Any:
    """Load a whole (``full_state_dict``) or sharded state dict into a sharded model: a whole
    tensor is cut to this rank's rows; a shard is copied as is."""
    opts = options or StateDictOptions()
    own = model.state_dict(keep_vars=True)
    local: dict[str, Any] = {}
    for k, v in model_state_dict.items():
        p = own.get(k)
        if isinstance(p, ShardedParameter) and isinstance(v, Tensor) \
                and tuple(v.shape) == p.global_shape and tuple(v.shape) != tuple(p.shape):
            flat = v.reshape((1,) if not p.global_shape else p.global_shape)
            v = flat[p.shard_offset:p.shard_offset + p.shape[0]]
        local[k] = v
    return model.load_state_dict(local, strict=opts.strict)
