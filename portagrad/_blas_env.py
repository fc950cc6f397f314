"""OpenBLAS's kernels on AMD Zen 4: chosen before numpy loads its BLAS.

OpenBLAS (the BLAS of numpy's wheels) runs its AVX-512 "SkylakeX" kernels on AMD Zen 4, whose
AVX-512 units are 256 bits wide. Its AVX2 "Haswell" kernels, which it uses on Zen 3, run float32
GEMMs of the shapes a convolution or a small-batch Linear layer makes faster there on one thread,
and none of the measured ones slower (figures in docs/performance.md). OpenBLAS reads the choice
from ``OPENBLAS_CORETYPE`` once, when the library loads, so :func:`choose` can only set it when
``portagrad`` is imported before numpy (as ``python -m portagrad`` is); afterwards numpy has
already loaded its kernels and nothing changes.

Never where the variable is set already (``OPENBLAS_CORETYPE=SkylakeX`` keeps OpenBLAS's own
choice), and only on Linux machines that report an AMD CPU of family 25 (Zen 3 and Zen 4) with
AVX-512 (Zen 4). Child processes (data-loader workers, ranks) inherit the setting.
"""
from __future__ import annotations

import os
import sys

__all__ = ["ENV_VAR", "ZEN4_CORETYPE", "choose", "chosen"]

ENV_VAR = "OPENBLAS_CORETYPE"
ZEN4_CORETYPE = "Zen"  # OpenBLAS's name for the Zen kernels, which are its Haswell ones

_chosen: str | None = None


def chosen() -> str | None:
    """The value :func:`choose` set in this process, or None."""
    return _chosen


def _is_zen4(cpuinfo: str) -> bool:
    """Whether the first processor of ``/proc/cpuinfo`` text is an AMD family-25 CPU with
    AVX-512 (Zen 4; family 25 without it is Zen 3, where OpenBLAS picks these kernels itself)."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor only
            continue
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return (fields.get("vendor_id") == "AuthenticAMD" and fields.get("cpu family") == "25"
            and "avx512f" in fields.get("flags", "").split())


def choose() -> str | None:
    """Set ``OPENBLAS_CORETYPE`` for a Zen 4 CPU when numpy is not loaded yet and the variable is
    unset; the value set, or None."""
    global _chosen
    if "numpy" in sys.modules or ENV_VAR in os.environ or not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            text = f.read(1 << 16)
    except OSError:
        return None
    if not _is_zen4(text):
        return None
    os.environ[ENV_VAR] = _chosen = ZEN4_CORETYPE
    return _chosen
