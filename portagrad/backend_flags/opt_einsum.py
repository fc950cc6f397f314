"""``torch.backends.opt_einsum``: contraction-order optimisation of ``einsum`` through the
``opt_einsum`` package, which portagrad does not use, so it answers as PyTorch does when the
package is not installed: not available, not enabled, no strategy.
"""
from __future__ import annotations

from typing import Any

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]

enabled: bool = False
strategy: str | None = None


def is_available() -> bool:
    """Whether ``einsum`` optimises contraction order with ``opt_einsum``: not in portagrad."""
    return False


def get_opt_einsum() -> Any:
    """The ``opt_einsum`` module PyTorch would use: None, as portagrad never uses it."""
    return None
