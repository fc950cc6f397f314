"""``torch.version``: which PyTorch this is, for code that checks.

portagrad implements PyTorch 2.13's API, so :data:`__version__` is that version with portagrad's
own as the PEP 440 local label (``2.13.0+portagrad0.1.0``): version checks such as
``torch.__version__ >= "2.1"`` see the API they get, and the label says whose implementation it
is. There is no CUDA, ROCm or XPU build (``cuda``, ``hip``, ``rocm``, ``xpu`` are ``None``), and
no PyTorch source commit (``git_version`` is ``"Unknown"``, PyTorch's value for builds without
one). ``python -m portagrad.compat`` gives ``torch.__version__`` and
``importlib.metadata.version("torch")`` this value.
"""
from __future__ import annotations

from ._version import __version__ as _portagrad_version
from .torch_version import TorchVersion

__all__ = ["__version__", "TORCH_API_VERSION", "debug", "cuda", "git_version", "hip", "rocm",
           "xpu"]

#: The PyTorch release whose API portagrad follows (its names, semantics and error cases).
TORCH_API_VERSION = "2.13.0"

__version__ = TorchVersion(f"{TORCH_API_VERSION}+portagrad{_portagrad_version}")
debug = False
cuda: str | None = None
git_version = "Unknown"
hip: str | None = None
rocm: str | None = None
xpu: str | None = None
