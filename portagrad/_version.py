"""portagrad's own release number (``portagrad.__version__``), apart from the package so that
:mod:`portagrad.version` (the PyTorch API version) can name it without importing the package."""
from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
