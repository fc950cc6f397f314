"""``torch.backends.cpu``: which vector instruction set the CPU kernels use.

portagrad's ``cpu`` device computes with numpy, whose kernels pick an instruction set at run
time; :func:`get_cpu_capability` reads that choice and names it as PyTorch does.
"""
from __future__ import annotations

import importlib
import platform

__all__ = ["get_cpu_capability"]


def _numpy_cpu_features() -> dict[str, bool]:
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")  # numpy >= 2
    except ImportError:  # numpy 1.x keeps it under numpy.core
        umath = importlib.import_module("numpy.core._multiarray_umath")
    return dict(umath.__cpu_features__)


def get_cpu_capability() -> str:
    """The vector instruction set of the CPU kernels, in PyTorch's words: ``"AVX512"`` (F, BW,
    VL and DQ), ``"AVX2"``, ``"NO AVX"`` on x86 without AVX2, ``"DEFAULT"`` elsewhere."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return "DEFAULT"
    features = _numpy_cpu_features()
    if all(features.get(f, False) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")):
        return "AVX512"
    if features.get("AVX2", False):
        return "AVX2"
    return "NO AVX"
