"""``pg.backends.mps``: PyTorch's MPS (Metal) build flags. portagrad has no MPS backend, so both
answer ``False``, as PyTorch on a machine without MPS (scripts pick their device with
``torch.backends.mps.is_available()``)."""
from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """``False``: there is no MPS backend."""
    return False


def is_built() -> bool:
    """``False``: no MPS support is built in."""
    return False
