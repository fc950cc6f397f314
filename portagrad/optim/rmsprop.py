"""RMSprop (``torch.optim.RMSprop``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, check_lr, check_nonneg

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton), PyTorch's variant::

        v = alpha * v + (1 - alpha) * g * g;   (centered: m = lerp(m, g, 1 - alpha), v' = v - m*m)
        avg = sqrt(v') + eps
        momentum > 0: buf = momentum * buf + g / avg; p -= lr * buf     else: p -= lr * g / avg
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("alpha value", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, alpha, eps = float(group["lr"]), float(group["alpha"]), float(group["eps"])
            wd, momentum = float(group["weight_decay"]), float(group["momentum"])
            centered, maximize = group["centered"], group["maximize"]
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = _step_counter()
                    st["square_avg"] = inplace.zeros_like(p)
                    if momentum > 0:
                        st["momentum_buffer"] = inplace.zeros_like(p)
                    if centered:
                        st["grad_avg"] = inplace.zeros_like(p)
                _inc(st["step"])
                g = inplace.update_grad(p, maximize, wd)
                square_avg = st["square_avg"]
                inplace.scale_(square_avg, alpha)
                inplace.addcmul_(square_avg, g, g, 1 - alpha)
                if centered:
                    grad_avg = st["grad_avg"]
                    inplace.lerp_(grad_avg, g, 1 - alpha)
                    avg = inplace.copy(square_avg)
                    inplace.addcmul_(avg, grad_avg, grad_avg, -1.0)
                    avg = inplace.sqrt(avg)
                else:
                    avg = inplace.sqrt(square_avg)
                inplace.add_scalar_(avg, eps)
                if momentum > 0:
                    buf = st["momentum_buffer"]
                    inplace.scale_(buf, momentum)
                    inplace.addcdiv_(buf, g, avg)
                    inplace.axpy_(p, -lr, buf)
                else:
                    inplace.addcdiv_(p, g, avg, -lr)
        return loss
