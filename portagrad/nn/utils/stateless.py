"""``torch.nn.utils.stateless.functional_call``: the deprecated spelling of
:func:`portagrad.func.functional_call` (the module called with some of its parameters and
buffers replaced by caller-given tensors, for that call only)."""
from __future__ import annotations

import warnings
from typing import Any

from ..._tensor import Tensor
from ...func import functional_call as _functional_call
from ..modules.module import Module
from ..parallel.data_parallel import DataParallel

__all__ = ["functional_call"]


def functional_call(module: Module, parameters_and_buffers: dict[str, Tensor],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call ``module(*args, **kwargs)`` with the parameters and buffers named (dotted, as in
    ``state_dict``) in ``parameters_and_buffers`` replaced by the given tensors for this call
    only. A non-tuple ``args`` is the single positional argument. ``tie_weights``: names that
    share one tensor in the module all take the value given for any of them. ``strict``: the
    names must be exactly the module's parameters and buffers. Deprecated in favour of
    ``torch.func.functional_call``."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
