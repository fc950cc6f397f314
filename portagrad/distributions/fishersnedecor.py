"""``torch.distributions.fishersnedecor``: PyTorch's module name for :mod:`.fisher_snedecor`."""
from __future__ import annotations

from .fisher_snedecor import FisherSnedecor

__all__ = ["FisherSnedecor"]
