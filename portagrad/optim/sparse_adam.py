"""SparseAdam (``torch.optim.SparseAdam``): Adam for sparse gradients.

portagrad has no sparse tensors, so every gradient is dense, and PyTorch refuses dense gradients in
this optimizer: :meth:`SparseAdam.step` raises the same ``RuntimeError`` PyTorch raises for them.
The constructor validates its arguments and builds parameter groups like every optimizer, so
checkpoints and hyper-parameter handling work as in PyTorch.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .optimizer import Optimizer, check_betas, check_lr

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Lazy Adam for sparse gradients: only the moments of the rows present in the gradient are
    updated. Needs sparse gradients, which portagrad does not produce (see the module docstring).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        check_lr(lr, strict=True)
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Raise for the first (necessarily dense) gradient, as PyTorch does; a step without any
        gradient only evaluates ``closure``."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
        return loss
