"""Adamax (``torch.optim.Adamax``): Adam with the infinity norm."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, check_betas, check_lr, check_nonneg, to_scalar

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, section 7), PyTorch's update order::

        g = grad (+ weight_decay * p);  m = lerp(m, g, 1 - beta1)
        u = max(beta2 * u, |g| + eps);  p -= lr / (1 - beta1**t) * m / u

    ``foreach`` and ``differentiable`` are accepted and ignored (one code path on every device).
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(to_scalar(group["lr"]))
            beta1, beta2 = (float(b) for b in group["betas"])
            eps, wd = float(group["eps"]), float(group["weight_decay"])
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = _step_counter()
                    st["exp_avg"] = inplace.zeros_like(p)
                    st["exp_inf"] = inplace.zeros_like(p)
                step = _inc(st["step"])
                g = inplace.update_grad(p, group["maximize"], wd)
                exp_avg, exp_inf = st["exp_avg"], st["exp_inf"]
                inplace.lerp_(exp_avg, g, 1 - beta1)
                inplace.scale_(exp_inf, beta2)
                inplace.maximum_(exp_inf, inplace.add_scalar_(inplace.unary("abs", g), eps))
                inplace.addcdiv_(p, exp_avg, exp_inf, -(lr / (1 - beta1 ** step)))
        return loss
