"""``pg.compile``: ``torch.compile``'s interface.

``torch.compile`` promises that compiling never changes what a model computes, only how fast.
portagrad has no graph compiler, so ``compile`` validates its arguments as PyTorch does and
returns the module or function itself, which then runs eagerly: results are what compiled code
would give. The exception is PyTorch's CUDA-graph mode: a function (a training step) compiled with
``mode="reduce-overhead"`` or ``backend="cudagraphs"`` becomes a
:class:`portagrad.capture.CapturedStep`, which records its backend launches and replays them
(bit-identical to eager; see :mod:`portagrad.capture`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .capture import CapturedStep
from .nn.modules.module import Module

__all__ = ["compile", "list_backends"]

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# the backends torch.compile accepts without extra packages; each runs eagerly here
_BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")


def list_backends() -> list[str]:
    """The backend names :func:`compile` accepts (all run eagerly)."""
    return sorted(_BACKENDS)


def _validate(mode: str | None, backend: Any, fullgraph: bool, dynamic: bool | None,
              options: dict[str, Any] | None) -> None:
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified "
                           "at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if isinstance(backend, str) and backend not in _BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}, see "
                           "`portagrad.compile.list_backends()` for available backends.")
    if not isinstance(backend, str) and not callable(backend):
        raise TypeError(f"compile(): backend must be a name or a callable, got "
                        f"{type(backend).__name__}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"compile(): options must be a dict, got {type(options).__name__}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"compile(): fullgraph must be bool, got {type(fullgraph).__name__}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise TypeError(f"compile(): dynamic must be bool or None, got {type(dynamic).__name__}")


def compile(model: Callable | None = None, *, fullgraph: bool = False,
            dynamic: bool | None = None, backend: str | Callable = "inductor",
            mode: str | None = None, options: dict[str, Any] | None = None,
            disable: bool = False) -> Any:
    """``torch.compile``: validate the arguments and return ``model`` (a module or a function)
    unchanged, to run eagerly; compiling never changes results, so this is what compiled code
    computes. Usable as ``compile(fn)``, ``@compile`` and ``@compile(mode=...)``.

    A function (not a module) compiled with ``mode="reduce-overhead"`` (with the default
    backend) or ``backend="cudagraphs"`` is returned as a
    :class:`portagrad.capture.CapturedStep`: a captured step, replayed after a warm-up call and
    two recorded calls, with eager fallbacks; its outputs are copies without autograd history
    (a function whose outputs must be differentiated, a bare forward pass, is not for this mode).
    A module runs eagerly in every mode (its forward builds an autograd graph, which a replay
    does not)."""
    _validate(mode, backend, fullgraph, dynamic, options)
    if model is None:
        def decorator(fn: Callable) -> Any:
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, disable=disable)
        return decorator
    if not callable(model):
        raise TypeError(f"A callable function is expected, but {type(model)} is provided.")
    graphs = (mode == "reduce-overhead" and backend == "inductor") or backend == "cudagraphs"
    if graphs and not disable and not isinstance(model, Module):
        return CapturedStep(model)
    return model
