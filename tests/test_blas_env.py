"""OpenBLAS's kernels on AMD Zen 4 (``portagrad._blas_env``): chosen when portagrad is imported
before numpy, never over the user's own ``OPENBLAS_CORETYPE``."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from portagrad import _blas_env

pytestmark = pytest.mark.backend_independent

_ZEN4 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
flags\t\t: fpu sse2 avx2 fma avx512f avx512dq avx512bw avx512vl

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
flags\t\t: fpu
"""


@pytest.mark.parametrize("text, want", [
    (_ZEN4, True),
    (_ZEN4.replace(" avx512f avx512dq avx512bw avx512vl", ""), False),  # Zen 3
    (_ZEN4.replace("cpu family\t: 25", "cpu family\t: 26"), False),  # Zen 5: full-width AVX-512
    (_ZEN4.replace("AuthenticAMD", "GenuineIntel").replace("cpu family\t: 25", "cpu family\t: 6"),
     False),
    ("", False),
])
def test_zen4_is_recognised_from_the_first_processor(text: str, want: bool) -> None:
    assert _blas_env._is_zen4(text) is want


_PROBE = """
import json, os, sys
{before}
import portagrad
from threadpoolctl import threadpool_info
from portagrad import _blas_env
arch = [d.get("architecture") for d in threadpool_info() if d.get("internal_api") == "openblas"]
print(json.dumps({{"chosen": _blas_env.chosen(), "env": os.environ.get("OPENBLAS_CORETYPE"),
                  "arch": arch}}))
"""


def _probe(before: str = "", **env: str) -> dict:
    e = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    e.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE.format(before=before)], env=e,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _this_machine_is_zen4() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return sys.platform.startswith("linux") and _blas_env._is_zen4(f.read(1 << 16))
    except OSError:
        return False


def test_portagrad_first_chooses_the_zen_kernels_only_on_zen4() -> None:
    got = _probe()
    if _this_machine_is_zen4():
        assert got["chosen"] == got["env"] == "Zen"
        assert all(a == "Haswell" for a in got["arch"]), got  # OpenBLAS's Zen kernels
    else:
        assert got["chosen"] is None and got["env"] is None


def test_numpy_first_or_a_set_variable_is_left_alone() -> None:
    got = _probe(before="import numpy")
    assert got["chosen"] is None and got["env"] is None
    # a name OpenBLAS does not know (it then detects the CPU itself): safe on any machine
    got = _probe(OPENBLAS_CORETYPE="NoSuchCore")
    assert got["chosen"] is None and got["env"] == "NoSuchCore"
