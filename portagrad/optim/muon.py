"""Muon (``torch.optim.Muon``): momentum orthogonalized by a Newton-Schulz iteration."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from .._tensor import Tensor
from . import _inplace as inplace
from .optimizer import Optimizer, to_scalar

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad: Tensor, ns_coefficients: tuple[float, float, float],
                                ns_steps: int, eps: float) -> Tensor:
    """The quintic Newton-Schulz iteration approximating ``U V^T`` of ``grad = U S V^T``.

    PyTorch runs it in bfloat16; portagrad has no bfloat16, so it runs in the gradient's dtype
    (more precise; results differ from PyTorch's at bfloat16 rounding level)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.T if tall else grad
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.T
        gram_update = gram.addmm(gram, gram, beta=b, alpha=c)
        x = x.addmm(gram_update, x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape: tuple[int, ...]) -> float:
    A, B = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(A, B))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon (Jordan et al.) for 2-D parameters::

        buf = lerp(buf, g, 1 - momentum);  u = lerp(g, buf, momentum) if nesterov else buf
        p *= 1 - lr * weight_decay;  p -= adjusted_lr * newton_schulz(u)

    ``adjust_lr_fn``: ``None``/``"original"`` scales ``lr`` by ``sqrt(max(1, rows / cols))``,
    ``"match_rms_adamw"`` by ``0.2 * sqrt(max(rows, cols))``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= to_scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(to_scalar(group["lr"]))
            wd, momentum = float(group["weight_decay"]), float(group["momentum"])
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if g.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                st = self.state[p]
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = inplace.zeros_like(g)
                buf = st["momentum_buffer"]
                inplace.lerp_(buf, g, 1 - momentum)
                update = inplace.lerp_(inplace.copy(g), buf, momentum) if group["nesterov"] else buf
                update = _zeropower_via_newtonschulz(update, tuple(group["ns_coefficients"]),
                                                     int(group["ns_steps"]), float(group["eps"]))
                inplace.scale_(p, 1 - lr * wd)
                inplace.axpy_(p, -_adjust_lr(lr, group["adjust_lr_fn"], tuple(p.shape)),
                        update.contiguous())
        return loss
