"""The node of user-defined operators with a registered backward
(``torch.library.custom_op(...).register_autograd``, user-facing in :mod:`portagrad.library`).

The forward runs the operator's implementation; ``setup_context(ctx, inputs, output)`` saves what
the user's ``backward(ctx, *grads)`` needs, and that backward returns one gradient per input, as
in PyTorch.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..autograd.function import Function, FunctionCtx

__all__ = ["CustomOpFunction"]


class CustomOpFunction(Function):
    """``apply(impl, setup_context, backward, *args)``."""

    _backward_name = "CustomOpBackward"

    @staticmethod
    def forward(ctx: FunctionCtx, impl: Callable[..., Any], setup_context: Callable[..., Any] | None,
                backward: Callable[..., Any], *args: Any) -> Any:
        out = impl(*args)
        if setup_context is not None:
            setup_context(ctx, tuple(args), out)
        ctx.user_backward = backward  # type: ignore[attr-defined]
        ctx.n_args = len(args)  # type: ignore[attr-defined]
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        got = ctx.user_backward(ctx, *grads)  # type: ignore[attr-defined]
        got = got if isinstance(got, tuple) else (got,)
        if len(got) != ctx.n_args:  # type: ignore[attr-defined]
            raise RuntimeError(f"custom op backward: expected {ctx.n_args} gradients (one per "  # type: ignore[attr-defined]
                               f"input), got {len(got)}")
        return (None, None, None, *got)
