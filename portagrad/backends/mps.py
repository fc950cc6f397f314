"""``torch.backends.mps``: Apple's Metal backend, as PyTorch answers where it is not built."""
from __future__ import annotations

__all__ = ["is_available", "is_built", "is_macos_or_newer", "is_macos13_or_newer"]


def is_available() -> bool:
    """Whether an MPS device can be used: never in portagrad."""
    return False


def is_built() -> bool:
    """Whether the library was built with MPS support: portagrad has no MPS backend."""
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    """Whether MPS runs on macOS ``major.minor`` or newer: False without MPS, as in PyTorch."""
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    """Whether MPS runs on macOS 13.``minor`` or newer: False without MPS, as in PyTorch."""
    return False
