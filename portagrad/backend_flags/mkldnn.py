"""``torch.backends.mkldnn``: the CPU kernels' flags, and the float32 precision they may use.

PyTorch's CPU build runs convolutions and products through oneDNN (formerly MKL-DNN); portagrad's
``cpu`` device has its own kernels, so :func:`is_available` is False. What carries over is the
precision contract: ``mkldnn.conv.fp32_precision = "tf32"`` (or ``"bf16"``) lets float32
convolutions on the CPU compute with less than float32's precision, as it does in PyTorch. portagrad
takes it as leave to run 3x3 convolutions by Winograd F(4x4, 3x3), whose results differ from a
direct sum's by about 10x a float32 rounding (relative 1e-5; TF32 itself keeps 10 bits, 1e-3).
``"none"`` (the default) defers to ``mkldnn.fp32_precision``, and that one's ``"none"`` means
``"ieee"``: full float32. :func:`portagrad.set_float32_matmul_precision` sets
``mkldnn.matmul.fp32_precision`` as PyTorch's does (``"highest"`` -> ``"ieee"``, ``"high"`` ->
``"tf32"``, ``"medium"`` -> ``"bf16"``); portagrad's float32 products stay float32 under each.
"""
from __future__ import annotations

import sys
import types
from typing import Any

from ._flags import install_flags

__all__ = ["is_available", "enabled", "deterministic", "fp32_precision", "conv", "matmul", "rnn",
           "conv_allows_reduced_fp32"]

# Declared for type checkers; the values live behind the properties install_flags adds.
enabled: bool
deterministic: bool
fp32_precision: str

_PRECISIONS = ("none", "ieee", "tf32", "bf16")


def _check_precision(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"fp32_precision must be a str, got {type(value).__name__}")
    if value not in _PRECISIONS:
        raise RuntimeError(f"Unknown precision: {value}")
    return value


class FP32Precision:
    """One op family's float32 precision (``torch.backends.mkldnn.conv`` and its siblings):
    ``fp32_precision`` is ``"none"`` (defer to ``mkldnn.fp32_precision``), ``"ieee"``, ``"tf32"``
    or ``"bf16"``."""

    def __init__(self, backend: str, op: str) -> None:
        self.backend = backend
        self.op = op
        self._precision = "none"

    @property
    def fp32_precision(self) -> str:
        """The precision set for this op family (``"none"`` until one is set)."""
        return self._precision

    @fp32_precision.setter
    def fp32_precision(self, value: Any) -> None:
        self._precision = _check_precision(value)


conv = FP32Precision("mkldnn", "conv")
matmul = FP32Precision("mkldnn", "matmul")
rnn = FP32Precision("mkldnn", "rnn")


def is_available() -> bool:
    """Whether oneDNN runs the CPU kernels: never in portagrad (its ``cpu`` kernels are its own)."""
    return False


def conv_allows_reduced_fp32() -> bool:
    """Whether float32 convolutions on the CPU may compute below float32's precision: the
    effective ``conv.fp32_precision`` (``"none"`` defers to ``mkldnn.fp32_precision``) is
    ``"tf32"`` or ``"bf16"``."""
    p = conv._precision
    if p == "none":
        p = sys.modules[__name__].__dict__["_precision"]
    return p in ("tf32", "bf16")


class _MkldnnModule(types.ModuleType):
    """The module's class: ``fp32_precision`` is checked on assignment, as PyTorch's is."""

    @property
    def fp32_precision(self) -> str:
        return str(self.__dict__["_precision"])

    @fp32_precision.setter
    def fp32_precision(self, value: Any) -> None:
        self.__dict__["_precision"] = _check_precision(value)


_precision = "none"
install_flags(__name__, {
    "enabled": (True, "set_enabled_mkldnn"),
    "deterministic": (False, "set_deterministic_mkldnn"),
})
# install_flags gave the module a class with the bool flags; add the precision property to it
_mod = sys.modules[__name__]
_mod.__class__ = type("MkldnnModule", (_mod.__class__, _MkldnnModule), {})
