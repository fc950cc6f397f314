"""Adafactor (``torch.optim.Adafactor``): factored second moments, no first moment."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, to_scalar

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern), PyTorch's variant. For a matrix (or batch of matrices) the second
    moment is kept as a row and a column average; vectors keep a full one::

        beta2_t = 1 - t ** beta2_decay;  rho_t = min(lr, 1 / sqrt(t))
        alpha = max(eps2, rms(p)) * rho_t;  p *= 1 - lr * weight_decay
        row = lerp(row, mean(g*g, -1), 1 - beta2_t);  col = lerp(col, mean(g*g, -2), 1 - beta2_t)
        v = row @ col / max(mean(row, -2), eps1);  u = g / sqrt(max(v, eps1**2))
        p -= alpha / max(1, rms(u) / d) * u

    ``eps1=None`` means the machine epsilon of the parameter's dtype. ``foreach`` is accepted and
    ignored.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if not 0.0 <= to_scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(to_scalar(group["lr"]))
            beta2_decay, d = float(group["beta2_decay"]), float(group["d"])
            eps1_opt, eps2 = group["eps"]
            wd = float(group["weight_decay"])
            for p in group["params"]:
                if p._grad is None:
                    continue
                g = p._grad
                st = self.state[p]
                if not st:
                    st["step"] = _step_counter()
                    if g.dim() > 1:
                        st["row_var"] = g.new_zeros(g.shape[:-1] + (1,))
                        st["col_var"] = g.new_zeros(g.shape[:-2] + (1,) + g.shape[-1:])
                    else:
                        st["variance"] = inplace.zeros_like(g)
                eps1 = (float(np.finfo(p.dtype.numpy).eps) if eps1_opt is None
                        else float(eps1_opt))
                step = _inc(st["step"])
                g = inplace.update_grad(p, group["maximize"], 0.0)
                one_minus_beta2_t = step ** beta2_decay
                rho_t = min(lr, 1 / (step ** 0.5))
                alpha = max(float(eps2), p.norm(2).item() / math.sqrt(p.numel())) * rho_t
                if wd != 0:
                    inplace.scale_(p, 1 - lr * wd)
                if g.dim() > 1:
                    row_var, col_var = st["row_var"], st["col_var"]
                    row_mean = g.norm(dim=-1, keepdim=True).square() / g.shape[-1]
                    inplace.lerp_(row_var, row_mean, one_minus_beta2_t)
                    col_mean = g.norm(dim=-2, keepdim=True).square() / g.shape[-2]
                    inplace.lerp_(col_var, col_mean, one_minus_beta2_t)
                    var_estimate = row_var @ col_var
                    inplace.div_(var_estimate, inplace.clamp_(row_var.mean(dim=-2, keepdim=True)
                                                  .expand_as(var_estimate).contiguous(), eps1))
                else:
                    variance = st["variance"]
                    inplace.lerp_(variance, g * g, one_minus_beta2_t)
                    var_estimate = inplace.copy(variance)
                update = inplace.unary("rsqrt", inplace.clamp_(var_estimate, eps1 * eps1))
                inplace.mul_(update, g)
                denom = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * d))
                inplace.axpy_(p, -alpha / denom, update)
        return loss
