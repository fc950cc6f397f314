"""``torch.utils.checkpoint``: trade compute for memory by recomputing a block in backward.

``checkpoint(fn, *args)`` returns ``fn(*args)`` without keeping the block's intermediate
tensors; backward runs ``fn`` again (with the random state and autocast state of the forward,
unless ``preserve_rng_state=False``, so dropout masks match) and differentiates through the
recomputed values. Gradients equal those of running ``fn`` directly. Both of PyTorch's variants:

- ``use_reentrant=False`` (recommended): ``fn`` is recorded as usual, but every tensor its ops
  save for backward goes through a :class:`~portagrad.autograd.graph.saved_tensors_hooks` pack
  hook that keeps only its position; the first time backward reads one, ``fn`` runs again on the
  same inputs, recording, and the tensors that run saves are handed out in order. So ``fn`` may
  return anything (dicts, lists, non-tensors), take keyword arguments, be differentiated twice
  (``create_graph=True``: the recomputation is connected to the inputs) and be differentiated by
  ``autograd.grad`` (parameters inside get no ``.grad`` unless asked, as without checkpointing).
  ``fn`` must run the same recorded ops each time (a recomputation that saves fewer tensors is
  refused).
- ``use_reentrant=True`` (PyTorch's old default; not passing ``use_reentrant`` warns and means
  it, as in PyTorch 2.13): one node that runs ``fn`` under ``no_grad`` and, in backward, reruns it
  and backpropagates through it; ``fn`` returns a tensor or a tuple of tensors, gradients flow
  only if an input requires grad, and keyword arguments are refused.

``context_fn``, ``determinism_check`` and ``debug`` are PyTorch's non-reentrant options and are
accepted with their defaults only.
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .. import _autocast, _random
from .._ops.checkpoint import CheckpointFunction
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..autograd.graph import saved_tensors_hooks
from ..nn.modules.container import Sequential

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn",
           "detach_variable", "check_backward_validity", "get_device_states", "set_device_states",
           "set_checkpoint_early_stop", "set_checkpoint_debug_enabled"]


class CheckpointError(RuntimeError):
    """Raised when a checkpointed function's recomputation does not match its forward."""


def noop_context_fn() -> tuple[contextlib.AbstractContextManager[Any],
                                contextlib.AbstractContextManager[Any]]:
    """The default ``context_fn``: no context around the forward nor the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_noop_context_fn = noop_context_fn


def detach_variable(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """``inputs`` with each tensor detached, keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad_(x.requires_grad)
            out.append(d)
        else:
            out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Any) -> None:
    """Warn when no tensor among ``inputs`` requires grad (its gradients will be None)."""
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      UserWarning, stacklevel=2)


def get_device_states(*args: Any) -> tuple[list[int], list[Any]]:
    """The per-device random states to restore on recomputation: none here (one generator serves
    every device, and checkpoint saves and restores it)."""
    return [], []


def set_device_states(devices: Any, states: Any, *, device_type: Any = None) -> None:
    """Restore what :func:`get_device_states` returned (nothing: see there)."""


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Accepted for PyTorch's API: portagrad's recomputation always runs the whole function."""
    yield


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """Accepted for PyTorch's API: portagrad's checkpoint has no debug traces."""
    yield


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

    if not is_grad_enabled():  # nothing is recorded, so nothing is saved
        return function(*args, **kwargs)
    frame = _Recomputation(function, args, kwargs, preserve)
    with saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


class _Recomputation:
    """One non-reentrant checkpointed call: the pack hook numbers the tensors the forward saves
    (and keeps none of them); the first unpack reruns the call, recording, and keeps what that
    run saves, in the same order, for every unpack after it."""

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any], preserve_rng_state: bool) -> None:
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.rng_state = _random.get_rng_state() if preserve_rng_state else None
        self.autocast_state = _autocast.snapshot()
        self.count = 0
        self.values: list[Any] | None = None

    def pack(self, tensor: Any) -> int:
        i = self.count
        self.count += 1
        return i

    def unpack(self, i: int) -> Any:
        if self.values is None:
            self.values = self._recompute()
        if i >= len(self.values):
            raise RuntimeError(
                f"torch.utils.checkpoint: the recomputation saved {len(self.values)} tensors for "
                f"backward where the forward saved {self.count}: the checkpointed function must "
                "run the same operations each time it is called")
        return self.values[i]

    def _recompute(self) -> list[Any]:
        saved: list[Any] = []

        def keep(t: Any) -> Any:
            saved.append(t)
            return t

        now = _random.get_rng_state() if self.rng_state is not None else None
        autocast_now = _autocast.snapshot()
        try:
            if self.rng_state is not None:
                _random.set_rng_state(self.rng_state)  # the forward's draws, again
            _autocast.restore(self.autocast_state)
            # on the inputs themselves, recording: what it saves is connected to them, so a
            # second differentiation (create_graph=True) goes through the recomputed ops
            with enable_grad(), saved_tensors_hooks(keep, _identity):
                self.function(*self.args, **self.kwargs)
        finally:
            _autocast.restore(autocast_now)
            if now is not None:
                _random.set_rng_state(now)
        return saved


def _identity(t: Any) -> Any:
    return t


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
