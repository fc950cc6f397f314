"""``torch`` -> ``portagrad``: the meta-path finder, its loader and the alias module objects.

``import torch.X.Y`` is answered with an alias of ``portagrad.X.Y``: a module object named
``torch.X.Y`` whose attribute reads and writes go to the portagrad module, so classes, functions
and flags are portagrad's own (``torch.nn.Linear is portagrad.nn.Linear``, and
``torch.backends.cudnn.benchmark = True`` sets ``portagrad.backend_flags.cudnn.benchmark``, which
``portagrad.backends.cudnn`` re-exports). The alias exists only to name what is missing:
``torch.xyz`` raises an ``AttributeError`` naming both ``portagrad`` and ``torch.xyz``, and
``import torch.foo`` a ``ModuleNotFoundError`` naming ``torch.foo``. While the finder is installed
the real PyTorch is never imported.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Sequence
from typing import Any

__all__ = ["TorchAliasFinder", "AliasModule", "torch_to_portagrad", "portagrad_to_torch",
           "TORCH", "PORTAGRAD", "PRIVATE_ALLOWED"]

TORCH = "torch"
PORTAGRAD = "portagrad"

# portagrad modules that are not PyTorch's namespace of the same name, so ``torch.<name>`` must not
# reach them: the plugin manager, the demo (with its bundled data set), the error classes and the
# CLI.
NOT_TORCH = frozenset({"plugins", "demo", "errors", "compat"})

# PyTorch namespaces that portagrad keeps under another name: ``torch.backends`` is a package of
# flag modules, while ``portagrad.backends`` holds the array-backend plugins
RENAMED = {"backends": "backend_flags"}
_RENAMED_BACK = {v: k for k, v in RENAMED.items()}

# The private PyTorch modules that libraries import at load time, each implemented by the
# portagrad module of the same name (docs/compat.md, "Private modules"). A private part of a
# dotted name maps only if the name up to it is listed: torch._dynamo.config does, torch._refs
# and portagrad's own private modules (torch._tensor ...) do not.
PRIVATE_ALLOWED = frozenset({"_C", "_C._nn", "_custom_ops", "_dynamo",
                             "_dynamo._trace_wrapped_higher_order_op", "utils._pytree"})


def torch_to_portagrad(name: str) -> str | None:
    """``torch.nn.functional`` -> ``portagrad.nn.functional``; None for names outside ``torch``
    and for the submodules portagrad does not provide under that name (private ones outside
    :data:`PRIVATE_ALLOWED` included)."""
    if name == TORCH:
        return PORTAGRAD
    if not name.startswith(TORCH + "."):
        return None
    rest = name[len(TORCH) + 1:]
    parts = rest.split(".")
    if any(p.startswith("_") and ".".join(parts[:i + 1]) not in PRIVATE_ALLOWED
           for i, p in enumerate(parts)):
        return None  # torch._refs ...: private, never portagrad's private modules
    if any(rest == ex or rest.startswith(ex + ".") for ex in NOT_TORCH):
        return None
    if parts[0] in _RENAMED_BACK:
        return None  # portagrad's own name for a namespace PyTorch calls otherwise
    return f"{PORTAGRAD}.{'.'.join([RENAMED.get(parts[0], parts[0]), *parts[1:]])}"


def portagrad_to_torch(name: str) -> str | None:
    """The inverse of :func:`torch_to_portagrad` (None where there is no torch name)."""
    if name == PORTAGRAD:
        return TORCH
    if not name.startswith(PORTAGRAD + "."):
        return None
    parts = name[len(PORTAGRAD) + 1:].split(".")
    torch_name = ".".join([TORCH, _RENAMED_BACK.get(parts[0], parts[0]), *parts[1:]])
    return torch_name if torch_to_portagrad(torch_name) == name else None


def _package_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of portagrad module ``name`` if it exists inside the imported portagrad package.

    A module of the same name found elsewhere (an editable install of another checkout answering
    for a module this one lacks) would mix two versions of portagrad: it counts as missing.
    """
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None
    if spec is None or name == PORTAGRAD:
        return spec
    roots = [os.path.join(os.path.realpath(p), "") for p in importlib.import_module(PORTAGRAD).__path__]
    where = spec.origin or next(iter(spec.submodule_search_locations or []), None)
    if where is None:
        return None
    return spec if any(os.path.realpath(where).startswith(r) for r in roots) else None


def _missing_module(name: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"No module named '{name}' ({name} is not implemented in portagrad)",
                               name=name)


class AliasModule(types.ModuleType):
    """The module ``torch.X`` stands for ``portagrad.X``: reads, writes and ``dir`` go there."""

    def __init__(self, name: str, target: types.ModuleType) -> None:
        super().__init__(name, target.__doc__)
        object.__setattr__(self, "_compat_target", target)
        if isinstance(getattr(target, "__file__", None), str):
            # read from the module dict, not through __getattr__, by `from torch import missing`
            # to say where it looked: "cannot import name 'x' from 'torch' (.../portagrad/...)"
            object.__setattr__(self, "__file__", target.__file__)

    def __getattr__(self, attr: str) -> Any:
        target = object.__getattribute__(self, "_compat_target")
        torch_name = object.__getattribute__(self, "__name__")
        try:
            value = getattr(target, attr)
        except AttributeError:
            value = _missing
        if isinstance(value, types.ModuleType):
            sub = self._submodule(torch_name, attr, value)
            if sub is not None:
                return sub
            value = _missing  # a portagrad module that is not torch's namespace of that name
        if value is not _missing:
            return value
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # protocol probes (__path__, __wrapped__ ...) stay plain
        # Not an attribute yet: maybe a subpackage not imported by portagrad/__init__, which
        # PyTorch imports eagerly (torch.multiprocessing ...).
        full = f"{torch_name}.{attr}"
        target_name = torch_to_portagrad(full)
        if target_name is not None and _package_spec(target_name) is not None:
            return importlib.import_module(full)
        raise AttributeError(f"{target.__name__} (as {torch_name}) has no attribute '{attr}' "
                             f"({full} is not implemented in portagrad)", name=attr, obj=self)

    @staticmethod
    def _submodule(torch_name: str, attr: str, value: types.ModuleType) -> types.ModuleType | None:
        """The alias of submodule ``value`` found as ``attr``; None for a portagrad module that
        is not ``torch_name.attr`` (the OpenCL backend under ``torch.backends``, a private one)."""
        alias = portagrad_to_torch(value.__name__)
        if alias is None or alias != f"{torch_name}.{attr}":
            if value.__name__ == PORTAGRAD or value.__name__.startswith(PORTAGRAD + "."):
                return None
            return value  # a foreign module the namespace re-exports (math, numpy ...)
        return sys.modules.get(alias) or importlib.import_module(alias)

    def __setattr__(self, attr: str, value: Any) -> None:
        if attr.startswith("__") and attr.endswith("__"):
            object.__setattr__(self, attr, value)  # the import system's own bookkeeping
            return
        if isinstance(value, AliasModule):
            # the import system binding a submodule's alias on its parent (`import torch.x.y`
            # sets torch.x.y): it stays on the alias, or portagrad's own module would keep an
            # alias that needs the hook after uninstall()
            object.__setattr__(self, attr, value)
            return
        setattr(object.__getattribute__(self, "_compat_target"), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(object.__getattribute__(self, "_compat_target"), attr)

    def __dir__(self) -> list[str]:
        return dir(object.__getattribute__(self, "_compat_target"))

    def __repr__(self) -> str:
        target = object.__getattribute__(self, "_compat_target")
        return f"<module '{self.__name__}' (portagrad alias of '{target.__name__}')>"


_missing = object()


class _AliasLoader(importlib.abc.InspectLoader):
    """Imports the portagrad module and hands out its alias; nothing is executed twice.

    For ``runpy`` (``python -m portagrad.compat -m torch.distributed.run``, ``runpy.run_module``)
    it also answers ``get_code``: the code of ``torch.X`` *run* is that of running ``portagrad.X``
    under the caller's ``__name__``. The portagrad module's own code object would not do: runpy
    executes it with ``__package__`` ``torch.X``'s parent, where its relative imports of private
    modules (``from ._group import ...``) have no ``torch`` name."""

    def __init__(self, target: str, is_package: bool = False) -> None:
        self.target = target
        self._is_package = is_package

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return AliasModule(spec.name, importlib.import_module(self.target))

    def exec_module(self, module: types.ModuleType) -> None:
        pass  # the portagrad module ran when it was imported

    def is_package(self, fullname: str) -> bool:
        return self._is_package

    def get_source(self, fullname: str) -> str | None:
        """The source of the portagrad module (what ``torch.X`` runs)."""
        spec = importlib.util.find_spec(self.target)
        loader = getattr(spec, "loader", None)
        if not isinstance(loader, importlib.abc.InspectLoader):
            return None
        return loader.get_source(self.target)

    def get_code(self, fullname: str) -> types.CodeType:
        """Code that runs the portagrad module as the running module (``__main__`` under runpy)
        and leaves its globals in the running namespace."""
        if self._is_package:  # `python -m pkg` runs pkg.__main__: runpy asks for that instead
            raise ImportError(f"{fullname} is a package", name=fullname)
        return compile(f"import runpy as _runpy\n"
                       f"globals().update(_runpy.run_module({self.target!r}, run_name=__name__))\n",
                       f"<{fullname}: portagrad alias of {self.target}>", "exec")


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Answers every ``torch`` and ``torch.*`` import, first on ``sys.meta_path``: with an alias
    of the portagrad module, or with a ``ModuleNotFoundError`` naming what is not implemented, so
    that an installed PyTorch never answers instead."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != TORCH and not fullname.startswith(TORCH + "."):
            return None
        target_name = torch_to_portagrad(fullname)
        if target_name is None:
            raise _missing_module(fullname)
        found = _package_spec(target_name)
        if found is None:
            raise _missing_module(fullname)
        package = found.submodule_search_locations is not None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(target_name, package),
                                               origin=found.origin, is_package=package)
