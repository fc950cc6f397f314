"""``torch.jit.annotations``: the typing names TorchScript code imports from here.

Old TorchScript code writes ``from torch.jit.annotations import List, Optional, Tuple``; these
are :mod:`typing`'s own objects. ``BroadcastingList1`` ... ``BroadcastingList6`` are
TorchScript's "one number, or a list of N" annotations (torchvision's ops annotate with
``BroadcastingList2[int]``); as in PyTorch's eager mode, subscripting one gives ``None``, since
only the compiler reads them.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: UP035  (names code imports)

__all__ = ["Any", "Dict", "List", "Optional", "Tuple", "Union", "BroadcastingList1",
           "BroadcastingList2", "BroadcastingList3", "BroadcastingList4", "BroadcastingList5",
           "BroadcastingList6"]


class _BroadcastingListCls:
    """Subscriptable for annotations; the subscript is ``None``, as in PyTorch's eager mode."""

    def __getitem__(self, types: Any) -> None:
        return None


BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = _BroadcastingListCls()
BroadcastingList4 = BroadcastingList5 = BroadcastingList6 = BroadcastingList1
