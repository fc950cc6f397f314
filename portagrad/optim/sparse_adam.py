"""SparseAdam (``torch.optim.SparseAdam``): Adam for sparse gradients.

Its gradients come from ``nn.Embedding(sparse=True)`` (and ``F.embedding(..., sparse=True)``):
sparse COO tensors holding the rows a batch used. Only those rows of the parameter and of its
two moments change in a step ("lazy" Adam, PyTorch's algorithm); a dense gradient raises the
``RuntimeError`` PyTorch raises.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from .._creation import zeros_like
from .._tensor import Tensor
from .optimizer import Optimizer, check_betas, check_lr, to_scalar

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Lazy Adam for sparse gradients: only the moments of the rows present in the gradient are
    updated (see the module docstring).
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

    _sparse_grads = "sparse"

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One lazy Adam update of the rows present in each (sparse) gradient; a dense gradient
        raises PyTorch's ``RuntimeError``."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None and p._grad.__class__.is_sparse is not True:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
            beta1, beta2 = group["betas"]
            lr, eps = to_scalar(group["lr"]), group["eps"]
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                state["step"] += 1
                _sparse_adam_rows(p, grad, state, beta1, beta2, lr, eps, group["maximize"])
        return loss


def _sparse_adam_rows(p: Tensor, grad: Any, state: dict[str, Any], beta1: float, beta2: float,
                      lr: float, eps: float, maximize: bool) -> None:
    """PyTorch's ``sparse_adam`` for one parameter: the moments move toward the gradient only at
    the (coalesced) gradient's rows, and only those rows of ``p`` change."""
    grad = grad.coalesce()
    sd = grad.sparse_dim()
    rows = math.prod(p.shape[:sd])
    flat_shape = (rows,) + tuple(p.shape[sd:])
    index = grad._indices()[0] if sd == 1 else _linear_index(grad._indices(), p.shape[:sd])
    values = grad._values()
    if maximize:
        values = -values
    exp_avg = state["exp_avg"].view(flat_shape)
    exp_avg_sq = state["exp_avg_sq"].view(flat_shape)
    old_avg = exp_avg.index_select(0, index)
    avg_update = (values - old_avg) * (1 - beta1)
    exp_avg.index_add_(0, index, avg_update)
    old_sq = exp_avg_sq.index_select(0, index)
    sq_update = (values * values - old_sq) * (1 - beta2)
    exp_avg_sq.index_add_(0, index, sq_update)
    numer = avg_update + old_avg
    denom = (sq_update + old_sq).sqrt() + eps
    step = state["step"]
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr * math.sqrt(bias_correction2) / bias_correction1
    p.view(flat_shape).index_add_(0, index, numer / denom * -step_size)


def _linear_index(indices: Tensor, sizes: Any) -> Tensor:
    """Row-major position of each column of ``indices`` over the sparse dimensions ``sizes``."""
    lin = indices[0]
    for d in range(1, len(sizes)):
        lin = lin * sizes[d] + indices[d]
    return lin
