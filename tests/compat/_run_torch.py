"""Run a corpus script under the real PyTorch, as ``python script.py args`` would, with the shared
random stream of ``portagrad.compat._shared_rng`` when ``PORTAGRAD_COMPAT_SHARED_RNG`` is set:
the PyTorch half of the first-loss comparison in ``tests/test_compat_scripts.py``."""
import os
import runpy
import sys

import torch

from portagrad.compat import _shared_rng

if __name__ == "__main__":
    if os.environ.get(_shared_rng.ENV_VAR):
        _shared_rng.patch(torch, int(os.environ[_shared_rng.ENV_VAR]))
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
