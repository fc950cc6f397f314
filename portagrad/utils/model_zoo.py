"""``torch.utils.model_zoo``: the old home of :func:`load_url`, kept as PyTorch keeps it."""
from __future__ import annotations

from ..hub import load_state_dict_from_url as load_url
from ..hub import tqdm

__all__ = ["load_url", "tqdm"]
