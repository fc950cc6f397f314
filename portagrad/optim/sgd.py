"""Stochastic gradient descent (``torch.optim.SGD``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import _inplace as inplace
from .optimizer import Optimizer, check_lr, check_nonneg

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum, as PyTorch computes it::

        g = grad (+ weight_decay * p);  buf = g  (first step)  or  momentum * buf + (1 - dampening) * g
        p -= lr * (g + momentum * buf  if nesterov else  buf)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    _sparse_grads = "dense"
    _sparse_weight_decay_error = ("add(sparse, dense) is not supported. Use add(dense, sparse) "
                                  "instead.")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            lr = float(group["lr"])
            momentum = float(group["momentum"])
            dampening = float(group["dampening"])
            wd = float(group["weight_decay"])
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                g = inplace.update_grad(p, maximize, wd) if (maximize or wd) else p._grad
                if momentum != 0:
                    st = state[p]
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = st["momentum_buffer"] = inplace.copy(g)
                    else:
                        inplace.scale_(buf, momentum)
                        inplace.axpy_(buf, 1 - dampening, g)
                    if nesterov:
                        g = inplace.axpy_(inplace.copy(g) if g is p._grad else g, momentum, buf)
                    else:
                        g = buf
                inplace.axpy_(p, -lr, g)
        return loss
