"""How tensors pickle: values, dtype, device and ``requires_grad`` (never code)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["reduce_tensor", "rebuild_tensor"]


def rebuild_tensor(cls: type, array: np.ndarray, device: str, requires_grad: bool,
                   grad: Any = None, extra: Any = None) -> "Tensor":
    from .. import _creation

    t = _creation.from_host(array, device=device)
    if cls is not type(t):
        t = cls._from_tensor(t)
    if requires_grad:
        t.requires_grad_(True)
    if grad is not None:
        t._grad = grad
    if extra:
        t.__dict__.update(extra)
    return t


def reduce_tensor(t: "Tensor") -> Any:
    if t._grad_fn is not None and t._requires_grad:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If you "
                           "just want to transfer the data, call detach() on the tensor before "
                           "serializing (e.g., putting it on the queue).")
    arr = np.array(t.detach().numpy(force=True), order="C", copy=True)
    extra = {k: v for k, v in t.__dict__.items() if not k.startswith("_accum")}
    return (rebuild_tensor, (type(t), arr, str(t.device), t._requires_grad, t._grad, extra))
