"""Reverse-mode automatic differentiation (``torch.autograd``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .function import Function, FunctionCtx, Node, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled)

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["backward", "grad", "Function", "FunctionCtx", "Node", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "gradcheck", "gradgradcheck", "GradcheckError"]


def _as_tuple(x: Any) -> tuple:
    from .._tensor import Tensor

    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves."""
    from .engine import run_backward

    tensors = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} tensors and {len(tensors)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    ins = _as_tuple(inputs) if inputs is not None else None
    if ins is not None and not ins:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward(tensors, grads, retain_graph, create_graph, inputs=ins, accumulate=True)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Return the gradients of ``outputs`` w.r.t. ``inputs`` (``.grad`` fields are not touched)."""
    from .engine import run_backward

    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    gouts = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    if len(gouts) != len(outs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(gouts)} for "
                           f"{len(outs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True")
    allow = bool(allow_unused) or materialize_grads
    res = run_backward(outs, gouts, retain_graph, create_graph, inputs=ins, allow_unused=allow,
                       accumulate=False)
    if materialize_grads:
        from .. import _creation

        res = [g if g is not None else _creation.zeros_like(i) for g, i in zip(res, ins)]
    return tuple(res)


from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402
