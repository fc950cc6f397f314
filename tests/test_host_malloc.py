"""The numpy backend sets glibc's malloc thresholds so that freed host memory is reused, not
unmapped and faulted in again on the next step (``portagrad.backends.numpy.host_malloc``)."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="the thresholds are glibc's (elsewhere tune() leaves malloc alone and says so)")

# Five 8 MB arrays written and freed, over and over: with glibc's defaults the blocks are unmapped
# (or the heap's top trimmed) after every round and the next round faults every page in again;
# page faults per round, after three rounds of warm-up, printed with tune()'s result. The blocks
# are large because glibc raises its threshold by itself once a process frees a block above it,
# and the libraries portagrad imports may already have freed blocks of a megabyte or two.
_SCRIPT = """
import resource
import numpy as np
import portagrad as pg
pg.ones(1)  # loads the cpu backend, which tunes malloc
from portagrad.backends.numpy import host_malloc

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

for _ in range(3):
    bufs = [np.ones(2_000_000, np.float32) for _ in range(5)]
    del bufs
f0 = faults()
for _ in range(20):
    bufs = [np.ones(2_000_000, np.float32) for _ in range(5)]
    del bufs
print(host_malloc.tune(), (faults() - f0) / 20)
"""


def _run(env_value: str | None) -> tuple[str, float]:
    env = dict(os.environ)
    env.pop("PORTAGRAD_HOST_MALLOC", None)
    for var in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"):
        env.pop(var, None)
    if env_value is not None:
        env["PORTAGRAD_HOST_MALLOC"] = env_value
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    return out[0], float(out[1])


def test_freed_host_memory_is_reused_without_page_faults() -> None:
    tuned, faults = _run(None)
    assert tuned == "True"
    assert faults < 20, f"{faults} page faults per round of freed and reallocated 8 MB arrays"


def test_opting_out_leaves_glibc_defaults() -> None:
    """``PORTAGRAD_HOST_MALLOC=default``: malloc untouched, and the same rounds then fault their
    pages in again (the cost the tuning removes: about 2000 faults a round)."""
    tuned, faults = _run("default")
    assert tuned == "False"
    assert faults > 200, f"only {faults} page faults per round with glibc's defaults"
