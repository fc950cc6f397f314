"""``torch._C``: the few private names of PyTorch's extension module that Python libraries call
at import or in module code, each with the behaviour it has in PyTorch on a machine without
CUDA. The list is curated (docs/compat.md, "Private modules"); everything else in ``torch._C``
is PyTorch's C++ core and raises ``AttributeError`` under compat.

``_log_api_usage_once`` reports to PyTorch's usage logger, which is off unless a C++ handler is
installed: a no-op. ``_get_tracing_state`` is ``None`` because nothing runs under the JIT tracer
(:mod:`portagrad.jit`). ``_get_cpu_capability`` names the vector instruction set the CPU backend's
numpy kernels dispatch to, in PyTorch's words.
"""
from __future__ import annotations

from typing import Any

from .. import autograd
from .._tensor import Tensor
from ..backend_flags import cpu
from . import _nn
from ._dispatch import DispatchKey, DispatchKeySet

__all__ = ["_nn", "_TensorMeta", "DispatchKey", "DispatchKeySet", "DisableTorchFunctionSubclass",
           "DisableTorchFunction", "_disabled_torch_function_impl", "_get_cpu_capability",
           "_get_privateuse1_backend_name", "_get_tracing_state", "_is_alias_of",
           "_log_api_usage_once", "_set_grad_enabled", "is_grad_enabled"]


def _log_api_usage_once(event: str) -> None:
    """Record one use of an API with PyTorch's usage logger; without a logger, nothing."""
    if not isinstance(event, str):
        raise TypeError("bad argument type for built-in operation")


def _get_tracing_state() -> None:
    """The JIT tracer's state: ``None``, since portagrad never traces (``jit.trace`` runs
    eagerly)."""
    return None


def _get_privateuse1_backend_name() -> str:
    """The name of PyTorch's out-of-tree device slot, ``"privateuseone"`` until renamed (portagrad
    registers its devices through its own plugins, not through that slot)."""
    return "privateuseone"


def _get_cpu_capability() -> str:
    """The vector instruction set of the CPU kernels, as PyTorch names it (see
    :func:`portagrad.backend_flags.cpu.get_cpu_capability`)."""
    return cpu.get_cpu_capability()


def _set_grad_enabled(enabled: Any) -> None:
    """Switch gradient recording on or off for this thread (``torch.set_grad_enabled(b)`` as a
    plain call)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                        f"{type(enabled).__name__}")
    autograd.set_grad_enabled(enabled)


def is_grad_enabled() -> bool:
    """Whether gradient recording is on in this thread."""
    return autograd.is_grad_enabled()


def _is_alias_of(a: Tensor, b: Tensor) -> bool:
    """Whether tensors ``a`` and ``b`` share memory (views of one storage)."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("_is_alias_of(): arguments must be Tensors")
    return a._storage is b._storage or a._storage.buffer is b._storage.buffer


class DisableTorchFunctionSubclass:
    """Inside the block, ``__torch_function__`` overrides of Tensor subclasses are not called.
    portagrad never calls them (see :mod:`portagrad.overrides`), so the block changes nothing."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class DisableTorchFunction(DisableTorchFunctionSubclass):
    """As :class:`DisableTorchFunctionSubclass`, for every ``__torch_function__`` (modes too)."""


# the metaclass of Tensor (PyTorch's C type); libraries subclass it for lazy-tensor placeholders
_TensorMeta = type(Tensor)


def _disabled_torch_function_impl(func: Any, types: Any, args: Any = (),
                                  kwargs: Any = None) -> Any:
    """The ``__torch_function__`` that turns the protocol off for a class (assigned in class
    bodies, ``__torch_function__ = torch._C._disabled_torch_function_impl``): calls ``func``
    plainly. :func:`portagrad.overrides.has_torch_function` ignores classes that use it."""
    return func(*args, **(kwargs or {}))
