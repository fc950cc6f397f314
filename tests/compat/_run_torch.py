"""Run a script under the real PyTorch, as ``python script.py args`` would, with the shared
random stream of ``portagrad.compat._shared_rng`` when ``PORTAGRAD_COMPAT_SHARED_RNG`` is set:
the PyTorch half of the comparisons in ``tests/test_compat_scripts.py`` and
``tests/test_libraries.py``.

The modules named in ``PORTAGRAD_TEST_HIDE_MODULES`` (comma-separated) are made unimportable and
their distributions unfindable, as if not installed: PyPI's torchvision wheel does not load beside
PyTorch's CPU build ("operator torchvision::nms does not exist"), and libraries that merely look
for it (transformers, torchmetrics, Lightning) would then fail to import."""
import importlib.metadata
import os
import runpy
import sys

_HIDDEN = set(filter(None, os.environ.get("PORTAGRAD_TEST_HIDE_MODULES", "").split(",")))
for _name in _HIDDEN:
    sys.modules[_name] = None  # type: ignore[assignment]  # import raises, find_spec gives None


def _hide(lookup):
    """``lookup`` (``importlib.metadata.version`` / ``distribution``) finding no hidden
    distribution (libraries check a version before they import)."""
    def hidden(name, *args, **kwargs):
        if name in _HIDDEN:
            raise importlib.metadata.PackageNotFoundError(name)
        return lookup(name, *args, **kwargs)
    return hidden


if _HIDDEN:
    importlib.metadata.version = _hide(importlib.metadata.version)
    importlib.metadata.distribution = _hide(importlib.metadata.distribution)

import torch  # noqa: E402

from portagrad.compat import _shared_rng  # noqa: E402

if __name__ == "__main__":
    if os.environ.get(_shared_rng.ENV_VAR):
        _shared_rng.patch(torch, int(os.environ[_shared_rng.ENV_VAR]))
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
