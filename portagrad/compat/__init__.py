"""Run unmodified PyTorch scripts on portagrad: ``python -m portagrad.compat script.py args``.

While the hook is installed (:func:`install`), ``import torch`` and ``import torch.<sub>`` give
portagrad's modules under PyTorch's names (``torch.nn`` is ``portagrad.nn``, ``torch.backends`` the
flag modules in ``portagrad.backend_flags``, ...). Names portagrad lacks raise errors that say so:
``AttributeError: portagrad (as torch) has no attribute 'xyz' (torch.xyz is not implemented in
portagrad)``, and ``ModuleNotFoundError`` for a missing submodule. See ``docs/compat.md``.
"""
from __future__ import annotations

import importlib
import os
import runpy
import sys
import types
from typing import Any

from . import _metadata, _shared_rng
from ._alias import TORCH, AliasModule, TorchAliasFinder, portagrad_to_torch, torch_to_portagrad

__all__ = ["install", "uninstall", "is_installed", "run_script", "run_module",
           "torch_to_portagrad", "portagrad_to_torch", "SHIM_DIR"]

# A directory holding a ``torch`` package that installs the hook when imported. It goes on sys.path
# of a compat run so that processes started by multiprocessing's spawn and forkserver methods,
# which re-import the script in a fresh interpreter, get portagrad for ``import torch`` too.
SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shim")

_finder: TorchAliasFinder | None = None
_dist_finder: _metadata.TorchDistributionFinder | None = None
_stashed: dict[str, types.ModuleType] = {}


def _is_torch(name: str) -> bool:
    return name == TORCH or name.startswith(TORCH + ".")


def is_installed() -> bool:
    """Whether ``import torch`` currently gives portagrad."""
    return _finder is not None


def install() -> None:
    """Make ``import torch`` (and every ``torch.*`` submodule) resolve to portagrad.

    Already imported ``torch`` modules (a real PyTorch) are taken out of ``sys.modules`` and put
    back by :func:`uninstall`. Installing twice is harmless. ``torch.__version__`` and
    ``importlib.metadata.version("torch")`` give :data:`portagrad.version.__version__`.
    """
    global _finder, _dist_finder
    if _finder is not None:
        return
    for name in [n for n in sys.modules if _is_torch(n)]:
        mod = sys.modules.pop(name)
        if not getattr(mod, "__portagrad_compat_shim__", False):
            _stashed[name] = mod
    _finder = TorchAliasFinder()
    _dist_finder = _metadata.TorchDistributionFinder()
    sys.meta_path.insert(0, _finder)
    sys.meta_path.insert(0, _dist_finder)
    # the version of the API the script gets, kept on the alias: portagrad.__version__ is
    # portagrad's own release number
    alias: Any = importlib.import_module(TORCH)
    alias.__version__ = _metadata.version.__version__


def uninstall() -> None:
    """Undo :func:`install`: forget the aliases, restore any real ``torch`` modules."""
    global _finder, _dist_finder
    if _finder is None:
        return
    for finder in (_finder, _dist_finder):
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
    _finder = _dist_finder = None
    for name in [n for n in sys.modules if _is_torch(n)]:
        if isinstance(sys.modules[name], AliasModule):
            del sys.modules[name]
    sys.modules.update(_stashed)
    _stashed.clear()


def _prepare(argv0: str, args: list[str]) -> None:
    sys.argv = [argv0, *args]
    install()
    if SHIM_DIR not in sys.path:
        sys.path.insert(1, SHIM_DIR)  # after the script's directory, before site-packages
    # A spawned process must import this same portagrad (a source checkout run from its root is
    # found through the working directory, which a script's sys.path does not contain).
    root = os.path.dirname(os.path.dirname(os.path.dirname(SHIM_DIR)))
    if root not in sys.path:
        sys.path.insert(2, root)
    # Python processes the program starts (the ranks of `-m torch.distributed.run`, which mpiexec
    # starts as fresh interpreters; subprocess workers) get the shim and this portagrad as well:
    # PYTHONPATH precedes site-packages, so their `import torch` is portagrad too.
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [SHIM_DIR, root] + [p for p in inherited if p not in (SHIM_DIR, root)])
    seed = os.environ.get(_shared_rng.ENV_VAR)
    if seed:
        _shared_rng.patch(importlib.import_module("portagrad"), int(seed))


def run_script(path: str, args: list[str] | None = None) -> None:
    """Run the script at ``path`` as ``python path args`` would, with ``torch`` being portagrad.

    ``sys.argv`` is ``[path, *args]``, the script's directory is ``sys.path[0]`` and the script
    runs as ``__main__``. Its ``SystemExit`` and exceptions propagate.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"can't open file '{path}': no such file")
    script_dir = os.path.dirname(os.path.abspath(path))
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)
    _prepare(path, list(args or []))
    runpy.run_path(path, run_name="__main__")


def run_module(module: str, args: list[str] | None = None) -> None:
    """Run ``module`` as ``python -m module args`` would, with ``torch`` being portagrad."""
    _prepare(module, list(args or []))
    runpy.run_module(module, run_name="__main__", alter_sys=True)
