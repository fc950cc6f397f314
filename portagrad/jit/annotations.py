"""``torch.jit.annotations``: the typing names TorchScript code imports from here.

Old TorchScript code writes ``from torch.jit.annotations import List, Optional, Tuple``; these
are :mod:`typing`'s own objects.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: UP035  (names code imports)

__all__ = ["Any", "Dict", "List", "Optional", "Tuple", "Union"]
