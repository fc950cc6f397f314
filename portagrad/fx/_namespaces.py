"""The PyTorch-named function namespaces FX knows: ``torch``, ``torch.nn.functional``,
``torch.special``, ``torch.linalg`` and ``torch.fft`` (here portagrad's modules of those names).

Their functions are what symbolic tracing intercepts (by patching these modules while a trace
runs, so that calls outside a trace cost nothing extra), and what generated code names as PyTorch
prints them (``torch.exp``, ``torch.nn.functional.relu``).
"""
from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["namespaces", "namespace_functions", "namespace_name"]

# (torch name, attribute path below the portagrad package; "" is the package itself)
_SPACES = (("torch", ""), ("torch.nn.functional", "nn.functional"), ("torch.special", "special"),
           ("torch.linalg", "linalg"), ("torch.fft", "fft"))

# functions that are not traced even with a proxy argument, as PyTorch does not route them
# through __torch_function__: type tests answer for the proxy itself (is_tensor(proxy) is False),
# the rest manage state or files rather than compute
_NOT_TRACED = frozenset({"is_tensor", "is_storage", "typename", "compile", "save", "load",
                         "manual_seed", "seed", "set_default_dtype", "set_default_device",
                         "set_printoptions", "use_deterministic_algorithms"})

_names: dict[int, tuple[Any, str]] | None = None


def namespaces() -> list[tuple[str, types.ModuleType]]:
    """``(torch name, module)`` for each namespace portagrad has."""
    # looked up, not imported: this package sits below the portagrad namespace it reads, which
    # is fully imported before any graph exists
    root = sys.modules["portagrad"]
    found = []
    for torch_name, path in _SPACES:
        mod: Any = root
        for part in filter(None, path.split(".")):
            mod = getattr(mod, part, None)
        if isinstance(mod, types.ModuleType):
            found.append((torch_name, mod))
    return found


def _is_function(v: Any) -> bool:
    return isinstance(v, (types.FunctionType, types.BuiltinFunctionType))


def namespace_functions() -> list[tuple[types.ModuleType, str, Any]]:
    """``(module, attribute, function)`` for every public function of the namespaces."""
    out = []
    for _, mod in namespaces():
        for attr, v in list(vars(mod).items()):
            if not attr.startswith("_") and _is_function(v) and attr not in _NOT_TRACED:
                out.append((mod, attr, v))
    return out


def namespace_name(fn: Any) -> str | None:
    """``torch.exp`` for ``portagrad.exp`` (the first namespace holding ``fn``), else None."""
    global _names
    if _names is None:
        # the first namespace holding a function names it, and within one the attribute equal
        # to the function's own name (torch.cat, not its alias torch.concatenate)
        names: dict[int, tuple[Any, str]] = {}
        for torch_name, mod in namespaces():
            own = [(a, v) for a, v in vars(mod).items()
                   if not a.startswith("_") and _is_function(v)]
            own.sort(key=lambda av: av[0] != getattr(av[1], "__name__", None))
            for attr, v in own:
                names.setdefault(id(v), (v, f"{torch_name}.{attr}"))
        _names = names
    hit = _names.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    return None
