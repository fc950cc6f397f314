"""``importlib.metadata`` answers for ``torch`` during a compat run.

Libraries decide whether PyTorch is there, and which, with ``importlib.util.find_spec("torch")``
and ``importlib.metadata.version("torch")``. Under the hook the first already finds the alias;
:class:`TorchDistributionFinder`, put first on ``sys.meta_path`` by :func:`portagrad.compat.install`
and taken off by ``uninstall``, makes the second agree with ``torch.__version__``
(:data:`portagrad.version.__version__`) instead of naming an installed PyTorch that is not what
runs, or failing where none is installed.
"""
from __future__ import annotations

import importlib.abc
import importlib.metadata
import os
import pathlib
import re
from collections.abc import Iterator
from typing import Any

from .. import version

__all__ = ["TorchDistribution", "TorchDistributionFinder"]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class TorchDistribution(importlib.metadata.Distribution):
    """The ``torch`` distribution of a compat run: name ``torch``, portagrad's torch version,
    files located in the portagrad package."""

    def read_text(self, filename: str) -> str | None:
        if filename in ("METADATA", "PKG-INFO"):
            return ("Metadata-Version: 2.1\nName: torch\n"
                    f"Version: {version.__version__}\n"
                    "Summary: portagrad standing in for torch (python -m portagrad.compat)\n")
        return None

    def locate_file(self, path: Any) -> Any:
        return pathlib.Path(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) / path


class TorchDistributionFinder(importlib.abc.MetaPathFinder):
    """Finds no modules; answers ``importlib.metadata`` lookups of ``torch``."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        return None

    def find_distributions(self, context: Any = None) -> Iterator[TorchDistribution]:
        name = getattr(context, "name", None)
        if name is None or _normalize(name) == "torch":
            yield TorchDistribution()
