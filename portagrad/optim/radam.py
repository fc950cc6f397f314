"""RAdam (``torch.optim.RAdam``): Adam with a rectified adaptive learning rate."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, check_betas, check_lr, check_nonneg, to_scalar

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (Liu et al.), PyTorch's update::

        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g;  mh = m / (1 - beta1**t)
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        rho_t > 5:  p -= mh * lr * sqrt(1 - beta2**t) / (sqrt(v) + eps) * r_t     else: p -= mh * lr

    with the rectification ``r_t = sqrt((rho_t-4)(rho_t-2) rho_inf / ((rho_inf-4)(rho_inf-2) rho_t))``.
    ``decoupled_weight_decay=True`` gives RAdamW. ``foreach``/``differentiable``/``capturable`` are
    accepted and ignored.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(to_scalar(group["lr"]))
            beta1, beta2 = (float(b) for b in group["betas"])
            eps, wd = float(group["eps"]), float(group["weight_decay"])
            decoupled = group["decoupled_weight_decay"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = _step_counter()
                    st["exp_avg"] = inplace.zeros_like(p)
                    st["exp_avg_sq"] = inplace.zeros_like(p)
                step = _inc(st["step"])
                if wd != 0 and decoupled:
                    inplace.scale_(p, 1 - lr * wd)
                g = inplace.update_grad(p, group["maximize"], 0.0 if decoupled else wd)
                exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
                inplace.lerp_(exp_avg, g, 1 - beta1)
                inplace.scale_(exp_avg_sq, beta2)
                inplace.addcmul_(exp_avg_sq, g, g, 1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                # same operation order as PyTorch: ((m / bc1) * lr) * adaptive * rect
                update = inplace.scale_(inplace.div_scalar_(inplace.copy(exp_avg), bias_correction1), lr)
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    adaptive = inplace.add_scalar_(inplace.sqrt(exp_avg_sq), eps)
                    inplace.rdiv_scalar_(adaptive, math.sqrt(bias_correction2))
                    inplace.mul_(update, adaptive)
                    inplace.scale_(update, ((rho_t - 4) * (rho_t - 2) * rho_inf
                                      / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5)
                inplace.axpy_(p, -1.0, update)
        return loss
