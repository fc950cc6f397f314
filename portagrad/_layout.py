"""Memory layouts: ``portagrad.strided`` (every dense tensor) and ``portagrad.sparse_coo``."""
from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo"]


class layout:  # PyTorch's name (torch.layout)
    """A tensor's memory layout; compared by identity, like dtypes."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"portagrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # pickles as the module attribute of that name: one object per layout


strided = layout("strided")
sparse_coo = layout("sparse_coo")
