"""Whether a test device stores complex tensors: a backend either does (``supports_complex``) or
declines with :class:`portagrad.errors.DTypeError` (the array-api-strict example backend; OpenCL
devices without fp64 for complex128), and the complex tests skip there, naming the decline."""
from __future__ import annotations

import pytest

import portagrad as pg
from portagrad.errors import DTypeError

__all__ = ["complex_ok", "need_complex"]


def complex_ok(device: str) -> bool:
    """Whether ``device`` makes and computes on a complex128 tensor."""
    try:
        pg.zeros(2, dtype=pg.complex128, device=device).sum().item()
    except DTypeError:
        return False
    return True


def need_complex(device: str) -> None:
    """Skip the calling test unless ``device`` stores complex tensors."""
    if not complex_ok(device):
        pytest.skip(f"{device} declines complex tensors (DTypeError)")
