"""NAdam (``torch.optim.NAdam``): Adam with Nesterov momentum and momentum decay."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import _creation, _dtype
from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, check_betas, check_lr, check_nonneg, to_scalar

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (Dozat), PyTorch's variant::

        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay));  prod *= mu_t
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v / (1 - beta2**t)) + eps
        p -= lr * (1 - mu_t) / (1 - prod) * g / denom + lr * mu_{t+1} / (1 - prod * mu_{t+1}) * m / denom

    ``decoupled_weight_decay=True`` multiplies ``p`` by ``1 - lr * weight_decay`` instead of adding
    ``weight_decay * p`` to the gradient (NAdamW). ``state["mu_product"]`` is a float32 scalar, as
    in PyTorch. ``foreach``/``differentiable``/``capturable`` are accepted and ignored.
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("momentum_decay value", momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
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
            momentum_decay = float(group["momentum_decay"])
            decoupled = group["decoupled_weight_decay"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = _step_counter()
                    st["mu_product"] = _creation.tensor(1.0, dtype=_dtype.float32, device="cpu")
                    st["exp_avg"] = inplace.zeros_like(p)
                    st["exp_avg_sq"] = inplace.zeros_like(p)
                step = _inc(st["step"])
                bias_correction2 = 1 - beta2 ** step
                if wd != 0 and decoupled:
                    inplace.scale_(p, 1 - lr * wd)
                g = inplace.update_grad(p, group["maximize"], 0.0 if decoupled else wd)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                # the running product is kept (and rounded) in float32, as PyTorch keeps it
                mu_product = inplace.scale_(st["mu_product"], mu).item()
                exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
                inplace.lerp_(exp_avg, g, 1 - beta1)
                inplace.scale_(exp_avg_sq, beta2)
                inplace.addcmul_(exp_avg_sq, g, g, 1 - beta2)
                denom = inplace.sqrt(inplace.div_scalar_(inplace.copy(exp_avg_sq), bias_correction2))
                inplace.add_scalar_(denom, eps)
                mu_product_next = mu_product * mu_next
                inplace.addcdiv_(p, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product))
                inplace.addcdiv_(p, exp_avg, denom, -lr * mu_next / (1.0 - mu_product_next))
        return loss
