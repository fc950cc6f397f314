"""DDP communication hooks (``torch.distributed.algorithms.ddp_comm_hooks``): the default hooks,
and :class:`DDPCommHookType` to register one by name."""
from __future__ import annotations

from enum import Enum
from functools import partial
from typing import Any

from . import default_hooks
from .default_hooks import allreduce_hook, bf16_compress_hook, fp16_compress_hook

__all__ = ["DDPCommHookType", "register_ddp_comm_hook", "default_hooks"]


def _ddp_comm_hook_wrapper(comm_hook: Any, model: Any, state: Any) -> None:
    model.register_comm_hook(state, comm_hook)


class DDPCommHookType(Enum):
    """The hooks that :func:`register_ddp_comm_hook` registers by name (those of
    ``default_hooks``; PyTorch's quantization and PowerSGD hooks are not provided)."""

    ALLREDUCE = partial(_ddp_comm_hook_wrapper, comm_hook=allreduce_hook)
    FP16_COMPRESS = partial(_ddp_comm_hook_wrapper, comm_hook=fp16_compress_hook)
    BF16_COMPRESS = partial(_ddp_comm_hook_wrapper, comm_hook=bf16_compress_hook)


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model: Any, state: Any = None
                           ) -> None:
    """Register the hook ``comm_hook_type`` names on the DDP ``model`` with ``state`` (the
    process group; ``None``: the default one)."""
    if not isinstance(comm_hook_type, DDPCommHookType):
        raise TypeError(f"comm_hook_type must be a DDPCommHookType, got {comm_hook_type!r}")
    comm_hook_type.value(model=model, state=state)
