"""Adadelta (``torch.optim.Adadelta``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, check_lr, check_nonneg

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler)::

        v = rho * v + (1 - rho) * g * g;  d = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * d * d;  p -= lr * d
    """

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonneg("epsilon value", eps)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps = float(group["lr"]), float(group["rho"]), float(group["eps"])
            wd, maximize = float(group["weight_decay"]), group["maximize"]
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = _step_counter()
                    st["square_avg"] = inplace.zeros_like(p)
                    st["acc_delta"] = inplace.zeros_like(p)
                _inc(st["step"])
                g = inplace.update_grad(p, maximize, wd)
                square_avg, acc_delta = st["square_avg"], st["acc_delta"]
                inplace.scale_(square_avg, rho)
                inplace.addcmul_(square_avg, g, g, 1 - rho)
                std = inplace.sqrt(inplace.add_scalar_(inplace.copy(square_avg), eps))
                delta = inplace.sqrt(inplace.add_scalar_(inplace.copy(acc_delta), eps))
                inplace.div_(delta, std)
                inplace.mul_(delta, g)
                inplace.scale_(acc_delta, rho)
                inplace.addcmul_(acc_delta, delta, delta, 1 - rho)
                inplace.axpy_(p, -lr, delta)
        return loss
