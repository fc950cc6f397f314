"""``torch._dynamo.eval_frame.OptimizedModule``: the wrapper class ``torch.compile`` puts around
a module in PyTorch.

:func:`portagrad.compile` returns the module itself (it runs eagerly, see ``_compile.py``), so
nothing it returns is an ``OptimizedModule`` and code testing ``isinstance(m, OptimizedModule)``
to reach ``m._orig_mod`` takes its plain-module path, which is right. The class itself works:
wrapping a module forwards calls and attribute reads to it, as PyTorch's does.
"""
from __future__ import annotations

from typing import Any

from ..nn.modules.module import Module

__all__ = ["OptimizedModule"]


class OptimizedModule(Module):
    """A module wrapping ``mod`` (``_orig_mod``): calls run ``mod``'s forward, and attributes the
    wrapper lacks are read from ``mod``; ``state_dict`` keys carry the ``_orig_mod.`` prefix, as
    in PyTorch."""

    def __init__(self, mod: Module, dynamo_ctx: Any = None) -> None:
        super().__init__()
        if not isinstance(mod, Module):
            raise TypeError(f"OptimizedModule wraps an nn.Module, got {type(mod).__name__}")
        self._orig_mod = mod

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("_orig_mod"), name)
