"""Resilient backpropagation (``torch.optim.Rprop``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, check_lr, to_scalar

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun), PyTorch's variant: each element has its own step size,
    multiplied by ``etas[1]`` when the gradient kept its sign, by ``etas[0]`` when it flipped (and
    that element then skips its update and forgets its gradient), clamped to ``step_sizes``;
    ``p -= sign(g) * step_size``. ``foreach``/``differentiable``/``capturable`` are accepted and
    ignored.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = (float(e) for e in group["etas"])
            smin, smax = (float(s) for s in group["step_sizes"])
            for p in group["params"]:
                if p._grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = _step_counter()
                    st["prev"] = inplace.zeros_like(p)
                    st["step_size"] = inplace.full_like(p, float(to_scalar(group["lr"])))
                _inc(st["step"])
                g = inplace.update_grad(p, group["maximize"], 0.0)
                prev, step_size = st["prev"], st["step_size"]
                sign = inplace.unary("sign", inplace.mul_(inplace.copy(g), prev))
                flipped = sign < 0
                factor = inplace.full_like(sign, 1.0).masked_fill_(sign > 0, etaplus)
                factor.masked_fill_(flipped, etaminus)
                inplace.clamp_(inplace.mul_(step_size, factor), smin, smax)
                g = g.masked_fill(flipped, 0)
                inplace.addcmul_(p, inplace.unary("sign", g), step_size, -1.0)
                inplace.assign_(prev, g)
        return loss
