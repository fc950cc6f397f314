"""Gradient clipping (``torch.nn.utils.clip_grad``)."""
from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from ... import _creation
from ..._ops import elementwise
from ..._ops.joining import stack
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _params(parameters: Any) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def get_total_norm(tensors: Any, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Any = None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (as one vector)."""
    tensors = [t for t in _params(tensors) if t is not None]
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _creation.tensor(0.0)
    dev = tensors[0].device
    with no_grad():
        norms = [t.norm(norm_type).to(dev) for t in tensors]
        if norm_type == float("inf"):
            total = stack(norms).amax()
        else:
            total = stack(norms).norm(norm_type)
    if error_if_nonfinite and not bool(total.isfinite().item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                           f"non-finite, so it cannot be clipped. To disable this error and scale "
                           f"the gradients by the non-finite norm anyway, set "
                           f"`error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: Any, max_norm: float, total_norm: Tensor,
                          foreach: Any = None) -> None:
    grads = [g for g in (p.grad for p in _params(parameters)) if g is not None]
    with no_grad():
        # a call, not ``max_norm / ...``: a NumPy scalar max_norm would turn the tensor into an ndarray
        coef = elementwise.div(max_norm, total_norm + 1e-6).clamp(None, 1.0)
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: Any = None) -> Tensor:
    """Scale the gradients in place so that their total norm is at most ``max_norm``; returns
    the total norm before clipping (a tensor, without a host sync)."""
    params = _params(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    if grads:
        clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters: Any, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Any = None) -> Tensor:
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float,
                     foreach: Any = None) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _params(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)
