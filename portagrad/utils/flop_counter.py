"""``torch.utils.flop_counter``: :class:`FlopCounterMode`, importable.

PyTorch counts floating-point operations by intercepting every ATen call under a dispatch mode;
portagrad's ops are not dispatched through modes, so there is nothing to count with: entering
the mode raises ``NotImplementedError`` (code that only imports it, or constructs it without
entering, runs).
"""
from __future__ import annotations

from typing import Any

__all__ = ["FlopCounterMode"]


class FlopCounterMode:
    """Count the FLOPs of the operations run inside the block (not available here)."""

    def __init__(self, mods: Any = None, depth: int = 2, display: bool = True,
                 custom_mapping: dict[Any, Any] | None = None) -> None:
        self.depth = depth
        self.display = display
        self.custom_mapping = dict(custom_mapping or {})

    def __enter__(self) -> FlopCounterMode:
        raise NotImplementedError("FlopCounterMode: portagrad does not route its operations "
                                  "through dispatch modes, so it cannot count their FLOPs")

    def __exit__(self, *exc: object) -> None:
        return None

    def get_total_flops(self) -> int:
        """The FLOPs counted: none are ever counted here."""
        raise NotImplementedError("FlopCounterMode: no FLOPs are counted in portagrad")
