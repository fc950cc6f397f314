"""Activation checkpointing's node: run a function without keeping its intermediates, and run it
again in backward to differentiate it (``torch.utils.checkpoint``, user-facing in
:mod:`portagrad.utils.checkpoint`).

The forward runs under ``no_grad``, so only the inputs are kept. Backward restores the random
and autocast state the forward saw (so dropout draws the same masks), reruns the function with recording on
detached copies of the inputs, and differentiates the recomputed outputs against the incoming
gradients; parameters used inside get their gradients accumulated by that inner backward, and
the inputs' gradients are returned to the outer graph.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _autocast, _random
from .._tensor import Tensor
from ..autograd.engine import in_restricted_backward
from ..autograd.function import Function, FunctionCtx
from ..autograd.grad_mode import enable_grad, no_grad

__all__ = ["CheckpointFunction"]


class CheckpointFunction(Function):
    """``apply(run_function, preserve_rng_state, *args)``: ``run_function(*args)`` (a tensor or
    a tuple of them), recomputed in backward."""

    _backward_name = "CheckpointFunctionBackward"

    @staticmethod
    def forward(ctx: FunctionCtx, run_function: Callable[..., Any], preserve_rng_state: bool,
                *args: Any) -> Any:
        ctx.run_function = run_function  # type: ignore[attr-defined]
        ctx.rng_state = (_random.get_rng_state()  # type: ignore[attr-defined]
                         if preserve_rng_state else None)
        ctx.autocast_state = _autocast.snapshot()  # type: ignore[attr-defined]
        ctx.tensor_pos = [i for i, a in enumerate(args)  # type: ignore[attr-defined]
                          if isinstance(a, Tensor)]
        ctx.others = [None if isinstance(a, Tensor) else a  # type: ignore[attr-defined]
                      for a in args]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            out = run_function(*args)
        outs = out if isinstance(out, tuple) else (out,)
        if not all(isinstance(o, Tensor) for o in outs):
            raise TypeError("checkpoint: the checkpointed function must return a Tensor or a "
                            "tuple of Tensors")
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        if in_restricted_backward():
            # the inner backward below accumulates into every leaf inside the function: it
            # cannot return only the asked-for gradients (PyTorch's refusal)
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.others)  # type: ignore[attr-defined]
        detached = []
        for pos, t in zip(ctx.tensor_pos, ctx.saved_tensors):  # type: ignore[attr-defined]
            assert t is not None
            d = t.detach()
            d.requires_grad_(t.requires_grad)
            inputs[pos] = d
            detached.append(d)
        saved_state = ctx.rng_state  # type: ignore[attr-defined]
        now = _random.get_rng_state() if saved_state is not None else None
        autocast_now = _autocast.snapshot()
        try:
            if saved_state is not None:
                _random.set_rng_state(saved_state)  # the forward's draws, again
            _autocast.restore(ctx.autocast_state)  # type: ignore[attr-defined]  # its casts too
            with enable_grad():
                out = ctx.run_function(*inputs)  # type: ignore[attr-defined]
        finally:
            _autocast.restore(autocast_now)
            if now is not None:
                _random.set_rng_state(now)
        outs = out if isinstance(out, tuple) else (out,)
        # one scalar whose gradient is sum(out_i * g_i): differentiating it sends each g_i into
        # its output, as a backward over all outputs with grad_tensors would (recorded: the
        # engine runs this backward with recording off)
        total = None
        with enable_grad():
            for o, g in zip(outs, grads):
                if g is None or not o.requires_grad:
                    continue
                term = (o * g).sum()
                total = term if total is None else total + term
        if total is not None:  # else nothing inside needs a gradient (only the anchor did)
            total.backward()
        result: list[Any] = [None] * len(ctx.others)  # type: ignore[attr-defined]
        for pos, d in zip(ctx.tensor_pos, detached):  # type: ignore[attr-defined]
            result[pos] = d.grad if d.requires_grad else None
        return (None, None, *result)
