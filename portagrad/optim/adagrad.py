"""Adagrad (``torch.optim.Adagrad``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, check_lr, check_nonneg

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.)::

        clr = lr / (1 + (t - 1) * lr_decay);  s += g * g;  p -= clr * g / (sqrt(s) + eps)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check_nonneg("lr_decay value", lr_decay)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("initial_accumulator_value value", initial_accumulator_value)
        check_nonneg("epsilon value", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # PyTorch creates Adagrad's state eagerly
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                st["step"] = _step_counter()
                st["sum"] = inplace.full_like(p, float(group["initial_accumulator_value"]))

    _sparse_grads = "dense"

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, lr_decay = float(group["lr"]), float(group["lr_decay"])
            wd, eps, maximize = float(group["weight_decay"]), float(group["eps"]), group["maximize"]
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                st = self.state[p]
                step = _inc(st["step"])
                g = inplace.update_grad(p, maximize, wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                s = st["sum"]
                inplace.addcmul_(s, g, g, 1.0)
                std = inplace.sqrt(s)
                inplace.add_scalar_(std, eps)
                inplace.addcdiv_(p, g, std, -clr)
        return loss
