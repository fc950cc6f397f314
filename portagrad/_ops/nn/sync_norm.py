"""Training-mode batch norm whose statistics span several processes (``SyncBatchNorm``).

The op layer cannot reach the distributed package (it lies above), so the caller passes
``gather``: a function that takes this process's small statistics tensor of shape ``(k, C)``
and returns every process's, stacked ``(world, k, C)`` in rank order (an ``all_gather``). Every
process of the group must run the forward, and the backward, in the same order, as with any
collective.

Forward: each process sends its per-channel sample count, mean and sum of squared deviations
(not sums of squares, whose difference cancels in float32); these combine exactly into the
statistics of the concatenated batch (Chan et al.'s parallel variance), whatever each process's
batch size, a process with no samples included. Backward: the input gradient of batch norm needs
``sum(dy)`` and ``sum(dy * xhat)`` over the whole batch, so the processes exchange those per
channel; the weight and bias gradients stay local sums, which DistributedDataParallel then
reduces, as PyTorch's ``SyncBatchNorm`` does.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import _creation
from ..._tensor import Tensor
from ...autograd.function import Function, once_differentiable
from ...autograd.grad_mode import no_grad
from .. import reduction
from ..elementwise import rsqrt
from ..joining import stack
from ..shape import reshape
from .._common import call

__all__ = ["sync_batch_norm"]

Gather = Callable[[Tensor], Tensor]


def _bshape(x: Tensor) -> tuple:
    return (1, x.shape[1]) + (1,) * (x.dim() - 2)


def _global_stats(x: Tensor, gather: Gather) -> tuple[Tensor, Tensor, int]:
    """``(mean, biased var, total count)`` per channel of the batch of every process."""
    c = x.shape[1]
    axes = (0,) + tuple(range(2, x.dim()))
    n = x.numel() // c
    if n:
        mean = reduction.sum(x, axes) * (1.0 / n)
        xc = x - reshape(mean, _bshape(x))
        m2 = reduction.sum(xc * xc, axes)
    else:  # this process has no samples: it adds nothing (a mean of nothing would be NaN)
        mean = m2 = _creation.zeros(c, dtype=x.dtype, device=x.device)
    count = _creation.full((c,), float(n), dtype=x.dtype, device=x.device)
    everyone = gather(stack([count, mean, m2]))  # (world, 3, C)
    counts, means, m2s = everyone[:, 0], everyone[:, 1], everyone[:, 2]
    total = int(round(float(reduction.sum(everyone[:, 0, 0]).item())))
    if total <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got {total} "
                         f"over all processes (input size {tuple(x.shape)} here)")
    g_mean = reduction.sum(counts * means, 0) * (1.0 / total)
    d = means - g_mean
    g_m2 = reduction.sum(m2s + counts * d * d, 0)
    return g_mean, g_m2 * (1.0 / total), total


class _SyncBatchNorm(Function):
    """Batch norm over the batches of every process of a group (see the module docstring)."""

    _backward_name = "SyncBatchNormBackward"

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor | None, b: Tensor | None, running: tuple,
                momentum: float, eps: float, gather: Gather) -> Tensor:
        mean, var, total = _global_stats(x, gather)
        rm, rv = running
        with no_grad():
            if rm is not None:
                rm.mul_(1 - momentum).add_(mean * momentum)
            if rv is not None:  # the unbiased variance of the whole batch, as batch_norm's
                rv.mul_(1 - momentum).add_(var * (momentum * total / (total - 1)))
        bs = _bshape(x)
        r = rsqrt(var + eps)
        y = (x - reshape(mean, bs)) * reshape(r, bs)
        if w is not None:
            y = y * reshape(w, bs)
        if b is not None:
            y = y + reshape(b, bs)
        ctx.gather, ctx.total = gather, total
        ctx.save_for_backward(x, w, mean, r)
        return y

    @staticmethod
    @once_differentiable  # the exchanged sums are constants to autograd: no second derivative
    def backward(ctx: Any, g: Tensor) -> Any:
        x, w, mean, r = ctx.saved_tensors
        need = ctx.needs_input_grad
        bs = _bshape(x)
        axes = (0,) + tuple(range(2, x.dim()))
        xhat = (x - reshape(mean, bs)) * reshape(r, bs)
        sum_dy = reduction.sum(g, axes)
        sum_dy_xhat = reduction.sum(g * xhat, axes)
        gx = None
        if need[0]:
            both = reduction.sum(ctx.gather(stack([sum_dy, sum_dy_xhat])), 0)  # (2, C)
            scale = r if w is None else r * w
            inv = 1.0 / ctx.total
            gx = reshape(scale, bs) * (g - reshape(both[0] * inv, bs)
                                       - xhat * reshape(both[1] * inv, bs))
        gw = sum_dy_xhat if w is not None and need[1] else None
        gb = sum_dy if len(need) > 2 and need[2] else None
        return gx, gw, gb, None, None, None, None


def sync_batch_norm(x: Tensor, w: Tensor | None, b: Tensor | None, running_mean: Tensor | None,
                    running_var: Tensor | None, momentum: float, eps: float,
                    gather: Gather) -> Tensor:
    """Training-mode batch norm of (N, C, *) with the statistics of every process's batch;
    the running statistics (if given) are updated in place with the global mean and unbiased
    variance. ``gather``: see the module docstring."""
    return call(_SyncBatchNorm, x, w, b, (running_mean, running_var), float(momentum),
                float(eps), gather)
