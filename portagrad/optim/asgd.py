"""Averaged stochastic gradient descent (``torch.optim.ASGD``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import _creation, _dtype
from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, check_lr, check_nonneg, to_scalar

__all__ = ["ASGD"]


def _scalar(value: float) -> Any:
    # eta and mu are float32 scalars in PyTorch's state: their values are rounded to float32
    return _creation.tensor(value, dtype=_dtype.float32, device="cpu")


def _f32(value: float) -> float:
    return float(np.float32(value))


class ASGD(Optimizer):
    """ASGD (Polyak & Juditsky), PyTorch's variant::

        p *= 1 - lambd * eta;  p -= eta * g;  ax = p (mu == 1)  or  ax += mu * (p - ax)
        eta = lr / (1 + lambd * lr * t) ** alpha;  mu = 1 / max(1, t - t0)

    ``state["ax"]`` is the running average of the parameter. ``foreach``/``differentiable``/
    ``capturable`` are accepted and ignored.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(to_scalar(group["lr"]))
            lambd, alpha, t0 = float(group["lambd"]), float(group["alpha"]), float(group["t0"])
            wd = float(group["weight_decay"])
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = _step_counter()
                    st["eta"] = _scalar(lr)
                    st["mu"] = _scalar(1.0)
                    st["ax"] = inplace.zeros_like(p)
                step = _inc(st["step"])
                g = inplace.update_grad(p, group["maximize"], wd)
                eta = float(st["eta"].item())
                inplace.scale_(p, 1 - lambd * eta)
                inplace.axpy_(p, -eta, g)
                ax, mu = st["ax"], float(st["mu"].item())
                if mu != 1:
                    diff = inplace.copy(p)
                    inplace.axpy_(diff, -1.0, ax)
                    inplace.axpy_(ax, 1.0, inplace.scale_(diff, mu))
                else:
                    inplace.assign_(ax, p)
                # PyTorch builds the new values as default-dtype (float32) scalars, so they are
                # rounded to float32 even when the state was loaded as float64
                inplace.fill_(st["eta"], _f32(lr / ((1 + lambd * lr * step) ** alpha)))
                inplace.fill_(st["mu"], _f32(1 / max(1, step - t0)))
        return loss
