"""``torch.nn.utils.skip_init``: construct a module without spending time initialising it."""
from __future__ import annotations

import inspect
from typing import Any, TypeVar

from ... import _creation, _random
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["skip_init"]

M = TypeVar("M", bound=Module)


def _blank_out(module: Module) -> None:
    """Swap every parameter and buffer of the tree for an uninitialised tensor of the same
    shape, dtype and device (parameters stay parameters, with their ``requires_grad``)."""
    for sub in module.modules():
        for name, param in list(sub._parameters.items()):
            if param is not None:
                sub._parameters[name] = Parameter(_creation.empty_like(param),
                                                  requires_grad=param.requires_grad)
        for name, buf in list(sub._buffers.items()):
            if buf is not None:
                sub._buffers[name] = _creation.empty_like(buf)


def skip_init(module_cls: type[M], *args: Any, **kwargs: Any) -> M:
    """An instance ``module_cls(*args, **kwargs)`` whose parameters and buffers hold
    uninitialised memory; ``module_cls`` must accept a ``device`` keyword (default ``"cpu"``).

    PyTorch constructs on the ``meta`` device and materialises with ``to_empty``. portagrad has
    no meta device: the module is constructed normally, the global random state is put back
    as it was (so skipping initialisation consumes no random numbers), and each tensor is then
    replaced by an empty one."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    rng_before = _random.get_rng_state()
    try:
        module = module_cls(*args, **kwargs)
    finally:
        _random.set_rng_state(rng_before)
    with no_grad():
        _blank_out(module)
    return module
