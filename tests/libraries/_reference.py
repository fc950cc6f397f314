"""Run a library script under the real PyTorch, as ``python script.py`` would, for the comparison
in ``tests/test_libraries.py``: with the shared random stream of
``portagrad.compat._shared_rng`` (``PORTAGRAD_COMPAT_SHARED_RNG``), and with the modules named in
``PORTAGRAD_TEST_HIDE_MODULES`` (comma-separated) made unimportable, as if not installed: PyPI's
torchvision wheel does not load beside PyTorch's CPU build ("operator torchvision::nms does not
exist"), and libraries that merely look for it (transformers, torchmetrics, Lightning) then fail
to import."""
import importlib.metadata
import os
import runpy
import sys

_HIDDEN = set(filter(None, os.environ.get("PORTAGRAD_TEST_HIDE_MODULES", "").split(",")))
for _name in _HIDDEN:
    sys.modules[_name] = None  # type: ignore[assignment]  # import raises, find_spec gives None


def _hide(lookup):
    """``lookup`` (``importlib.metadata.version`` / ``distribution``) that finds no hidden
    distribution, as if it were not installed (libraries check versions before importing)."""
    def hidden(name, *args, **kwargs):
        if name in _HIDDEN:
            raise importlib.metadata.PackageNotFoundError(name)
        return lookup(name, *args, **kwargs)
    return hidden


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
