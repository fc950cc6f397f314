"""``torch.utils.checkpoint``: trade compute for memory by recomputing a block in backward.

``checkpoint(fn, *args)`` returns ``fn(*args)`` without keeping the block's intermediate
tensors; backward runs ``fn`` again (with the random state of the forward, unless
``preserve_rng_state=False``, so dropout masks match) and differentiates the recomputation.
Gradients equal those of running ``fn`` directly. Both of PyTorch's variants are accepted:
``use_reentrant=True`` (PyTorch's old default; gradients flow only if an input requires grad,
no keyword arguments) and ``use_reentrant=False`` (keyword arguments allowed, and parameters
inside ``fn`` get gradients even when no input requires grad). Not passing ``use_reentrant``
warns and means ``True``, as in PyTorch 2.13. Here both recompute through one node, and
``fn`` must return a tensor or a tuple of tensors; ``context_fn``, ``determinism_check`` and
``debug`` are PyTorch's non-reentrant options and are accepted with their defaults only.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .. import _creation
from .._ops.checkpoint import CheckpointFunction
from ..autograd.grad_mode import is_grad_enabled
from ..nn.modules.container import Sequential

__all__ = ["checkpoint", "checkpoint_sequential"]


def _noop_context_fn() -> Any:
    return None


_DEFAULT_DETERMINISM_MODE = "default"


def _resolve_reentrant(use_reentrant: bool | None, where: str) -> bool:
    if use_reentrant is None:
        warnings.warn(f"{where}: the use_reentrant parameter should be passed explicitly. "
                      "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will "
                      "raise an exception. use_reentrant=False is recommended, but if you need "
                      "to preserve the current default behavior, you can pass "
                      "use_reentrant=True.", UserWarning, stacklevel=3)
        return True
    return bool(use_reentrant)


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], Any] = _noop_context_fn,
               determinism_check: str = _DEFAULT_DETERMINISM_MODE, debug: bool = False,
               early_stop: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, recomputed in backward instead of keeping its
    intermediates (see the module docstring)."""
    reentrant = _resolve_reentrant(use_reentrant, "torch.utils.checkpoint")
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if reentrant and (context_fn is not _noop_context_fn or debug is not False):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    if context_fn is not _noop_context_fn or debug or determinism_check != "default":
        raise NotImplementedError("checkpoint: context_fn, debug and determinism_check are not "
                                  "implemented in portagrad (pass their defaults)")
    if reentrant:
        if is_grad_enabled() and not any(getattr(a, "requires_grad", False) for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          UserWarning, stacklevel=2)
        return CheckpointFunction.apply(function, preserve, *args)

    def run(*a: Any) -> Any:
        return function(*a[:-1], **kwargs)  # the last argument is the anchor below

    # an empty tensor that requires grad, so the node is recorded (and the parameters inside
    # reached) whether or not an input requires grad, as with PyTorch's non-reentrant variant
    anchor = _creation.empty(0, requires_grad=is_grad_enabled())
    return CheckpointFunction.apply(run, preserve, *args, anchor)


def checkpoint_sequential(functions: Sequential | Sequence[Callable[[Any], Any]], segments: int,
                          input: Any, use_reentrant: bool | None = None,
                          **kwargs: Any) -> Any:
    """Run ``functions`` (a ``Sequential`` or a list of callables) one after another on
    ``input``, in ``segments`` chunks of which all but the last are checkpointed."""
    reentrant = _resolve_reentrant(use_reentrant, "torch.utils.checkpoint.checkpoint_sequential")
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    fns = list(functions.children()) if isinstance(functions, Sequential) else list(functions)

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = fns[j](x)
            return x
        return forward

    size = len(fns) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(fns) - 1)(input)
