"""Utilities (``torch.utils``)."""
from . import data  # noqa: F401
from . import dlpack  # noqa: F401
